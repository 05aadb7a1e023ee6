// `npm run soak -- --minutes N [--cluster]`: a real Fleet process (two, on PostgreSQL and Redis,
// with --cluster) under a steady mixed load for N minutes, watched for what only time shows:
// memory that creeps, an event loop that slows, requests that start failing, records acknowledged
// but lost or stored twice.
//
// The run: start the node(s) on a fresh store; register vehicles and their OsmAnd and Teltonika
// devices; subscribe a local webhook receiver to every event; open live streams read by WebSocket
// clients; measure the capacity of the mix (every channel busy at once); then offer each channel
// --load (default 0.7) of its measured rate for N minutes, scraping each node's /metrics every few
// seconds. At the end every vehicle's history is read back and compared record by record with what
// was acknowledged.
//
// It passes when, on every node, resident memory and the live heap (heap used right after a full
// collection, fleet_nodejs_heap_live_bytes) grew less than 10 % from the start of steady state
// (after the first 20 % of the run) to the end, comparing the medians of the samples of a tenth of
// the run at each end (single samples would measure where the garbage collector happened to be);
// heap used as sampled, garbage included, is shown beside them; no request was answered 5xx (503s
// with Retry-After while the capacity is measured, the service shedding load at saturation, are
// shown, not judged); every acknowledged record is stored exactly once; and nothing else failed (requests, MQTT connections, streams, webhook
// deliveries and their signatures, errors in the nodes' logs, a clean shutdown). Exits 1 saying
// why otherwise, 2 on bad arguments.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { appendFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { generateApiKey } from '../src/auth/keys.ts';
import {
  type Channel, Clients, type Fleet, OPERATION_TIMEOUT_MS, Pacer, closedLoop, fleetIngest, historyReads, latestReads, mqttIngest, osmandIngest,
  statusChanges, teltonikaIngest, vehicleIngest,
} from './soak/channels.ts';
import { Ledger, OUTCOME, type VehicleCheck } from './soak/ledger.ts';
import { type Node, type Store, clusterStore, sqliteStore, startNode, workDir } from './soak/nodes.ts';
import { type Receiver, type Scrape, type StreamReader, openStream, scrape, webhookReceiver } from './soak/observers.ts';

// ---- arguments ----------------------------------------------------------------------------------

const USAGE = 'usage: npm run soak -- --minutes N [--warm-up SECONDS] [--cluster] [--load 0.7] [--samples file.csv] [--database-url postgres://…] [--redis-url redis://…]\n' +
  '--warm-up: seconds of load before the N judged minutes (default: the first 20 % of the N minutes are the warm-up).\n' +
  'FLEET_SOAK_NODE_ARGS: extra Node options for the service processes (e.g. --heapsnapshot-signal=SIGUSR2).';
