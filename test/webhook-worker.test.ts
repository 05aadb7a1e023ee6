// The delivery worker's claims ahead of its attempts, against the embedded store and a real
// receiver: a delivery claimed but held back longer than a third of its lease is not attempted
// on that lease (another node could claim it once the lease runs out), stopping cuts the attempts
// under way short and gives them back with the claimed deliveries not yet attempted (and a worker
// started again records again), and a paced worker keeps to its share of the event loop.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { join } from 'node:path';
import { test } from 'node:test';
import { systemClock } from '../src/clock.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { createOutbound } from '../src/webhooks/outbound.ts';
import { type Pacing, createPacing } from '../src/webhooks/pacing.ts';
import { DEFAULT_DELIVERY_SETTINGS, createDeliveryWorker } from '../src/webhooks/worker.ts';
import { addOrganization } from './contract/fixtures.ts';
import { manualClock } from './helpers/clock.ts';
import { waitUntil } from './helpers/wait.ts';

const quiet = { warn() {} };

async function setUp(t: { after(fn: () => unknown): void }, handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'fleet-worker-'));
  const stores: Stores = createSqliteStores(join(dir, 'fleet.db'));
  const server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const outbound = createOutbound({ allowPrivate: true, timeoutMs: 10_000 });
  t.after(async () => {
    server.closeAllConnections();
    server.close();
    await outbound.close();
    await stores.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const organizationId = await addOrganization(stores);
  const now = Date.now();
  assert.equal(await stores.webhooks.insert({
    id: 'wh_1', organizationId, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, eventTypes: ['*'], description: null,
    enabled: true, disabledReason: null, secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmU=', previousSecret: null,
    previousSecretUntil: null, failingSince: null, createdAt: now, updatedAt: now,
  }, 10), 'created');
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const id = `whd_${i}`;
    ids.push(id);
    await stores.webhooks.addDelivery({ id, webhookId: 'wh_1', eventId: `evt_${i}`, eventType: 'webhook.test', payload: `{"n":${i}}`, recordedAt: now }, now);
  }
  return { stores, outbound, ids, organizationId };
}

/** `setUp` with a receiver that answers 204 and notes each delivery's `n`. */
async function setUpReceiving(t: { after(fn: () => unknown): void }) {
  const received: number[] = [];
  const setup = await setUp(t, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push((JSON.parse(body) as { n: number }).n);
      res.writeHead(204).end();
    });
  });
  return { ...setup, received };
}

test('a delivery held back past a third of its lease waits for the lease to run out, and is then sent once', async (t) => {
  let leaseOver = false;
  const received: Array<{ n: number; afterLease: boolean }> = [];
  let holding = true;
  const held: ServerResponse[] = [];
  const { stores, outbound, ids } = await setUp(t, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ n: (JSON.parse(body) as { n: number }).n, afterLease: leaseOver });
      if (holding) held.push(res);
      else res.writeHead(204).end();
    });
  });
  // The worker reads leases off the test's clock: a lease runs out when the test moves time on.
  const clock = manualClock(Date.now());
  const leaseMs = 6000;
  const worker = createDeliveryWorker({
    store: stores.webhooks, outbound, clock, log: quiet,
    settings: { ...DEFAULT_DELIVERY_SETTINGS, concurrency: 2, leaseMs, pollMs: 100 },
  });
  t.after(() => worker.stop());
  worker.start();
  // Two attempts under way, two more claimed ahead of them (twice the concurrency in hand).
  await waitUntil(() => held.length === 2, 'two attempts under way', 10_000);
  const first = received.map((r) => `whd_${r.n}`);
  // Held for longer than a third of the lease: the two claimed ahead may not start on it.
  clock.advance(leaseMs / 3 + 500);
  holding = false;
  for (const res of held.splice(0)) res.writeHead(204).end();
  const succeeded = async (some: string[]) =>
    (await Promise.all(some.map(async (id) => (await stores.webhooks.getDelivery('wh_1', id))?.status))).every((status) => status === 'succeeded');
  // The first claim took the four oldest; the two never claimed are claimed once the first two are
  // done, after the two held back were judged: by the time those are recorded, the two held back
  // have been let go unattempted, and they stay leased as long as the lease holds.
  const heldBack = ids.slice(0, 4).filter((id) => !first.includes(id));
  await waitUntil(() => succeeded(ids.slice(4)), 'the two never claimed to be sent and recorded', 10_000, { seen: () => JSON.stringify(received) });
  assert.deepEqual(received.map((r) => `whd_${r.n}`).sort(), [...first, ...ids.slice(4)].sort(), 'the two held back were not sent on their lease');
  for (const id of heldBack) assert.equal((await stores.webhooks.getDelivery('wh_1', id))?.attempt, 0, id);

  leaseOver = true;
  clock.advance(leaseMs);
  await waitUntil(() => succeeded(ids), 'every delivery recorded', 10_000, { seen: () => JSON.stringify(received) });
  assert.deepEqual(received.map((r) => r.n).sort(), [0, 1, 2, 3, 4, 5], 'each delivery received once');
  const late = received.filter((r) => r.afterLease).map((r) => `whd_${r.n}`);
  assert.deepEqual(late.sort(), heldBack.sort(), `the two held back were sent after their lease ran out (${JSON.stringify(received)})`);
  for (const id of ids) {
    const delivery = await stores.webhooks.getDelivery('wh_1', id);
    assert.deepEqual([delivery?.status, delivery?.attempt], ['succeeded', 1], id);
  }
});

