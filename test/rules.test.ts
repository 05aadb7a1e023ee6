// Geofences, alert rules and alerts through the HTTP stack (docs/API.md "Geofences", "Alert rules
// and alerts"): records judged in time order as they are committed, events in the feed, alerts
// opened once and resolved by the data or by hand, state kept across a restart.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp({ offlineCheckMs: 100 });
});
after(() => ctx.close());

const T = Date.now() - 3_600_000;
const at = (seconds: number) => new Date(T + seconds * 1000).toISOString();
// A square of about 1.1 km around (13.40, 52.52), and a circle of 300 m east of it.
const SQUARE = { type: 'Polygon', coordinates: [[[13.395, 52.515], [13.405, 52.515], [13.405, 52.525], [13.395, 52.525], [13.395, 52.515]]] };
const CIRCLE = { type: 'Circle', coordinates: [13.45, 52.52], radius: 300 };

async function send(vehicleId: string, records: { t: number; data: Record<string, unknown> }[], app = ctx) {
  const res = await app.request('POST', `/v2/telemetry/${vehicleId}`, { body: { records: records.map((r) => ({ timestamp: at(r.t), data: r.data })) } });
  assert.equal(res.statusCode, 202, res.body);
}

async function eventsOf(vehicleId: string, types: string, app = ctx) {
  const res = await app.request('GET', '/v2/events', { query: { vehicleId, types, limit: '1000' } });
  return res.json().events as { type: string; occurredAt: string; data: Record<string, any> }[];
}

