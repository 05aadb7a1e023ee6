// Commands over MQTT through the embedded listener (docs/API.md "Commands"), with the real mqtt.js
// client: who may subscribe to a vehicle's commands, a command published to each subscribed
// connection once and `sent` at its PUBACK, results completing it, and what a bad result does.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { MqttClient } from 'mqtt';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { connectDevice, endAll, freePort, publishOutcome, withTimeout } from './helpers/mqtt.ts';
import { commandsOf } from './helpers/commands.ts';
import { waitUntil } from './helpers/wait.ts';

const clients: MqttClient[] = [];
let ctx: TestApp;
let url: string;
let deviceKey: string;
const clock = manualClock(Date.now());
before(async () => {
  const port = await freePort();
  ctx = await createTestApp({ clock, env: { FLEET_MQTT_PORT: String(port), FLEET_MQTT_HOST: '127.0.0.1' } });
  url = `mqtt://127.0.0.1:${port}`;
  deviceKey = await ctx.keyWith(['telemetry:write']);
});
after(async () => {
  await endAll(clients);
  await ctx.close();
});

const device = (password = deviceKey, clean = true) => connectDevice(url, { username: 'device', password, clean, clientId: `dev-${Math.random().toString(36).slice(2)}` }, clients);
const { command, send, statusBecomes } = commandsOf({ request: (...args) => ctx.request(...args) }, 40);
/** The next message a client receives, as JSON with its topic. */
function nextMessage(client: MqttClient, ms = 3_000): Promise<{ topic: string; body: { id: string; type: string; params: unknown; expiresAt: string } } | 'none'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      client.off('message', onMessage);
      resolve('none');
    }, ms);
    function onMessage(topic: string, payload: Buffer) {
      clearTimeout(timer);
      client.off('message', onMessage);
      resolve({ topic, body: JSON.parse(payload.toString()) });
    }
    client.on('message', onMessage);
  });
}
async function subscribe(client: MqttClient, topic: string, qos: 0 | 1 = 1): Promise<number> {
  const granted = await withTimeout(client.subscribeAsync(topic, { qos }), 2_000, 'the SUBACK').then(
    (g) => g[0]!.qos,
    (error: { packet?: { granted?: number[] } }) => error.packet?.granted?.[0] ?? -1,
  );
  return granted;
}

describe('subscribing', () => {
  test('a device subscribes to its vehicles\' commands topics at QoS 1, by exact name; wildcards, QoS 0, other topics, unknown and other organizations\' vehicles are refused', async () => {
    await ctx.registerVehicle('mc-1');
    const other = await ctx.otherOrganization('Other MQTT org');
    await ctx.registerVehicle('mc-theirs', {}, other.key);
    const client = await device();
    assert.equal(await subscribe(client, 'fleet/mc-1/commands'), 1);
    for (const topic of ['fleet/+/commands', 'fleet/#', 'fleet/mc-1/telemetry', 'fleet/nope/commands', 'fleet/mc-theirs/commands', 'fleet/mc-1/commands/cmd_00000000000000000000/result']) {
      assert.equal(await subscribe(client, topic), 128, topic);
    }
    assert.equal(await subscribe(client, 'fleet/mc-1/commands', 0), 128, 'QoS 0: a command would be sent with nothing to say it arrived');
    assert.ok(client.connected);
  });
});

