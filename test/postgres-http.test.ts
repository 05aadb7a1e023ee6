// The service's core flows through HTTP on PostgreSQL (the HTTP suites run them on SQLite): keys,
// registration, status transitions, telemetry ingest, latest and history; a second node on the
// same database; and PostgreSQL lost in the middle of ingestion: 503 with Retry-After, nothing
// acknowledged lost, and recovery without a restart once the database is back.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.ts';
import type { Stores } from '../src/storage/stores.ts';
import { createTestApp, testConfig, type TestApp } from './helpers/app.ts';
import type { MqttClient } from 'mqtt';
import { connectDevice, endAll, freePort, publishOutcome } from './helpers/mqtt.ts';
import { waitUntil } from './helpers/wait.ts';
import { databaseProxy, openAnotherNode, skipUnlessPostgres } from './helpers/postgres.ts';

const skip = await skipUnlessPostgres();
const now = Date.now();
const at = (offsetSeconds: number) => new Date(now + offsetSeconds * 1000).toISOString();

describe('core flows on PostgreSQL', { skip }, () => {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ backend: 'postgres' });
  });
  after(() => ctx?.close());

  test('API keys: create, use within their scopes, list, revoke', async () => {
    const created = await ctx.request('POST', '/v2/api-keys', { body: { name: 'reader', scopes: ['fleet:read'] } });
    assert.equal(created.statusCode, 201, created.body);
    const { id, key } = created.json();
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key })).statusCode, 200);
    assert.equal((await ctx.request('POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'x', type: 'van' } })).statusCode, 403);
    const listed = (await ctx.request('GET', '/v2/api-keys')).json();
    assert.ok(listed.apiKeys.some((k: { id: string }) => k.id === id));
    assert.equal((await ctx.request('DELETE', `/v2/api-keys/${id}`)).statusCode, 204);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key })).statusCode, 401, 'revoked at once');
    const other = await ctx.otherOrganization();
    assert.equal((await ctx.request('GET', `/v2/api-keys/${id}`, { key: other.key })).statusCode, 404);
  });

  test('control characters in names and reasons are refused with 400 before they reach the database; line breaks in a reason are kept', async () => {
    for (const [method, url, body] of [
      ['POST', '/v2/api-keys', { name: 'nul\u0000key', scopes: ['fleet:read'] }],
      ['POST', '/v2/oauth-clients', { name: 'bell\u0007', scopes: ['fleet:read'] }],
      ['POST', '/v2/organizations', { name: 'Acme\u0000' }],
    ] as const) {
      const res = await ctx.request(method, url, { body });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.deepEqual(res.json().errors, [{ in: 'body', path: '/name', message: 'must not contain control characters' }]);
    }
    await ctx.registerVehicle('pg-text');
    const nul = await ctx.request('PUT', '/v2/fleet/vehicles/pg-text/status', { body: { status: 'maintenance', reason: 'a\u0000b' } });
    assert.equal(nul.statusCode, 400, nul.body);
    assert.match(nul.json().errors[0].message, /control characters other than tab and line breaks/);
    const lines = await ctx.request('PUT', '/v2/fleet/vehicles/pg-text/status', { body: { status: 'maintenance', reason: 'brakes\r\n\tand tyres' } });
    assert.equal(lines.statusCode, 200, lines.body);
    const history = (await ctx.request('GET', '/v2/fleet/vehicles/pg-text/status-history')).json();
    assert.equal(history.history[0].reason, 'brakes\r\n\tand tyres');
    assert.equal((await ctx.request('DELETE', '/v2/fleet/vehicles/pg-text')).statusCode, 204); // the next test lists the fleet
  });

  test('vehicles: register, read, list, conflict, status transitions with history, delete', async () => {
    const body = await ctx.registerVehicle('pg-1', { type: 'shuttle', configuration: { sensors: ['gps'], capacity: 8 } });
    assert.equal(body.status, 'registered');
    assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/pg-1')).json(), body);
    assert.equal((await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'pg-1', type: 'van' } })).statusCode, 409);
    await ctx.registerVehicle('pg-0');
    const list = (await ctx.request('GET', '/v2/fleet/vehicles?type=shuttle,van')).json();
    assert.deepEqual(list.vehicles.map((v: { id: string }) => v.id), ['pg-0', 'pg-1']);

    for (const status of ['active', 'maintenance', 'active'] as const) {
      const res = await ctx.request('PUT', '/v2/fleet/vehicles/pg-1/status', { body: { status, reason: `to ${status}` } });
      assert.equal(res.statusCode, 200, res.body);
    }
    const refused = await ctx.request('PUT', '/v2/fleet/vehicles/pg-1/status', { body: { status: 'registered' } });
    assert.equal(refused.json().code, 'invalid-status-transition');
    const history = (await ctx.request('GET', '/v2/fleet/vehicles/pg-1/status-history')).json();
    assert.deepEqual(history.history.map((e: { to: string }) => e.to), ['active', 'maintenance', 'active', 'registered']);
    assert.equal(history.total, 4);

    const racing = await Promise.all(['retired', 'inactive'].map((status) =>
      ctx.request('PUT', '/v2/fleet/vehicles/pg-0/status', { body: { status } })));
    // registered → inactive → retired is legal, retired → inactive is not: whichever commits second decides.
    const codes = racing.map((r) => r.statusCode);
    const final = (await ctx.request('GET', '/v2/fleet/vehicles/pg-0')).json().status;
    assert.ok(
      final === 'retired' && (codes.join() === '200,200' || codes.join() === '200,409'),
      `${codes.join()} → ${final}`,
    );
    assert.equal((await ctx.request('DELETE', '/v2/fleet/vehicles/pg-0')).statusCode, 204);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/pg-0')).statusCode, 404);
  });

  test('telemetry: ingest (one, batch, fleet, duplicates), activation, latest, history with cursors', async () => {
    await ctx.registerVehicle('pg-t1');
    await ctx.registerVehicle('pg-t2');
    const one = await ctx.request('POST', '/v2/telemetry/pg-t1', { body: { timestamp: at(-60), data: { speed: 10, battery: 90, location: { lat: 52.5, lng: 13.4 } } } });
    assert.equal(one.statusCode, 202, one.body);
    assert.deepEqual(one.json(), { accepted: 1, duplicates: 0 });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/pg-t1')).json().status, 'active', 'first telemetry activates');

    const records = Array.from({ length: 25 }, (_, i) => ({ timestamp: at(-50 + i), data: { speed: i } }));
    const batch = await ctx.request('POST', '/v2/telemetry/pg-t1', { body: { records: [...records, records[0]] } });
    assert.deepEqual(batch.json(), { accepted: 25, duplicates: 1 });
    const fleet = await ctx.request('POST', '/v2/telemetry', {
      body: { records: [{ vehicleId: 'pg-t2', timestamp: at(-5), data: { odometer: 1200 } }, { vehicleId: 'pg-t1', timestamp: at(-40.5), data: { heading: 90 } }] },
    });
    assert.deepEqual(fleet.json(), { accepted: 2, duplicates: 0 });
    const refused = await ctx.request('POST', '/v2/telemetry', { body: { records: [{ vehicleId: 'pg-t2', data: { speed: 1 } }, { vehicleId: 'ghost', data: { speed: 1 } }] } });
    assert.equal(refused.json().code, 'vehicle-not-found');

    const latest = (await ctx.request('GET', '/v2/telemetry/pg-t1')).json();
    assert.deepEqual(latest, { vehicleId: 'pg-t1', timestamp: at(-26), data: { location: { lat: 52.5, lng: 13.4 }, speed: 24, heading: 90, battery: 90 } });

    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/v2/telemetry/pg-t1/history?limit=10&fields=speed${cursor === null ? '' : `&cursor=${cursor}`}`;
      const page = (await ctx.request('GET', url)).json();
      seen.push(...page.records.filter((r: { data: { speed?: number } }) => r.data.speed !== undefined).map((r: { data: { speed: number } }) => r.data.speed));
      cursor = page.nextCursor;
    } while (cursor !== null);
    assert.deepEqual(seen, [10, ...records.map((r) => r.data.speed)]);
    assert.equal((await ctx.request('GET', '/v2/telemetry/pg-t2/history')).json().records.length, 1, 'refused batch stored nothing');
  });

  test('a second node on the same database serves what the first stored, and loads the latest states at start', async () => {
    const stores: Stores = await openAnotherNode((ctx.stores as Stores & { schema: string }).schema);
    const node = await buildApp({ config: testConfig(), stores });
    try {
      const headers = { authorization: `Bearer ${ctx.adminKey}` };
      const latest = await node.inject({ method: 'GET', url: '/v2/telemetry/pg-t1', headers });
      assert.equal(latest.json().data.speed, 24);
      const registered = await node.inject({ method: 'POST', url: '/v2/fleet/vehicles', headers, payload: { vehicleId: 'pg-n2', type: 'van' } });
      assert.equal(registered.statusCode, 201);
      assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/pg-n2')).statusCode, 200, 'visible to the first node');
      assert.equal((await node.inject({ method: 'GET', url: '/readyz' })).json().checks.store, 'up');
    } finally {
      await node.close();
      await stores.close();
    }
  });
});

describe('PostgreSQL lost during ingestion', { skip }, () => {
  let ctx: TestApp;
  let proxy: Awaited<ReturnType<typeof databaseProxy>>;
  before(async () => {
    proxy = await databaseProxy();
    ctx = await createTestApp({ backend: 'postgres', databaseUrl: proxy.url });
    await ctx.registerVehicle('lost-1');
  });
  after(async () => {
    await ctx?.close();
    await proxy?.close();
  });

  const body = (k: number) => ({ records: Array.from({ length: 20 }, (_, i) => ({ timestamp: at(-3600 + k * 20 + i), data: { speed: k } })) });
  const send = (k: number) => ctx.request('POST', '/v2/telemetry/lost-1', { body: body(k) });

  test('503 with Retry-After while it is gone, nothing acknowledged is lost, and ingestion resumes by itself', async () => {
    const acknowledged = new Set<number>();
    const refused = new Set<number>();
    const settle = (k: number, res: Awaited<ReturnType<typeof send>>) => {
      if (res.statusCode === 202) {
        acknowledged.add(k);
        return;
      }
      assert.equal(res.statusCode, 503, `request ${k}: ${res.statusCode} ${res.body}`);
      assert.equal(res.headers['retry-after'], '5');
      assert.equal(res.json().code, 'service-unavailable');
      refused.add(k);
    };
    for (let k = 0; k < 5; k++) settle(k, await send(k));
    assert.equal(acknowledged.size, 5);

    // Cut while commits are in flight: each is acknowledged (and stored) or refused with 503.
    const inFlight: Promise<void>[] = [];
    for (let k = 5; k < 15; k++) {
      inFlight.push(send(k).then((res) => settle(k, res)));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await Promise.race(inFlight);
    proxy.cut();
    await Promise.all(inFlight);
    for (let k = 15; k < 20; k++) settle(k, await send(k));
    for (let k = 15; k < 20; k++) assert.ok(refused.has(k), `request ${k} refused while the database is gone`);
    const ready = await ctx.request('GET', '/readyz', { key: null });
    assert.equal(ready.statusCode, 503);
    assert.equal(ready.headers['retry-after'], '5');

    // Back: the same process serves again without a restart; clients retry what was refused.
    proxy.restore();
    for (const k of [...refused].sort((a, b) => a - b)) {
      const res = await send(k);
      assert.equal(res.statusCode, 202, `retry of ${k}: ${res.body}`);
      const { accepted, duplicates } = res.json();
      assert.equal(accepted + duplicates, 20, 'a refused request may have been stored (its answer was lost): then it counts as duplicates');
      acknowledged.add(k);
    }
    assert.equal((await ctx.request('GET', '/readyz', { key: null })).statusCode, 200);

    const history = (await ctx.request('GET', '/v2/telemetry/lost-1/history?limit=10000')).json();
    const stored = new Map<number, number>();
    for (const record of history.records) stored.set(record.data.speed, (stored.get(record.data.speed) ?? 0) + 1);
    for (const k of acknowledged) assert.equal(stored.get(k), 20, `every record of acknowledged request ${k} is stored`);
    assert.equal(history.records.length, 20 * 20);
    assert.equal((await ctx.request('GET', '/v2/telemetry/lost-1')).json().data.speed, 19);
  });
});

describe('PostgreSQL lost during MQTT ingestion', { skip }, () => {
  let ctx: TestApp;
  let proxy: Awaited<ReturnType<typeof databaseProxy>>;
  let url: string;
  const clients: MqttClient[] = [];
  before(async () => {
    proxy = await databaseProxy();
    const port = await freePort();
    url = `mqtt://127.0.0.1:${port}`;
    ctx = await createTestApp({ backend: 'postgres', databaseUrl: proxy.url, env: { FLEET_MQTT_PORT: String(port), FLEET_MQTT_HOST: '127.0.0.1' } });
    await ctx.registerVehicle('lost-mq');
  });
  after(async () => {
    await endAll(clients);
    await ctx?.close();
    await proxy?.close();
  });

  test('no PUBACK for what could not be stored; once the database is back, publishes are stored and acknowledged again', async () => {
    const key = await ctx.keyWith(['telemetry:write']);
    const publish = async (timestamp: string, speed: number) => {
      const client = await connectDevice(url, { username: 'lost-mq', password: key, reconnectPeriod: 0 }, clients);
      return publishOutcome(client, 'fleet/lost-mq/telemetry', JSON.stringify({ timestamp, data: { speed } }), 1, 6_000);
    };
    assert.equal(await publish(at(-60), 1), 'acked');
    proxy.cut();
    const outcome = await publish(at(-59), 2).catch(() => 'refused at CONNECT');
    assert.notEqual(outcome, 'acked', 'nothing is acknowledged while the database is gone');
    proxy.restore();
    await waitUntil(async () => (await ctx.request('GET', '/readyz', { key: null })).statusCode === 200, 'the database back', 10_000);
    assert.equal(await publish(at(-58), 3), 'acked');
    const speeds = (await ctx.request('GET', '/v2/telemetry/lost-mq/history')).json().records.map((r: { data: { speed: number } }) => r.data.speed);
    assert.ok(speeds.includes(1) && speeds.includes(3), `acknowledged records stored: ${JSON.stringify(speeds)}`);
  });
});
