// Live streams over time (docs/API.md "Live streams"): throttling with newest-value-wins, heartbeats,
// slow consumers (bounded server memory, conflation, 1013) next to a client that keeps up,
// expiry of unattached and abandoned streams, and 1001 on shutdown. Time limits are shortened
// through the app's stream settings; the 1 MiB slow-consumer threshold is the real one.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Message,
  type StreamApp,
  type StreamClient,
  attach,
  closeAll,
  createStream,
  createStreamApp,
  refused,
  send,
  stamp,
  withTimeout,
} from './helpers/streams.ts';
import { manualClock } from './helpers/clock.ts';

const clients: StreamClient[] = [];
const apps: StreamApp[] = [];
after(async () => {
  await closeAll(clients);
  for (const app of apps.splice(0)) await app.close();
});

const isEvent = (type?: string) => (m: Message) => m.seq !== undefined && (type === undefined || m.type === type);

async function open(url: string, options: Parameters<typeof attach>[1] = {}): Promise<StreamClient> {
  const client = await attach(url, options, clients);
  assert.equal((await client.next()).type, 'connected');
  return client;
}

/** Polls `check` every 25 ms until it holds, for at most `ms`. */
async function eventually(check: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  await withTimeout((async () => {
    while (!(await check())) await sleep(25);
  })(), ms, what);
}

describe('throttling', () => {
  let ctx: StreamApp;
  const clock = manualClock(Date.now());
  before(async () => {
    ctx = await createStreamApp({ clock });
    apps.push(ctx);
    await ctx.registerVehicle('t-1');
    await ctx.registerVehicle('t-2');
    await send(ctx, 't-1', { speed: 0, battery: 100 });
    await send(ctx, 't-2', { speed: 0 });
  });

  test('interval 500 with updates every 50 ms: one message at once, then one per interval, each carrying the newest values', async () => {
    const created = await createStream(ctx, { events: ['location', 'battery'], interval: 500 }, undefined);
    const client = await open(created.url);
    await client.take(3, isEvent()); // the snapshot: t-1 location and battery, t-2 location
    client.skip();
    // Update n is sent at (n - 1) × 50 ms of the stream's clock, for 2.1 s; then 600 ms more let the
    // last held values go out.
    const updates = 42;
    for (let speed = 1; speed <= updates; speed++) {
      const res = await ctx.request('POST', '/v2/telemetry', {
        body: { records: [{ vehicleId: 't-1', timestamp: stamp(), data: { speed, battery: 100 - speed / 10 } }, { vehicleId: 't-2', timestamp: stamp(), data: { speed: speed * 2 } }] },
      });
      assert.equal(res.statusCode, 202);
      clock.advance(50);
    }
    clock.advance(600);
    // At once (update 1), then at 500, 1000, 1500 and 2000 ms (updates 10, 20, 30, 40: the newest
    // each time), and at 2500 ms the last one (42), held since 2050 ms.
    const speeds = [1, 10, 20, 30, 40, 42];
    const got = await client.take(3 * speeds.length, isEvent());
    for (const [vehicleId, type] of [['t-1', 'location'], ['t-1', 'battery'], ['t-2', 'location']] as const) {
      const values = got.filter((m) => m.vehicleId === vehicleId && m.type === type)
        .map((m) => (type === 'battery' ? m.data!.battery : m.data!.speed) as number);
      const expected = speeds.map((speed) => (type === 'battery' ? 100 - speed / 10 : vehicleId === 't-1' ? speed : speed * 2));
      assert.deepEqual(values, expected, `${vehicleId} ${type}`);
    }
    const seqs = client.all(isEvent()).map((m) => m.seq!);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'seq +1 per message, no gaps');
    // Nothing more was held: a later update, due at once, is the next message on the socket.
    clock.advance(1000);
    await send(ctx, 't-2', { speed: 999 });
    assert.deepEqual((await client.next(isEvent())).data!.speed, 999);
  });

  test('interval 0 sends every update', async () => {
    const created = await createStream(ctx, { events: ['location'], interval: 0 }, 't-2');
    const client = await open(created.url);
    await client.next(isEvent());
    for (let i = 1; i <= 20; i++) await send(ctx, 't-2', { speed: 500 + i });
    const got = await client.take(20, isEvent());
    assert.deepEqual(got.map((m) => m.data!.speed), Array.from({ length: 20 }, (_, i) => 501 + i));
  });
});

