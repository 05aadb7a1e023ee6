// One stream client must not be able to stall the service (docs/API.md "Live streams": slow
// consumers, snapshots, client messages). A fleet stream over 1,000 vehicles whose client sends
// 300 unsubscribe/subscribe pairs and never reads: every subscribe asks for a snapshot of 1,000
// vehicles. While it does, /healthz must keep answering promptly, the process's memory must stay
// about where it was, and the socket's server-side buffer must stay under its cap. A second test
// holds the message budget: a client flooding messages gets `rate-limited` errors, then 1008.
//
// Bounds are generous (a busy machine passes them) but far below what the abuse costs without
// the limits: seconds of /healthz latency and hundreds of MB.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type StreamApp, type StreamClient, attach, closeAll, createStream, createStreamApp, withTimeout } from './helpers/streams.ts';

const VEHICLES = 1000;
const PAIRS = 300;
const MiB = 1024 * 1024;

const clients: StreamClient[] = [];
let ctx: StreamApp;
before(async () => {
  // A budget far above the abuse, so that every subscribe reaches the snapshot code: what is
  // measured is the snapshot's cost, not the budget's refusal (tested on its own below).
  ctx = await createStreamApp({ streams: { clientMessageBurst: 10_000, clientMessageRate: 10_000, slowConsumerMs: 4_000 } });
  const ids = Array.from({ length: VEHICLES }, (_, i) => `ab-${String(i).padStart(4, '0')}`);
  // All at once: the registrations share commits (one after another, each waits for its own disk sync).
  await Promise.all(ids.map((id) => ctx.registerVehicle(id)));
  // ~8 KB of diagnostics per vehicle: one snapshot of the fleet is about 8 MB, more than the
  // loopback socket's kernel buffers take, so the server's side fills up.
  const diagnostics = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, 'x'.repeat(250)]));
  const timestamp = new Date(Date.now() - 1000).toISOString();
  for (let from = 0; from < VEHICLES; from += 100) {
    const records = ids.slice(from, from + 100).map((vehicleId, i) => ({
      vehicleId, timestamp, data: { location: { lat: 50 + i / 1000, lng: 10 }, speed: i % 90, battery: 50, temperature: 20, diagnostics },
    }));
    const res = await ctx.request('POST', '/v2/telemetry', { body: { records } });
    assert.equal(res.statusCode, 202, res.body.slice(0, 300));
  }
});
after(async () => {
  await closeAll(clients);
  await ctx.close();
});

