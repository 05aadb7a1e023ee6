// Maintenance through the API on both stores (docs/API.md "Maintenance"): schedules by distance,
// engine hours and days, each vehicle's items from its meters, due soon and overdue announced once
// per due cycle whether a record or the clock crossed the line (two checks at once included),
// service records that restart the intervals (an older one entered late restarts nothing), the
// fleet-wide list, a vehicle that joins a schedule's group later, replacing and deleting schedules,
// and bad input refused with nothing stored.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EventPort } from '../src/events/port.ts';
import { createVehicleScope } from '../src/groups/scope.ts';
import { createMaintenanceService } from '../src/maintenance/service.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock, type ManualClock } from './helpers/clock.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { eventValidator, feedEvents } from './helpers/events.ts';

const skipPostgres = await skipUnlessPostgres();
const DAY = 86_400_000;

interface Item { vehicleId?: string; scheduleId: string; name: string; state: string; lastService: { id: string } | null; nextDue: { odometerKm?: number; engineHours?: number; at?: string } }
interface Event { type: string; vehicleId: string; data: { scheduleId: string | null; state: string | null; meters: { odometerKm: number }; nextDue: Item['nextDue'] | null; serviceRecord?: { id: string } } }

function problem(res: { statusCode: number; body: string; json<T>(): T }, status: number, code: string, path?: string) {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json<{ code: string; errors?: Array<{ path: string }> }>();
  assert.equal(body.code, code, res.body);
  if (path !== undefined) assert.ok(body.errors?.some((e) => e.path === path), res.body);
}