describe('batched sockets', () => {
  let ctx: StreamApp;
  const ids = Array.from({ length: 50 }, (_, i) => `b-${i}`);
  before(async () => {
    ctx = await createStreamApp();
    apps.push(ctx);
    for (const id of ids) await ctx.registerVehicle(id);
  });

  const batchOf = (speed: number) => ({ records: ids.map((vehicleId) => ({ vehicleId, timestamp: stamp(), data: { speed } })) });

  test('batch=true: the messages of one turn come in one frame, one per line, seqs +1 as ever; without it, one message a frame', async () => {
    const batched = await open(`${(await createStream(ctx, { events: ['location'], interval: 0 })).url}&batch=true`);
    const plain = await open((await createStream(ctx, { events: ['location'], interval: 0 })).url);
    for (const speed of [1, 2, 3]) {
      const res = await ctx.request('POST', '/v2/telemetry', { body: batchOf(speed) });
      assert.equal(res.statusCode, 202, res.body);
    }
    for (const client of [batched, plain]) {
      const got = await client.take(3 * ids.length, isEvent());
      assert.deepEqual(got.map((m) => m.data!.speed), [1, 2, 3].flatMap((speed) => ids.map(() => speed)), 'every update, in order');
      const seqs = got.map((m) => m.seq!);
      assert.deepEqual(seqs, seqs.map((_, i) => seqs[0]! + i), 'seq +1 per message');
    }
    // Each batch of 50 records is committed and fanned out in one turn: one frame (or a few).
    assert.ok(batched.frames.length <= 1 + 3 * 3, `${batched.frames.length} frames for ${batched.messages.length} messages`);
    assert.ok(Math.max(...batched.frames) >= ids.length, `frames of ${batched.frames.join(', ')} messages`);
    assert.ok(plain.frames.every((n) => n === 1), 'one message a frame without batch');
  });

  test('batch must be true or false', async () => {
    const created = await createStream(ctx, { events: ['location'], interval: 0 });
    const refusal = await refused(`${created.url}&batch=yes`, {}, clients);
    assert.equal(refusal.status, 400);
  });
});

describe('heartbeats', () => {
  test('pings every interval; a client that does not pong is terminated, one that does stays', async () => {
    const ctx = await createStreamApp({ streams: { pingIntervalMs: 150, pongTimeoutMs: 150 } });
    apps.push(ctx);
    await ctx.registerVehicle('h-1');
    const silent = await open((await createStream(ctx, { events: ['location'] }, 'h-1')).url, { autoPong: false });
    const alive = await open((await createStream(ctx, { events: ['location'] }, 'h-1')).url);
    let pings = 0;
    alive.ws.on('ping', () => pings++);
    let silentPings = 0;
    silent.ws.on('ping', () => silentPings++);
    const closed = await withTimeout(silent.closed, 2_000, 'the silent client to be cut');
    assert.equal(closed.code, 1006, 'terminated: no close handshake with a peer that does not answer');
    assert.ok(silentPings >= 1);
    await sleep(400);
    assert.ok(alive.isOpen, 'a client that answers stays');
    assert.ok(pings >= 3, `pings received: ${pings}`);
  });
});

describe('expiry', () => {
  let ctx: StreamApp;
  before(async () => {
    ctx = await createStreamApp({ streams: { attachWindowMs: 300, detachedTtlMs: 300 } });
    apps.push(ctx);
    await ctx.registerVehicle('x-1');
  });

  test('a stream not attached within the window expires; its ticket with it', async () => {
    const created = await createStream(ctx, { events: ['location'] }, 'x-1');
    assert.ok(Date.parse(created.expiresAt) - Date.now() <= 300);
    await sleep(450);
    const res = await ctx.request('GET', `/v2/streams/${created.streamId}`);
    assert.equal(res.json().status, 'closed');
    const late = await refused(created.url, {}, clients);
    assert.equal(late.status, 401, 'the ticket expired with the stream');
  });

  test('a stream whose socket closed expires after the delay unless a socket comes back', async () => {
    const kept = await createStream(ctx, { events: ['location'] }, 'x-1');
    const dropped = await createStream(ctx, { events: ['location'] }, 'x-1');
    const a = await open(kept.url);
    const b = await open(dropped.url);
    await a.close();
    await b.close();
    const detached = (await ctx.request('GET', `/v2/streams/${dropped.streamId}`)).json();
    assert.equal(detached.status, 'connected');
    assert.ok(detached.expiresAt !== null);
    await sleep(150);
    const back = await open(`${(await ctx.request('POST', `/v2/streams/${kept.streamId}/tickets`)).json().url}`);
    await sleep(350);
    assert.equal((await ctx.request('GET', `/v2/streams/${dropped.streamId}`)).json().status, 'closed');
    assert.equal((await ctx.request('GET', `/v2/streams/${kept.streamId}`)).json().status, 'connected');
    assert.ok(back.isOpen);
  });
});

