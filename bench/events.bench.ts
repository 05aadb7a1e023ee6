// Events and webhooks on the embedded store, each case against a baseline measured in the same run:
//
// 1. Status changes (PUT /v2/fleet/vehicles/{id}/status, each vehicle alternating inactive/active,
//    1000 vehicles, load from bench/load.ts in its own process) with three webhook endpoints
//    subscribed to `*` (a local receiver) against the same load with the endpoints disabled (the
//    fan-out then reads the log and makes nothing, as with no endpoints). Goal ≥ 0.8 ×. The load
//    saturates Fleet's event loop, so its delivery worker is paced (src/webhooks/pacing.ts): the
//    table shows how many deliveries arrived during the load and when the last one did.
// 2. Webhook delivery to a local receiver (bench/webhook-receiver.ts, its own process, 204):
//    a. status changes at a fixed rate, evenly spread (bench/status-pacer.ts), with 20 endpoints
//       (the default quota's most; 20 deliveries per change): the time from commit (the event's
//       occurredAt, taken just before the commit) to receipt. Goal: the deliveries keep up at
//       ≥ 2,000/s with p99 < 500 ms. (Status changes alone reach only a few hundred a second on a
//       slow disk: each commits with its own sync.)
//    b. a backlog (events written straight into the log by the store's appender, three
//       endpoints): deliveries per second from the first receipt to the last, against a bare
//       undici POST loop with the worker's concurrency (64 in flight, 32 connections, as the
//       outbound agent) to the same receiver.
//       Goal ≥ 2,000 deliveries/s and ≥ 0.5 × the bare loop.
// 3. The feed: 1,000,000 events written into the log (the store's appender, one transaction per
//    20,000), read page by page (GET /v2/events?limit=1000, following `next`, from
//    bench/events-feed-reader.ts in its own process) against a raw node:sqlite keyset loop over
//    the same table and index, every column of each event, 1000 rows a page.
//    Goal ≥ 0.5 ×.
//
// The receiver and the load generator are their own processes; Fleet and the baselines run in
// this one. BENCH_SECONDS (default 5) sets each status-change run, BENCH_ROUNDS (default 3) how
// many times the cases take turns, BENCH_CASES=status,delivery,backlog,feed picks cases,
// BENCH_BACKLOG the events of the backlog (default 10,000: 30,000 deliveries), BENCH_FEED_EVENTS
// the feed's events (default 1,000,000) and BENCH_FEED_ROUNDS its rounds (default 2),
// BENCH_DELIVERY_RATE and BENCH_DELIVERY_ENDPOINTS the fixed rate and endpoints of 2a (default
// 105 changes/s × 20: 2,100 deliveries/s).
import { execFile, fork } from 'node:child_process';
import { cpus, release } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import type { EventRecord } from '../src/events/types.ts';
import { createSqliteEventAppender } from '../src/storage/sqlite/events.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { signedHeaders } from '../src/webhooks/signing.ts';
import type { FeedReadOutcome } from './events-feed-reader.ts';
import { loadVarying, median, ms, startBenchFleet, tempDatabases } from './lib.ts';
import type { LoadOutcome } from './load.ts';
import type { PacerSpec } from './status-pacer.ts';
import type { ReceiverRequest, ReceiverStats } from './webhook-receiver.ts';

const run = promisify(execFile);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const cases = new Set((process.env.BENCH_CASES ?? 'status,delivery,backlog,feed').split(','));
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 10_000);
const FEED_EVENTS = Number(process.env.BENCH_FEED_EVENTS ?? 1_000_000);
const DELIVERY_RATE = Number(process.env.BENCH_DELIVERY_RATE ?? 105);
const CONNECTIONS = 50;
const ENDPOINTS = 3;
/** Endpoints of the fixed-rate delivery case: the default quota's most. */
const DELIVERY_ENDPOINTS = Number(process.env.BENCH_DELIVERY_ENDPOINTS ?? 20);
/** The worker's defaults (src/webhooks/worker.ts, outbound.ts): attempts at once, connections per origin. */
const WORKER_CONCURRENCY = 64;
const WORKER_CONNECTIONS = 32;
const VEHICLES = Array.from({ length: 1000 }, (_, i) => `veh-${String(i).padStart(4, '0')}`);

const print = (line = '') => console.log(line);
const verdict = (ok: boolean) => (ok ? '**met**' : '**not met**');
const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
const range = (values: number[]) => `${Math.min(...values).toFixed(2)} to ${Math.max(...values).toFixed(2)}`;
const sleep = (msec: number) => new Promise((resolve) => setTimeout(resolve, msec));

