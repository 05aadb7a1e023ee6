// MQTT ingestion from an existing broker (docs/API.md "MQTT"): the service subscribes to
// `$share/<group>/fleet/+/telemetry` and acknowledges each message only after its commit. Runs
// against a real broker, FLEET_TEST_MQTT_URL (default: the Mosquitto at mqtt://127.0.0.1:1883).
// Without one the broker tests are skipped with a loud message, except on CI, where they fail.
//
// The broker is shared with whatever else uses it: every run has its own vehicle ids, share
// groups and client ids, and forgets its sessions at the end.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type MqttClient, connect } from 'mqtt';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { createTestApp, type TestApp, testConfig } from './helpers/app.ts';
import { brokerAnswers, connectDevice, endAll, freePort, messagesCounted, storedTimestamps, withTimeout } from './helpers/mqtt.ts';
import { waitUntil } from './helpers/wait.ts';
import { captureLogs } from './helpers/logs.ts';
import { skipUnless } from './helpers/skip.ts';

const BROKER = process.env.FLEET_TEST_MQTT_URL || 'mqtt://127.0.0.1:1883';
const RUN = randomBytes(4).toString('hex');

const skip = skipUnless((await brokerAnswers(BROKER)) ? undefined : 'not answering', `an MQTT broker at ${BROKER}`, 'the MQTT broker suites',
  'Set FLEET_TEST_MQTT_URL or start Mosquitto');

const clients: MqttClient[] = [];
const apps: TestApp[] = [];
const closers: (() => Promise<unknown>)[] = [];
const sessions: string[] = [];
after(async () => {
  await endAll(clients);
  for (const close of closers.splice(0)) await close();
  for (const app of apps.splice(0)) await app.close();
  if (skip === false) await Promise.all(sessions.map(forgetSession));
});

/** Ends a session the broker keeps for a client id (clean start, no expiry), so nothing lingers there. */
async function forgetSession(clientId: string) {
  const client = connect(BROKER, { clientId, clean: true, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 2_000, properties: { sessionExpiryInterval: 0 } });
  await withTimeout(new Promise<void>((resolve) => {
    client.once('connect', () => resolve());
    client.once('error', () => resolve());
  }), 3_000, `the session of ${clientId} to be forgotten`).catch(() => undefined);
  await withTimeout(client.endAsync(true), 3_000, 'the cleaning client to end').catch(() => undefined);
}

function brokerEnv(organizationId: string, group: string, clientId: string, url = BROKER) {
  return { FLEET_MQTT_URL: url, FLEET_MQTT_ORGANIZATION: organizationId, FLEET_MQTT_SHARE_GROUP: group, FLEET_MQTT_CLIENT_ID: clientId };
}

/** An app subscribed to the broker for its own organization, ready once /readyz says mqtt is up. */
async function subscribedApp(group: string, clientId: string, options: { logger?: ReturnType<typeof captureLogs>['logger']; url?: string; wait?: boolean } = {}) {
  sessions.push(clientId);
  const app = await createTestApp({
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    env: (organizationId) => brokerEnv(organizationId, group, clientId, options.url),
  });
  apps.push(app);
  if (options.wait !== false) await waitUntil(async () => (await mqttCheck(app)) === 'up', `${clientId} to subscribe`);
  return app;
}

async function mqttCheck(app: TestApp): Promise<string> {
  return (await app.request('GET', '/readyz', { key: null })).json().checks.mqtt;
}

const device = () => connectDevice(BROKER, { protocolVersion: 4 }, clients);
const at = (i: number) => new Date(Date.now() - 60_000 + i * 10).toISOString();
const publish = (client: MqttClient, vehicleId: string, payload: unknown, qos: 0 | 1 = 1) =>
  withTimeout(client.publishAsync(`fleet/${vehicleId}/telemetry`, typeof payload === 'string' ? payload : JSON.stringify(payload), { qos }), 5_000, 'the broker\'s PUBACK');

