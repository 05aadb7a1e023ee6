// Device protocols in cluster mode: two nodes on one PostgreSQL schema, each with its own OsmAnd
// and Teltonika listeners. A device may send to either; each node answers only what it committed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { type Tracker, connectTracker, count, fix, packetOf } from './helpers/teltonika.ts';

const skip = await skipUnlessPostgres();

describe('two nodes, one database', { skip }, () => {
  let a: TestApp;
  let b: TestApp;
  const ports = { a: 0, b: 0 };
  const trackers: Tracker[] = [];

  before(async () => {
    ports.a = await freePort();
    ports.b = await freePort();
    const env = (port: number) => ({ FLEET_TELTONIKA_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1' });
    a = await createTestApp({ backend: 'postgres', env: env(ports.a) });
    b = await createTestApp({ join: { stores: a.stores, adminKey: a.adminKey, organizationId: a.organizationId }, env: env(ports.b) });
  });
  after(async () => {
    for (const t of trackers) t.end();
    await b?.close();
    await a?.close();
  });

  test('a device registered on one node sends to either: each node acknowledges its own commit, the history holds both', async () => {
    await a.registerVehicle('k-1');
    const res = await a.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: '351111111111111', vehicleId: 'k-1' } });
    assert.equal(res.statusCode, 201, res.body);
    const t0 = Date.now() - 60_000;
    for (const [i, port] of [ports.a, ports.b].entries()) {
      const tracker = await connectTracker(port, trackers);
      assert.deepEqual(await tracker.login('351111111111111'), Buffer.from([1]), `login on node ${i}`);
      tracker.send(packetOf([fix(t0 + i * 1000, 50 + i, 10)]));
      assert.deepEqual(await tracker.read(4), count(1), `ack from node ${i}`);
      tracker.end();
    }
    // The same packet resent to the other node is a duplicate there, not a second record.
    const again = await connectTracker(ports.b, trackers);
    await again.login('351111111111111');
    again.send(packetOf([fix(t0, 50, 10)]));
    assert.deepEqual(await again.read(4), count(1));
    for (const node of [a, b]) {
      const records = (await node.request('GET', '/v2/telemetry/k-1/history')).json().records;
      assert.deepEqual(records.map((r: { data: { location: unknown } }) => r.data.location), [{ lat: 50, lng: 10 }, { lat: 51, lng: 10 }]);
    }
  });

  test('OsmAnd on either node\'s /osmand; a device deleted on one node is unknown on the other at once', async () => {
    await b.registerVehicle('k-2');
    const device = (await b.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'cluster-phone', vehicleId: 'k-2' } })).json();
    const t = Math.floor(Date.now() / 1000) - 30;
    assert.equal((await a.request('GET', '/osmand', { key: null, query: { id: 'cluster-phone', speed: '1', timestamp: String(t) } })).statusCode, 200);
    assert.equal((await b.request('GET', '/osmand', { key: null, query: { id: 'cluster-phone', speed: '2', timestamp: String(t + 1) } })).statusCode, 200);
    assert.equal((await a.request('GET', '/v2/telemetry/k-2/history')).json().records.length, 2);
    assert.equal((await a.request('DELETE', `/v2/devices/${device.id}`)).statusCode, 204);
    assert.equal((await b.request('GET', '/osmand', { key: null, query: { id: 'cluster-phone', speed: '3' } })).statusCode, 404);
  });
});
