// MQTT ingestion through the embedded listener (docs/API.md "MQTT"), with the real mqtt.js client over
// real sockets: login, topics, QoS 0 and 1, PUBACK only after the commit, invalid and refused
// messages, port already taken, graceful close.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { MqttClient } from 'mqtt';
import type { CommitBatch } from '../src/telemetry/store.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import {
  connectDevice,
  endAll,
  freePort,
  messagesCounted,
  publishOutcome,
  storedTimestamps,
  withTimeout,
} from './helpers/mqtt.ts';
import { waitUntil } from './helpers/wait.ts';
import { captureLogs } from './helpers/logs.ts';

const clients: MqttClient[] = [];
const apps: TestApp[] = [];
after(async () => {
  await endAll(clients);
  for (const app of apps.splice(0)) await app.close();
});

/** An app with its own MQTT listener on a free port of 127.0.0.1. */
async function appWithListener(options: Parameters<typeof createTestApp>[0] = {}) {
  const port = await freePort();
  const app = await createTestApp({ ...options, env: { FLEET_MQTT_PORT: String(port), FLEET_MQTT_HOST: '127.0.0.1' } });
  apps.push(app);
  return { app, port, url: `mqtt://127.0.0.1:${port}` };
}

const now = (offsetMs = 0) => new Date(Date.now() - 1_000 + offsetMs).toISOString();
const record = (data: Record<string, unknown>, timestamp = now()) => JSON.stringify({ timestamp, data });

let ctx: TestApp;
let url: string;
let deviceKey: string;
before(async () => {
  ({ app: ctx, url } = await appWithListener());
  deviceKey = await ctx.keyWith(['telemetry:write']);
});

const device = (password: string = deviceKey) => connectDevice(url, { username: 'van-042', password }, clients);

describe('QoS 1 and QoS 0', () => {
  test('QoS 1: the PUBACK comes back and the record is readable over HTTP', async () => {
    await ctx.registerVehicle('mq-1');
    const client = await device();
    const timestamp = now();
    assert.equal(await publishOutcome(client, 'fleet/mq-1/telemetry', record({ speed: 42.5, battery: 80 }, timestamp), 1), 'acked');
    const latest = await ctx.request('GET', '/v2/telemetry/mq-1');
    assert.equal(latest.statusCode, 200, latest.body);
    assert.deepEqual(latest.json(), { vehicleId: 'mq-1', timestamp, data: { speed: 42.5, battery: 80 } });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/mq-1')).json().status, 'active', 'the first telemetry activates it');
  });

  test('QoS 0: stored as well, with nothing to acknowledge', async () => {
    await ctx.registerVehicle('mq-2');
    const client = await device();
    const timestamp = now();
    assert.equal(await publishOutcome(client, 'fleet/mq-2/telemetry', record({ odometer: 1200 }, timestamp), 0), 'acked');
    await waitUntil(async () => (await storedTimestamps(ctx, 'mq-2')).includes(timestamp), 'the QoS 0 record');
  });

  test('QoS 2 is accepted and behaves as QoS 1', async () => {
    await ctx.registerVehicle('mq-qos2');
    const timestamp = now();
    assert.equal(await publishOutcome(await device(), 'fleet/mq-qos2/telemetry', record({ speed: 2 }, timestamp), 2), 'acked');
    assert.deepEqual(await storedTimestamps(ctx, 'mq-qos2'), [timestamp]);
  });

  test('{records: [...]} and a record without timestamp (the receive time)', async () => {
    await ctx.registerVehicle('mq-3');
    const client = await device();
    const batch = JSON.stringify({ records: [{ timestamp: now(-2_000), data: { speed: 1 } }, { timestamp: now(-1_000), data: { speed: 2 } }] });
    assert.equal(await publishOutcome(client, 'fleet/mq-3/telemetry', batch, 1), 'acked');
    assert.equal(await publishOutcome(client, 'fleet/mq-3/telemetry', JSON.stringify({ data: { speed: 3 } }), 1), 'acked');
    assert.equal((await storedTimestamps(ctx, 'mq-3')).length, 3);
    assert.equal((await ctx.request('GET', '/v2/telemetry/mq-3')).json().data.speed, 3);
  });

  test('a resent record (same vehicle and timestamp) is acknowledged and stored once', async () => {
    await ctx.registerVehicle('mq-4');
    const client = await device();
    const payload = record({ speed: 9 });
    assert.equal(await publishOutcome(client, 'fleet/mq-4/telemetry', payload, 1), 'acked');
    assert.equal(await publishOutcome(client, 'fleet/mq-4/telemetry', payload, 1), 'acked');
    assert.equal((await storedTimestamps(ctx, 'mq-4')).length, 1);
  });
});