describe('an existing broker', { skip }, () => {
  test('a device publishes QoS 1 to the broker; the record is read over HTTP', async () => {
    const app = await subscribedApp(`fleet-test-${RUN}-one`, `fleet-test-${RUN}-one`);
    const vehicleId = `brk-${RUN}-1`;
    await app.registerVehicle(vehicleId);
    const client = await device();
    await publish(client, vehicleId, { timestamp: at(1), data: { speed: 12, battery: 77 } });
    await publish(client, vehicleId, { timestamp: at(2), data: { speed: 13 } }, 0);
    await waitUntil(async () => (await storedTimestamps(app, vehicleId)).length === 2, 'both records stored');
    // The latest state follows the commit's disk sync, which history reads may precede by a moment.
    await waitUntil(async () => (await app.request('GET', `/v2/telemetry/${vehicleId}`)).json().data?.speed === 13, 'the latest state');
    assert.deepEqual((await app.request('GET', `/v2/telemetry/${vehicleId}`)).json().data, { speed: 13, battery: 77 });

    // Invalid payloads are acknowledged to the broker, dropped and counted; the next one is stored.
    const invalidBefore = await messagesCounted(app, 'invalid');
    await publish(client, vehicleId, '{"data":');
    await publish(client, vehicleId, { timestamp: at(3), data: { battery: 300 } });
    await publish(client, vehicleId, { timestamp: at(4), data: { speed: 14 } });
    await waitUntil(async () => (await storedTimestamps(app, vehicleId)).length === 3, 'the good record after the bad ones');
    assert.ok((await messagesCounted(app, 'invalid')) >= invalidBefore + 2);
    assert.deepEqual((await app.request('GET', `/v2/fleet/vehicles/${vehicleId}`)).json().battery, 77);
  });

  test('two nodes in one share group each get a share; nothing is stored twice or lost', async () => {
    const group = `fleet-test-${RUN}-pair`;
    const [a, b] = [await subscribedApp(group, `fleet-test-${RUN}-pair-a`), await subscribedApp(group, `fleet-test-${RUN}-pair-b`)];
    const vehicles = [`brk-${RUN}-p1`, `brk-${RUN}-p2`];
    for (const app of [a, b]) for (const vehicleId of vehicles) await app.registerVehicle(vehicleId);
    const client = await device();
    const sent = Array.from({ length: 40 }, (_, i) => ({ vehicleId: vehicles[i % 2]!, timestamp: at(i) }));
    for (const { vehicleId, timestamp } of sent) await publish(client, vehicleId, { timestamp, data: { speed: 1 } });

    const storedIn = async (app: TestApp) => (await Promise.all(vehicles.map(async (v) => (await storedTimestamps(app, v)).map((t) => `${v}@${t}`)))).flat();
    await waitUntil(async () => (await storedIn(a)).length + (await storedIn(b)).length >= sent.length, 'every message stored by one node', 10_000);
    const [inA, inB] = [await storedIn(a), await storedIn(b)];
    assert.ok(inA.length > 0 && inB.length > 0, `each node gets a share (a: ${inA.length}, b: ${inB.length})`);
    assert.deepEqual(inA.filter((r) => inB.includes(r)), [], 'stored by both nodes');
    assert.deepEqual(new Set([...inA, ...inB]), new Set(sent.map((s) => `${s.vehicleId}@${s.timestamp}`)), 'every message stored once');
  });

  test('messages are in hand together and share commits; each is acknowledged once stored, so the node back under its id gets none again', async () => {
    const group = `fleet-test-${RUN}-many`;
    const clientId = `fleet-test-${RUN}-many`;
    const vehicles = [`brk-${RUN}-m1`, `brk-${RUN}-m2`, `brk-${RUN}-m3`];
    const app = await subscribedApp(group, clientId);
    for (const vehicleId of vehicles) await app.registerVehicle(vehicleId);
    const store = app.stores.telemetry;
    const commit = store.commit.bind(store);
    const groupSizes: number[] = [];
    store.commit = async (batches, merge) => {
      groupSizes.push(batches.length);
      return commit(batches, merge);
    };
    const client = await device();
    const sent = Array.from({ length: 300 }, (_, i) => ({ vehicleId: vehicles[i % 3]!, timestamp: at(i) }));
    await Promise.all(sent.map(({ vehicleId, timestamp }) => publish(client, vehicleId, { timestamp, data: { speed: 2 } })));
    const stored = async () => (await Promise.all(vehicles.map(async (v) => (await storedTimestamps(app, v)).length))).reduce((a, b) => a + b, 0);
    await waitUntil(async () => (await stored()) === sent.length, 'every message stored', 10_000);
    assert.ok(Math.max(...groupSizes) > 1, `messages shared commits (largest group: ${Math.max(...groupSizes)})`);

    // Had a PUBACK not reached the broker, the session would hold that message for the node's return.
    apps.splice(apps.indexOf(app), 1);
    await app.close();
    const back = await subscribedApp(group, clientId);
    for (const vehicleId of vehicles) await back.registerVehicle(vehicleId);
    await sleep(1_000);
    assert.equal(await messagesCounted(back, 'stored'), 0, 'no message was sent again');
  });

  test('a node set to leave: at shutdown it stores what it was sent and ends its session; later messages all go to the others', async () => {
    const group = `fleet-test-${RUN}-leave`;
    const [leaverId, stayerId] = [`fleet-test-${RUN}-leave-a`, `fleet-test-${RUN}-leave-b`];
    sessions.push(leaverId, stayerId);
    // Both nodes on one store, as in a cluster: every message must be in it once they are done.
    const store = await createTestApp();
    apps.push(store);
    const vehicles = [`brk-${RUN}-l1`, `brk-${RUN}-l2`];
    for (const vehicleId of vehicles) await store.registerVehicle(vehicleId);
    const node = async (clientId: string, session: string) => {
      const app = await buildApp({
        config: testConfig({ ...brokerEnv(store.organizationId, group, clientId), FLEET_MQTT_SESSION: session }),
        stores: store.stores, logger: pino({ level: 'silent' }),
      });
      await app.ready();
      await waitUntil(async () => (await app.inject({ url: '/readyz' })).json().checks.mqtt === 'up', `${clientId} to subscribe`);
      return app;
    };
    const leaver = await node(leaverId, 'leave');
    const stayer = await node(stayerId, 'keep');
    closers.push(() => stayer.close());

    const client = await device();
    const send = async (from: number, count: number) => {
      const sent = Array.from({ length: count }, (_, i) => ({ vehicleId: vehicles[i % 2]!, timestamp: at(from + i) }));
      for (const { vehicleId, timestamp } of sent) await publish(client, vehicleId, { timestamp, data: { speed: 1 } });
      return sent;
    };
    const stored = async () => new Set((await Promise.all(vehicles.map(async (v) => (await storedTimestamps(store, v)).map((t) => `${v}@${t}`)))).flat());
    const allStored = (sent: { vehicleId: string; timestamp: string }[]) => async () => {
      const now = await stored();
      return sent.every((r) => now.has(`${r.vehicleId}@${r.timestamp}`));
    };

    // The leaving node shuts down while the broker is still handing it its share.
    const before = await send(0, 30);
    await leaver.close();
    const probe = connect(BROKER, { clientId: leaverId, clean: false, protocolVersion: 5, reconnectPeriod: 0, properties: { sessionExpiryInterval: 0 } });
    const connack = await withTimeout(new Promise<{ sessionPresent: boolean }>((resolve, reject) => {
      probe.once('connect', resolve);
      probe.once('error', reject);
    }), 5_000, 'the CONNACK of the leaver\'s id');
    await withTimeout(probe.endAsync(true), 3_000, 'the probe to end');
    assert.equal(connack.sessionPresent, false, 'the broker no longer keeps a session for the node that left');
    await waitUntil(allStored(before), 'what was sent before the shutdown, stored', 10_000);

    // With the node gone for good, the node that stays gets every message: none waits in a session.
    const later = await send(30, 20);
    await waitUntil(allStored(later), 'every later message stored by the node that stays', 5_000);
  });

  test('a message that could not be committed is not acknowledged: the broker sends it again', async () => {
    const group = `fleet-test-${RUN}-redeliver`;
    const clientId = `fleet-test-${RUN}-redeliver`;
    const vehicleId = `brk-${RUN}-r1`;
    const logs = captureLogs('info');
    const broken = await subscribedApp(group, clientId, { logger: logs.logger });
    await broken.stores.close();
    const client = await device();
    await publish(client, vehicleId, { timestamp: at(1), data: { odometer: 4242 } });
    await waitUntil(() => logs.lines().some((l) => l.msg === 'MQTT message not stored'), 'the failed commit');
    apps.splice(apps.indexOf(broken), 1);
    await broken.close();

    // The same node back (same client id, so the same session), on a store that works and knows
    // the vehicle before the subscription starts.
    const store = await createTestApp();
    apps.push(store);
    await store.registerVehicle(vehicleId);
    const healed = await buildApp({
      config: testConfig(brokerEnv(store.organizationId, group, clientId)), stores: store.stores, logger: pino({ level: 'silent' }),
    });
    closers.push(() => healed.close());
    await healed.ready();
    await waitUntil(async () => (await storedTimestamps(store, vehicleId)).length === 1, 'the message sent again and stored', 10_000);
  });

  test('after a failed commit the node resumes its session, and the broker sends the message again', async () => {
    const group = `fleet-test-${RUN}-retry`;
    const vehicleId = `brk-${RUN}-retry`;
    const app = await subscribedApp(group, `fleet-test-${RUN}-retry`);
    await app.registerVehicle(vehicleId);
    const store = app.stores.telemetry;
    const commit = store.commit.bind(store);
    let failures = 0;
    store.commit = async (batches, merge) => {
      if (failures++ === 0) throw new Error('disk full (simulated)');
      return commit(batches, merge);
    };
    const client = await device();
    await publish(client, vehicleId, { timestamp: at(1), data: { speed: 8 } });
    await waitUntil(async () => (await storedTimestamps(app, vehicleId)).length === 1, 'the message stored on the second delivery', 10_000);
    assert.ok(failures >= 2, 'the first commit failed, a later one stored it');
  });
});

