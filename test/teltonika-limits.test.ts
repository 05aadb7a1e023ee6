// The Teltonika port's limits (docs/SECURITY.md "Device ports"), over real TCP: no IMEI in time,
// a packet trickled in, too many connections from one address or in all. Registered trackers
// that behave are answered as before. Deadlines are configured at their shortest (1 s); every
// wait is bounded and only outcomes are asserted (closed, answered).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';
import { withTimeout } from './helpers/process.ts';
import { type Tracker, connectTracker, count, fix, packetOf } from './helpers/teltonika.ts';

const trackers: Tracker[] = [];
after(() => {
  for (const t of trackers) t.end();
});

async function teltonikaApp(env: Record<string, string>): Promise<{ ctx: TestApp; port: number; imei: string }> {
  const port = await freePort();
  const ctx = await createTestApp({ env: { FLEET_TELTONIKA_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1', ...env } });
  await ctx.registerVehicle('t-1');
  const imei = '352093081234567';
  const res = await ctx.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: imei, vehicleId: 't-1' } });
  assert.equal(res.statusCode, 201, res.body);
  return { ctx, port, imei };
}

async function closedCount(ctx: TestApp, reason: string): Promise<number> {
  const text = (await ctx.request('GET', '/metrics')).body;
  const match = new RegExp(`^fleet_teltonika_connections_closed_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text);
  return match === null ? 0 : Number(match[1]);
}

const closedWithin = (tracker: Tracker, what: string) => withTimeout(tracker.closed, 10_000, what);

async function stored(ctx: TestApp): Promise<number> {
  return (await ctx.request('GET', '/v2/telemetry/t-1/history')).json().records.length;
}

describe('deadlines the bytes do not reset', () => {
  test('no IMEI within the login timeout, or an IMEI trickled in: closed; a tracker that logged in waits on and is answered', async (t) => {
    const { ctx, port, imei } = await teltonikaApp({ FLEET_TELTONIKA_LOGIN_TIMEOUT_SECONDS: '1' });
    t.after(() => ctx.close());
    const tracker = await connectTracker(port, trackers);
    assert.deepEqual(await tracker.login(imei), Buffer.from([1]));

    const silent = await connectTracker(port, trackers);
    const trickler = await connectTracker(port, trackers);
    const login = Buffer.from(`000F${Buffer.from(imei).toString('hex')}`, 'hex');
    let at = 0;
    // A byte every 200 ms keeps the idle timer from ever firing; the whole IMEI would take 3.4 s.
    const drip = setInterval(() => {
      if (at < login.length && !trickler.socket.destroyed) trickler.socket.write(login.subarray(at, ++at));
    }, 200);
    t.after(() => clearInterval(drip));
    await closedWithin(silent, 'a silent connection to be closed');
    await closedWithin(trickler, 'a trickled login to be closed');
    assert.ok(at < login.length, 'cut before its IMEI was whole');
    assert.equal(await closedCount(ctx, 'login-timeout'), 2);

    // The logged-in tracker has now been silent longer than the login timeout: it is not held to it.
    tracker.send(packetOf([fix(Date.now() - 60_000, 1, 1)]));
    assert.deepEqual(await tracker.read(4), count(1));
  });

  test('a packet begun must arrive whole within the packet timeout: trickled, the connection is closed and nothing stored', async (t) => {
    const { ctx, port, imei } = await teltonikaApp({ FLEET_TELTONIKA_PACKET_TIMEOUT_SECONDS: '1' });
    t.after(() => ctx.close());
    const steady = await connectTracker(port, trackers);
    assert.deepEqual(await steady.login(imei), Buffer.from([1]));
    const trickler = await connectTracker(port, trackers);
    assert.deepEqual(await trickler.login(imei), Buffer.from([1]));

    const packet = packetOf([fix(Date.now() - 120_000, 2, 2)]);
    let at = 0;
    const drip = setInterval(() => {
      if (at < packet.length && !trickler.socket.destroyed) trickler.socket.write(packet.subarray(at, ++at));
    }, 100);
    t.after(() => clearInterval(drip));
    await closedWithin(trickler, 'a trickled packet to be closed');
    assert.ok(at < packet.length, 'cut before the packet was whole');
    assert.equal(await closedCount(ctx, 'packet-timeout'), 1);
    assert.equal(await stored(ctx), 0);

    // The steady tracker, silent meanwhile for longer than the timeout, sends a packet in two pieces: answered.
    const next = packetOf([fix(Date.now() - 60_000, 3, 3)]);
    steady.send(next.subarray(0, 20));
    steady.send(next.subarray(20));
    assert.deepEqual(await steady.read(4), count(1));
    assert.equal(await stored(ctx), 1);
  });
});

describe('connection limits', () => {
  test('past the limit from one address, or in all, a connection is closed at once; a place freed is taken again', async (t) => {
    const { ctx, port, imei } = await teltonikaApp({ FLEET_TELTONIKA_CONNECTIONS_PER_ADDRESS: '3', FLEET_TELTONIKA_CONNECTIONS: '5' });
    t.after(() => ctx.close());
    const first = await Promise.all([1, 2, 3].map(() => connectTracker(port, trackers)));
    for (const tracker of first) assert.deepEqual(await tracker.login(imei), Buffer.from([1]));
    const fourth = await connectTracker(port, trackers);
    await closedWithin(fourth, 'a 4th connection from 127.0.0.1 to be closed');
    assert.equal(await closedCount(ctx, 'too-many-from-address'), 1);

    const other = await Promise.all(['127.0.0.2', '127.0.0.3'].map((address) => connectTracker(port, trackers, address)));
    for (const tracker of other) assert.deepEqual(await tracker.login(imei), Buffer.from([1]), 'another address is not held to 127.0.0.1\'s limit');
    const sixth = await connectTracker(port, trackers, '127.0.0.4');
    await closedWithin(sixth, 'a 6th connection in all to be closed');
    assert.equal(await closedCount(ctx, 'too-many'), 1);

    first[0]!.end();
    await first[0]!.closed;
    // The server counts the closed one out when it sees the close: a bounded retry, no sleep.
    let again: Tracker | undefined;
    for (let i = 0; i < 50 && again === undefined; i += 1) {
      const tracker = await connectTracker(port, trackers);
      const answer = await tracker.login(imei);
      if (Buffer.isBuffer(answer) && answer[0] === 1) again = tracker;
    }
    assert.ok(again !== undefined, 'a freed place is taken again');
    again.send(packetOf([fix(Date.now() - 60_000, 4, 4)]));
    assert.deepEqual(await again.read(4), count(1));
    for (const tracker of [...first.slice(1), ...other]) assert.equal(tracker.socket.destroyed, false, 'those within the limits stay open');
  });
});