async function createGeofence(body: Record<string, unknown>, app = ctx) {
  const res = await app.request('POST', '/v2/geofences', { body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

describe('geofences', () => {
  test('a route through a geofence gives exactly one enter and one exit; membership both ways', async () => {
    const square = await createGeofence({ name: 'Depot', geometry: SQUARE });
    assert.match(square.id, /^gf_/);
    await ctx.registerVehicle('g-1');
    await send('g-1', [
      { t: 0, data: { location: { lat: 52.50, lng: 13.40 } } },
      { t: 10, data: { location: { lat: 52.516, lng: 13.40 } } },
      { t: 20, data: { speed: 10 } },
      { t: 30, data: { location: { lat: 52.52, lng: 13.40 } } },
    ]);
    assert.deepEqual((await ctx.request('GET', `/v2/geofences/${square.id}/vehicles`)).json(), { vehicleIds: ['g-1'] });
    assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/g-1/geofences')).json(), { geofences: [{ id: square.id, name: 'Depot' }] });
    await send('g-1', [{ t: 40, data: { location: { lat: 52.53, lng: 13.40 } } }, { t: 50, data: { location: { lat: 52.54, lng: 13.40 } } }]);
    const events = await eventsOf('g-1', 'geofence.entered,geofence.exited');
    assert.deepEqual(events.map((e) => [e.type, e.occurredAt, e.data.geofenceId, e.data.name]), [
      ['geofence.entered', at(10), square.id, 'Depot'], ['geofence.exited', at(40), square.id, 'Depot'],
    ]);
    assert.deepEqual(events[0]!.data.location, { lat: 52.516, lng: 13.40 });
    assert.deepEqual((await ctx.request('GET', `/v2/geofences/${square.id}/vehicles`)).json(), { vehicleIds: [] });
  });

  test('out-of-order records change nothing; the first location counts from outside; boundaries are inside', async () => {
    const circle = await createGeofence({ name: 'Yard', geometry: CIRCLE });
    await ctx.registerVehicle('g-2');
    await send('g-2', [{ t: 100, data: { location: { lat: 52.52, lng: 13.45 } } }]);
    await send('g-2', [{ t: 50, data: { location: { lat: 52.60, lng: 13.45 } } }]);
    const events = await eventsOf('g-2', 'geofence.entered,geofence.exited');
    assert.deepEqual(events.map((e) => [e.type, e.data.geofenceId]), [['geofence.entered', circle.id]]);
    // A vertex of the square is on its boundary: inside.
    const square = await createGeofence({ name: 'Edge', geometry: SQUARE, vehicleIds: ['g-3'] });
    await ctx.registerVehicle('g-3');
    await send('g-3', [{ t: 0, data: { location: { lat: 52.515, lng: 13.395 } } }]);
    assert.ok((await eventsOf('g-3', 'geofence.entered')).some((e) => e.data.geofenceId === square.id));
  });

  test('a geofence limited to some vehicles ignores the others; deleting one leaves without an exit', async () => {
    const only = await createGeofence({ name: 'Only g-5', geometry: CIRCLE, vehicleIds: ['g-5'] });
    await ctx.registerVehicle('g-4');
    await ctx.registerVehicle('g-5');
    for (const v of ['g-4', 'g-5']) await send(v, [{ t: 0, data: { location: { lat: 52.52, lng: 13.45 } } }]);
    assert.ok(!(await eventsOf('g-4', 'geofence.entered')).some((e) => e.data.geofenceId === only.id));
    assert.ok((await eventsOf('g-5', 'geofence.entered')).some((e) => e.data.geofenceId === only.id));
    assert.equal((await ctx.request('DELETE', `/v2/geofences/${only.id}`)).statusCode, 204);
    await send('g-5', [{ t: 10, data: { location: { lat: 52.60, lng: 13.45 } } }]);
    assert.ok(!(await eventsOf('g-5', 'geofence.exited')).some((e) => e.data.geofenceId === only.id));
  });

  test('bad input answers 400 and stores nothing; another organization\'s geofence answers 404', async () => {
    const before = (await ctx.request('GET', '/v2/geofences')).json().total;
    for (const geometry of [
      { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] }, // open ring
      { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [0, 0]]] }, // too few positions
      { type: 'Polygon', coordinates: [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]] }, // self-intersecting
      { type: 'Polygon', coordinates: [[[0, 0], [200, 0], [1, 1], [0, 0]]] }, // out of range
      { type: 'Circle', coordinates: [13, 52], radius: 0.5 }, { type: 'Circle', coordinates: [13, 52], radius: 100_001 },
      { type: 'Point', coordinates: [13, 52] }, { type: 'Circle', coordinates: [13, 52], radius: 10, extra: 1 },
    ]) {
      const res = await ctx.request('POST', '/v2/geofences', { body: { name: 'bad', geometry } });
      assert.equal(res.statusCode, 400, `${JSON.stringify(geometry)}: ${res.body}`);
    }
    assert.equal((await ctx.request('POST', '/v2/geofences', { body: { name: 'x', geometry: CIRCLE, color: 'red' } })).statusCode, 400);
    assert.equal((await ctx.request('GET', '/v2/geofences')).json().total, before);
    const mine = await createGeofence({ name: 'Mine', geometry: CIRCLE });
    const other = await ctx.otherOrganization();
    for (const [method, url] of [['GET', `/v2/geofences/${mine.id}`], ['DELETE', `/v2/geofences/${mine.id}`], ['GET', `/v2/geofences/${mine.id}/vehicles`]] as const) {
      assert.equal((await ctx.request(method, url, { key: other.key })).statusCode, 404);
    }
  });
});