describe('slow consumers', () => {
  test('a client that stops reading: bounded server buffer, conflated updates, closed 1013; another client keeps receiving promptly', async () => {
    const ctx = await createStreamApp({ streams: { slowConsumerMs: 1_500 } });
    apps.push(ctx);
    const vehicles = Array.from({ length: 40 }, (_, i) => `sc-${i}`);
    for (const id of vehicles) await ctx.registerVehicle(id);
    const slowStream = await createStream(ctx, { events: ['diagnostics'], interval: 0 });
    const fastStream = await createStream(ctx, { events: ['diagnostics'], interval: 0 });
    const slow = await open(slowStream.url);
    const fast = await open(fastStream.url);
    // The client stops reading: TCP buffers fill, then the server's.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();

    // ~16 KiB per message, 40 vehicles per commit: 40 batches are ~25 MiB for each client.
    const diagnostics = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, 'x'.repeat(250)]));
    const latencies: number[] = [];
    let maxBuffered = 0;
    let maxConflated = 0;
    for (let batch = 0; batch < 40; batch++) {
      const timestamp = stamp();
      const res = await ctx.request('POST', '/v2/telemetry', {
        body: { records: vehicles.map((vehicleId) => ({ vehicleId, timestamp, data: { odometer: batch, diagnostics } })) },
      });
      assert.equal(res.statusCode, 202, res.body.slice(0, 200));
      const sentAt = Date.now();
      // The client that reads gets this batch promptly, slow neighbour or not.
      await fast.take(40, (m) => m.type === 'diagnostics' && m.data!.odometer === batch, 5_000);
      latencies.push(Date.now() - sentAt);
      const state = (await ctx.request('GET', `/v2/streams/${slowStream.streamId}`)).json();
      maxBuffered = Math.max(maxBuffered, state.bufferedBytes);
      maxConflated = Math.max(maxConflated, state.conflated);
    }
    latencies.sort((x, y) => x - y);
    assert.ok(latencies.at(-1)! < 1_000, `the reading client waited up to ${latencies.at(-1)} ms for a batch`);
    assert.ok(maxBuffered > 512 * 1024, `the slow client really fell behind (server buffer reached ${maxBuffered} bytes)`);
    assert.ok(maxBuffered <= 1024 * 1024 + 64 * 1024, `the server buffered at most 1 MiB + one frame, not ${maxBuffered}`);
    assert.ok(maxConflated > 0 && maxConflated <= vehicles.length, `held updates: at most one per vehicle and type, got ${maxConflated}`);

    // Behind for longer than the limit: closed with 1013 (the hub lets go of it at once).
    await eventually(async () => (await ctx.request('GET', `/v2/streams/${slowStream.streamId}`)).json().attached === false, 5_000, 'the slow socket to be let go');
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await withTimeout(slow.closed, 10_000, 'the slow client to see the close');
    assert.equal(closed.code, 1013);
    // What it read is a prefix of the stream with no gap, ending in newest values.
    const seqs = slow.all(isEvent()).map((m) => m.seq!);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1));
    assert.ok(seqs.length < 40 * 40, `conflated: ${seqs.length} messages rather than ${40 * 40}`);
    assert.ok(fast.isOpen);
    // The stream itself lives on for a resume.
    assert.equal((await ctx.request('GET', `/v2/streams/${slowStream.streamId}`)).json().status, 'connected');
  });
});

test('shutdown closes every socket with 1001', async () => {
  const ctx = await createStreamApp();
  await ctx.registerVehicle('d-1');
  const a = await open((await createStream(ctx, { events: ['location'] }, 'd-1')).url);
  const b = await open((await createStream(ctx, { events: ['status'] })).url);
  await withTimeout(ctx.close(), 5_000, 'the app to close');
  assert.equal((await withTimeout(a.closed, 2_000, 'a to close')).code, 1001);
  assert.equal((await withTimeout(b.closed, 2_000, 'b to close')).code, 1001);
});