describe('login', () => {
  async function refusedWith(password: string | undefined): Promise<number | undefined> {
    const attempt = connectDevice(url, { username: 'someone', ...(password === undefined ? {} : { password }) }, clients);
    const error = await attempt.then(() => assert.fail('the connection was accepted'), (e: { code?: number }) => e);
    return error.code;
  }

  test('an unknown, malformed or missing key is refused at CONNECT: 4, bad user name or password', async () => {
    assert.equal(await refusedWith('fleet_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), 4);
    assert.equal(await refusedWith('not-a-key-at-all-but-long-enough-to-look-like-one'), 4);
    assert.equal(await refusedWith(undefined), 4);
  });

  test('a key without telemetry:write is refused at CONNECT: 5, not authorized', async () => {
    assert.equal(await refusedWith(await ctx.keyWith(['telemetry:read', 'fleet:write'])), 5);
  });

  test('a revoked key: the next publish is not acknowledged and the connection is closed', async () => {
    await ctx.registerVehicle('mq-revoked');
    const created = await ctx.request('POST', '/v2/api-keys', { body: { name: 'short-lived device', scopes: ['telemetry:write'] } });
    const client = await device(created.json().key);
    assert.equal(await publishOutcome(client, 'fleet/mq-revoked/telemetry', record({ speed: 1 }, now(-500)), 1), 'acked');
    assert.equal((await ctx.request('DELETE', `/v2/api-keys/${created.json().id}`)).statusCode, 204);
    assert.equal(await publishOutcome(client, 'fleet/mq-revoked/telemetry', record({ speed: 2 }), 1), 'closed');
    assert.equal((await storedTimestamps(ctx, 'mq-revoked')).length, 1);
  });

  test('devices cannot subscribe: SUBACK 0x80, and the connection stays', async () => {
    const client = await device();
    const refused = await withTimeout(client.subscribeAsync('fleet/mq-1/telemetry', { qos: 1 }), 2_000, 'the SUBACK').then(
      () => assert.fail('the subscription was granted'),
      (error: { packet?: { granted?: number[] } }) => error,
    );
    assert.deepEqual(refused.packet?.granted, [128]);
    assert.ok(client.connected);
  });
});

describe('client ids belong to an organization', () => {
  /** Resolves true if `client` closes within `ms`. */
  const closesWithin = (client: MqttClient, ms: number) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      client.once('close', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });

  test('another organization connecting with the same client id does not take the session over', async () => {
    await ctx.registerVehicle('mq-id-a');
    const other = await ctx.otherOrganization('MQTT neighbours');
    await ctx.registerVehicle('mq-id-b', {}, other.key);
    const otherKey = await ctx.keyWith(['telemetry:write'], other.organizationId);
    const clientId = `shared-${Math.random().toString(36).slice(2)}`;

    const ours = await connectDevice(url, { username: 'van', password: deviceKey, clientId }, clients);
    const closed = closesWithin(ours, 1_500);
    const theirs = await connectDevice(url, { username: 'van', password: otherKey, clientId }, clients);
    assert.equal(await closed, false, 'our device keeps its connection');
    assert.equal(await publishOutcome(ours, 'fleet/mq-id-a/telemetry', record({ speed: 1 }), 1), 'acked');
    assert.equal(await publishOutcome(theirs, 'fleet/mq-id-b/telemetry', record({ speed: 2 }), 1), 'acked');
    assert.equal((await storedTimestamps(ctx, 'mq-id-a')).length, 1);
  });

  test('within one organization, a second connection with the id takes over, as MQTT says', async () => {
    const clientId = `mine-${Math.random().toString(36).slice(2)}`;
    const first = await connectDevice(url, { username: 'van', password: deviceKey, clientId }, clients);
    const closed = closesWithin(first, 3_000);
    await connectDevice(url, { username: 'van', password: await ctx.keyWith(['telemetry:write']), clientId }, clients);
    assert.equal(await closed, true, 'the older connection of the same organization is closed');
  });
});

describe('what is not stored', () => {
  test('another organization\'s vehicle: not acknowledged, the connection closed, nothing stored', async () => {
    await ctx.registerVehicle('mq-own');
    const other = await ctx.otherOrganization('MQTT neighbour');
    const theirs = await ctx.keyWith(['telemetry:write'], other.organizationId);
    const refusedBefore = await messagesCounted(ctx, 'refused');
    const client = await device(theirs);
    assert.equal(await publishOutcome(client, 'fleet/mq-own/telemetry', record({ speed: 99 }), 1), 'closed');
    assert.equal((await ctx.request('GET', '/v2/telemetry/mq-own')).json().code, 'no-telemetry');
    assert.equal(await messagesCounted(ctx, 'refused'), refusedBefore + 1);
  });

  test('an unknown vehicle and a topic that is not fleet/{vehicleId}/telemetry: not acknowledged', async () => {
    for (const topic of ['fleet/nobody-here/telemetry', 'fleet/mq-1/status', 'fleet/bad id/telemetry', 'other/topic']) {
      const client = await device();
      assert.equal(await publishOutcome(client, topic, record({ speed: 1 }), 1), 'closed', topic);
    }
  });

  test('invalid payloads are acknowledged, dropped and counted; the connection stays', async () => {
    await ctx.registerVehicle('mq-bad');
    const client = await device();
    const invalidBefore = await messagesCounted(ctx, 'invalid');
    const payloads = [
      '{"data":{"speed":',                              // not JSON
      Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),            // not UTF-8
      '',                                               // empty
      record({ battery: 101 }),                         // out of range
      record({ speed: '12' }),                          // wrong type
      record({ altitude: 3 }),                          // unknown field
      record({ speed: 1 }, new Date(Date.now() + 3_600_000).toISOString()), // an hour ahead
      JSON.stringify({ records: [{ timestamp: now(), data: { speed: 1 } }, { timestamp: now(), data: { speed: -1 } }] }),
    ];
    for (const payload of payloads) {
      assert.equal(await publishOutcome(client, 'fleet/mq-bad/telemetry', payload, 1), 'acked', String(payload));
    }
    assert.equal(await publishOutcome(client, 'fleet/mq-bad/telemetry', 'not json', 0), 'acked');
    assert.ok(client.connected, 'an invalid payload does not close the connection');
    await waitUntil(async () => (await messagesCounted(ctx, 'invalid')) === invalidBefore + payloads.length + 1, 'every invalid message counted');
    assert.equal((await ctx.request('GET', '/v2/telemetry/mq-bad')).json().code, 'no-telemetry', 'nothing of them was stored');
    // The same connection still stores a good record.
    assert.equal(await publishOutcome(client, 'fleet/mq-bad/telemetry', record({ speed: 5 }), 1), 'acked');
    assert.equal((await storedTimestamps(ctx, 'mq-bad')).length, 1);
  });

  test('a packet over 1 MiB closes the connection before it is buffered; up to the limit is fine', async () => {
    await ctx.registerVehicle('mq-big');
    const timestamp = now();
    // JSON allows whitespace: a valid record padded to just under 1 MiB.
    const padded = record({ speed: 1 }, timestamp) + ' '.repeat(1024 * 1024 - 100);
    assert.equal(await publishOutcome(await device(), 'fleet/mq-big/telemetry', padded, 1), 'acked');
    assert.deepEqual(await storedTimestamps(ctx, 'mq-big'), [timestamp]);
    const over = record({ speed: 2 }, now(1)) + ' '.repeat(1024 * 1024 + 1024);
    assert.equal(await publishOutcome(await device(), 'fleet/mq-big/telemetry', over, 1), 'closed');
    assert.equal((await storedTimestamps(ctx, 'mq-big')).length, 1);

    // Before any login: a CONNECT announcing 256 MiB is cut off at its header.
    const raw = net.connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise((resolve) => raw.once('connect', resolve));
    const closed = new Promise<void>((resolve) => raw.once('close', () => resolve()));
    raw.on('error', () => undefined);
    raw.write(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]));
    await withTimeout(closed, 2_000, 'the oversized CONNECT to close the connection');
  });

  test('a retired vehicle\'s message: not acknowledged, not stored, counted as refused', async () => {
    await ctx.registerVehicle('mq-retired');
    await ctx.request('PUT', '/v2/fleet/vehicles/mq-retired/status', { body: { status: 'retired' } });
    const refusedBefore = await messagesCounted(ctx, 'refused');
    const client = await device();
    assert.equal(await publishOutcome(client, 'fleet/mq-retired/telemetry', record({ speed: 1 }), 1), 'closed');
    assert.equal((await ctx.request('GET', '/v2/telemetry/mq-retired')).json().code, 'no-telemetry');
    assert.equal(await messagesCounted(ctx, 'refused'), refusedBefore + 1);
  });
});

