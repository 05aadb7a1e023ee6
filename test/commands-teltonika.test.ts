// Commands over Teltonika (docs/API.md "Commands"): Codec 12 as Teltonika documents it, a command
// from POST to the frame on a real tracker's socket, its answer matched to it, one in flight per
// connection, timeouts on the test's clock, and what bad Codec 12 input does (nothing but a log line).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { crc16Ibm } from '../src/protocols/teltonika/crc.ts';
import { RESPONSE_TYPE, decodeCodec12, encodeCodec12 } from '../src/protocols/teltonika/codec12.ts';
import { teltonikaText } from '../src/commands/model.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { freePort } from './helpers/mqtt.ts';
import { waitUntil } from './helpers/wait.ts';
import { type Tracker, connectTracker, count, fix, packetOf } from './helpers/teltonika.ts';
import { commandsOf } from './helpers/commands.ts';
import { eventValidator } from './helpers/events.ts';

// Teltonika's own examples (the Codec 12 page of its wiki): the `getinfo` and `getver` commands,
// and a tracker's answer to `getinfo`.
const GETINFO = '000000000000000F0C010500000007676574696E666F0100004312';
const GETVER = '000000000000000E0C010500000006676574766572010000A4C2';
const GETINFO_ANSWER =
  '00000000000000900C010600000088494E493A323031392F372F323220373A3232205254433A323031392F372F323220373A3533205253543A32204552523A312053523A302042523A302043463A302046473A3020464C3A302054553A302F302055543A3020534D533A30204E4F4750533A303A3330204750533A31205341543A302052533A332052463A36352053463A31204D443A30010000C78F';

describe('Codec 12', () => {
  test('commands encode as Teltonika\'s examples, byte for byte', () => {
    assert.equal(encodeCodec12('getinfo').toString('hex').toUpperCase(), GETINFO);
    assert.equal(encodeCodec12('getver').toString('hex').toUpperCase(), GETVER);
  });

  test('the documented answer decodes, its CRC checks, and the text is whole', () => {
    const frame = Buffer.from(GETINFO_ANSWER, 'hex');
    const data = frame.subarray(8, frame.length - 4);
    assert.equal(frame.readUInt32BE(frame.length - 4), crc16Ibm(data));
    const message = decodeCodec12(data);
    assert.ok(!('malformed' in message));
    assert.equal(message.type, RESPONSE_TYPE);
    assert.match(message.text, /^INI:2019\/7\/22 7:22 RTC:.* MD:0$/);
  });

  test('each type is the text the contract gives it', () => {
    assert.equal(teltonikaText({ type: 'engineStop', params: {} }), 'setdigout 1');
    assert.equal(teltonikaText({ type: 'engineResume', params: {} }), 'setdigout 0');
    assert.equal(teltonikaText({ type: 'positionSingle', params: {} }), 'getgps');
    assert.equal(teltonikaText({ type: 'reboot', params: {} }), 'cpureset');
    assert.equal(teltonikaText({ type: 'outputControl', params: { output: 2, on: true } }), 'setdigout ?1??');
    assert.equal(teltonikaText({ type: 'outputControl', params: { output: 4, on: false } }), 'setdigout ???0');
    assert.equal(teltonikaText({ type: 'custom', params: { text: 'setdigout 11' } }), 'setdigout 11');
  });

  test('what is not a Codec 12 message is told apart, not thrown', () => {
    const data = Buffer.from(GETINFO, 'hex').subarray(8, -4);
    assert.ok('malformed' in decodeCodec12(data.subarray(0, 5)));
    const wrongLength = Buffer.from(data);
    wrongLength.writeUInt32BE(99, 3);
    assert.ok('malformed' in decodeCodec12(wrongLength));
    const wrongQuantity = Buffer.from(data);
    wrongQuantity[1] = 2;
    assert.ok('malformed' in decodeCodec12(wrongQuantity));
  });
});

/** A tracker's answer to the command in flight. */
const answer = (text: string) => encodeCodec12(text, RESPONSE_TYPE);