describe('broker configuration and connection state', () => {
  test('an organization the store does not have stops the start', async () => {
    await assert.rejects(
      createTestApp({ env: { FLEET_MQTT_URL: 'mqtt://127.0.0.1:1', FLEET_MQTT_ORGANIZATION: 'org_doesNotExist0000', FLEET_MQTT_CLIENT_ID: `fleet-test-${RUN}-x` } }),
      /FLEET_MQTT_ORGANIZATION: "org_doesNotExist0000" is not an organization of this store/,
    );
  });

  test('while the broker cannot be reached, /readyz says degraded and HTTP still works', async () => {
    const port = await freePort();
    const app = await subscribedApp(`fleet-test-${RUN}-down`, `fleet-test-${RUN}-down`, { url: `mqtt://127.0.0.1:${port}`, wait: false });
    const ready = await app.request('GET', '/readyz', { key: null });
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().status, 'degraded');
    assert.match(ready.json().checks.mqtt, /^degraded: /);
    assert.equal((await app.request('GET', '/v2/fleet/vehicles')).statusCode, 200);
  });

  const mosquitto = spawnSync('mosquitto', ['-h'], { stdio: 'ignore' }).error === undefined;
  test('reconnects by itself when the broker comes back', { skip: mosquitto ? false : 'no mosquitto binary to start a broker of our own' }, async (t) => {
    const port = await freePort();
    const start = () => {
      const broker = spawn('mosquitto', ['-p', String(port)], { stdio: 'ignore' });
      t.after(() => broker.kill('SIGKILL'));
      return broker;
    };
    const url = `mqtt://127.0.0.1:${port}`;
    const broker = start();
    await waitUntil(() => brokerAnswers(url), 'our own Mosquitto to start');
    const app = await subscribedApp(`fleet-test-${RUN}-back`, `fleet-test-${RUN}-back`, { url });
    broker.kill('SIGTERM');
    await waitUntil(async () => (await mqttCheck(app)).startsWith('degraded: '), '/readyz to report the broker gone');
    start();
    await waitUntil(async () => (await mqttCheck(app)) === 'up', '/readyz to report the broker back', 10_000);
    const vehicleId = `brk-${RUN}-back`;
    await app.registerVehicle(vehicleId);
    const client = await connectDevice(url, { protocolVersion: 4 }, clients);
    await publish(client, vehicleId, { timestamp: at(1), data: { speed: 3 } });
    await waitUntil(async () => (await storedTimestamps(app, vehicleId)).length === 1, 'the record over the new connection');
  });

  const passwd = spawnSync('mosquitto_passwd', ['-h'], { stdio: 'ignore' }).error === undefined;
  test('a broker that refuses the login: /readyz gives its reason; the right password subscribes',
    { skip: mosquitto && passwd ? false : 'no mosquitto and mosquitto_passwd to start a broker of our own' }, async (t) => {
      const dir = mkdtempSync(path.join(tmpdir(), 'fleet-mosquitto-'));
      // Started as root, Mosquitto drops to its own user before it reads the password file.
      chmodSync(dir, 0o755);
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      assert.equal(spawnSync('mosquitto_passwd', ['-c', '-b', path.join(dir, 'passwd'), 'fleet', 'right-password']).status, 0);
      chmodSync(path.join(dir, 'passwd'), 0o644);
      const port = await freePort();
      writeFileSync(path.join(dir, 'mosquitto.conf'), [
        `listener ${port} 127.0.0.1`, 'allow_anonymous false', `password_file ${path.join(dir, 'passwd')}`, 'persistence false', '',
      ].join('\n'));
      const broker = spawn('mosquitto', ['-c', path.join(dir, 'mosquitto.conf')], { stdio: 'ignore' });
      t.after(() => broker.kill('SIGKILL'));
      const url = `mqtt://127.0.0.1:${port}`;
      await waitUntil(async () => {
        const probe = connect(url, { reconnectPeriod: 0, connectTimeout: 1_000 });
        const answered = await withTimeout(new Promise<boolean>((resolve) => {
          probe.once('connect', () => resolve(true));
          probe.once('error', (error) => resolve('code' in error && typeof error.code === 'number'));
        }), 2_000, 'a probe').catch(() => false);
        probe.end(true);
        return answered;
      }, 'our own Mosquitto to start');

      const wrong = await createTestApp({
        env: (organizationId) => ({ ...brokerEnv(organizationId, `fleet-test-${RUN}-auth`, `fleet-test-${RUN}-auth-1`, url), FLEET_MQTT_USERNAME: 'fleet', FLEET_MQTT_PASSWORD: 'wrong' }),
      });
      apps.push(wrong);
      await waitUntil(async () => (await mqttCheck(wrong)).startsWith('degraded: the broker refused the connection'), 'the refusal in /readyz');
      const right = await createTestApp({
        env: (organizationId) => ({ ...brokerEnv(organizationId, `fleet-test-${RUN}-auth`, `fleet-test-${RUN}-auth-2`, url), FLEET_MQTT_USERNAME: 'fleet', FLEET_MQTT_PASSWORD: 'right-password' }),
      });
      apps.push(right);
      await waitUntil(async () => (await mqttCheck(right)) === 'up', 'the right password to subscribe');
    });
});