async function ok<T>(ctx: TestApp, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, status = 200): Promise<T> {
  const res = await ctx.request(method, url, body === undefined ? {} : { body });
  assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`);
  return (res.body === '' ? undefined : res.json()) as T;
}

/** The maintenance events of the feed, once at least `atLeast` are there (see feedEvents). */
const maintenanceEvents = (ctx: TestApp, atLeast: number) => feedEvents<Event>(ctx, 'types=maintenance.due_soon,maintenance.overdue,maintenance.completed', atLeast);

/** The app, its clock, and a check the test runs itself (the app's own runs as its clock passes its interval). */
async function setUp(backend: 'sqlite' | 'postgres'): Promise<{ ctx: TestApp; clock: ManualClock; check: () => Promise<void> }> {
  const clock = manualClock(Date.parse('2026-11-01T08:00:00.000Z'));
  const ctx = await createTestApp({ backend, clock });
  const silent: EventPort = { emit: () => undefined };
  const service = createMaintenanceService({
    store: ctx.stores.maintenance, vehicles: ctx.stores.vehicles, groups: ctx.stores.groups, scope: createVehicleScope(ctx.stores.groups), clock, events: silent,
  });
  return { ctx, clock, check: () => service.check(ctx.organizationId) };
}

async function odometer(ctx: TestApp, clock: ManualClock, vehicleId: string, km: number) {
  await ok(ctx, 'POST', `/v2/telemetry/${vehicleId}`, { timestamp: new Date(clock.now()).toISOString(), data: { odometer: km } }, 202);
}

test('schedules per organization stop at FLEET_QUOTA_MAINTENANCE_SCHEDULES; a deletion frees a place; another organization counts apart', async () => {
  const ctx = await createTestApp({ env: { FLEET_QUOTA_MAINTENANCE_SCHEDULES: '2' } });
  try {
    const body = (name: string) => ({ name, every: { days: 30 } });
    const first = await ok<{ id: string }>(ctx, 'POST', '/v2/maintenance-schedules', body('One'), 201);
    await ok(ctx, 'POST', '/v2/maintenance-schedules', body('Two'), 201);
    const refused = await ctx.request('POST', '/v2/maintenance-schedules', { body: body('Three') });
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().code, 'quota-exceeded');
    assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/maintenance-schedules')).total, 2);
    const { key } = await ctx.otherOrganization();
    assert.equal((await ctx.request('POST', '/v2/maintenance-schedules', { body: body('Theirs'), key })).statusCode, 201);
    await ok(ctx, 'DELETE', `/v2/maintenance-schedules/${first.id}`, undefined, 204);
    await ok(ctx, 'POST', '/v2/maintenance-schedules', body('Three'), 201);
  } finally {
    await ctx.close();
  }
});

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`maintenance on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('due soon and overdue by distance and by date, announced once per cycle; a service restarts the intervals', async () => {
      const { ctx, clock, check } = await setUp(backend);
      try {
        await ctx.registerVehicle('van-1');
        await ctx.registerVehicle('van-2');
        await odometer(ctx, clock, 'van-1', 500);
        const created = await ctx.request('POST', '/v2/maintenance-schedules', { body: { name: 'Oil change', every: { km: 1000, days: 30 }, dueSoon: { km: 100, days: 5 } } });
        assert.equal(created.statusCode, 201, created.body);
        const schedule = created.json<{ id: string; vehicleIds: null; groupId: null; dueSoon: object }>();
        assert.match(created.headers.location as string, new RegExp(`/v2/maintenance-schedules/${schedule.id}$`));
        const t0 = clock.now();

        // Each vehicle's intervals run from its meters and the date when the schedule was created.
        let van1 = (await ok<{ items: Item[] }>(ctx, 'GET', '/v2/fleet/vehicles/van-1/maintenance')).items;
        assert.deepEqual(van1.map((i) => [i.name, i.state, i.nextDue, i.lastService]), [['Oil change', 'ok', { odometerKm: 1500, at: new Date(t0 + 30 * DAY).toISOString() }, null]]);
        assert.equal((await ok<{ items: Item[] }>(ctx, 'GET', '/v2/fleet/vehicles/van-2/maintenance')).items[0]!.nextDue.odometerKm, 1000);

        // A record crosses into due soon: announced once, however often the check runs.
        clock.advance(1000);
        await odometer(ctx, clock, 'van-1', 1420);
        await Promise.all([check(), check()]);
        await check();
        let events = await maintenanceEvents(ctx, 1);
        assert.deepEqual(events.map((e) => [e.type, e.vehicleId, e.data.state, e.data.meters.odometerKm]), [['maintenance.due_soon', 'van-1', 'due_soon', 1420]]);
        clock.advance(1000);
        await odometer(ctx, clock, 'van-1', 1510);
        await check();
        await check();
        events = await maintenanceEvents(ctx, 2);
        assert.deepEqual(events.map((e) => [e.type, e.vehicleId]), [['maintenance.due_soon', 'van-1'], ['maintenance.overdue', 'van-1']]);

        // The clock crosses van-2's lines: due soon 5 days before, overdue on the day.
        clock.advance(25 * DAY + 1000);
        await check();
        clock.advance(5 * DAY);
        await check();
        events = (await maintenanceEvents(ctx, 4)).filter((e) => e.vehicleId === 'van-2');
        assert.deepEqual(events.map((e) => e.type), ['maintenance.due_soon', 'maintenance.overdue']);
        const fleet = await ok<{ items: Item[]; total: number }>(ctx, 'GET', '/v2/maintenance?state=overdue');
        assert.deepEqual(fleet.items.map((i) => i.vehicleId), ['van-1', 'van-2']);
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/maintenance?state=ok')).total, 0);

        // A service for the schedule restarts its intervals from its values (the meters now when left out).
        const serviced = await ctx.request('POST', '/v2/fleet/vehicles/van-1/service-records', {
          body: { scheduleId: schedule.id, performedAt: new Date(clock.now()).toISOString(), notes: 'Oil and filter', cost: { amount: 180, currency: 'EUR' } },
        });
        assert.equal(serviced.statusCode, 201, serviced.body);
        const record = serviced.json<{ id: string; odometerKm: number; engineHours: number }>();
        assert.equal(record.odometerKm, 1510);
        van1 = (await ok<{ items: Item[] }>(ctx, 'GET', '/v2/fleet/vehicles/van-1/maintenance')).items;
        assert.equal(van1[0]!.state, 'ok');
        assert.equal(van1[0]!.lastService?.id, record.id);
        assert.equal(van1[0]!.nextDue.odometerKm, 2510);
        const completed = (await maintenanceEvents(ctx, 5)).filter((e) => e.type === 'maintenance.completed');
        assert.deepEqual(completed.map((e) => [e.vehicleId, e.data.scheduleId, e.data.state, e.data.serviceRecord?.id]), [['van-1', schedule.id, 'ok', record.id]]);
        // The new cycle announces again when it crosses the line.
        clock.advance(1000);
        await odometer(ctx, clock, 'van-1', 2600);
        await check();
        assert.equal((await maintenanceEvents(ctx, 6)).filter((e) => e.type === 'maintenance.overdue' && e.vehicleId === 'van-1').length, 2);

        // An older service entered late is kept, and restarts nothing.
        const late = await ok<{ id: string }>(ctx, 'POST', '/v2/fleet/vehicles/van-1/service-records', { scheduleId: schedule.id, performedAt: new Date(t0).toISOString(), odometerKm: 600 }, 201);
        van1 = (await ok<{ items: Item[] }>(ctx, 'GET', '/v2/fleet/vehicles/van-1/maintenance')).items;
        assert.equal(van1[0]!.lastService?.id, record.id);
        const list = await ok<{ serviceRecords: Array<{ id: string }>; total: number }>(ctx, 'GET', '/v2/fleet/vehicles/van-1/service-records');
        assert.deepEqual(list.serviceRecords.map((r) => r.id), [record.id, late.id], 'newest first');
        // One without a schedule is a record of its own.
        await ok(ctx, 'POST', '/v2/fleet/vehicles/van-2/service-records', { performedAt: new Date(clock.now()).toISOString(), notes: 'New wipers' }, 201);
        assert.equal((await maintenanceEvents(ctx, 8)).filter((e) => e.type === 'maintenance.completed' && e.data.scheduleId === null).length, 1);
        // Every one of them is an instance of its type's schema in the OpenAPI document.
        const validate = await eventValidator(ctx);
        for (const event of await maintenanceEvents(ctx, 8)) assert.ok(validate(event), `${JSON.stringify(event)}\n${JSON.stringify(validate.errors)}`);
      } finally {
        await ctx.close();
      }
    });

    test('schedules for listed vehicles or a group; a vehicle that joins later; replaced and deleted; bad input stores nothing', async () => {
      const { ctx, clock, check } = await setUp(backend);
      try {
        for (const id of ['van-1', 'van-2', 'van-3']) await ctx.registerVehicle(id);
        const group = await ok<{ id: string }>(ctx, 'POST', '/v2/groups', { name: 'North' }, 201);
        await ok(ctx, 'POST', `/v2/groups/${group.id}/vehicles`, { vehicleIds: ['van-1'] }, 204);
        const byGroup = await ok<{ id: string }>(ctx, 'POST', '/v2/maintenance-schedules', { name: 'Brakes', groupId: group.id, every: { engineHours: 500 } }, 201);
        clock.advance(1000); // items come in the order their schedules were created
        const listed = await ok<{ id: string }>(ctx, 'POST', '/v2/maintenance-schedules', { name: 'Tyres', vehicleIds: ['van-2', 'van-3'], every: { km: 40000 } }, 201);
        const names = async (vehicleId: string) => (await ok<{ items: Item[] }>(ctx, 'GET', `/v2/fleet/vehicles/${vehicleId}/maintenance`)).items.map((i) => i.name);
        assert.deepEqual(await names('van-1'), ['Brakes']);
        assert.deepEqual(await names('van-2'), ['Tyres']);

        // van-2 joins the group, with 100 engine hours by then: its item runs from there.
        await ok(ctx, 'PUT', '/v2/fleet/vehicles/van-2/meters', { engineHours: 100 });
        await ok(ctx, 'POST', `/v2/groups/${group.id}/vehicles`, { vehicleIds: ['van-2'] }, 204);
        await check();
        const van2 = (await ok<{ items: Item[] }>(ctx, 'GET', '/v2/fleet/vehicles/van-2/maintenance')).items;
        assert.deepEqual(van2.map((i) => [i.name, i.nextDue]), [['Brakes', { engineHours: 600 }], ['Tyres', { odometerKm: 40000 }]]);

        // Replaced to apply to van-3 alone: van-2 loses its item; deleted: gone everywhere.
        const replaced = await ok<{ vehicleIds: string[] }>(ctx, 'PUT', `/v2/maintenance-schedules/${listed.id}`, { name: 'Tyres', vehicleIds: ['van-3'], every: { km: 30000 } });
        assert.deepEqual(replaced.vehicleIds, ['van-3']);
        assert.deepEqual(await names('van-2'), ['Brakes']);
        assert.equal((await ok<{ items: Item[] }>(ctx, 'GET', '/v2/fleet/vehicles/van-3/maintenance')).items[0]!.nextDue.odometerKm, 30000);
        // The first service restarts the intervals even when done before the schedule began (entered afterwards).
        const first = await ok<{ id: string }>(ctx, 'POST', '/v2/fleet/vehicles/van-3/service-records',
          { scheduleId: listed.id, performedAt: new Date(clock.now() - 7 * DAY).toISOString(), odometerKm: 100 }, 201);
        const van3 = (await ok<{ items: Item[] }>(ctx, 'GET', '/v2/fleet/vehicles/van-3/maintenance')).items[0]!;
        assert.deepEqual([van3.lastService?.id, van3.nextDue.odometerKm], [first.id, 30100]);
        await ok(ctx, 'DELETE', `/v2/maintenance-schedules/${byGroup.id}`, undefined, 204);
        assert.deepEqual(await names('van-1'), []);
        problem(await ctx.request('GET', `/v2/maintenance-schedules/${byGroup.id}`), 404, 'schedule-not-found');
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/maintenance-schedules')).total, 1);

        // Bad input: a problem response, and nothing stored.
        const post = (body: unknown) => ctx.request('POST', '/v2/maintenance-schedules', { body });
        problem(await post({ name: 'X', every: {} }), 400, 'validation-failed', '/every');
        problem(await post({ name: 'X', every: { km: 0 } }), 400, 'validation-failed', '/every/km');
        problem(await post({ name: 'X', every: { days: -1 } }), 400, 'validation-failed', '/every/days');
        problem(await post({ name: 'X', every: { km: 10 }, vehicleIds: ['van-1'], groupId: group.id }), 400, 'validation-failed', '/groupId');
        problem(await post({ name: 'X', every: { km: 10 }, groupId: 'grp_00000000000000000000' }), 404, 'group-not-found');
        problem(await post({ name: '', every: { km: 10 } }), 400, 'validation-failed');
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/maintenance-schedules')).total, 1);
        const service = (vehicleId: string, body: unknown) => ctx.request('POST', `/v2/fleet/vehicles/${vehicleId}/service-records`, { body });
        const now = new Date(clock.now()).toISOString();
        problem(await service('van-1', { performedAt: new Date(clock.now() + DAY).toISOString() }), 400, 'validation-failed', '/performedAt');
        problem(await service('van-1', { performedAt: now, odometerKm: -1 }), 400, 'validation-failed', '/odometerKm');
        problem(await service('van-1', { performedAt: now, cost: { amount: 5, currency: 'euro' } }), 400, 'validation-failed');
        problem(await service('van-1', { performedAt: now, scheduleId: 'mnt_00000000000000000000' }), 404, 'schedule-not-found');
        problem(await service('van-1', { performedAt: now, scheduleId: listed.id }), 409, 'schedule-not-applicable');
        problem(await service('van-9', { performedAt: now }), 404, 'vehicle-not-found');
        problem(await ctx.request('GET', '/v2/maintenance?state=late'), 400, 'validation-failed');
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/fleet/vehicles/van-1/service-records')).total, 0);
        assert.deepEqual((await maintenanceEvents(ctx, 1)).map((e) => [e.type, e.vehicleId]), [['maintenance.completed', 'van-3']], 'only the service above');

        // Another organization sees none of it; a credential limited to groups changes no schedule.
        const { key } = await ctx.otherOrganization();
        problem(await ctx.request('GET', `/v2/maintenance-schedules/${listed.id}`, { key }), 404, 'schedule-not-found');
        assert.deepEqual((await ctx.request('GET', '/v2/maintenance', { key })).json<{ items: unknown[] }>().items, []);
      } finally {
        await ctx.close();
      }
    });
  });
}
