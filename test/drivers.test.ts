// Drivers and assignments through the API on both stores (docs/API.md "Drivers"): the driver's
// life and what each refusal answers, identifiers unique per organization, who drives what (one
// ongoing assignment per driver and per vehicle, the events of each change, the vehicle's
// `driverId`), the list's filters and pages, and what a credential limited to groups may do.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { feedEvents } from './helpers/events.ts';

const skipPostgres = await skipUnlessPostgres();

interface Driver { id: string; name: string; externalId: string | null; identifiers: Array<{ kind: string; value: string }>; phone: string | null; notes: string | null; vehicleId: string | null }
interface Assignment { id: string; driverId: string; vehicleId: string; startedAt: string; endedAt: string | null; source: string }

function problem(res: { statusCode: number; body: string; json<T>(): T }, status: number, code: string, path?: string) {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json<{ code: string; errors?: Array<{ path: string }> }>();
  assert.equal(body.code, code, res.body);
  if (path !== undefined) assert.ok(body.errors?.some((e) => e.path === path), res.body);
}

async function makeDriver(ctx: TestApp, body: Record<string, unknown>): Promise<Driver> {
  const res = await ctx.request('POST', '/v2/drivers', { body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<Driver>();
}

async function assign(ctx: TestApp, body: Record<string, unknown>, status = 201, key?: string): Promise<Assignment> {
  const res = await ctx.request('POST', '/v2/driver-assignments', { body, ...(key === undefined ? {} : { key }) });
  assert.equal(res.statusCode, status, res.body);
  return res.json<Assignment>();
}

const driverOf = async (ctx: TestApp, vehicleId: string) => (await ctx.request('GET', `/v2/fleet/vehicles/${vehicleId}`)).json<{ driverId: string | null }>().driverId;

/** The driver.* events of the feed, as `type driverId vehicleId`, once there are `count` (helpers/events.ts). */
async function driverEvents(ctx: TestApp, count: number): Promise<string[]> {
  const events = await feedEvents<{ type: string; vehicleId: string; data: Assignment }>(ctx, 'types=driver.assigned,driver.unassigned', count);
  return events.map((e) => `${e.type} ${e.data.driverId === undefined ? '?' : 'd'} ${e.vehicleId}${e.data.endedAt === null ? '' : ' ended'}`);
}

/** A service on a clock the test moves, with vans van-1 and van-2 and drivers Ada and Bob. */
async function twoVansTwoDrivers(backend: 'sqlite' | 'postgres') {
  const clock = manualClock();
  const ctx = await createTestApp({ backend, clock });
  await ctx.registerVehicle('van-1');
  await ctx.registerVehicle('van-2');
  return { clock, ctx, ada: await makeDriver(ctx, { name: 'Ada' }), bob: await makeDriver(ctx, { name: 'Bob' }) };
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`drivers on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('a driver\'s life: created, found by q, changed by merge patch, deleted; bad input changes nothing', async () => {
      const ctx = await createTestApp({ backend });
      try {
        const ada = await makeDriver(ctx, { name: 'Ada Lovelace', externalId: 'E-1', identifiers: [{ kind: 'ibutton', value: '01a2b3c4d5e6f708' }], phone: '+49 30 1234567' });
        assert.match(ada.id, /^drv_[A-Za-z0-9]{20}$/);
        assert.deepEqual(ada.identifiers, [{ kind: 'ibutton', value: '01A2B3C4D5E6F708' }], 'an iButton is stored uppercase');
        assert.equal(ada.vehicleId, null);
        const grace = await makeDriver(ctx, { name: 'Grace Hopper', identifiers: [{ kind: 'rfid', value: 'card42' }] });

        problem(await ctx.request('POST', '/v2/drivers', { body: { name: 'X', identifiers: [{ kind: 'ibutton', value: '01A2B3C4D5E6F7' }] } }), 400, 'validation-failed', '/identifiers/0/value');
        problem(await ctx.request('POST', '/v2/drivers', { body: { name: 'X', identifiers: [{ kind: 'rfid', value: 'no-dashes' }] } }), 400, 'validation-failed');
        problem(await ctx.request('POST', '/v2/drivers', { body: { name: 'X', identifiers: [{ kind: 'rfid', value: 'A1' }, { kind: 'rfid', value: 'A1' }] } }), 400, 'validation-failed', '/identifiers/1/value');
        problem(await ctx.request('POST', '/v2/drivers', { body: { name: '' } }), 400, 'validation-failed');
        problem(await ctx.request('POST', '/v2/drivers', { body: { name: 'X', phone: 'call me' } }), 400, 'validation-failed');
        problem(await ctx.request('POST', '/v2/drivers', { body: { name: 'X', badge: 1 } }), 400, 'validation-failed');
        // Unique in the organization, whatever the case it was given in.
        problem(await ctx.request('POST', '/v2/drivers', { body: { name: 'X', identifiers: [{ kind: 'ibutton', value: '01A2B3C4D5E6F708' }] } }), 409, 'identifier-taken');
        problem(await ctx.request('PATCH', `/v2/drivers/${grace.id}`, { body: { identifiers: [{ kind: 'ibutton', value: '01a2b3c4d5e6f708' }] } }), 409, 'identifier-taken');
        assert.deepEqual((await ctx.request('GET', `/v2/drivers/${grace.id}`)).json<Driver>().identifiers, [{ kind: 'rfid', value: 'card42' }], 'a refused patch changes nothing');
        assert.equal((await ctx.request('GET', '/v2/drivers')).json<{ total: number }>().total, 2, 'refused creations stored nothing');

        // q: name or external id, case-insensitive, its LIKE characters taken literally.
        const names = async (q: string) => (await ctx.request('GET', `/v2/drivers?q=${encodeURIComponent(q)}`)).json<{ drivers: Driver[] }>().drivers.map((d) => d.name);
        assert.deepEqual(await names('LOVE'), ['Ada Lovelace']);
        assert.deepEqual(await names('e-1'), ['Ada Lovelace']);
        assert.deepEqual(await names('o'), ['Ada Lovelace', 'Grace Hopper']);
        assert.deepEqual(await names('%'), []);
        assert.deepEqual(await names('_'), []);

        const patched = (await ctx.request('PATCH', `/v2/drivers/${ada.id}`, { body: { phone: null, notes: 'Night shifts', identifiers: [] } })).json<Driver>();
        assert.equal(patched.phone, null);
        assert.equal(patched.notes, 'Night shifts');
        assert.equal(patched.externalId, 'E-1', 'members the patch leaves out stay');
        assert.deepEqual(patched.identifiers, []);
        // The identifier it gave up is free for another.
        await ctx.request('PATCH', `/v2/drivers/${grace.id}`, { body: { identifiers: [{ kind: 'ibutton', value: '01A2B3C4D5E6F708' }, { kind: 'rfid', value: 'card42' }] } });
        assert.deepEqual((await ctx.request('GET', `/v2/drivers/${grace.id}`)).json<Driver>().identifiers.map((i) => i.value), ['01A2B3C4D5E6F708', 'card42'], 'in their order');
        problem(await ctx.request('PATCH', `/v2/drivers/${ada.id}`, { body: {} }), 400, 'validation-failed');

        assert.equal((await ctx.request('DELETE', `/v2/drivers/${ada.id}`)).statusCode, 204);
        problem(await ctx.request('GET', `/v2/drivers/${ada.id}`), 404, 'driver-not-found');
        problem(await ctx.request('DELETE', `/v2/drivers/${ada.id}`), 404, 'driver-not-found');
        problem(await ctx.request('PATCH', `/v2/drivers/${ada.id}`, { body: { name: 'Y' } }), 404, 'driver-not-found');
        problem(await ctx.request('GET', '/v2/drivers/drv_nope'), 400, 'validation-failed');

        // Another organization sees none of it.
        const { key: otherKey } = await ctx.otherOrganization();
        problem(await ctx.request('GET', `/v2/drivers/${grace.id}`, { key: otherKey }), 404, 'driver-not-found');
        assert.equal((await ctx.request('GET', '/v2/drivers', { key: otherKey })).json<{ total: number }>().total, 0);
        // Identifiers are unique per organization only.
        const res = await ctx.request('POST', '/v2/drivers', { key: otherKey, body: { name: 'Z', identifiers: [{ kind: 'rfid', value: 'card42' }] } });
        assert.equal(res.statusCode, 201, res.body);
      } finally {
        await ctx.close();
      }
    });

    test('who drives what: one ongoing assignment per driver and per vehicle, each change with its events, the vehicle\'s driverId', async () => {
      const { clock, ctx, ada, bob } = await twoVansTwoDrivers(backend);
      try {
        const t0 = clock.now();

        const first = await assign(ctx, { driverId: ada.id, vehicleId: 'van-1' });
        assert.equal(first.startedAt, new Date(t0).toISOString(), 'default: now');
        assert.equal(first.endedAt, null);
        assert.equal(first.source, 'api');
        assert.equal(await driverOf(ctx, 'van-1'), ada.id);
        assert.equal((await ctx.request('GET', `/v2/drivers/${ada.id}`)).json<Driver>().vehicleId, 'van-1');
        // The same again: answered with the ongoing one, nothing changes.
        assert.equal((await assign(ctx, { driverId: ada.id, vehicleId: 'van-1' }, 200)).id, first.id);

        clock.advance(60_000);
        // Bob takes van-1: Ada's ends when his starts.
        const second = await assign(ctx, { driverId: bob.id, vehicleId: 'van-1' });
        assert.equal(await driverOf(ctx, 'van-1'), bob.id);
        const ended = (await ctx.request('GET', `/v2/driver-assignments/${first.id}`)).json<Assignment>();
        assert.equal(ended.endedAt, second.startedAt);
        assert.equal((await ctx.request('GET', `/v2/drivers/${ada.id}`)).json<Driver>().vehicleId, null);

        clock.advance(60_000);
        // Bob moves to van-2: his van-1 assignment ends; van-1 has no driver.
        const third = await assign(ctx, { driverId: bob.id, vehicleId: 'van-2' });
        assert.equal(await driverOf(ctx, 'van-1'), null);
        assert.equal(await driverOf(ctx, 'van-2'), bob.id);

        // Back in time, before the start of what it would end: refused, nothing changes.
        problem(await ctx.request('POST', '/v2/driver-assignments', { body: { driverId: ada.id, vehicleId: 'van-2', startedAt: new Date(t0).toISOString() } }), 409, 'assignment-conflict');
        problem(await ctx.request('POST', '/v2/driver-assignments', { body: { driverId: ada.id, vehicleId: 'van-2', startedAt: new Date(clock.now() + 3_600_000).toISOString() } }), 400, 'validation-failed', '/startedAt');
        problem(await ctx.request('POST', '/v2/driver-assignments', { body: { driverId: 'drv_00000000000000000000', vehicleId: 'van-2' } }), 404, 'driver-not-found');
        problem(await ctx.request('POST', '/v2/driver-assignments', { body: { driverId: ada.id, vehicleId: 'nope' } }), 404, 'vehicle-not-found');
        problem(await ctx.request('POST', '/v2/driver-assignments', { body: { driverId: ada.id } }), 400, 'validation-failed');
        assert.equal(await driverOf(ctx, 'van-2'), bob.id);

        // Ended by hand: not before its start, then answered as it is.
        problem(await ctx.request('POST', `/v2/driver-assignments/${third.id}/end`, { body: { endedAt: new Date(t0).toISOString() } }), 400, 'validation-failed', '/endedAt');
        clock.advance(30_000);
        const done = (await ctx.request('POST', `/v2/driver-assignments/${third.id}/end`, { body: {} })).json<Assignment>();
        assert.equal(done.endedAt, new Date(clock.now()).toISOString());
        assert.equal(await driverOf(ctx, 'van-2'), null);
        clock.advance(1_000);
        assert.equal((await ctx.request('POST', `/v2/driver-assignments/${third.id}/end`, { body: {} })).json<Assignment>().endedAt, done.endedAt, 'ending again changes nothing');
        problem(await ctx.request('POST', '/v2/driver-assignments/asg_00000000000000000000/end', { body: {} }), 404, 'assignment-not-found');

        // Deleting a driver ends its ongoing assignment; the record stays.
        const fourth = await assign(ctx, { driverId: ada.id, vehicleId: 'van-2' });
        assert.equal((await ctx.request('DELETE', `/v2/drivers/${ada.id}`)).statusCode, 204);
        assert.equal(await driverOf(ctx, 'van-2'), null);
        assert.notEqual((await ctx.request('GET', `/v2/driver-assignments/${fourth.id}`)).json<Assignment>().endedAt, null);

        assert.deepEqual(await driverEvents(ctx, 8), [
          'driver.assigned d van-1',
          'driver.unassigned d van-1 ended', 'driver.assigned d van-1',
          'driver.unassigned d van-1 ended', 'driver.assigned d van-2',
          'driver.unassigned d van-2 ended',
          'driver.assigned d van-2', 'driver.unassigned d van-2 ended',
        ]);

        // Deleting a vehicle takes its assignments with it.
        await ctx.request('DELETE', '/v2/fleet/vehicles/van-1');
        problem(await ctx.request('GET', `/v2/driver-assignments/${first.id}`), 404, 'assignment-not-found');
      } finally {
        await ctx.close();
      }
    });

    test('the list: newest start first, by vehicle, driver and overlapping range, in pages', async () => {
      const { clock, ctx, ada, bob } = await twoVansTwoDrivers(backend);
      try {
        const made: Assignment[] = [];
        // Ada and Bob swap vans every hour, five times.
        for (let hour = 0; hour < 5; hour++) {
          made.push(await assign(ctx, { driverId: ada.id, vehicleId: hour % 2 === 0 ? 'van-1' : 'van-2' }));
          made.push(await assign(ctx, { driverId: bob.id, vehicleId: hour % 2 === 0 ? 'van-2' : 'van-1' }));
          clock.advance(3_600_000);
        }
        const list = async (query: string) => (await ctx.request('GET', `/v2/driver-assignments?${query}`)).json<{ assignments: Assignment[]; nextCursor: string | null }>();
        const all = await list('');
        assert.equal(all.assignments.length, 10);
        assert.equal(all.nextCursor, null);
        const starts = all.assignments.map((a) => Date.parse(a.startedAt));
        assert.deepEqual(starts, [...starts].sort((a, b) => b - a), 'newest start first');
        assert.ok((await list(`driverId=${ada.id}`)).assignments.every((a) => a.driverId === ada.id));
        assert.equal((await list('vehicleId=van-2')).assignments.length, 5);
        // Overlapping [t0 + 1.5 h, t0 + 2.5 h): the assignments of hours 1 and 2.
        const t0 = Date.parse(made[0]!.startedAt);
        const overlapping = await list(`from=${new Date(t0 + 5_400_000).toISOString()}&to=${new Date(t0 + 9_000_000).toISOString()}`);
        assert.deepEqual(overlapping.assignments.map((a) => a.id).sort(), made.slice(2, 6).map((a) => a.id).sort());

        // Pages of three, following nextCursor, give every one once.
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page: { assignments: Assignment[]; nextCursor: string | null } = await list(`limit=3${cursor === null ? '' : `&cursor=${cursor}`}`);
          assert.ok(page.assignments.length <= 3);
          seen.push(...page.assignments.map((a) => a.id));
          cursor = page.nextCursor;
        } while (cursor !== null);
        assert.deepEqual(seen, all.assignments.map((a) => a.id));
        problem(await ctx.request('GET', '/v2/driver-assignments?cursor=bm9wZQ'), 400, 'validation-failed', '/cursor');
        problem(await ctx.request('GET', '/v2/driver-assignments?limit=0'), 400, 'validation-failed');
      } finally {
        await ctx.close();
      }
    });

    test('scopes and groups: dispatch assigns; a credential limited to groups reads drivers and assigns them only to its own vehicles', async () => {
      const ctx = await createTestApp({ backend });
      try {
        await ctx.registerVehicle('van-1');
        await ctx.registerVehicle('van-2');
        const group = (await ctx.request('POST', '/v2/groups', { body: { name: 'Mine' } })).json<{ id: string }>();
        await ctx.request('POST', `/v2/groups/${group.id}/vehicles`, { body: { vehicleIds: ['van-1'] } });
        const ada = await makeDriver(ctx, { name: 'Ada' });

        const reader = await ctx.keyWith(['fleet:read', 'fleet:write']);
        problem(await ctx.request('POST', '/v2/driver-assignments', { key: reader, body: { driverId: ada.id, vehicleId: 'van-1' } }), 403, 'insufficient-scope');
        const dispatcher = await ctx.keyWith(['dispatch']);
        problem(await ctx.request('POST', '/v2/drivers', { key: dispatcher, body: { name: 'X' } }), 403, 'insufficient-scope');

        const made = await ctx.request('POST', '/v2/api-keys', { body: { name: 'scoped', scopes: ['fleet:read', 'fleet:write', 'dispatch'], groupIds: [group.id] } });
        assert.equal(made.statusCode, 201, made.body);
        const scoped = made.json<{ key: string }>().key;
        assert.equal((await ctx.request('GET', `/v2/drivers/${ada.id}`, { key: scoped })).statusCode, 200);
        problem(await ctx.request('POST', '/v2/drivers', { key: scoped, body: { name: 'X' } }), 403, 'outside-groups');
        problem(await ctx.request('PATCH', `/v2/drivers/${ada.id}`, { key: scoped, body: { name: 'X' } }), 403, 'outside-groups');
        problem(await ctx.request('POST', '/v2/driver-assignments', { key: scoped, body: { driverId: ada.id, vehicleId: 'van-2' } }), 404, 'vehicle-not-found');
        const mine = await assign(ctx, { driverId: ada.id, vehicleId: 'van-1' }, 201, scoped);
        problem(await ctx.request('GET', '/v2/driver-assignments', { key: scoped }), 403, 'outside-groups');
        assert.deepEqual((await ctx.request('GET', '/v2/driver-assignments?vehicleId=van-1', { key: scoped })).json<{ assignments: Assignment[] }>().assignments.map((a) => a.id), [mine.id]);
        problem(await ctx.request('GET', '/v2/driver-assignments?vehicleId=van-2', { key: scoped }), 404, 'vehicle-not-found');

        // Van-2's assignment is not there for it.
        const theirs = await assign(ctx, { driverId: ada.id, vehicleId: 'van-2' });
        problem(await ctx.request('GET', `/v2/driver-assignments/${theirs.id}`, { key: scoped }), 404, 'assignment-not-found');
        problem(await ctx.request('POST', `/v2/driver-assignments/${theirs.id}/end`, { key: scoped, body: {} }), 404, 'assignment-not-found');

        // Audited, by the resource's id.
        const audit = (await ctx.request('GET', '/v2/audit-log?limit=100')).json<{ entries: Array<{ action: string; resource: { type: string; id: string | null } }> }>();
        const actions = audit.entries.map((e) => `${e.action} ${e.resource.id}`);
        assert.ok(actions.includes(`driver.created ${ada.id}`), actions.join('\n'));
        assert.ok(actions.includes(`driver_assignment.created ${mine.id}`), actions.join('\n'));
      } finally {
        await ctx.close();
      }
    });
  });
}