/** The time /healthz takes over real HTTP, through this process's event loop. */
async function healthz(): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${ctx.publicUrl}/healthz`);
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  return performance.now() - started;
}

const rssMiB = () => process.memoryUsage().rss / MiB;

describe('one abusive stream client', () => {
  test('300 subscribe/unsubscribe pairs over 1,000 vehicles, never reading: /healthz stays fast, memory and the socket buffer stay bounded', async () => {
    const baseline: number[] = [];
    for (let i = 0; i < 20; i++) baseline.push(await healthz());
    baseline.sort((a, b) => a - b);
    const typical = baseline[10]!;
    global.gc?.();
    const rssBefore = rssMiB();

    const created = await createStream(ctx, { events: ['location', 'battery', 'diagnostics', 'status'], interval: 0 });
    const abuser = await attach(created.url, {}, clients);
    await abuser.next((m) => m.type === 'connected');
    // The client stops reading: whatever the server sends piles up on the server's side.
    (abuser.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    let sent = 0;
    for (let i = 0; i < PAIRS; i++) {
      abuser.send({ type: 'unsubscribe', events: ['location', 'battery', 'diagnostics', 'status'] });
      abuser.send({ type: 'subscribe', events: ['location', 'battery', 'diagnostics', 'status'] });
      sent += 2;
    }
    assert.equal(sent, 2 * PAIRS);

    // Probe for a while: until the server lets the socket go (closed as a slow consumer), and at
    // least 3 s, at most 12 s.
    const latencies: number[] = [];
    let rssPeak = rssBefore;
    let bufferedPeak = 0;
    let letGo = false;
    const started = Date.now();
    for (;;) {
      latencies.push(await healthz());
      rssPeak = Math.max(rssPeak, rssMiB());
      const state = (await ctx.request('GET', `/v2/streams/${created.streamId}`)).json();
      bufferedPeak = Math.max(bufferedPeak, state.bufferedBytes);
      letGo ||= state.attached === false;
      const elapsed = Date.now() - started;
      if ((elapsed >= 3_000 && letGo) || elapsed >= 12_000) break;
      await sleep(50);
    }
    latencies.sort((a, b) => a - b);
    const worst = latencies.at(-1)!;
    const limit = Math.max(1_000, 20 * typical);
    const seen = `${sent} messages; /healthz up to ${worst.toFixed(0)} ms (typical ${typical.toFixed(1)} ms, limit ${limit.toFixed(0)} ms); ` +
      `RSS ${rssBefore.toFixed(0)} → ${rssPeak.toFixed(0)} MiB; socket buffer up to ${bufferedPeak} bytes`;
    assert.ok(worst <= limit, `/healthz too slow during the abuse: ${seen}`);
    assert.ok(rssPeak - rssBefore <= 150, `RSS grew by more than 150 MiB: ${seen}`);
    assert.ok(bufferedPeak <= MiB + 64 * 1024, `the socket buffered more than its 1 MiB cap plus one frame: ${seen}`);
    // Never reading, it stayed behind: it was closed as a slow consumer, which it sees once it reads.
    assert.ok(letGo, `the server let the socket go as a slow consumer: ${seen}`);
    (abuser.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    assert.equal((await withTimeout(abuser.closed, 15_000, 'the abusive client to see its close')).code, 1013);
  });
});

describe('the client message budget', () => {
  test('a flood of messages gets `rate-limited` errors, and then the socket is closed with 1008', async () => {
    const app = await createStreamApp({ streams: { clientMessageBurst: 5, clientMessageRate: 1 } });
    try {
      await app.registerVehicle('bd-1');
      const created = await createStream(app, { events: ['battery'], interval: 0 }, 'bd-1');
      const client = await attach(created.url, {}, clients);
      await client.next((m) => m.type === 'connected');
      for (let i = 0; i < 200; i++) client.send({ type: 'subscribe', events: ['battery'] });
      const closed = await withTimeout(client.closed, 5_000, 'the flooding client to be closed');
      assert.equal(closed.code, 1008);
      const answered = client.all((m) => m.type === 'subscriptions');
      assert.ok(answered.length >= 5 && answered.length <= 8, `within the burst, messages are answered (${answered.length})`);
      const refusals = client.all((m) => m.type === 'error');
      assert.ok(refusals.length >= 1, 'over the budget, an error first');
      assert.ok(refusals.every((m) => m.code === 'rate-limited' && typeof m.detail === 'string'), JSON.stringify(refusals[0]));
      assert.ok(answered.length + refusals.length < 200, 'the rest of the flood is never acted on');
    } finally {
      await app.close();
    }
  });

  test('a client within its budget is never refused', async () => {
    const app = await createStreamApp({ streams: { clientMessageBurst: 3, clientMessageRate: 20 } });
    try {
      await app.registerVehicle('bd-2');
      const created = await createStream(app, { events: ['battery'], interval: 0 }, 'bd-2');
      const client = await attach(created.url, {}, clients);
      await client.next((m) => m.type === 'connected');
      // 12 messages at about 6 a second, well under 20 a second.
      for (let i = 0; i < 12; i++) {
        client.send({ type: i % 2 === 0 ? 'unsubscribe' : 'subscribe', events: ['battery'] });
        await client.next((m) => m.type === 'subscriptions' || m.type === 'error');
        await sleep(150);
      }
      assert.deepEqual(client.all((m) => m.type === 'error'), []);
      assert.ok(client.isOpen);
    } finally {
      await app.close();
    }
  });
});