test('stopping waits for no endpoint: the attempts under way are cut short and given back, as are those claimed ahead, none counted', async (t) => {
  const held: ServerResponse[] = [];
  const cut: string[] = [];
  const { stores, outbound, ids, organizationId } = await setUp(t, (req, res) => {
    req.resume();
    req.on('end', () => held.push(res));
    // The receiver never answers: only the worker's stop ends these requests.
    res.on('close', () => cut.push(String(req.headers['webhook-id'])));
  });
  const attempted: unknown[] = [];
  const worker = createDeliveryWorker({
    store: stores.webhooks, outbound, clock: systemClock, log: quiet, settings: { ...DEFAULT_DELIVERY_SETTINGS, concurrency: 2, pollMs: 100 },
    attempted: (result) => attempted.push(result),
  });
  worker.start();
  await waitUntil(() => held.length === 2, 'two attempts under way', 10_000);
  await worker.stop();
  await waitUntil(() => cut.length === 2, 'the two requests under way to be closed by the worker', 10_000);
  assert.deepEqual(attempted, [], 'an attempt cut short is not an attempt of the endpoint\'s');
  // Four were claimed (two sent, two ahead): all six are due again at once, none attempted.
  const now = Date.now();
  const claimable = await stores.webhooks.claim(now, now + 1000, 10);
  assert.deepEqual(claimable.map((d) => d.id).sort(), [...ids].sort());
  for (const id of ids) {
    const delivery = await stores.webhooks.getDelivery('wh_1', id);
    assert.deepEqual([delivery?.status, delivery?.attempt], ['pending', 0], id);
  }
  assert.equal((await stores.webhooks.get(organizationId, 'wh_1'))?.failingSince, null, 'nothing held against the endpoint');
});

test('a paced worker does nothing while its share is spent, and everything once it is renewed', async (t) => {
  const { stores, outbound, ids, received } = await setUpReceiving(t);
  let open = false;
  let spent = 0;
  let renewals = 0;
  const pacing: Pacing = {
    allowed: () => open,
    saturated: () => true,
    spent: (ms) => (spent += ms),
    renewsIn: () => (renewals++, 20),
    close() {},
  };
  const worker = createDeliveryWorker({
    store: stores.webhooks, outbound, clock: systemClock, log: quiet, settings: { ...DEFAULT_DELIVERY_SETTINGS, pollMs: 100 }, pacing,
  });
  t.after(() => worker.stop());
  worker.start();
  // Paced out: the worker looks again each window and neither claims nor sends.
  await waitUntil(() => renewals >= 5, 'five windows looked at', 10_000);
  assert.deepEqual(received, []);
  assert.equal((await stores.webhooks.getDelivery('wh_1', ids[0]!))?.attempt, 0);
  open = true;
  await waitUntil(() => received.length >= ids.length, 'every delivery sent', 30_000, { seen: () => JSON.stringify(received) });
  assert.deepEqual(received.sort(), [0, 1, 2, 3, 4, 5]);
  assert.ok(spent > 0, 'the store work and the attempts are counted against the share');
});

test('a paced worker starts no attempt from those claimed ahead while its share is spent', async (t) => {
  const received: number[] = [];
  const held: ServerResponse[] = [];
  const { stores, outbound } = await setUp(t, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push((JSON.parse(body) as { n: number }).n);
      held.push(res);
    });
  });
  let open = true;
  let renewals = 0;
  const pacing: Pacing = {
    allowed: () => open,
    saturated: () => true,
    spent: () => {},
    renewsIn: () => (renewals++, 20),
    close() {},
  };
  const worker = createDeliveryWorker({
    store: stores.webhooks, outbound, clock: systemClock, log: quiet, settings: { ...DEFAULT_DELIVERY_SETTINGS, concurrency: 1, pollMs: 100 }, pacing,
  });
  t.after(() => worker.stop());
  worker.start();
  // One attempt under way, one more claimed ahead of it.
  await waitUntil(() => held.length === 1, 'an attempt under way', 10_000);
  open = false;
  held.shift()!.writeHead(204).end();
  const from = renewals;
  await waitUntil(() => renewals >= from + 5, 'five more windows looked at', 10_000);
  assert.equal(received.length, 1, 'the one claimed ahead waits for the next window');
  open = true;
  await waitUntil(() => received.length >= 2, 'the one claimed ahead to be sent', 10_000);
  assert.equal(received.length, 2);
  for (const res of held.splice(0)) res.writeHead(204).end();
});