describe('alert rules and alerts', () => {
  test('threshold held for forSeconds in record time opens one alert; a record below resolves it', async () => {
    await ctx.registerVehicle('a-1');
    const rule = (await ctx.request('POST', '/v2/alert-rules', {
      body: { name: 'Speeding', condition: { kind: 'threshold', field: 'speed', op: '>', value: 90, forSeconds: 30 }, vehicleIds: ['a-1'] },
    })).json();
    assert.match(rule.id, /^rule_/);
    await send('a-1', [{ t: 0, data: { speed: 95 } }, { t: 10, data: { battery: 50 } }, { t: 20, data: { speed: 99 } }]);
    assert.equal((await ctx.request('GET', '/v2/alerts', { query: { ruleId: rule.id } })).json().alerts.length, 0, 'held only 20 s');
    await send('a-1', [{ t: 30, data: { speed: 97 } }, { t: 40, data: { speed: 120 } }]);
    const open = (await ctx.request('GET', '/v2/alerts', { query: { ruleId: rule.id, status: 'open' } })).json().alerts;
    assert.equal(open.length, 1, 'one alert while the condition stays true');
    assert.deepEqual([open[0].vehicleId, open[0].ruleName, open[0].trigger], ['a-1', 'Speeding', { timestamp: at(30), value: 97 }]);
    await send('a-1', [{ t: 50, data: { speed: 60 } }]);
    const resolved = (await ctx.request('GET', `/v2/alerts/${open[0].id}`)).json();
    assert.deepEqual([resolved.status, resolved.resolvedBy, resolved.resolvedAt], ['resolved', 'system', at(50)]);
    assert.deepEqual((await eventsOf('a-1', 'alert.opened,alert.resolved')).map((e) => e.type), ['alert.opened', 'alert.resolved']);
  });

  test('acknowledge and resolve by hand; events for each; 409 on a resolved alert', async () => {
    await ctx.registerVehicle('a-2');
    await ctx.request('POST', '/v2/alert-rules', { body: { name: 'Low battery', condition: { kind: 'threshold', field: 'battery', op: '<', value: 20 }, vehicleIds: ['a-2'] } });
    await send('a-2', [{ t: 0, data: { battery: 10 } }]);
    const [alert] = (await ctx.request('GET', '/v2/alerts', { query: { vehicleId: 'a-2' } })).json().alerts;
    const acked = await ctx.request('POST', `/v2/alerts/${alert.id}/acknowledge`, { body: { note: 'on it' } });
    assert.equal(acked.statusCode, 200, acked.body);
    assert.equal(acked.json().status, 'acknowledged');
    assert.match(acked.json().acknowledgedBy, /^key_/);
    const resolved = await ctx.request('POST', `/v2/alerts/${alert.id}/resolve`, { body: {} });
    assert.equal(resolved.json().status, 'resolved');
    assert.equal((await ctx.request('POST', `/v2/alerts/${alert.id}/acknowledge`, { body: {} })).statusCode, 409);
    assert.equal((await ctx.request('POST', `/v2/alerts/${alert.id}/resolve`, { body: {} })).statusCode, 200);
    const events = await eventsOf('a-2', 'alert.opened,alert.acknowledged,alert.resolved');
    assert.deepEqual(events.map((e) => e.type), ['alert.opened', 'alert.acknowledged', 'alert.resolved']);
    assert.equal(events[1]!.data.note, 'on it');
  });

  test('geofence rule: outside for forSeconds; offline by the service clock, resolved when telemetry returns', async () => {
    const yard = await createGeofence({ name: 'Night yard', geometry: CIRCLE, vehicleIds: ['a-3'] });
    await ctx.registerVehicle('a-3');
    const outside = (await ctx.request('POST', '/v2/alert-rules', {
      body: { name: 'Left the yard', condition: { kind: 'geofence', geofenceId: yard.id, when: 'outside', forSeconds: 60 }, vehicleIds: ['a-3'] },
    })).json();
    await send('a-3', [{ t: 0, data: { location: { lat: 52.52, lng: 13.45 } } }, { t: 10, data: { location: { lat: 52.60, lng: 13.45 } } }, { t: 80, data: { location: { lat: 52.61, lng: 13.45 } } }]);
    const alerts = (await ctx.request('GET', '/v2/alerts', { query: { ruleId: outside.id } })).json().alerts;
    assert.deepEqual(alerts.map((a: { trigger: { timestamp: string } }) => a.trigger.timestamp), [at(80)]);

    // Offline: this vehicle's newest record is an hour old.
    const offline = (await ctx.request('POST', '/v2/alert-rules', { body: { name: 'Silent', condition: { kind: 'offline', afterSeconds: 60 }, vehicleIds: ['a-3'] } })).json();
    const until = Date.now() + 10_000;
    let found: { id: string; status: string }[] = [];
    while (found.length === 0 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      found = (await ctx.request('GET', '/v2/alerts', { query: { ruleId: offline.id } })).json().alerts;
    }
    assert.equal(found.length, 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await ctx.request('GET', '/v2/alerts', { query: { ruleId: offline.id } })).json().alerts.length, 1, 'opened once');
    await ctx.request('POST', '/v2/telemetry/a-3', { body: { data: { battery: 80 } } });
    assert.equal((await ctx.request('GET', `/v2/alerts/${found[0]!.id}`)).json().status, 'resolved');
  });

  test('bad rules answer 400 and store nothing; a geofence in use cannot be deleted; 404 across organizations', async () => {
    const yard = await createGeofence({ name: 'In use', geometry: CIRCLE });
    const count = (await ctx.request('GET', '/v2/alert-rules')).json().total;
    for (const condition of [
      { kind: 'threshold', field: 'colour', op: '>', value: 1 }, { kind: 'threshold', field: 'speed', op: '>', value: 'fast' },
      { kind: 'threshold', field: 'diagnostics.mode', op: '>', value: 'eco' }, { kind: 'threshold', field: 'speed', op: '~', value: 1 },
      { kind: 'offline', afterSeconds: 10 }, { kind: 'geofence', geofenceId: 'gf_nope', when: 'inside' },
      { kind: 'geofence', geofenceId: yard.id, when: 'near' }, { kind: 'weather' },
    ]) {
      const res = await ctx.request('POST', '/v2/alert-rules', { body: { name: 'bad', condition } });
      assert.equal(res.statusCode, 400, `${JSON.stringify(condition)}: ${res.body}`);
    }
    assert.equal((await ctx.request('GET', '/v2/alert-rules')).json().total, count);
    const rule = (await ctx.request('POST', '/v2/alert-rules', { body: { name: 'uses', condition: { kind: 'geofence', geofenceId: yard.id, when: 'inside' } } })).json();
    assert.equal((await ctx.request('DELETE', `/v2/geofences/${yard.id}`)).statusCode, 409);
    const other = await ctx.otherOrganization();
    assert.equal((await ctx.request('GET', `/v2/alert-rules/${rule.id}`, { key: other.key })).statusCode, 404);
    const otherRule = await ctx.request('POST', '/v2/alert-rules', { key: other.key, body: { name: 'x', condition: { kind: 'geofence', geofenceId: yard.id, when: 'inside' } } });
    assert.equal(otherRule.statusCode, 400, 'another organization\'s geofence is unknown');
    assert.equal((await ctx.request('DELETE', `/v2/alert-rules/${rule.id}`)).statusCode, 204);
    assert.equal((await ctx.request('DELETE', `/v2/geofences/${yard.id}`)).statusCode, 204);
  });
});