describe('PUBACK after commit', () => {
  test('for many publishes, each PUBACK arrives only once its record is committed', async () => {
    const { app, url: own } = await appWithListener();
    await app.registerVehicle('commit-1');
    // Watch the store: note each record once its transaction has committed, after a delay that
    // would let an early PUBACK overtake the commit.
    const committed = new Set<string>();
    const store = app.stores.telemetry;
    const commit = store.commit.bind(store);
    store.commit = async (batches: CommitBatch[], merge) => {
      await new Promise((resolve) => setTimeout(resolve, 15));
      const outcome = await commit(batches, merge);
      for (const batch of batches) for (const r of batch.records) committed.add(`${r.vehicleId}@${r.timestamp}`);
      return outcome;
    };
    const client = await connectDevice(own, { username: 'device', password: await app.keyWith(['telemetry:write']) }, clients);
    const base = Date.now() - 60_000;
    const early: number[] = [];
    await withTimeout(Promise.all(Array.from({ length: 100 }, (_, i) => new Promise<void>((resolve, reject) => {
      const timestamp = base + i * 10;
      client.publish('fleet/commit-1/telemetry', JSON.stringify({ timestamp: new Date(timestamp).toISOString(), data: { speed: i } }), { qos: 1 }, (error) => {
        if (error) return reject(error);
        // Checked in the PUBACK's own callback, before anything else can run.
        if (!committed.has(`commit-1@${timestamp}`)) early.push(i);
        resolve();
      });
    }))), 10_000, '100 PUBACKs');
    assert.deepEqual(early, [], 'PUBACKs that arrived before their record was committed');
    assert.equal((await storedTimestamps(app, 'commit-1')).length, 100);
  });

  test('when the store cannot commit, no PUBACK arrives, the connection closes, and the error is logged', async () => {
    const logs = captureLogs('debug');
    const { app, url: own } = await appWithListener({ logger: logs.logger });
    await app.registerVehicle('commit-2');
    const client = await connectDevice(own, { username: 'device', password: await app.keyWith(['telemetry:write']) }, clients);
    await app.stores.close();
    assert.equal(await publishOutcome(client, 'fleet/commit-2/telemetry', record({ speed: 1 }), 1), 'closed');
    assert.ok(logs.lines().some((l) => l.msg === 'MQTT message not stored' && l.level === 50), 'an error log for the failed commit');
  });
});