describe('over a tracker\'s connection', () => {
  let ctx: TestApp;
  let port: number;
  const clock = manualClock(Date.now());
  const trackers: Tracker[] = [];
  let imeis = 352000000000000;

  before(async () => {
    port = await freePort();
    ctx = await createTestApp({ clock, env: { FLEET_TELTONIKA_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1', FLEET_COMMAND_TIMEOUT_SECONDS: '60' } });
  });
  after(async () => {
    for (const t of trackers) t.end();
    await ctx.close();
  });

  async function vehicleWithTracker(vehicleId: string): Promise<string> {
    const imei = String(++imeis);
    await ctx.registerVehicle(vehicleId);
    const res = await ctx.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: imei, vehicleId } });
    assert.equal(res.statusCode, 201, res.body);
    return imei;
  }
  async function online(vehicleId: string): Promise<Tracker> {
    const imei = await vehicleWithTracker(vehicleId);
    const tracker = await connectTracker(port, trackers);
    assert.deepEqual(await tracker.login(imei), Buffer.from([1]));
    return tracker;
  }
  const { command, send, statusBecomes } = commandsOf({ request: (...args) => ctx.request(...args) });
  /** The sweep runs each second of the clock: the clock moves a second at each look. */
  async function sweptTo(id: string, status: string) {
    await waitUntil(async () => {
      clock.advance(1000);
      return (await command(id)).status === status;
    }, `command ${id} ${status}`, 5000, { every: 10 });
  }
  async function frame(tracker: Tracker, text: string) {
    const expected = encodeCodec12(text);
    assert.deepEqual(await tracker.read(expected.length), expected, `the frame of "${text}"`);
  }

  test('a command goes out as a Codec 12 frame at once, and the answer completes it: succeeded, with the text; events in order, of their schema', async () => {
    const tracker = await online('tc-1');
    const sent = await send('tc-1', { type: 'positionSingle' });
    assert.equal(sent.channel, 'teltonika');
    await frame(tracker, 'getgps');
    await statusBecomes(sent.id, 'sent');
    tracker.send(answer('GPS:1 Sat:9 Lat:52.52 Long:13.40'));
    await statusBecomes(sent.id, 'succeeded');
    const done = await command(sent.id);
    assert.equal(done.result, 'GPS:1 Sat:9 Lat:52.52 Long:13.40');
    const feed = (await ctx.request('GET', '/v2/events', { query: { vehicleId: 'tc-1', types: 'command.queued,command.sent,command.succeeded' } })).json<{ events: Array<{ type: string; data: { id: string } }> }>();
    assert.deepEqual(feed.events.map((e) => e.type), ['command.queued', 'command.sent', 'command.succeeded']);
    assert.ok(feed.events.every((e) => e.data.id === sent.id));
    const validate = await eventValidator(ctx);
    for (const event of feed.events) assert.ok(validate(event), JSON.stringify(validate.errors));
    const audit = (await ctx.request('GET', '/v2/audit-log', { query: { action: 'command.created' } })).json<{ entries: Array<{ resource: { type: string; id: string } }> }>();
    assert.ok(audit.entries.some((e) => e.resource.type === 'command' && e.resource.id === sent.id), JSON.stringify(audit.entries));
  });

  test('queued while the tracker is away, commands go out when it logs in: oldest first, one in flight at a time', async () => {
    const imei = await vehicleWithTracker('tc-2');
    const first = await send('tc-2', { type: 'outputControl', params: { output: 2, on: true } });
    const second = await send('tc-2', { type: 'custom', params: { text: 'getinfo' } });
    assert.equal((await command(first.id)).status, 'queued');
    const tracker = await connectTracker(port, trackers);
    assert.deepEqual(await tracker.login(imei), Buffer.from([1]));
    await frame(tracker, 'setdigout ?1??');
    assert.equal(await tracker.read(1, 200), 'timeout', 'the second waits for the first\'s answer');
    assert.equal((await command(second.id)).status, 'queued');
    tracker.send(answer('DOUT1:0 DOUT2:1'));
    await frame(tracker, 'getinfo');
    tracker.send(answer('INI:2026/11/28'));
    await statusBecomes(second.id, 'succeeded');
    assert.equal((await command(first.id)).result, 'DOUT1:0 DOUT2:1');
  });

  test('commands sent while one is in flight go out after its answer, in order, each after the one before is answered', async () => {
    const tracker = await online('tc-8');
    const first = await send('tc-8', { type: 'positionSingle' });
    await frame(tracker, 'getgps');
    const second = await send('tc-8', { type: 'custom', params: { text: 'getver' } });
    const third = await send('tc-8', { type: 'custom', params: { text: 'getinfo' } });
    tracker.send(answer('GPS:1'));
    await frame(tracker, 'getver');
    tracker.send(answer('Ver:03.28'));
    await frame(tracker, 'getinfo');
    tracker.send(answer('INI:2026/11/29'));
    await statusBecomes(third.id, 'succeeded');
    assert.deepEqual([(await command(first.id)).result, (await command(second.id)).result], ['GPS:1', 'Ver:03.28']);
  });

  test('no answer within the timeout: timed_out, and the next command goes out', async () => {
    const tracker = await online('tc-3');
    const first = await send('tc-3', { type: 'reboot' });
    await frame(tracker, 'cpureset');
    const second = await send('tc-3', { type: 'engineResume' });
    await statusBecomes(first.id, 'sent');
    clock.advance(60_000);
    await statusBecomes(first.id, 'timed_out');
    assert.match((await command(first.id)).error!, /no answer/);
    await frame(tracker, 'setdigout 0');
    // A late answer completes the command now in flight, not the one that timed out.
    tracker.send(answer('DOUT1:0'));
    await statusBecomes(second.id, 'succeeded');
    assert.equal((await command(first.id)).status, 'timed_out');
  });

  test('bad Codec 12 input (bad CRC, malformed, an answer with nothing in flight, a command to the server) is dropped; the connection goes on and completes nothing', async () => {
    const tracker = await online('tc-4');
    tracker.send(answer('nobody asked'));
    // Frames are answered in order: once this packet is acknowledged, the answer above has been judged.
    tracker.send(packetOf([fix(Date.now() - 2000, 52.5, 13.4)]));
    assert.deepEqual(await tracker.read(4), count(1));
    const damaged = answer('damaged');
    damaged[damaged.length - 1]! ^= 0xff;
    const sent = await send('tc-4', { type: 'positionSingle' });
    await frame(tracker, 'getgps');
    tracker.send(damaged);
    const malformed = answer('short');
    malformed.writeUInt32BE(99, 8 + 3); // a text length that disagrees with the frame's
    malformed.writeUInt32BE(crc16Ibm(malformed.subarray(8, -4)), malformed.length - 4);
    tracker.send(malformed);
    tracker.send(encodeCodec12('getinfo'));
    // Still a healthy connection: a packet is stored and acknowledged, and the command waits for its answer.
    tracker.send(packetOf([fix(Date.now() - 1000, 52.5, 13.5)]));
    assert.deepEqual(await tracker.read(4), count(1));
    assert.equal((await command(sent.id)).status, 'sent');
    tracker.send(answer('GPS:1'));
    await statusBecomes(sent.id, 'succeeded');
    assert.equal((await command(sent.id)).result, 'GPS:1');
  });

  test('a queued command past its expiry is expired, never sent; a command cancelled while queued is never sent', async () => {
    const imei = await vehicleWithTracker('tc-5');
    const stale = await send('tc-5', { type: 'engineStop' });
    const cancelled = await send('tc-5', { type: 'reboot' });
    const cancel = await ctx.request('DELETE', `/v2/commands/${cancelled.id}`);
    assert.equal(cancel.statusCode, 200, cancel.body);
    assert.equal(cancel.json().status, 'cancelled');
    clock.advance(299_000); // engineStop's default expiry is 300 s
    await sweptTo(stale.id, 'expired');
    const fresh = await send('tc-5', { type: 'positionSingle' });
    const tracker = await connectTracker(port, trackers);
    assert.deepEqual(await tracker.login(imei), Buffer.from([1]));
    await frame(tracker, 'getgps');
    assert.equal((await command(fresh.id)).status, 'sent');
    assert.equal((await command(stale.id)).sentAt, null);
    const again = await ctx.request('DELETE', `/v2/commands/${fresh.id}`);
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().type.endsWith('command-not-queued'), true, again.body);
  });

  test('queue: false answers 409 device-offline and keeps nothing when the tracker is away; sends at once when it is there', async () => {
    await vehicleWithTracker('tc-6');
    const refused = await ctx.request('POST', '/v2/fleet/vehicles/tc-6/commands', { body: { type: 'positionSingle', queue: false } });
    assert.equal(refused.statusCode, 409, refused.body);
    assert.match(refused.json().type, /device-offline$/);
    assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/tc-6/commands')).json().commands, []);
    const tracker = await online('tc-7');
    const sent = await send('tc-7', { type: 'positionSingle', queue: false });
    await frame(tracker, 'getgps');
    await statusBecomes(sent.id, 'sent');
  });
});