const databases = tempDatabases('fleet-bench-events-');
const tempFile = () => databases.file();

// ---- the receiver --------------------------------------------------------------------------------

const receiverProcess = fork(fileURLToPath(new URL('./webhook-receiver.ts', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const receiverPort = await new Promise<number>((resolve, reject) => {
  receiverProcess.once('message', (m: { port: number }) => resolve(m.port));
  receiverProcess.once('exit', () => reject(new Error('the receiver exited')));
});
const receiverUrl = `http://127.0.0.1:${receiverPort}`;
let asks = 0;
function ask(op: ReceiverRequest['op']): Promise<ReceiverStats> {
  const id = ++asks;
  return new Promise((resolve) => {
    const listener = (m: { ask?: number; stats?: ReceiverStats }) => {
      if (m.ask !== id) return;
      receiverProcess.off('message', listener);
      resolve(m.stats!);
    };
    receiverProcess.on('message', listener);
    receiverProcess.send({ op, ask: id } satisfies ReceiverRequest);
  });
}
const receiverStats = () => ask('stats');
const resetReceiver = () => ask('reset');

// ---- Fleet with its endpoints ---------------------------------------------------------------------

const file = tempFile();
const fleetStores = createSqliteStores(file);
const fleet = await startBenchFleet(fleetStores, VEHICLES, () => ({ FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' }));
const db = new DatabaseSync(file, { readOnly: true });
const scalar = (sql: string, ...params: Array<string | number>) => Number(Object.values(db.prepare(sql).get(...params)!)[0] ?? 0);

const endpointIds: string[] = [];
for (let i = 0; i < Math.max(ENDPOINTS, DELIVERY_ENDPOINTS); i++) {
  const res = await fleet.app.inject({
    method: 'POST', url: '/v2/webhooks', headers: fleet.headers,
    payload: { url: `${receiverUrl}/hook/${i}`, eventTypes: ['*'], enabled: false },
  });
  if (res.statusCode !== 201) throw new Error(`create webhook: ${res.statusCode} ${res.body}`);
  endpointIds.push(res.json<{ id: string }>().id);
}

/** The first `count` endpoints enabled, the others disabled. */
let enabledEndpoints = 0;
async function setEndpoints(count: number): Promise<void> {
  for (const [i, id] of endpointIds.entries()) {
    const res = await fleet.app.inject({ method: 'PATCH', url: `/v2/webhooks/${id}`, headers: fleet.headers, payload: { enabled: i < count } });
    if (res.statusCode !== 200) throw new Error(`PATCH webhook: ${res.statusCode} ${res.body}`);
  }
  enabledEndpoints = count;
}

/** Every vehicle `active` (the status-change load starts from there); 50 requests at a time. */
async function resetStatuses(): Promise<void> {
  for (let i = 0; i < VEHICLES.length; i += 50) {
    await Promise.all(VEHICLES.slice(i, i + 50).map(async (id) => {
      const res = await fleet.app.inject({ method: 'PUT', url: `/v2/fleet/vehicles/${id}/status`, headers: fleet.headers, payload: { status: 'active' } });
      if (res.statusCode !== 200) throw new Error(`reset ${id}: ${res.statusCode} ${res.body}`);
    }));
  }
}

const maxSeq = () => scalar('SELECT coalesce(max(seq), 0) FROM events');

/** Until the fan-out has read the whole log and no delivery is pending (bounded). */
async function waitIdle(what: string, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const fanned = scalar('SELECT fanned_seq FROM event_log_state WHERE id = 1');
    const pending = scalar(`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`);
    if (fanned >= maxSeq() && pending === 0) return;
    if (Date.now() > deadline) throw new Error(`${what}: still ${pending} deliveries pending, fan-out at ${fanned} of ${maxSeq()} after ${ms} ms`);
    await sleep(50);
  }
}

/** Until the receiver holds `distinct` deliveries (bounded); its figures then. */
async function waitReceived(distinct: number, what: string, ms = 120_000): Promise<ReceiverStats> {
  const deadline = Date.now() + ms;
  for (;;) {
    const stats = await receiverStats();
    if (stats.distinct >= distinct) return stats;
    if (Date.now() > deadline) throw new Error(`${what}: ${stats.distinct} of ${distinct} deliveries received after ${ms} ms`);
    await sleep(50);
  }
}

const failedDeliveries = () => scalar(`SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded'`);

// ---- status changes --------------------------------------------------------------------------------

interface StatusRun {
  load: LoadOutcome;
  /** Events recorded during the run (one per change). */
  events: number;
  serverCpu: number;
  /** With endpoints: received during the load window, per second; then once every delivery arrived. */
  duringRate?: number;
  final?: ReceiverStats;
  /** From the load's start to the last receipt. */
  drainSeconds?: number;
}

async function statusRun(forSeconds: number, rate?: number): Promise<StatusRun> {
  const withEndpoints = enabledEndpoints > 0;
  await resetStatuses();
  if (withEndpoints) await waitIdle('before a status run');
  await resetReceiver();
  const before = maxSeq();
  const cpu = process.cpuUsage();
  const started = Date.now();
  const load = rate === undefined
    ? await loadVarying({
      name: `Fleet: PUT .../status, ${enabledEndpoints} endpoints on *`,
      url: fleet.url, method: 'PUT', path: '/v2/fleet/vehicles/{vehicle}/status', headers: fleet.headers,
      connections: CONNECTIONS, seconds: forSeconds, body: { kind: 'status', vehicles: VEHICLES, size: 1, start: 0 },
    })
    : JSON.parse((await run(process.execPath, [fileURLToPath(new URL('./status-pacer.ts', import.meta.url)),
      JSON.stringify({ url: fleet.url, headers: fleet.headers, vehicles: VEHICLES, rate, seconds: forSeconds } satisfies PacerSpec)])).stdout) as LoadOutcome;
  const wall = (Date.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (load.non2xx + load.errors > 0) throw new Error(`${load.name}: ${load.non2xx} non-2xx, ${load.errors} errors`);
  const events = maxSeq() - before;
  if (events < load.responses) throw new Error(`${load.name}: ${events} events for ${load.responses} changes`);
  const result: StatusRun = { load, events, serverCpu: (used.user + used.system) / 1e6 / wall };
  if (withEndpoints) {
    const during = await receiverStats();
    result.duringRate = during.distinct / load.seconds;
    result.final = await waitReceived(events * enabledEndpoints, load.name);
    result.drainSeconds = (result.final.last - started) / 1000;
    await waitIdle(load.name);
  }
  return result;
}

// ---- the backlog and the bare undici loop -----------------------------------------------------------

/** `n` status_changed events of the first organization, straight into the log. */
function insertEvents(target: string, n: number, prefix: string): void {
  const writer = new DatabaseSync(target);
  writer.exec('PRAGMA busy_timeout = 10000');
  const append = createSqliteEventAppender(writer);
  const now = Date.now();
  for (let i = 0; i < n; i += 10_000) {
    writer.exec('BEGIN IMMEDIATE');
    append(statusEvents(fleet.organizationId, i, Math.min(n, i + 10_000), (j) => `evt_${prefix}${String(j).padStart(24 - prefix.length, '0')}`, () => now), now);
    writer.exec('COMMIT');
  }
  writer.close();
}

/** Status changes `from` to `to` (exclusive) as events, each vehicle alternating, written with the store's own appender. */
function statusEvents(organizationId: string, from: number, to: number, id: (j: number) => string, at: (j: number) => number): EventRecord[] {
  const events: EventRecord[] = [];
  for (let j = from; j < to; j++) {
    const status = j % 2 === 0 ? 'inactive' : 'active';
    events.push({
      id: id(j), organizationId, type: 'vehicle.status_changed', vehicleId: VEHICLES[j % VEHICLES.length]!, occurredAt: at(j),
      data: { from: status === 'active' ? 'inactive' : 'active', to: status, reason: null, by: 'key_bench' },
    });
  }
  return events;
}

let backlogs = 0;
async function backlogRun(): Promise<{ deliveries: number; rate: number; serverCpu: number }> {
  await waitIdle('before a backlog');
  await resetReceiver();
  const cpu = process.cpuUsage();
  insertEvents(file, BACKLOG, `bl${backlogs++}x`);
  const started = Date.now();
  const stats = await waitReceived(BACKLOG * ENDPOINTS, 'backlog');
  const used = process.cpuUsage(cpu);
  await waitIdle('backlog');
  const span = (stats.last - stats.first) / 1000;
  return { deliveries: stats.distinct, rate: stats.distinct / span, serverCpu: (used.user + used.system) / 1e6 / ((stats.last - started) / 1000) };
}

/** The baseline: the same number of POSTs of a same-sized signed envelope, WORKER_CONCURRENCY at a time. */
async function bareLoop(count: number): Promise<{ rate: number; cpu: number }> {
  await resetReceiver();
  const agent = new Agent({ connections: WORKER_CONNECTIONS });
  const payload = JSON.stringify({
    id: 'evt_bl0x0000000000000000000', type: 'vehicle.status_changed', occurredAt: new Date().toISOString(), vehicleId: 'veh-0001',
    data: { from: 'active', to: 'inactive', reason: null, by: 'key_bench' },
  });
  const headers = signedHeaders([`whsec_${Buffer.alloc(32, 7).toString('base64')}`], 'evt_bare', Math.floor(Date.now() / 1000), payload);
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: WORKER_CONCURRENCY }, async () => {
    while (next < count) {
      const k = next++;
      const res = await request(`${receiverUrl}/hook/${k % ENDPOINTS}`, { method: 'POST', headers: { ...headers, 'webhook-id': `evt_bare${k}` }, body: payload, dispatcher: agent });
      await res.body.dump();
      if (res.statusCode !== 204) throw new Error(`bare loop: ${res.statusCode}`);
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await agent.close();
  const stats = await receiverStats();
  if (stats.distinct !== count) throw new Error(`bare loop: ${stats.distinct} of ${count} received`);
  return { rate: count / elapsed, cpu: (used.user + used.system) / 1e6 / elapsed };
}

// ---- the feed ---------------------------------------------------------------------------------------

async function feedCase(): Promise<void> {
  const feedFile = tempFile();
  const feedFleet = await startBenchFleet(createSqliteStores(feedFile), []);
  const setupStarted = performance.now();
  const writer = new DatabaseSync(feedFile);
  writer.exec('PRAGMA busy_timeout = 10000');
  const append = createSqliteEventAppender(writer);
  const now = Date.now() - 3_600_000;
  for (let i = 0; i < FEED_EVENTS; i += 20_000) {
    writer.exec('BEGIN IMMEDIATE');
    append(statusEvents(feedFleet.organizationId, i, Math.min(FEED_EVENTS, i + 20_000), (j) => `evt_feed${String(j).padStart(20, '0')}`, (j) => now + j), now);
    writer.exec('COMMIT');
  }
  // Recorded by hand, not through a change: the webhook fan-out (no endpoints here) need not read them.
  writer.exec('UPDATE event_log_state SET fanned_seq = (SELECT max(seq) FROM events) WHERE id = 1');
  writer.close();
  print();
  print(`### The feed: ${FEED_EVENTS.toLocaleString('en')} events, 1000 a page`);
  print();
  print(`(${FEED_EVENTS.toLocaleString('en')} events written into the log in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s.)`);

  const reader = new DatabaseSync(feedFile, { readOnly: true });
  const page = reader.prepare('SELECT seq, id, organization_id, type, vehicle_id, occurred_at, envelope FROM events WHERE organization_id = ? AND seq > ? ORDER BY seq LIMIT 1000');
  const rawLoop = () => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    let after = 0;
    let rows = 0;
    for (;;) {
      const got = page.all(feedFleet.organizationId, after);
      if (got.length === 0) break;
      rows += got.length;
      after = got.at(-1)!.seq as number;
    }
    const elapsed = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    if (rows !== FEED_EVENTS) throw new Error(`raw loop: ${rows} rows of ${FEED_EVENTS}`);
    return { rate: rows / elapsed, seconds: elapsed, cpu: (used.user + used.system) / 1e6 / elapsed };
  };
  const feedRead = async () => {
    const cpu = process.cpuUsage();
    const { stdout } = await run(process.execPath, [fileURLToPath(new URL('./events-feed-reader.ts', import.meta.url)),
      JSON.stringify({ url: feedFleet.url, key: feedFleet.secret })], { maxBuffer: 1024 * 1024 });
    const used = process.cpuUsage(cpu);
    const outcome = JSON.parse(stdout) as FeedReadOutcome;
    if (outcome.events !== FEED_EVENTS || outcome.outOfOrder !== 0) {
      throw new Error(`feed: ${outcome.events} events read of ${FEED_EVENTS}, ${outcome.outOfOrder} out of order or repeated`);
    }
    if (outcome.firstId !== `evt_feed${'0'.repeat(20)}` || outcome.lastId !== `evt_feed${String(FEED_EVENTS - 1).padStart(20, '0')}`) {
      throw new Error(`feed: read from ${outcome.firstId} to ${outcome.lastId}`);
    }
    return { ...outcome, rate: outcome.events / outcome.seconds, serverCpu: (used.user + used.system) / 1e6 / outcome.seconds };
  };
  const feedRounds = Number(process.env.BENCH_FEED_ROUNDS ?? 2);
  const raws: ReturnType<typeof rawLoop>[] = [];
  const reads: Awaited<ReturnType<typeof feedRead>>[] = [];
  rawLoop(); // warm-up: the table into the page cache
  for (let round = 0; round < feedRounds; round++) {
    raws.push(rawLoop());
    reads.push(await feedRead());
  }
  reader.close();
  await feedFleet.app.close();
  await feedFleet.stores.close();

  const rawRate = median(raws.map((r) => r.rate));
  const feedRate = median(reads.map((r) => r.rate));
  const ratios = reads.map((r, i) => r.rate / raws[i]!.rate);
  const ratio = feedRate / rawRate;
  print();
  print('| case | events/s | seconds for all | CPU (this process) | reader CPU |');
  print('|---|---|---|---|---|');
  print(`| raw node:sqlite keyset loop, 1000 rows a page (baseline) | ${Math.round(rawRate)} | ${median(raws.map((r) => r.seconds)).toFixed(2)} | ${pct(median(raws.map((r) => r.cpu)))} | |`);
  print(`| Fleet: GET /v2/events?limit=1000 following next (${reads[0]!.pages} pages) | ${Math.round(feedRate)} | ${median(reads.map((r) => r.seconds)).toFixed(2)} | ` +
    `${pct(median(reads.map((r) => r.serverCpu)))} | ${pct(median(reads.map((r) => r.readerCpu)))} |`);
  print();
  print(`Feed / raw SELECT loop: **${ratio.toFixed(2)} ×** (rounds: ${range(ratios)}; goal ≥ 0.5 ×: ${verdict(ratio >= 0.5)}). ` +
    `Every round read all ${FEED_EVENTS.toLocaleString('en')} events in order, none skipped or repeated.`);
}

// ---- the run ------------------------------------------------------------------------------------------

print(
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}. ` +
    `Status runs: ${seconds} s, ${ROUNDS} rounds taking turns after a warm-up; medians of the rounds. ${VEHICLES.length} vehicles, ${CONNECTIONS} connections.`,
);
print('Server CPU: this process (Fleet, and the baselines when they run), in cores; load generator CPU: its own process.');

if (cases.has('status')) {
  await statusRun(1);
  await setEndpoints(ENDPOINTS);
  await statusRun(1);
  const without: StatusRun[] = [];
  const withThree: StatusRun[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await setEndpoints(0);
    without.push(await statusRun(seconds));
    await setEndpoints(ENDPOINTS);
    withThree.push(await statusRun(seconds));
  }
  await setEndpoints(0);
  if (failedDeliveries() > 0) throw new Error(`${failedDeliveries()} deliveries not succeeded`);
  const pick = (runs: StatusRun[], f: (r: StatusRun) => number) => median(runs.map(f));
  const ratios = withThree.map((r, i) => r.load.rps / without[i]!.load.rps);
  const ratio = pick(withThree, (r) => r.load.rps) / pick(without, (r) => r.load.rps);
  print();
  print(`### Status changes with and without ${ENDPOINTS} webhook endpoints`);
  print();
  print('| case | changes/s | p50 ms | p99 ms | server CPU | load generator CPU | deliveries/s during the load | all delivered after | commit → receipt p50 / p99 ms |');
  print('|---|---|---|---|---|---|---|---|---|');
  for (const [name, runs] of [['no endpoints (disabled)', without], [`${ENDPOINTS} endpoints on *`, withThree]] as const) {
    const endpoints = runs[0]!.final !== undefined;
    print(`| ${name} | ${Math.round(pick(runs, (r) => r.load.rps))} | ${ms(pick(runs, (r) => r.load.p50))} | ${ms(pick(runs, (r) => r.load.p99))} | ` +
      `${pct(pick(runs, (r) => r.serverCpu))} | ${pct(pick(runs, (r) => r.load.loadCpu))} | ` +
      (endpoints
        ? `${Math.round(pick(runs, (r) => r.duringRate!))} | ${pick(runs, (r) => r.drainSeconds!).toFixed(1)} s | ${ms(pick(runs, (r) => r.final!.p50))} / ${ms(pick(runs, (r) => r.final!.p99))} |`
        : ' | | |'));
  }
  print();
  print(`With ${ENDPOINTS} endpoints / without: **${ratio.toFixed(2)} ×** (rounds: ${range(ratios)}; goal ≥ 0.8 ×: ${verdict(ratio >= 0.8)}). ` +
    `Every change made one event; every event reached each endpoint (${ENDPOINTS} × events received, deduplicated by webhook-id), every delivery succeeded.`);
}

if (cases.has('delivery')) {
  await setEndpoints(DELIVERY_ENDPOINTS);
  await statusRun(1, DELIVERY_RATE);
  const runs: StatusRun[] = [];
  for (let round = 0; round < ROUNDS; round++) runs.push(await statusRun(seconds * 2, DELIVERY_RATE));
  await setEndpoints(0);
  if (failedDeliveries() > 0) throw new Error(`${failedDeliveries()} deliveries not succeeded`);
  const pick = (f: (r: StatusRun) => number) => median(runs.map(f));
  const deliveryRate = pick((r) => (r.events * DELIVERY_ENDPOINTS) / r.drainSeconds!);
  const p99 = pick((r) => r.final!.p99);
  print();
  print(`### Delivery at a fixed rate: ${DELIVERY_RATE} status changes/s, evenly spread, × ${DELIVERY_ENDPOINTS} endpoints on *, ${seconds * 2} s`);
  print();
  print('| round | changes/s | deliveries | deliveries/s (load start to last receipt) | commit → receipt p50 ms | p99 ms | max ms | server CPU | receiver CPU |');
  print('|---|---|---|---|---|---|---|---|---|');
  for (const [i, r] of runs.entries()) {
    print(`| ${i + 1} | ${Math.round(r.load.rps)} | ${r.events * DELIVERY_ENDPOINTS} | ${Math.round((r.events * DELIVERY_ENDPOINTS) / r.drainSeconds!)} | ${ms(r.final!.p50)} | ` +
      `${ms(r.final!.p99)} | ${ms(r.final!.max)} | ${pct(r.serverCpu)} | ${pct(r.final!.cpu / r.drainSeconds!)} |`);
  }
  print();
  print(`Deliveries kept up at **${Math.round(deliveryRate)}/s** (median; goal ≥ 2,000/s: ${verdict(deliveryRate >= 2000)}), ` +
    `commit → receipt p99 **${ms(p99)} ms** (median of the rounds' p99; goal < 500 ms: ${verdict(p99 < 500)}).`);
}

if (cases.has('backlog')) {
  await setEndpoints(ENDPOINTS);
  const fleetRuns: Awaited<ReturnType<typeof backlogRun>>[] = [];
  const bareRuns: Awaited<ReturnType<typeof bareLoop>>[] = [];
  await bareLoop(Math.min(5000, BACKLOG)); // warm-up
  for (let round = 0; round < Math.max(1, ROUNDS - 1); round++) {
    fleetRuns.push(await backlogRun());
    bareRuns.push(await bareLoop(BACKLOG * ENDPOINTS));
  }
  await setEndpoints(0);
  if (failedDeliveries() > 0) throw new Error(`${failedDeliveries()} deliveries not succeeded`);
  const fleetRate = median(fleetRuns.map((r) => r.rate));
  const bareRate = median(bareRuns.map((r) => r.rate));
  const ratios = fleetRuns.map((r, i) => r.rate / bareRuns[i]!.rate);
  const ratio = fleetRate / bareRate;
  print();
  print(`### Delivery of a backlog: ${BACKLOG.toLocaleString('en')} events × ${ENDPOINTS} endpoints`);
  print();
  print('| case | deliveries/s | CPU (this process) |');
  print('|---|---|---|');
  print(`| bare undici POST loop, ${WORKER_CONCURRENCY} in flight, ${WORKER_CONNECTIONS} connections (baseline) | ${Math.round(bareRate)} | ${pct(median(bareRuns.map((r) => r.cpu)))} |`);
  print(`| Fleet: fan-out, claim, sign, POST, record (first receipt to last) | ${Math.round(fleetRate)} | ${pct(median(fleetRuns.map((r) => r.serverCpu)))} |`);
  print();
  print(`Fleet deliveries / bare loop: **${ratio.toFixed(2)} ×** (rounds: ${range(ratios)}; goal ≥ 0.5 ×: ${verdict(ratio >= 0.5)}); ` +
    `**${Math.round(fleetRate)} deliveries/s** (goal ≥ 2,000/s: ${verdict(fleetRate >= 2000)}). Every delivery arrived and succeeded.`);
}

await fleet.app.close();
db.close();
await fleet.stores.close();

if (cases.has('feed')) await feedCase();

receiverProcess.disconnect();
databases.removeAll();