let args: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    options: {
      minutes: { type: 'string' },
      cluster: { type: 'boolean', default: false },
      load: { type: 'string', default: '0.7' },
      'warm-up': { type: 'string' },
      'database-url': { type: 'string' },
      'redis-url': { type: 'string' },
      samples: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  }).values;
}
try {
  args = parse();
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const minutes = Number(args.minutes);
const load = Number(args.load);
if (args.minutes === undefined || !Number.isFinite(minutes) || minutes <= 0 || minutes > 24 * 60) {
  console.error(`--minutes must be a number of minutes above 0 (fractions allowed)\n${USAGE}`);
  process.exit(2);
}
const warmUpArg = args['warm-up'] === undefined ? undefined : Number(args['warm-up']);
if (warmUpArg !== undefined && (!Number.isFinite(warmUpArg) || warmUpArg < 0 || warmUpArg > 3600)) {
  console.error(`--warm-up must be a number of seconds from 0 to 3600\n${USAGE}`);
  process.exit(2);
}
if (!Number.isFinite(load) || load <= 0 || load > 1) {
  console.error(`--load must be a fraction of the measured capacity, above 0 and at most 1\n${USAGE}`);
  process.exit(2);
}
const databaseUrl = args['database-url'] ?? process.env.FLEET_SOAK_DATABASE_URL ?? process.env.FLEET_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = args['redis-url'] ?? process.env.FLEET_SOAK_REDIS_URL ?? 'redis://127.0.0.1:6379';

// ---- the shape of the run -----------------------------------------------------------------------

const SECONDS = minutes * 60;
/**
 * Steady state starts after the warm-up; growth is judged from there to the end of the load.
 * Without --warm-up the first 20 % of the N minutes are the warm-up; with it, the load lasts the
 * warm-up plus N minutes, all of them judged.
 */
const WARM_UP_SECONDS = warmUpArg ?? SECONDS * 0.2;
const JUDGED_SECONDS = warmUpArg === undefined ? SECONDS * 0.8 : SECONDS;
const LOAD_SECONDS = WARM_UP_SECONDS + JUDGED_SECONDS;
/** Each end of the comparison is the median of the samples in an eighth of the judged time. */
const WINDOW_SECONDS = JUDGED_SECONDS / 8;
const GROWTH_LIMIT = 0.1;
/** About 100 samples a run, every 1 to 5 s. */
const SAMPLE_SECONDS = Math.min(5, Math.max(1, LOAD_SECONDS / 100));
/** Closed-loop warm-up (JIT, pools, caches) and measurement of the capacity; short for short runs. */
const CAPACITY_WARM_UP = LOAD_SECONDS < 300 ? 2 : 5;
const CAPACITY_SECONDS = LOAD_SECONDS < 300 ? 5 : 15;
/** Status changes are events for the webhook and the streams, not capacity: a fixed, modest rate. */
const STATUS_RATE = 2;
const VEHICLES = Array.from({ length: 100 }, (_, i) => `soak-${String(i).padStart(3, '0')}`);
const STATUS_VEHICLES = Array.from({ length: 10 }, (_, i) => `soak-status-${String(i).padStart(2, '0')}`);
const TELTONIKA_DEVICES = 6;
/** How long the webhook deliveries of the last status changes may take to arrive. */
const DELIVERY_WAIT_MS = 30_000;

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.log(`\n${signal}: ending the load, then checking and cleaning up (again to quit at once)`);
  });
}
/** A node that ended by itself ends the load: every request to it would fail from then on. */
const nodesLost = () => nodes.filter((node) => !node.running());
const stop = () => interrupted || nodesLost().length > 0;

const MB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const pct = (fraction: number) => `${fraction >= 0 ? '+' : ''}${(fraction * 100).toFixed(1)} %`;
const ms = (value: number) => (Number.isNaN(value) ? '–' : value < 10 ? value.toFixed(2) : value.toFixed(1));
const since = (t0: number) => `${((performance.now() - t0) / 1000).toFixed(0)} s`;

function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function api(node: Node, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any; retryAfter: string | null }> {
  const res = await fetch(`${node.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(OPERATION_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text), retryAfter: res.headers.get('retry-after') };
}

/**
 * A set-up or check request that must get `expected`. A 503 with Retry-After (the node shedding
 * load, e.g. right after the steady load on a busy machine) is the service asking to come back:
 * it is asked again after that delay, up to ten times.
 */
async function must(node: Node, key: string, method: string, path: string, body: unknown, expected: number): Promise<any> {
  for (let attempt = 1; ; attempt++) {
    const res = await api(node, key, method, path, body);
    if (res.status === expected) return res.json;
    if (res.status !== 503 || res.retryAfter === null || attempt === 10) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`);
    await sleep(Math.min(30, Number(res.retryAfter) || 1) * 1000);
  }
}

interface Sample extends Scrape {
  /** Seconds since the steady load started. */
  at: number;
}

// ---- the run ------------------------------------------------------------------------------------

const failures: string[] = [];
const notes: string[] = [];
const t0 = performance.now();
const work = workDir();
let store: Store | undefined;
const nodes: Node[] = [];
let clients: Clients | undefined;
let receiver: Receiver | undefined;
const streams: StreamReader[] = [];
const closers: Array<() => Promise<void> | void> = [];
const driverLoop = monitorEventLoopDelay({ resolution: 10 });