describe('commands through an existing broker', { skip }, () => {
  test('a command is published to the broker on the vehicle\'s commands topic; the device\'s result on the result topic completes it, garbage completes nothing', async () => {
    const app = await subscribedApp(`fleet-test-${RUN}-cmd`, `fleet-test-${RUN}-cmd-1`);
    const vehicleId = `cmd-${RUN}`;
    await app.registerVehicle(vehicleId);
    const client = await device();
    await withTimeout(client.subscribeAsync(`fleet/${vehicleId}/commands`, { qos: 1 }), 5_000, 'the SUBACK');
    const received = new Promise<{ id: string; type: string; params: unknown }>((resolve) => {
      client.on('message', (topic, payload) => {
        if (topic === `fleet/${vehicleId}/commands`) resolve(JSON.parse(payload.toString()));
      });
    });
    const made = await app.request('POST', `/v2/fleet/vehicles/${vehicleId}/commands`, { body: { type: 'outputControl', params: { output: 1, on: false } } });
    assert.equal(made.statusCode, 202, made.body);
    const { id } = made.json<{ id: string; channel: string }>();
    assert.equal(made.json<{ channel: string }>().channel, 'mqtt');
    const message = await withTimeout(received, 5_000, 'the command at the device');
    assert.deepEqual({ id: message.id, type: message.type, params: message.params }, { id, type: 'outputControl', params: { output: 1, on: false } });
    const status = async () => (await app.request('GET', `/v2/commands/${id}`)).json<{ status: string; result: string | null }>();
    assert.equal((await status()).status, 'sent');
    const resultTopic = `fleet/${vehicleId}/commands/${id}/result`;
    await withTimeout(client.publishAsync(resultTopic, 'not json', { qos: 1 }), 5_000, 'the broker\'s PUBACK');
    await withTimeout(client.publishAsync(resultTopic, JSON.stringify({ status: 'succeeded', result: 'DOUT1:0' }), { qos: 1 }), 5_000, 'the broker\'s PUBACK');
    await waitUntil(async () => (await status()).status === 'succeeded', 'the command to succeed');
    assert.equal((await status()).result, 'DOUT1:0');
  });
});