describe('the port is taken', () => {
  test('a warning, the service runs on without MQTT, and /readyz says so', async (t) => {
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => squatter.close(() => resolve())));
    const port = (squatter.address() as net.AddressInfo).port;
    const logs = captureLogs('debug');
    const app = await createTestApp({ logger: logs.logger, env: { FLEET_MQTT_PORT: String(port), FLEET_MQTT_HOST: '127.0.0.1' } });
    apps.push(app);

    const warning = logs.lines().find((l) => l.level === 40 && typeof l.msg === 'string' && l.msg.includes('MQTT listener not started'));
    assert.ok(warning, 'a warning names the problem');
    assert.match(String(warning.msg), new RegExp(`port ${port} on 127.0.0.1 is in use`));
    const ready = await app.request('GET', '/readyz', { key: null });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), {
      status: 'degraded',
      checks: { store: 'up', mqtt: `degraded: port ${port} on 127.0.0.1 is in use; MQTT ingestion is off`, osmand: 'disabled', teltonika: 'disabled', cluster: 'disabled' },
    });
    await app.registerVehicle('http-still-works');
    const res = await app.request('POST', '/v2/telemetry/http-still-works', { body: { data: { speed: 1 } } });
    assert.equal(res.statusCode, 202, 'HTTP ingestion still works');
  });

  test('a running listener reports up', async () => {
    assert.deepEqual((await ctx.request('GET', '/readyz', { key: null })).json(), { status: 'ready', checks: { store: 'up', mqtt: 'up', osmand: 'disabled', teltonika: 'disabled', cluster: 'disabled' } });
  });
});

