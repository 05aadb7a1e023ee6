// Commands in cluster mode: two nodes on one PostgreSQL schema and one bus, each with its own
// Teltonika port. A command asked of either node goes out from the node holding the device's
// connection, once; `queue: false` asks the whole cluster whether the device is connected.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMemoryBusNetwork } from '../src/bus/memory.ts';
import { createMemoryPresenceNetwork } from '../src/commands/presence.ts';
import { RESPONSE_TYPE, encodeCodec12 } from '../src/protocols/teltonika/codec12.ts';
import { createMemoryStreamDirectory } from '../src/streams/directory.ts';
import { DEFAULT_STREAM_SETTINGS } from '../src/streams/settings.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { type Tracker, connectTracker, readCommand } from './helpers/teltonika.ts';
import { waitUntil } from './helpers/wait.ts';

const skip = await skipUnlessPostgres();

describe('commands on two nodes', { skip }, () => {
  const network = createMemoryBusNetwork();
  const presence = createMemoryPresenceNetwork();
  const directory = createMemoryStreamDirectory({ maxMessages: DEFAULT_STREAM_SETTINGS.replayMaxMessages });
  let a: TestApp;
  let b: TestApp;
  const ports = { a: 0, b: 0 };
  const trackers: Tracker[] = [];
  let imeis = 353000000000000;

  before(async () => {
    ports.a = await freePort();
    ports.b = await freePort();
    const env = (port: number) => ({ FLEET_TELTONIKA_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1' });
    const busA = network.join();
    a = await createTestApp({ backend: 'postgres', env: env(ports.a), cluster: { bus: busA, directory, state: () => busA.state(), presence: presence.join() } });
    const busB = network.join();
    b = await createTestApp({
      join: { stores: a.stores, adminKey: a.adminKey, organizationId: a.organizationId }, env: env(ports.b),
      cluster: { bus: busB, directory, state: () => busB.state(), presence: presence.join() },
    });
  });
  after(async () => {
    for (const t of trackers) t.end();
    await b?.close();
    await a?.close();
  });

  async function vehicleWithTracker(vehicleId: string, devices = 1): Promise<string[]> {
    await a.registerVehicle(vehicleId);
    const out: string[] = [];
    for (let i = 0; i < devices; i++) {
      const imei = String(++imeis);
      const res = await a.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: imei, vehicleId } });
      assert.equal(res.statusCode, 201, res.body);
      out.push(imei);
    }
    return out;
  }
  async function login(port: number, imei: string): Promise<Tracker> {
    const tracker = await connectTracker(port, trackers);
    assert.deepEqual(await tracker.login(imei), Buffer.from([1]));
    return tracker;
  }
  const status = async (node: TestApp, id: string) => (await node.request('GET', `/v2/commands/${id}`)).json<{ status: string; result: string | null }>();

  test('asked of one node, sent by the node holding the connection; the answer is seen on both', async () => {
    const [imei] = await vehicleWithTracker('kc-1');
    const tracker = await login(ports.b, imei!);
    const made = await a.request('POST', '/v2/fleet/vehicles/kc-1/commands', { body: { type: 'positionSingle' } });
    assert.equal(made.statusCode, 202, made.body);
    const expected = encodeCodec12('getgps');
    assert.deepEqual(await tracker.read(expected.length), expected);
    tracker.send(encodeCodec12('GPS:1', RESPONSE_TYPE));
    await waitUntil(async () => (await status(a, made.json().id)).status === 'succeeded', 'succeeded, read on node a');
    assert.equal((await status(b, made.json().id)).result, 'GPS:1');
  });

  test('queue: false: accepted on one node when the device is connected to the other, refused when it is connected nowhere', async () => {
    const [imei] = await vehicleWithTracker('kc-2');
    const refused = await a.request('POST', '/v2/fleet/vehicles/kc-2/commands', { body: { type: 'reboot', queue: false } });
    assert.equal(refused.statusCode, 409, refused.body);
    const tracker = await login(ports.b, imei!);
    const made = await a.request('POST', '/v2/fleet/vehicles/kc-2/commands', { body: { type: 'reboot', queue: false } });
    assert.equal(made.statusCode, 202, made.body);
    const expected = encodeCodec12('cpureset');
    assert.deepEqual(await tracker.read(expected.length), expected);
    tracker.end();
    await tracker.closed;
    await waitUntil(async () => (await a.request('POST', '/v2/fleet/vehicles/kc-2/commands', { body: { type: 'reboot', queue: false } })).statusCode === 409,
      'the device gone from the cluster', 5_000, { every: 50 });
  });

  test('a vehicle connected to both nodes (two trackers) gets each command once', async () => {
    const imeis = await vehicleWithTracker('kc-3', 2);
    const onA = await login(ports.a, imeis[0]!);
    const onB = await login(ports.b, imeis[1]!);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const node = i % 2 === 0 ? a : b;
      const res = await node.request('POST', '/v2/fleet/vehicles/kc-3/commands', { body: { type: 'custom', params: { text: `c${i}` } } });
      assert.equal(res.statusCode, 202, res.body);
      ids.push(res.json().id);
    }
    // Each tracker answers whatever it is sent; every command ends succeeded, each with one answer.
    const answered: string[] = [];
    const answer = async (tracker: Tracker) => {
      for (;;) {
        const text = await readCommand(tracker, 300);
        if (text === 'timeout' || text === 'closed') return;
        answered.push(text);
        tracker.send(encodeCodec12(`ok ${text}`, RESPONSE_TYPE));
      }
    };
    await waitUntil(async () => {
      await Promise.all([answer(onA), answer(onB)]);
      const statuses = await Promise.all(ids.map((id) => status(a, id)));
      return statuses.every((s) => s.status === 'succeeded');
    }, 'every command answered', 10_000);
    assert.deepEqual([...answered].sort(), ['c0', 'c1', 'c2', 'c3', 'c4', 'c5'], 'each sent once');
  });
});