test('pacing: the worker is held to its share only while other work saturates the loop', () => {
  // The loop's utilization as the test sets it: cumulative active and idle milliseconds.
  const loop = { active: 0, idle: 0 };
  const utilization = (current?: EventLoopUtilization, previous?: EventLoopUtilization): EventLoopUtilization => {
    if (current === undefined) return { ...loop, utilization: 0 };
    const active = current.active - (previous?.active ?? 0);
    const idle = current.idle - (previous?.idle ?? 0);
    return { active, idle, utilization: active / (active + idle) };
  };
  const windowMs = 25;
  const pacing = createPacing({ share: 0.1, saturatedAt: 0.8, windowMs, utilization, manual: true });
  const nextWindow = () => pacing.endWindow();
  try {
    // Busy 95 of 100 ms, 85 of them the worker's own: not saturated by other work, no limit.
    pacing.spent(85);
    loop.active += 95;
    loop.idle += 5;
    nextWindow();
    assert.equal(pacing.saturated(), false, "the worker's own time does not count");
    assert.equal(pacing.allowed(), true);

    // Busy 90 of 100 ms with other work.
    loop.active += 90;
    loop.idle += 10;
    nextWindow();
    assert.equal(pacing.saturated(), true);
    assert.equal(pacing.allowed(), true, 'a fresh share each window');
    pacing.spent(0.1 * windowMs - 0.5);
    assert.equal(pacing.allowed(), true);
    pacing.spent(1);
    assert.equal(pacing.allowed(), false, 'the share spent');
    assert.ok(pacing.renewsIn() >= 1 && pacing.renewsIn() <= windowMs);

    // Other work at 70 % (the worker's 3 ms aside): not saturated, no limit again.
    loop.active += 3 + 70;
    loop.idle += 30;
    nextWindow();
    assert.equal(pacing.saturated(), false);
    pacing.spent(1000);
    assert.equal(pacing.allowed(), true);
  } finally {
    pacing.close();
  }
});

test('a worker stopped with nothing to record, then started again, records what it sends', async (t) => {
  const { stores, outbound, ids, received } = await setUpReceiving(t);
  const worker = createDeliveryWorker({
    store: stores.webhooks, outbound, clock: systemClock, log: quiet, settings: { ...DEFAULT_DELIVERY_SETTINGS, pollMs: 50 },
  });
  t.after(() => worker.stop());
  // Nothing attempted yet: the stop has no result to record.
  await worker.stop();
  worker.start();
  const statuses = async () => Promise.all(ids.map(async (id) => (await stores.webhooks.getDelivery('wh_1', id))?.status));
  await waitUntil(async () => (await statuses()).every((s) => s === 'succeeded'), 'every delivery recorded', 10_000);
  assert.deepEqual(await statuses(), ids.map(() => 'succeeded'));
  assert.deepEqual(received.sort(), [0, 1, 2, 3, 4, 5]);
});

test('an attempt that has ended frees its endpoint\'s place at once: the next goes out while the first\'s result is still being recorded', async (t) => {
  const { stores, outbound, received } = await setUpReceiving(t);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let recorded = 0;
  const worker = createDeliveryWorker({
    store: {
      ...stores.webhooks,
      async complete(results, disableAfter) {
        await gate;
        recorded += results.length;
        return stores.webhooks.complete(results, disableAfter);
      },
    },
    outbound, clock: systemClock, log: quiet,
    // One place for the endpoint; every result recorded at once, nothing gathered first.
    settings: { ...DEFAULT_DELIVERY_SETTINGS, concurrency: 4, endpointConcurrency: 1, pollMs: 50, recordDelayMs: 0 },
  });
  t.after(() => {
    open();
    return worker.stop();
  });
  worker.start();
  // Not one result is recorded yet, yet every delivery went out, one after the other.
  await waitUntil(() => received.length === 6, 'all six deliveries sent while no result could be recorded', 10_000, { seen: () => `received ${received.join(',')}` });
  assert.equal(recorded, 0);
  open();
  await waitUntil(() => recorded === 6, 'the six results recorded', 10_000);
  assert.deepEqual(received.sort(), [0, 1, 2, 3, 4, 5], 'each sent once');
});

test('results are recorded together: those that end within the gathering time in one transaction, and at once on a stop', async (t) => {
  const { stores, outbound, received } = await setUpReceiving(t);
  const batches: number[] = [];
  const store = {
    ...stores.webhooks,
    async complete(results: Parameters<typeof stores.webhooks.complete>[0], disableAfter: number) {
      batches.push(results.length);
      return stores.webhooks.complete(results, disableAfter);
    },
  };
  // A gathering time far longer than the test: only the stop records.
  const worker = createDeliveryWorker({
    store, outbound, clock: systemClock, log: quiet, settings: { ...DEFAULT_DELIVERY_SETTINGS, concurrency: 64, pollMs: 50, recordDelayMs: 600_000 },
  });
  t.after(() => worker.stop());
  worker.start();
  await waitUntil(() => received.length === 6, 'the six deliveries sent', 10_000);
  assert.deepEqual(batches, [], 'six results, fewer than half the concurrency: still gathering');
  await worker.stop();
  assert.deepEqual(batches, [6], 'the stop records them, in one transaction');
  assert.equal((await stores.webhooks.getDelivery('wh_1', 'whd_5'))?.status, 'succeeded');
});