try {
  store = args.cluster ? await clusterStore(databaseUrl, redisUrl) : sqliteStore(work.dir);
  const key = generateApiKey();
  console.log(`Soak: ${minutes} min at ${Math.round(load * 100)} % of the measured capacity, ${store.description}.`);
  console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}.`);

  // The first node creates the platform organization with this key; the second finds it there.
  nodes.push(await startNode('node A', work.dir, { ...store.env, FLEET_ADMIN_KEY: key }));
  if (args.cluster) nodes.push(await startNode('node B', work.dir, { ...store.env, FLEET_ADMIN_KEY: key }));
  console.log(`[${since(t0)}] ${nodes.map((n) => `${n.name} (pid ${n.pid}) at ${n.url}`).join(', ')}`);
  const [a] = nodes as [Node];
  const last = nodes.at(-1)!;

  // ---- fleet: vehicles, devices, first telemetry ----
  const ledger = new Ledger(VEHICLES, Date.now() - 3_600_000);
  const fleet: Fleet = {
    nodes, key, ledger,
    osmand: VEHICLES.map((v) => `${v}-${Math.random().toString(36).slice(2, 10)}`),
    teltonika: Array.from({ length: TELTONIKA_DEVICES }, (_, i) => ({ imei: String(356_307_042_441_000 + i), vehicle: i })),
    statusVehicles: STATUS_VEHICLES,
  };
  for (const vehicleId of [...VEHICLES, ...STATUS_VEHICLES]) await must(a, key, 'POST', '/v2/fleet/vehicles', { vehicleId, type: 'van' }, 201);
  for (const [v, identifier] of fleet.osmand.entries()) await must(a, key, 'POST', '/v2/devices', { protocol: 'osmand', identifier, vehicleId: VEHICLES[v] }, 201);
  for (const { imei, vehicle } of fleet.teltonika) await must(a, key, 'POST', '/v2/devices', { protocol: 'teltonika', identifier: imei, vehicleId: VEHICLES[vehicle] }, 201);
  // A first record for every vehicle: reads of the latest state have something to find from the start.
  const firsts = VEHICLES.map((vehicleId, v) => ({ vehicleId, k: ledger.take(v) }));
  await must(a, key, 'POST', '/v2/telemetry', {
    records: firsts.map(({ vehicleId, k }) => ({ vehicleId, timestamp: new Date(ledger.timestamp(k)).toISOString(), data: { battery: 90 } })),
  }, 202);
  firsts.forEach(({ k }, v) => ledger.settle(v, k, OUTCOME.ACKED));

  // ---- webhook and streams ----
  const statusSet = new Set(STATUS_VEHICLES);
  receiver = await webhookReceiver((vehicleId) => statusSet.has(vehicleId));
  const hook = await must(a, key, 'POST', '/v2/webhooks', { url: receiver.url, eventTypes: ['*'], description: 'soak' }, 201);
  receiver.setSecret(hook.secret);
  // On the last node: in cluster mode what they carry was mostly received by the other one.
  streams.push(await openStream(last, key, `${VEHICLES[0]}: every location`, `/v2/telemetry/${VEHICLES[0]}/stream`, { events: ['location', 'diagnostics'], interval: 0 }));
  streams.push(await openStream(last, key, `${VEHICLES.slice(1, 4).join(', ')}: every 1 s`, '/v2/telemetry/stream', {
    events: ['location', 'battery', 'status'], interval: 1000, vehicleIds: VEHICLES.slice(1, 4),
  }));
  streams.push(await openStream(last, key, 'status vehicles: status changes and every recorded event', '/v2/telemetry/stream', {
    events: ['status', 'events'], interval: 0, vehicleIds: STATUS_VEHICLES,
  }));
  // With a fleet-wide stream open, every vehicle's telemetry updates are kept for replay for 60 s
  // (by contract), so under this load the service's memory grows for that long before it levels
  // off: only a run whose warm-up lasts at least twice that can judge its memory with one open.
  if (WARM_UP_SECONDS >= 120) {
    streams.push(await openStream(last, key, 'fleet: location, battery every 1 s', '/v2/telemetry/stream', { events: ['location', 'battery'], interval: 1000 }));
  }

  // ---- channels ----
  clients = new Clients(nodes);
  const teltonika = teltonikaIngest(fleet, 5, 3);
  closers.push(() => teltonika.close());
  const mqtt = await mqttIngest(fleet, 4, 4);
  closers.push(() => mqtt.close());
  const status = statusChanges(fleet, clients);
  const channels: Channel[] = [
    vehicleIngest(fleet, clients, 'HTTP single record', 1, 4),
    vehicleIngest(fleet, clients, 'HTTP vehicle batch (10 records)', 10, 2),
    fleetIngest(fleet, clients, 50, 2),
    mqtt,
    osmandIngest(fleet, clients, 4),
    teltonika,
    latestReads(fleet, clients, 2),
    historyReads(fleet, clients, 1),
  ];
  console.log(`[${since(t0)}] ${VEHICLES.length} vehicles with OsmAnd devices (${TELTONIKA_DEVICES} with Teltonika trackers), ${STATUS_VEHICLES.length} for status changes; ` +
    `webhook on ${receiver.url}; ${streams.length} streams; ${nodes.length > 1 ? 'every client alternating between the nodes' : 'one node'}.`);

  // ---- capacity ----
  await closedLoop(channels, CAPACITY_WARM_UP, stop);
  const cpuBefore = process.cpuUsage();
  const capacity = await closedLoop(channels, CAPACITY_SECONDS, stop);
  const driverCpu = (() => {
    const used = process.cpuUsage(cpuBefore);
    return (used.user + used.system) / 1e6 / CAPACITY_SECONDS;
  })();
  const recordsCapacity = channels.filter((ch) => ch.ingest).reduce((sum, ch) => sum + capacity.get(ch)! * (ch.counters.ops > 0 ? ch.counters.records / Math.max(1, ch.counters.ok) : 0), 0);
  console.log(`[${since(t0)}] capacity of the mix, every channel busy at once for ${CAPACITY_SECONDS} s (after ${CAPACITY_WARM_UP} s of warm-up); ` +
    `this process used ${Math.round(driverCpu * 100)} % of a core meanwhile:`);
  for (const ch of channels) console.log(`    ${ch.name}: ${capacity.get(ch)!.toFixed(1)}/s with ${ch.workers} at once`);
  console.log(`    records stored: ${Math.round(recordsCapacity)}/s`);
  if (driverCpu > 0.9) notes.push(`this process used ${Math.round(driverCpu * 100)} % of a core while measuring the capacity: the clients, not the service, may have been the limit`);
  for (const ch of channels) {
    if (capacity.get(ch)! <= 0) throw new Error(`${ch.name} did nothing while the capacity was measured: ${ch.counters.why.join('; ') || 'no answers'}`);
  }

  // ---- steady load ----
  const plan = [...channels.map((channel) => ({ channel, rate: capacity.get(channel)! * load })), { channel: status as Channel, rate: STATUS_RATE }];
  const baseline = new Map(plan.map(({ channel }) => [channel, { ...channel.counters }]));
  const samples: Sample[][] = nodes.map(() => []);
  const scrapeFailures: Array<{ count: number; first?: string }> = nodes.map(() => ({ count: 0 }));
  // Resets the event-loop histograms: the first sample covers the steady load only. The 5xx the
  // nodes answered so far were answered while the capacity was measured.
  const capacity5xx = await Promise.all(nodes.map(async (node) => (await scrape(node, key)).http5xx));
  for (const s of streams) s.take();
  driverLoop.enable();
  const driverCpuStart = process.cpuUsage();
  const started = performance.now();
  const at = () => (performance.now() - started) / 1000;
  console.log(`[${since(t0)}] steady load for ${(LOAD_SECONDS / 60).toFixed(1)} min: ${plan.map(({ channel, rate }) => `${channel.name} ${rate.toFixed(1)}/s`).join(', ')}; ` +
    `sampling every ${SAMPLE_SECONDS} s; steady state from ${Math.round(WARM_UP_SECONDS)} s.`);

  if (args.samples !== undefined) writeFileSync(args.samples, 'seconds,node,rss_bytes,heap_used_bytes,heap_live_bytes,heap_total_bytes,external_bytes,eventloop_p99_ms,active_handles\n');
  let sampling = true;
  const sampler = (async () => {
    let next = SAMPLE_SECONDS;
    let reported = 0;
    const everyReport = Math.max(10, LOAD_SECONDS / 10);
    while (sampling) {
      await sleep(Math.max(0, (next - at()) * 1000));
      if (!sampling) break;
      next += SAMPLE_SECONDS;
      const when = at();
      for (const [i, node] of nodes.entries()) {
        if (!node.running()) continue;
        try {
          const sample = { at: when, ...(await scrape(node, key)) };
          samples[i]!.push(sample);
          if (args.samples !== undefined) {
            appendFileSync(args.samples, `${when.toFixed(1)},${node.name},${sample.rss},${sample.heapUsed},${sample.heapLive},${sample.heapTotal},${sample.external},${sample.lagP99.toFixed(2)},${sample.handles}\n`);
          }
        } catch (error) {
          const failed = scrapeFailures[i]!;
          failed.count++;
          failed.first ??= `at ${when.toFixed(0)} s: ${(error as Error).message}`;
        }
      }
      if (when - reported >= everyReport) {
        reported = when;
        const ops = plan.reduce((sum, { channel }) => sum + channel.counters.ops - baseline.get(channel)!.ops, 0);
        const moved = streams.map((s) => s.take());
        console.log(`[${since(t0)}] ${when.toFixed(0)} s: ${nodes.map((n, i) => {
          const s = samples[i]!.at(-1);
          return s === undefined ? `${n.name} –` : `${n.name} RSS ${MB(s.rss)}, heap ${MB(s.heapUsed)}, loop p99 ${ms(s.lagP99)} ms, ${s.handles} handles`;
        }).join('; ')}; ${Math.round(ops / when)} operations/s; stream messages since last: ${moved.join(', ')}`);
        for (const [i, n] of moved.entries()) if (n === 0 && streams[i]!.lost() === undefined) notes.push(`stream "${streams[i]!.name}" received nothing for ${everyReport.toFixed(0)} s up to ${when.toFixed(0)} s`);
      }
    }
  })();
  const pacer = new Pacer(plan);
  await pacer.run(LOAD_SECONDS, stop);
  const loadSeconds = at();
  sampling = false;
  await sampler;
  await pacer.settle();
  const driverUsed = process.cpuUsage(driverCpuStart);
  driverLoop.disable();
  for (const [i, failed] of scrapeFailures.entries()) {
    if (failed.count > 0) failures.push(`${nodes[i]!.name}: ${failed.count} scrapes of /metrics failed (the first ${failed.first})`);
  }
  const lost = nodesLost();
  if (lost.length > 0) {
    // Nothing after this can be checked against a node that is gone.
    throw new Error(`${lost.map((node) => `${node.name} ended by itself (${node.exit()!.signal ?? `exit code ${node.exit()!.code}`})`).join(', ')} ` +
      `after about ${loadSeconds.toFixed(0)} s of the steady load`);
  }
  const final = await Promise.all(nodes.map((node) => scrape(node, key)));
  console.log(`[${since(t0)}] load ended after ${loadSeconds.toFixed(0)} s; every operation answered or timed out.`);
  if (interrupted) failures.push(`interrupted after ${loadSeconds.toFixed(0)} s of the ${LOAD_SECONDS} s`);

  // ---- streams, webhooks ----
  for (const s of streams) {
    if (s.lost() !== undefined) failures.push(`stream "${s.name}" ${s.lost()}`);
    else if (s.messages() <= 1) failures.push(`stream "${s.name}" received nothing after its connected message`);
  }
  const changed = status.changed();
  const deadline = Date.now() + DELIVERY_WAIT_MS;
  while (receiver.stats().statusEvents < changed && Date.now() < deadline) await sleep(200);
  const hooks = receiver.stats();
  if (hooks.badSignatures > 0) failures.push(`${hooks.badSignatures} webhook deliveries did not verify (Standard Webhooks signature)`);
  if (hooks.statusEvents < changed) failures.push(`${changed - hooks.statusEvents} of ${changed} status changes never reached the webhook (waited ${DELIVERY_WAIT_MS / 1000} s)`);
  if (hooks.statusEvents > changed + status.uncertain()) failures.push(`the webhook heard of ${hooks.statusEvents} status changes; ${changed} were made (${status.uncertain()} uncertain)`);

  // ---- every record ----
  const verifyStarted = performance.now();
  const totals = ledger.totals();
  const checks: VehicleCheck[] = [];
  for (const [v, vehicleId] of VEHICLES.entries()) {
    const node = nodes[v % nodes.length]!;
    const stamps: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `from=${new Date(ledger.base).toISOString()}&limit=10000&fields=speed${cursor === null ? '' : `&cursor=${cursor}`}`;
      const page = await must(node, key, 'GET', `/v2/telemetry/${vehicleId}/history?${query}`, undefined, 200) as { records: Array<{ timestamp: string }>; nextCursor: string | null };
      for (const r of page.records) stamps.push(Date.parse(r.timestamp));
      cursor = page.nextCursor;
    } while (cursor !== null);
    checks.push(ledger.check(v, stamps));
  }
  const sum = (pick: (c: VehicleCheck) => number) => checks.reduce((s, c) => s + pick(c), 0);
  const stored = sum((c) => c.stored);
  const ackedStored = sum((c) => c.acknowledgedStored);
  const missing = sum((c) => c.missing.count);
  const duplicated = sum((c) => c.duplicated.count);
  const unexpected = sum((c) => c.unexpected.count);
  const sample = (pick: (c: VehicleCheck) => number[]) => checks.flatMap((c, v) => pick(c).map((t) => `${VEHICLES[v]} @ ${new Date(t).toISOString()}`)).slice(0, 5).join(', ');
  if (missing > 0) failures.push(`${missing} acknowledged records are not stored (e.g. ${sample((c) => c.missing.sample)})`);
  if (duplicated > 0) failures.push(`${duplicated} records are stored more than once (e.g. ${sample((c) => c.duplicated.sample)})`);
  if (unexpected > 0) failures.push(`${unexpected} stored records were never sent (e.g. ${sample((c) => c.unexpected.sample)})`);
  if (totals.pending > 0) failures.push(`${totals.pending} records never had an answer settled (a bug of the soak)`);
  console.log(`[${since(t0)}] histories of ${VEHICLES.length} vehicles read back in ${((performance.now() - verifyStarted) / 1000).toFixed(1)} s.`);

  // ---- requests ----
  // Under the steady load every answer must be the expected one. While the capacity was measured
  // (every channel as busy as it can be), a 503 with Retry-After is the service shedding what it
  // cannot answer in time, as it should at saturation: counted and shown, not a failure. Any
  // other failure then still is one.
  const clientFailures = { s5xx: 0, refused: 0, errors: 0 };
  let shedAtCapacity = 0;
  for (const ch of [...channels, status]) {
    const before = baseline.get(ch)!;
    const s5xx = ch.counters.status5xx - before.shedByService;
    shedAtCapacity += before.shedByService;
    clientFailures.s5xx += s5xx;
    clientFailures.refused += ch.counters.refused;
    clientFailures.errors += ch.counters.errors;
    const bad = s5xx + ch.counters.refused + ch.counters.errors;
    if (bad > 0) failures.push(`${ch.name}: ${s5xx} answered 5xx, ${ch.counters.refused} refused otherwise, ${ch.counters.errors} without an answer (${ch.counters.why.join('; ')})`);
  }
  const server5xx = final.reduce((s, f, i) => s + f.http5xx - capacity5xx[i]!, 0);
  if (server5xx > 0) failures.push(`the nodes answered ${server5xx} requests 5xx under the steady load (fleet_http_requests_total)`);
  if (shedAtCapacity > 0) notes.push(`${shedAtCapacity} requests were answered 503 with Retry-After while the capacity was measured (the service shedding load at saturation; not judged)`);
  if (mqtt.disconnects() > 0) failures.push(`MQTT clients lost their connection ${mqtt.disconnects()} times`);

  // ---- memory and the event loop ----
  interface NodeFigures { rss: [number, number]; heap: [number, number]; live: [number, number]; handles: [number, number]; lagP99: number; lagP99Max: number; lagMax: number; samples: number }
  const figures: NodeFigures[] = [];
  // The load lasts LOAD_SECONDS give or take the pacer's last step; the windows scale with it.
  const scale = loadSeconds / LOAD_SECONDS;
  const steadyFrom = WARM_UP_SECONDS * scale;
  const judgedWindow = WINDOW_SECONDS * scale;
  for (const [i, node] of nodes.entries()) {
    const all = samples[i]!;
    const first = all.filter((s) => s.at >= steadyFrom && s.at <= steadyFrom + judgedWindow);
    const end = all.filter((s) => s.at >= loadSeconds - judgedWindow);
    const steady = all.filter((s) => s.at >= steadyFrom);
    if (first.length < 3 || end.length < 3) {
      failures.push(`${node.name}: too few samples to judge memory (${first.length} at the start of steady state, ${end.length} at the end)`);
      continue;
    }
    const f: NodeFigures = {
      rss: [median(first.map((s) => s.rss)), median(end.map((s) => s.rss))],
      heap: [median(first.map((s) => s.heapUsed)), median(end.map((s) => s.heapUsed))],
      live: [median(first.map((s) => s.heapLive)), median(end.map((s) => s.heapLive))],
      handles: [median(first.map((s) => s.handles)), median(end.map((s) => s.handles))],
      lagP99: median(steady.map((s) => s.lagP99)),
      lagP99Max: Math.max(...steady.map((s) => s.lagP99)),
      lagMax: Math.max(...steady.map((s) => s.lagMax)),
      samples: all.length,
    };
    figures.push(f);
    const rssGrowth = f.rss[1] / f.rss[0] - 1;
    const liveGrowth = f.live[1] / f.live[0] - 1;
    if (rssGrowth >= GROWTH_LIMIT) failures.push(`${node.name}: resident memory grew ${pct(rssGrowth)} (${MB(f.rss[0])} → ${MB(f.rss[1])}), limit ${pct(GROWTH_LIMIT)}`);
    if (!(f.live[0] > 0)) failures.push(`${node.name}: no full garbage collection before the start of steady state: its live heap cannot be judged`);
    else if (liveGrowth >= GROWTH_LIMIT) failures.push(`${node.name}: the heap kept after full collections grew ${pct(liveGrowth)} (${MB(f.live[0])} → ${MB(f.live[1])}), limit ${pct(GROWTH_LIMIT)}`);
  }

  // ---- the streams and receiver end; the nodes stop ----
  for (const s of streams.splice(0)) await s.close();
  for (const close of closers.splice(0).reverse()) await close();
  await clients.close();
  clients = undefined;
  for (const node of nodes) {
    const exit = await node.stop();
    if (exit.code !== 0) failures.push(`${node.name} did not shut down cleanly on SIGTERM (${exit.signal ?? `exit code ${exit.code}`}):\n${node.tail().slice(-2000)}`);
    const errors = node.errors();
    if (errors.count > 0) failures.push(`${node.name} logged ${errors.count} errors, first:\n    ${errors.first.slice(0, 5).join('\n    ')}`);
  }

  // ---- report ----
  console.log();
  console.log('## Soak result');
  console.log();
  console.log(`${store.description}; ${(loadSeconds / 60).toFixed(1)} min at ${Math.round(load * 100)} % of the measured capacity; samples every ${SAMPLE_SECONDS} s; ` +
    `steady state from ${steadyFrom.toFixed(0)} s, compared as medians of [${steadyFrom.toFixed(0)} s, ` +
    `${(steadyFrom + judgedWindow).toFixed(0)} s] and [${(loadSeconds - judgedWindow).toFixed(0)} s, ${loadSeconds.toFixed(0)} s].`);
  console.log();
  console.log('| channel | capacity /s | offered /s | done /s | shed | p50 ms | p99 ms | failed | 503 at capacity |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const { channel, rate } of plan) {
    const c = channel.counters;
    const b = baseline.get(channel)!;
    const done = (c.ok - b.ok) / loadSeconds;
    const cap = capacity.get(channel);
    console.log(`| ${channel.name} | ${cap === undefined ? '–' : cap.toFixed(1)} | ${rate.toFixed(1)} | ${done.toFixed(1)} | ${c.shed} | ` +
      `${ms(c.latency.quantile(0.5))} | ${ms(c.latency.quantile(0.99))} | ${c.status5xx - b.shedByService + c.refused + c.errors} | ${b.shedByService} |`);
  }
  console.log();
  console.log('Latencies are over the whole run (capacity measurement included).');
  console.log();
  console.log('| node | RSS start → end | growth | live heap start → end | growth | heap used start → end | growth | event-loop p99 median (max) ms | loop max ms | active handles start → end |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const [i, f] of figures.entries()) {
    console.log(`| ${nodes[i]!.name} | ${MB(f.rss[0])} → ${MB(f.rss[1])} | ${pct(f.rss[1] / f.rss[0] - 1)} | ${MB(f.live[0])} → ${MB(f.live[1])} | ` +
      `${pct(f.live[1] / f.live[0] - 1)} | ${MB(f.heap[0])} → ${MB(f.heap[1])} | ${pct(f.heap[1] / f.heap[0] - 1)} | ` +
      `${ms(f.lagP99)} (${ms(f.lagP99Max)}) | ${ms(f.lagMax)} | ${f.handles[0]} → ${f.handles[1]} |`);
  }
  console.log();
  console.log('Live heap: fleet_nodejs_heap_live_bytes, the heap used right after the latest full collection (judged); heap used: ' +
    'fleet_nodejs_heap_size_used_bytes, garbage not yet collected included (shown, not judged: it swings with the collector). ' +
    'Event-loop p99: per sample, over the time since the previous one.');
  console.log();
  console.log(`Records: ${totals.sent} sent, ${totals.acknowledged} acknowledged, ${stored} stored; ${ackedStored} of the acknowledged stored exactly once, ` +
    `${missing} missing, ${duplicated} stored twice, ${unexpected} never sent; ${totals.unknown} without an acknowledgement (${sum((c) => c.unacknowledgedStored)} of them stored).`);
  console.log(`Requests answered 5xx (but for 503s shed at capacity): ${clientFailures.s5xx} seen by the clients, ${server5xx} counted by the nodes under the steady load; other failures: ${clientFailures.refused} refused, ${clientFailures.errors} unanswered.`);
  console.log(`Webhook: ${changed} status changes, ${hooks.statusEvents} of them delivered, ${hooks.requests} deliveries in all, ${hooks.badSignatures} bad signatures. ` +
    `MQTT reconnects: ${mqtt.disconnects()}.`);
  const driverCpuShare = (driverUsed.user + driverUsed.system) / 1e6 / loadSeconds;
  console.log(`This process (clients and checks): ${Math.round(driverCpuShare * 100)} % of a core under the steady load, its event-loop p99 ${ms(driverLoop.percentile(99) / 1e6)} ms. ` +
    `Load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}.`);
  const shed = plan.reduce((s, { channel }) => s + channel.counters.shed, 0);
  if (shed > 0) notes.push(`${shed} operations were shed: every slot of their channel was busy when they were due (the service, or the machine, fell behind the offered rate for a while)`);
} catch (error) {
  failures.push(`the run broke off: ${(error as Error).stack ?? String(error)}`);
  for (const node of nodes) console.error(`--- ${node.name} (${node.running() ? 'running' : `ended: ${node.exit()!.signal ?? `exit code ${node.exit()!.code}`}`}), its last output:\n${node.tail().slice(-3000)}`);
} finally {
  for (const s of streams) await s.close().catch(() => {});
  for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => {});
  await clients?.close().catch(() => {});
  await receiver?.close().catch(() => {});
  for (const node of nodes) await node.stop().catch(() => {});
  await store?.cleanup().catch((error: Error) => failures.push(`cleaning up the store: ${error.message}`));
  work.remove();
}

console.log();
for (const note of notes) console.log(`Note: ${note}`);
if (failures.length === 0) {
  console.log(`PASSED in ${since(t0)}.`);
} else {
  console.log(`FAILED (${since(t0)}):`);
  for (const failure of failures) console.log(`  - ${failure}`);
  process.exitCode = 1;
}
