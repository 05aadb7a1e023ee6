// Vehicle groups (docs/API.md "Vehicle groups") through the whole HTTP stack, on both stores:
// the group's life, members put in and taken out (all or none), a vehicle's groupIds at
// registration and by PATCH, the list filter, deletions on either side, quota, another
// organization's groups, bad input.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

const skipPostgres = await skipUnlessPostgres();

async function createGroup(app: TestApp, body: Record<string, unknown>, key = app.adminKey) {
  const res = await app.request('POST', '/v2/groups', { body, key });
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(res.headers.location, `/v2/groups/${res.json().id}`);
  return res.json<{ id: string; name: string; description: string | null; vehicleCount: number; createdAt: string; updatedAt: string }>();
}

const groupIdsOf = async (app: TestApp, vehicleId: string) => (await app.request('GET', `/v2/fleet/vehicles/${vehicleId}`)).json().groupIds;
const listed = async (app: TestApp, query: string) => (await app.request('GET', `/v2/fleet/vehicles${query}`)).json();

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`vehicle groups on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('a group\'s life: created, listed, read, renamed, members in and out, deleted', async (t) => {
      const app = await createTestApp({ backend, env: { FLEET_QUOTA_GROUPS: '3' } });
      t.after(() => app.close());
      const berlin = await createGroup(app, { name: 'Berlin vans', description: 'Depot Tempelhof' });
      assert.match(berlin.id, /^grp_[A-Za-z0-9]{20}$/);
      assert.deepEqual({ ...berlin, id: '', createdAt: '', updatedAt: '' }, { id: '', name: 'Berlin vans', description: 'Depot Tempelhof', vehicleCount: 0, createdAt: '', updatedAt: '' });
      const munich = await createGroup(app, { name: 'Munich' });
      assert.equal(munich.description, null);

      for (const id of ['van-1', 'van-2', 'van-3']) await app.registerVehicle(id);
      // All or none: one missing vehicle adds nothing.
      const partly = await app.request('POST', `/v2/groups/${berlin.id}/vehicles`, { body: { vehicleIds: ['van-1', 'ghost-9'] } });
      assert.equal(partly.statusCode, 404);
      assert.equal(partly.json().code, 'vehicle-not-found');
      assert.match(partly.json().detail, /ghost-9/);
      assert.deepEqual(await groupIdsOf(app, 'van-1'), []);
      assert.equal((await app.request('POST', `/v2/groups/${berlin.id}/vehicles`, { body: { vehicleIds: ['van-1', 'van-2'] } })).statusCode, 204);
      // Again, with one already in: no error, no duplicate.
      assert.equal((await app.request('POST', `/v2/groups/${berlin.id}/vehicles`, { body: { vehicleIds: ['van-2', 'van-3'] } })).statusCode, 204);
      assert.equal((await app.request('POST', `/v2/groups/${munich.id}/vehicles`, { body: { vehicleIds: ['van-3'] } })).statusCode, 204);
      assert.deepEqual(await groupIdsOf(app, 'van-3'), [berlin.id, munich.id].sort());
      assert.equal((await app.request('GET', `/v2/groups/${berlin.id}`)).json().vehicleCount, 3);

      // The list filter, with the others.
      assert.deepEqual((await listed(app, `?groupId=${munich.id}`)).vehicles.map((v: { id: string }) => v.id), ['van-3']);
      assert.equal((await listed(app, `?groupId=${berlin.id}&limit=2`)).total, 3);
      assert.deepEqual((await listed(app, `?groupId=${berlin.id}&status=registered&limit=1&offset=1`)).vehicles.map((v: { id: string }) => v.id), ['van-2']);
      assert.deepEqual((await listed(app, '?groupId=grp_00000000000000000000')).vehicles, []);
      assert.deepEqual((await app.request('GET', '/api/v1/fleet')).json().vehicles.map((v: { groupIds: string[] }) => v.groupIds.length), [1, 1, 2]);

      // Out again: 404 for one not in it.
      assert.equal((await app.request('DELETE', `/v2/groups/${berlin.id}/vehicles/van-1`)).statusCode, 204);
      assert.equal((await app.request('DELETE', `/v2/groups/${berlin.id}/vehicles/van-1`)).statusCode, 404);
      assert.equal((await app.request('DELETE', `/v2/groups/${berlin.id}/vehicles/ghost-9`)).statusCode, 404);

      const renamed = await app.request('PATCH', `/v2/groups/${berlin.id}`, { body: { name: 'Berlin', description: null } });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(renamed.json().name, 'Berlin');
      assert.equal(renamed.json().description, null);
      assert.equal(renamed.json().vehicleCount, 2);
      assert.ok(renamed.json().updatedAt > berlin.updatedAt);
      assert.equal((await app.request('PATCH', `/v2/groups/${berlin.id}`, { body: {} })).statusCode, 400, 'nothing to change');

      const page = (await app.request('GET', '/v2/groups?limit=1&offset=1')).json();
      assert.deepEqual({ total: page.total, names: page.groups.map((g: { name: string }) => g.name) }, { total: 2, names: ['Munich'] });

      // A vehicle deleted leaves its groups; a group deleted leaves its vehicles.
      assert.equal((await app.request('DELETE', '/v2/fleet/vehicles/van-3')).statusCode, 204);
      assert.equal((await app.request('GET', `/v2/groups/${munich.id}`)).json().vehicleCount, 0);
      assert.equal((await app.request('DELETE', `/v2/groups/${berlin.id}`)).statusCode, 204);
      assert.equal((await app.request('DELETE', `/v2/groups/${berlin.id}`)).statusCode, 404);
      assert.deepEqual(await groupIdsOf(app, 'van-2'), []);
      assert.equal((await app.request('GET', `/v2/groups/${berlin.id}`)).statusCode, 404);
      assert.equal((await app.request('POST', `/v2/groups/${berlin.id}/vehicles`, { body: { vehicleIds: ['van-2'] } })).json().code, 'group-not-found');

      // The quota (3): two more fit, the next does not.
      await createGroup(app, { name: 'c' });
      await createGroup(app, { name: 'd' });
      const over = await app.request('POST', '/v2/groups', { body: { name: 'e' } });
      assert.equal(over.statusCode, 403);
      assert.equal(over.json().code, 'quota-exceeded');
    });

    test('a vehicle\'s groupIds: given at registration, replaced by PATCH, only groups of its organization', async (t) => {
      const app = await createTestApp({ backend });
      t.after(() => app.close());
      const a = await createGroup(app, { name: 'a' });
      const b = await createGroup(app, { name: 'b' });
      const created = await app.registerVehicle('van-1', { groupIds: [b.id, a.id] });
      assert.deepEqual(created.groupIds, [a.id, b.id].sort());
      assert.equal((await app.request('GET', `/v2/groups/${a.id}`)).json().vehicleCount, 1);

      const patched = await app.request('PATCH', '/v2/fleet/vehicles/van-1', { body: { groupIds: [b.id] } });
      assert.equal(patched.statusCode, 200, patched.body);
      assert.deepEqual(patched.json().groupIds, [b.id]);
      assert.deepEqual(await groupIdsOf(app, 'van-1'), [b.id]);
      // A PATCH without groupIds keeps them; a status change keeps them.
      assert.deepEqual((await app.request('PATCH', '/v2/fleet/vehicles/van-1', { body: { name: 'One' } })).json().groupIds, [b.id]);
      assert.deepEqual((await app.request('PUT', '/v2/fleet/vehicles/van-1/status', { body: { status: 'maintenance' } })).json().groupIds, [b.id]);
      // The vehicle.updated event carries them too.
      // On PostgreSQL an event is readable once every older transaction on the server has ended.
      let events: { data: { groupIds: string[] } }[] = [];
      for (const deadline = Date.now() + 15_000; events.length < 2 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
        events = (await app.request('GET', '/v2/events?types=vehicle.updated&vehicleId=van-1')).json().events;
      }
      assert.deepEqual(events.map((e: { data: { groupIds: string[] } }) => e.data.groupIds), [[b.id], [b.id]]);

      // Another organization's group, or one that does not exist: 404, nothing changed or created.
      const other = await app.otherOrganization();
      const theirs = await createGroup(app, { name: 'theirs' }, other.key);
      for (const groupIds of [[theirs.id], ['grp_00000000000000000000'], [a.id, theirs.id]]) {
        const res = await app.request('PATCH', '/v2/fleet/vehicles/van-1', { body: { groupIds } });
        assert.equal(res.statusCode, 404, JSON.stringify(groupIds));
        assert.equal(res.json().code, 'group-not-found');
        const registered = await app.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-2', type: 'van', groupIds } });
        assert.equal(registered.statusCode, 404);
      }
      assert.deepEqual(await groupIdsOf(app, 'van-1'), [b.id]);
      assert.equal((await app.request('GET', '/v2/fleet/vehicles/van-2')).statusCode, 404);
      // Another organization's groups are not seen, read or changed.
      assert.equal((await app.request('GET', `/v2/groups/${theirs.id}`)).statusCode, 404);
      assert.equal((await app.request('DELETE', `/v2/groups/${theirs.id}`)).statusCode, 404);
      assert.equal((await app.request('POST', `/v2/groups/${theirs.id}/vehicles`, { body: { vehicleIds: ['van-1'] } })).statusCode, 404);
      assert.deepEqual((await app.request('GET', '/v2/groups')).json().groups.map((g: { name: string }) => g.name), ['a', 'b']);
      // Nor are another organization's vehicles put in one's own group.
      await app.registerVehicle('their-van', {}, other.key);
      assert.equal((await app.request('POST', `/v2/groups/${a.id}/vehicles`, { body: { vehicleIds: ['their-van'] } })).statusCode, 404);
    });

    test('a key limited to a group: its lists, feed, alerts and devices, on this store; its group cannot be deleted', async (t) => {
      const app = await createTestApp({ backend });
      t.after(() => app.close());
      const own = await createGroup(app, { name: 'own' });
      const other = await createGroup(app, { name: 'other' });
      await app.registerVehicle('in-1', { groupIds: [own.id] });
      await app.registerVehicle('out-1', { groupIds: [other.id] });
      await app.registerVehicle('loose-1');
      const rule = await app.request('POST', '/v2/alert-rules', { body: { name: 'fast', condition: { kind: 'threshold', field: 'speed', op: '>', value: 100 } } });
      assert.equal(rule.statusCode, 201, rule.body);
      for (const id of ['in-1', 'out-1', 'loose-1']) {
        assert.equal((await app.request('POST', `/v2/telemetry/${id}`, { body: { data: { speed: 150 } } })).statusCode, 202);
        assert.equal((await app.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: `dev-${id}`, vehicleId: id } })).statusCode, 201);
      }
      const made = await app.request('POST', '/v2/api-keys', { body: { name: 'own only', scopes: ['fleet:read', 'events:read', 'telemetry:read'], groupIds: [own.id] } });
      assert.equal(made.statusCode, 201, made.body);
      const key = made.json().key;
      const vehicles = (await app.request('GET', '/v2/fleet/vehicles', { key })).json();
      assert.deepEqual([vehicles.vehicles.map((v: { id: string }) => v.id), vehicles.total], [['in-1'], 1]);
      const devices = (await app.request('GET', '/v2/devices', { key })).json();
      assert.deepEqual([devices.devices.map((d: { vehicleId: string }) => d.vehicleId), devices.total], [['in-1'], 1]);
      // The feed and alerts may take a moment on PostgreSQL (another test's open transaction hides newer events).
      let events: { vehicleId: string; type: string }[] = [];
      for (let i = 0; i < 50 && !events.some((e) => e.type === 'alert.opened'); i++) {
        events = (await app.request('GET', '/v2/events', { key, query: { limit: '1000' } })).json().events;
        if (!events.some((e) => e.type === 'alert.opened')) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(events.length > 0);
      assert.deepEqual([...new Set(events.map((e) => e.vehicleId))], ['in-1']);
      const alerts = (await app.request('GET', '/v2/alerts', { key })).json().alerts;
      assert.deepEqual(alerts.map((a: { vehicleId: string }) => a.vehicleId), ['in-1']);
      const outAlert = (await app.request('GET', '/v2/alerts', { query: { vehicleId: 'out-1' } })).json().alerts[0];
      assert.equal((await app.request('GET', `/v2/alerts/${outAlert.id}`, { key })).json().code, 'alert-not-found');
      assert.equal((await app.request('DELETE', `/v2/groups/${own.id}`)).json().code, 'group-in-use');
      assert.equal((await app.request('DELETE', `/v2/groups/${other.id}`)).statusCode, 204, 'a group nobody is limited to goes');
    });
  });
}

test('bad input: a problem response, nothing stored', async (t) => {
  const app = await createTestApp();
  t.after(() => app.close());
  const group = await createGroup(app, { name: 'g' });
  await app.registerVehicle('van-1');
  const cases: [string, string, unknown][] = [
    ['POST', '/v2/groups', {}],
    ['POST', '/v2/groups', { name: '' }],
    ['POST', '/v2/groups', { name: 'x'.repeat(101) }],
    ['POST', '/v2/groups', { name: 'a\u0000b' }],
    ['POST', '/v2/groups', { name: 'ok', extra: 1 }],
    ['PATCH', `/v2/groups/${group.id}`, { name: null }],
    ['GET', '/v2/groups/not-a-group', undefined],
    ['POST', `/v2/groups/${group.id}/vehicles`, { vehicleIds: [] }],
    ['POST', `/v2/groups/${group.id}/vehicles`, { vehicleIds: ['van-1', 'van-1'] }],
    ['POST', `/v2/groups/${group.id}/vehicles`, { vehicleIds: Array.from({ length: 1001 }, (_, i) => `v-${i}`) }],
    ['PATCH', '/v2/fleet/vehicles/van-1', { groupIds: ['nope'] }],
    ['PATCH', '/v2/fleet/vehicles/van-1', { groupIds: [group.id, group.id] }],
    ['POST', '/v2/fleet/vehicles', { vehicleId: 'van-2', type: 'van', groupIds: 'grp_x' }],
    ['GET', '/v2/fleet/vehicles?groupId=berlin', undefined],
  ];
  for (const [method, url, body] of cases) {
    const res = await app.request(method, url, body === undefined ? {} : { body });
    assert.equal(res.statusCode, 400, `${method} ${url} ${JSON.stringify(body)?.slice(0, 60)}: ${res.statusCode} ${res.body}`);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  }
  assert.equal((await app.request('GET', '/v2/groups')).json().total, 1);
  assert.equal((await app.request('GET', `/v2/groups/${group.id}`)).json().vehicleCount, 0);
  assert.equal((await app.request('GET', '/v2/fleet/vehicles')).json().total, 1);
  // Reading needs fleet:read; changing fleet:write.
  const reader = await app.keyWith(['fleet:read']);
  assert.equal((await app.request('GET', '/v2/groups', { key: reader })).statusCode, 200);
  assert.equal((await app.request('POST', '/v2/groups', { key: reader, body: { name: 'no' } })).statusCode, 403);
  assert.equal((await app.request('POST', `/v2/groups/${group.id}/vehicles`, { key: reader, body: { vehicleIds: ['van-1'] } })).statusCode, 403);
});