describe('graceful close', () => {
  test('every acknowledged message is stored, connections are closed, the port is free again', async () => {
    const { app, port, url: own } = await appWithListener();
    apps.splice(apps.indexOf(app), 1);
    await app.registerVehicle('close-1');
    const key = await app.keyWith(['telemetry:write']);
    const publisher = await connectDevice(own, { username: 'device', password: key }, clients);
    const idle = await connectDevice(own, { username: 'device', password: key }, clients);
    // A TCP connection that never sends CONNECT must not hold the close either.
    const raw = net.connect(port, '127.0.0.1');
    await new Promise((resolve) => raw.once('connect', resolve));
    const rawClosed = new Promise<void>((resolve) => raw.once('close', () => resolve()));
    const idleClosed = new Promise<void>((resolve) => idle.once('close', () => resolve()));

    const acked: number[] = [];
    const base = Date.now() - 60_000;
    let stop = false;
    const publishing = (async () => {
      for (let i = 0; !stop && i < 10_000; i++) {
        const timestamp = base + i;
        const outcome = await publishOutcome(publisher, 'fleet/close-1/telemetry', JSON.stringify({ timestamp: new Date(timestamp).toISOString(), data: { speed: 1 } }), 1, 3_000);
        if (outcome !== 'acked') return;
        acked.push(timestamp);
      }
    })();
    await waitUntil(() => acked.length >= 20, 'some acknowledged messages before closing');
    const stores = app.stores;
    await withTimeout(app.app.close(), 5_000, 'the app to close');
    stop = true;
    await withTimeout(publishing, 5_000, 'the publisher to stop');
    await withTimeout(Promise.all([rawClosed, idleClosed]), 2_000, 'the open connections to be closed');
    assert.equal(publisher.connected, false);

    // Every message that got its PUBACK is in the store.
    const stored = new Set((await stores.telemetry.history(app.organizationId, 'close-1', { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 100_000 })).map((r) => r.timestamp));
    assert.deepEqual(acked.filter((timestamp) => !stored.has(timestamp)), [], 'acknowledged but not stored');
    await stores.close();

    const again = net.createServer();
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => again.close(() => resolve()));
  });
});