describe('rule state survives a restart', () => {
  test('who is inside what, open alerts and held conditions', async () => {
    const first = await createTestApp();
    const file = first.file;
    await first.registerVehicle('r-1');
    const gf = (await first.request('POST', '/v2/geofences', { body: { name: 'Depot', geometry: CIRCLE } })).json();
    await first.request('POST', '/v2/alert-rules', { body: { name: 'Hot', condition: { kind: 'threshold', field: 'temperature', op: '>', value: 50, forSeconds: 60 } } });
    await send('r-1', [{ t: 0, data: { location: { lat: 52.52, lng: 13.45 }, temperature: 60 } }], first);
    await first.app.close();
    await first.stores.close();

    const stores = createSqliteStores(file);
    const { buildApp } = await import('../src/app.ts');
    const { testConfig } = await import('./helpers/app.ts');
    const app = await buildApp({ config: testConfig(), stores });
    await app.ready();
    try {
      const key = first.adminKey;
      const post = (url: string, body: unknown) => app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
      // Still inside: no second enter. Held since t=0: at t=70 the alert opens.
      await post('/v2/telemetry/r-1', { records: [{ timestamp: at(70), data: { location: { lat: 52.5201, lng: 13.45 }, temperature: 61 } }] });
      const events = (await app.inject({ method: 'GET', url: '/v2/events?vehicleId=r-1&types=geofence.entered,alert.opened', headers: { authorization: `Bearer ${key}` } })).json().events;
      assert.deepEqual(events.map((e: { type: string; data: { geofenceId?: string } }) => e.type), ['geofence.entered', 'alert.opened']);
      assert.equal(events[0].data.geofenceId, gf.id);
    } finally {
      await app.close();
      await stores.close();
    }
  });
});