describe('commands and results', () => {
  test('a command is published to the subscriber, sent at its PUBACK, and its result completes it', async () => {
    await ctx.registerVehicle('mc-2');
    const client = await device();
    assert.equal(await subscribe(client, 'fleet/mc-2/commands'), 1);
    const arriving = nextMessage(client);
    const made = await send('mc-2', { type: 'outputControl', params: { output: 3, on: true } });
    const message = await arriving;
    assert.notEqual(message, 'none');
    if (message === 'none') return;
    assert.equal(message.topic, 'fleet/mc-2/commands');
    assert.deepEqual({ ...message.body, expiresAt: undefined }, { id: made.id, type: 'outputControl', params: { output: 3, on: true }, expiresAt: undefined });
    await statusBecomes(made.id, 'sent');
    assert.equal(await publishOutcome(client, `fleet/mc-2/commands/${made.id}/result`, JSON.stringify({ status: 'succeeded', result: 'DOUT3:1' }), 1), 'acked');
    await statusBecomes(made.id, 'succeeded');
    assert.equal((await command(made.id)).result, 'DOUT3:1');
  });

  test('queued while nobody listens, commands go out when a device subscribes; a failed result is failed; no result in time is timed_out', async () => {
    await ctx.registerVehicle('mc-3');
    const first = await send('mc-3', { type: 'reboot' });
    const second = await send('mc-3', { type: 'custom', params: { text: 'hello' } });
    const client = await device();
    const received: string[] = [];
    client.on('message', (_topic, payload) => received.push((JSON.parse(payload.toString()) as { id: string }).id));
    assert.equal(await subscribe(client, 'fleet/mc-3/commands'), 1);
    await waitUntil(() => received.length === 2, 'both commands');
    assert.deepEqual(received, [first.id, second.id]);
    await statusBecomes(second.id, 'sent');
    await publishOutcome(client, `fleet/mc-3/commands/${first.id}/result`, JSON.stringify({ status: 'failed', error: 'busy' }), 1);
    await statusBecomes(first.id, 'failed');
    assert.equal((await command(first.id)).error, 'busy');
    clock.advance(60_000);
    await statusBecomes(second.id, 'timed_out');
  });

  test('bad results are acknowledged and dropped, completing nothing; answering for a vehicle not one\'s own closes the connection', async () => {
    await ctx.registerVehicle('mc-4');
    await ctx.registerVehicle('mc-5');
    const client = await device();
    assert.equal(await subscribe(client, 'fleet/mc-4/commands'), 1);
    const made = await send('mc-4', { type: 'positionSingle' });
    await statusBecomes(made.id, 'sent');
    const otherVehicle = await send('mc-5', { type: 'positionSingle' });
    const topic = `fleet/mc-4/commands/${made.id}/result`;
    for (const payload of ['not json', '[]', '{"status":"done"}', '{"status":"succeeded","extra":1}', `{"status":"succeeded","result":"${'x'.repeat(5000)}"}`, Buffer.from([0xff, 0xfe])]) {
      assert.equal(await publishOutcome(client, topic, payload, 1), 'acked', String(payload).slice(0, 40));
    }
    // Another vehicle's command named under this vehicle's topic, and an unknown command: nothing completes.
    assert.equal(await publishOutcome(client, `fleet/mc-4/commands/${otherVehicle.id}/result`, '{"status":"succeeded"}', 1), 'acked');
    assert.equal(await publishOutcome(client, 'fleet/mc-4/commands/cmd_00000000000000000000/result', '{"status":"succeeded"}', 1), 'acked');
    assert.equal((await command(made.id)).status, 'sent');
    assert.equal((await command(otherVehicle.id)).status, 'queued');
    assert.ok(client.connected);
    assert.equal(await publishOutcome(client, topic, '{"status":"succeeded","result":"GPS:1"}', 1), 'acked');
    await statusBecomes(made.id, 'succeeded');

    const theirs = await ctx.otherOrganization('Other result org');
    await ctx.registerVehicle('mc-6', {}, theirs.key);
    assert.equal(await publishOutcome(client, 'fleet/mc-6/commands/cmd_00000000000000000000/result', '{"status":"succeeded"}', 1), 'closed');
  });

  test('each subscribed connection receives a command once; queue: false is refused while nobody subscribes', async () => {
    await ctx.registerVehicle('mc-7');
    const refused = await ctx.request('POST', '/v2/fleet/vehicles/mc-7/commands', { body: { type: 'reboot', queue: false } });
    assert.equal(refused.statusCode, 409, refused.body);
    const a = await device();
    const b = await device();
    const got = { a: 0, b: 0 };
    a.on('message', () => void (got.a += 1));
    b.on('message', () => void (got.b += 1));
    assert.equal(await subscribe(a, 'fleet/mc-7/commands'), 1);
    assert.equal(await subscribe(b, 'fleet/mc-7/commands'), 1);
    const made = await send('mc-7', { type: 'reboot', queue: false });
    await statusBecomes(made.id, 'sent');
    await waitUntil(() => got.a === 1 && got.b === 1, 'one message on each connection');
    // Subscribing again on the same connection does not send it again.
    assert.equal(await subscribe(a, 'fleet/mc-7/commands'), 1);
    assert.equal(await nextMessage(a, 300), 'none');
  });
});
