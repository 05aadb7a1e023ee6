// One, two and three Fleet nodes ingesting together, on the same PostgreSQL, in the same run. The
// nodes are real service processes (src/main.ts) on one fresh database, in cluster mode on Redis
// when it answers; the load is fleet batches (`POST /v2/telemetry`, BATCH records spread over all
// the registered vehicles, so every node's batches name the same vehicles) from bench/load.ts in
// processes of their own, CONNECTIONS_PER_NODE connections to each node in use. Cases, in rounds
// that take turns (the machine is shared and noisy, so each case sees the same moments): one node
// (A; B and C run, idle), two nodes (A and B), three nodes (A, B and C); accepted records/s of the
// generators are added.
//
// Each node runs in a cgroup of its own capped at BENCH_NODE_CPU of a core (default 0.2; 0 for no
// cap), so that on one machine the nodes are the bottleneck and adding one adds capacity, as it
// would on hosts of their own; without root (or a cpu cgroup controller) the run says so and runs
// uncapped. The groups are made here and removed at the end, also when the run fails.
//
// Beside each case: the CPU of the node processes (and how often their caps throttled them), of
// PostgreSQL (this database's backends and the server's background writers), of the load
// generators and of the whole machine; what the busy PostgreSQL backends were waiting for
// (pg_stat_activity sampled every 100 ms); the WAL written and flushed (pg_stat_wal).
//
// PostgreSQL from FLEET_BENCH_DATABASE_URL (default: FLEET_TEST_DATABASE_URL, else the local
// server); skipped with a message when it cannot be reached. The service takes no schema setting,
// so the run makes its own database (fleet_bench_<pid>_<random>) and drops it at the end; the
// role needs CREATEDB. Redis from FLEET_BENCH_REDIS_URL (default: the local server) under a
// prefix of its own, deleted at the end. BENCH_SECONDS sets each round's length (default 5).
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { createPostgresStores } from '../src/storage/postgres/index.ts';
import { type CpuGroup, cpuCgroups, cpuGroup, leaveGroup, removeAll } from './cgroup.ts';
import { BENCH_DATABASE_URL, connectAdmin, loadVarying, ms, redactUrl } from './lib.ts';
import type { LoadOutcome, LoadSpec } from './load.ts';
import type { Plan } from './rows.ts';
import { freePort } from '../test/helpers/ports.ts';

const url = BENCH_DATABASE_URL;
const redisUrl = process.env.FLEET_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const warmupSeconds = 2;
const ROUNDS = 3;
const BATCH = 100;
const CONNECTIONS_PER_NODE = 8;
// 0.2 of a core: on a 2-core machine three capped nodes (0.6), PostgreSQL (about 1.7 % of a core
// per 1000 records/s) and the generators still fit, so the caps, not the machine, bind. At 0.3 the
// three-node case ran out of machine before the nodes reached their caps.
const NODE_CPU = Number(process.env.BENCH_NODE_CPU ?? 0.2);
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
/** Milliseconds of timestamps each generator may use: room for 100,000 requests of BATCH. */
const RANGE = 10_000_000;
const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

// Every load generator writes its own range of timestamps (unique records), within the last 25
// days: inside the partitions made for the default 30-day retention, as live traffic would be.
const base = Date.now() - 25 * 86_400_000;
let ranges = 0;
function plan(vehicles: readonly string[]): Plan {
  const start = base + ranges++ * RANGE;
  if (start + RANGE > Date.now()) throw new Error('out of timestamp ranges: fewer rounds or shorter ones');
  return { vehicles, size: BATCH, start };
}

const admin = await connectAdmin(url) ?? process.exit(0);

// ---- processes and CPU ---------------------------------------------------------------------------

const TICKS = 100; // USER_HZ: /proc reports CPU time in 1/100 s on Linux
/** CPU seconds (user + system) a process has used, or undefined when it is gone. */
function cpuOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS; // utime, stime (fields 14 and 15)
  } catch {
    return undefined;
  }
}

/** The whole machine from /proc/stat: busy and steal time, in CPU seconds over all cores. */
function machine(): { busy: number; steal: number } {
  // cpu  user nice system idle iowait irq softirq steal ...
  const v = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { busy: (v[0]! + v[1]! + v[2]! + v[5]! + v[6]!) / TICKS, steal: v[7]! / TICKS };
}

interface Node {
  name: string;
  url: string;
  child: ChildProcessByStdio<null, Readable, Readable>;
  group: CpuGroup | undefined;
  output(): string;
  closed: Promise<void>;
}

const workDir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-cluster-'));
const nodes: Node[] = [];
const cgroups = NODE_CPU > 0 ? cpuCgroups() : { kind: 'none' as const, why: 'BENCH_NODE_CPU=0' };
/** Weight of the nodes' and the generators' groups against other work on a shared machine (see cgroup.ts). */
const WEIGHT = 8;
const capNote = cgroups.kind === 'none'
  ? `**the nodes run uncapped (${cgroups.why})**: they share the machine's cores with PostgreSQL and the generators, so the ratios measure contention`
  : `each node in a cgroup (${cgroups.kind}) of its own capped at ${NODE_CPU} of a core (CFS quota ${Math.round(NODE_CPU * 100_000)} µs per ` +
    `100,000 µs), weighted ${WEIGHT} × a process outside a group, as is the group of this process and its load generators (uncapped)`;
// This process and every load generator it starts: weighted too, so that other work on a shared
// machine does not starve the generators (PostgreSQL, a shared server, is left as it is).
if (cgroups.kind !== 'none') cpuGroup(cgroups, `fleet-bench-${process.pid}-run`, undefined, WEIGHT).add(process.pid);

/** main.ts in its own process (and CPU group), environment built from scratch; resolves once /readyz says 200. */
async function startNode(name: string, env: Record<string, string>): Promise<Node> {
  const port = await freePort();
  // BENCH_NODE_ARGS: extra Node options for the nodes, e.g. "--cpu-prof --cpu-prof-dir=/tmp/profiles".
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(/\s+/).filter((arg) => arg !== '') ?? [];
  const group = cgroups.kind === 'none' ? undefined : cpuGroup(cgroups, `fleet-bench-${process.pid}-${name.replace(/\W/g, '')}`, NODE_CPU, WEIGHT);
  const child = spawn(process.execPath, [...nodeArgs, MAIN], {
    cwd: workDir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: workDir,
      FLEET_HOST: '127.0.0.1', FLEET_PORT: String(port), FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0', FLEET_LOG_LEVEL: 'warn', FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0', ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  let exited = false;
  const closed = new Promise<void>((resolve) => child.once('close', () => ((exited = true), resolve())));
  const node: Node = { name, url: `http://127.0.0.1:${port}`, child, group, output: () => output, closed };
  nodes.push(node);
  // At once, before the service has started its work: every thread it makes later stays in the group.
  group?.add(child.pid!);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`${name} exited before it was ready:\n${output}`);
    const res = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (res?.status === 200) return node;
    if (Date.now() > deadline) throw new Error(`${name} not ready after 30 s:\n${output}`);
    await sleep(100);
  }
}

/** Log lines at error or worse (pino level ≥ 50) a node wrote, and what they said. */
function errorLines(node: Node): string[] {
  return node.output().split('\n').filter((line) => {
    try {
      return (JSON.parse(line) as { level?: number }).level! >= 50;
    } catch {
      return false;
    }
  });
}

// ---- the run ------------------------------------------------------------------------------------

const database = `fleet_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
const databaseUrl = (() => {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
})();
const redisPrefix = `fleet-bench-${process.pid}-${randomBytes(3).toString('hex')}:`;
let redis: Redis | undefined = new Redis(redisUrl, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null });
redis.on('error', () => {});
let redisNote: string;
try {
  await redis.connect();
  await redis.ping();
  redisNote = `cluster mode on Redis at ${redactUrl(redisUrl)} (prefix ${redisPrefix})`;
} catch (error) {
  redis.disconnect();
  redis = undefined;
  redisNote = `**Redis at ${redactUrl(redisUrl)} is unreachable (${(error as Error).message}): the nodes run without it** (no bus between them; ingest does not need it)`;
}

interface Sample {
  name: string;
  outcomes: LoadOutcome[];
  plans: Plan[];
  /** Accepted records per second, all generators together. */
  rate: number;
  nodeCpu: number[];
  /** Per node: the share of CFS periods in which its cap throttled it (undefined when uncapped). */
  throttled: (number | undefined)[];
  postgresCpu: number;
  loadCpu: number;
  machineBusy: number;
  /** The machine's busy time not spent by the processes above: other work on the machine. */
  others: number;
  steal: number;
  /** Busy backends of this database, on average, and the share of them waiting on a lock / on I/O or WAL. */
  active: number;
  lockWait: number;
  ioWait: number;
  /** The most frequent wait events of busy backends, with their shares. */
  topWaits: string;
  /** pg_stat_wal per second: MB written, and WAL flushes (fsyncs). */
  walMBps: number;
  walSyncsPerS: number;
}

interface WalStats { bytes: number; syncs: number }
async function walStats(): Promise<WalStats> {
  const row = (await admin.query<{ wal_bytes: string; wal_sync: string }>('SELECT wal_bytes, wal_sync FROM pg_stat_wal')).rows[0]!;
  return { bytes: Number(row.wal_bytes), syncs: Number(row.wal_sync) };
}

/** Runs `specs` at once against the nodes, measuring CPU, database waits and WAL meanwhile. */
async function measure(name: string, specs: LoadSpec[]): Promise<Sample> {
  const background = (await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
  )).rows.map((r) => r.pid);
  const backends = async () => (await admin.query<{ pid: number; wait: string | null; event: string | null }>(
    'SELECT pid, wait_event_type AS wait, wait_event AS event FROM pg_stat_activity WHERE datname = $1 AND state = \'active\' AND pid <> pg_backend_pid()',
    [database],
  )).rows;
  const known = new Map<number, number>();
  for (const pid of [...background, ...(await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])).rows.map((r) => r.pid)]) {
    known.set(pid, cpuOf(pid) ?? 0);
  }
  const nodesBefore = nodes.map((n) => cpuOf(n.child.pid!) ?? 0);
  const groupsBefore = nodes.map((n) => n.group?.stat());
  const walBefore = await walStats();
  const machineBefore = machine();
  const started = performance.now();

  let sampling = true;
  let samples = 0;
  let active = 0;
  let lockWait = 0;
  let ioWait = 0;
  const events = new Map<string, number>();
  const sampler = (async () => {
    while (sampling) {
      const rows = await backends();
      samples++;
      for (const row of rows) {
        if (!known.has(row.pid)) known.set(row.pid, 0); // opened during the run: all its CPU counts
        active++;
        if (row.wait === 'Lock') lockWait++;
        else if (row.wait === 'IO' || row.wait === 'LWLock') ioWait++;
        const event = row.wait === null ? 'CPU (no wait)' : `${row.wait}:${row.event}`;
        events.set(event, (events.get(event) ?? 0) + 1);
      }
      await sleep(100);
    }
  })();
  const outcomes = await Promise.all(specs.map((spec) => loadVarying(spec)));
  sampling = false;
  await sampler;

  const wall = (performance.now() - started) / 1000;
  const machineAfter = machine();
  const walAfter = await walStats();
  let postgres = 0;
  for (const [pid, before] of known) postgres += (cpuOf(pid) ?? before) - before;
  const nodeCpu = nodes.map((n, i) => ((cpuOf(n.child.pid!) ?? nodesBefore[i]!) - nodesBefore[i]!) / wall);
  const throttled = nodes.map((n, i) => {
    const before = groupsBefore[i];
    const after = n.group?.stat();
    if (before === undefined || after === undefined) return undefined;
    return (after.throttled - before.throttled) / Math.max(1, after.periods - before.periods);
  });
  const loadCpu = outcomes.reduce((sum, o) => sum + o.loadCpu, 0);
  const machineBusy = (machineAfter.busy - machineBefore.busy) / wall;
  const topWaits = [...events].sort((x, y) => y[1] - x[1]).slice(0, 3)
    .map(([event, n]) => `${event} ${Math.round((n / Math.max(1, active)) * 100)} %`).join(', ');
  return {
    name,
    outcomes,
    plans: specs.map((s) => s.body!),
    rate: outcomes.reduce((sum, o) => sum + o.rps * BATCH, 0),
    nodeCpu,
    throttled,
    postgresCpu: postgres / wall,
    loadCpu,
    machineBusy,
    others: machineBusy - nodeCpu.reduce((x, y) => x + y, 0) - postgres / wall - loadCpu,
    steal: (machineAfter.steal - machineBefore.steal) / wall,
    active: active / Math.max(1, samples),
    lockWait: lockWait / Math.max(1, active),
    ioWait: ioWait / Math.max(1, active),
    topWaits,
    walMBps: (walAfter.bytes - walBefore.bytes) / 1e6 / wall,
    walSyncsPerS: (walAfter.syncs - walBefore.syncs) / wall,
  };
}

const spec = (name: string, node: Node, headers: Record<string, string>, forSeconds: number): LoadSpec => ({
  name, url: node.url, method: 'POST', path: '/v2/telemetry', headers, connections: CONNECTIONS_PER_NODE, seconds: forSeconds,
  body: { kind: 'fleet', ...plan(VEHICLES) },
});

const server = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]!;
const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
await admin.query(`CREATE DATABASE ${database}`);
const stored = new pg.Client({ connectionString: databaseUrl });
try {
  // The first organization and its admin key, made as the service would on an empty store.
  const stores = await createPostgresStores({ url: databaseUrl, poolSize: 2, applicationName: 'fleet-bench', keepDays: 30 });
  const first = await createAuthService({ store: stores.auth, clock: systemClock }).bootstrap(undefined);
  await stores.close();
  if (first === undefined) throw new Error('fresh database did not bootstrap');
  const headers = { authorization: `Bearer ${first.secret}` };

  const env: Record<string, string> = { FLEET_DATABASE_URL: databaseUrl };
  if (redis !== undefined) Object.assign(env, { FLEET_REDIS_URL: redisUrl, FLEET_REDIS_PREFIX: redisPrefix });
  const a = await startNode('node A', env);
  const b = await startNode('node B', env);
  const c = await startNode('node C', env);
  for (const vehicleId of VEHICLES) {
    const res = await fetch(`${a.url}/v2/fleet/vehicles`, {
      method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ vehicleId, type: 'van' }),
    });
    if (res.status !== 201) throw new Error(`registering ${vehicleId}: ${res.status} ${await res.text()}`);
  }

  const cases: Record<string, Node[]> = { one: [a], two: [a, b], three: [a, b, c] };
  const specs = (key: string, s: number) => cases[key]!.map((node) => spec(node.name, node, headers, s));
  const names: Record<string, string> = {
    one: `one node: ${CONNECTIONS_PER_NODE} connections to A`,
    two: `two nodes: ${CONNECTIONS_PER_NODE} connections to each`,
    three: `three nodes: ${CONNECTIONS_PER_NODE} connections to each`,
  };

  // Warm-up: every node (JIT, pools, the first telemetry that activates the vehicles), then rounds.
  await Promise.all(specs('three', warmupSeconds).map((s) => loadVarying(s)));
  const results: Record<string, Sample[]> = { one: [], two: [], three: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const key of Object.keys(cases)) {
      await Promise.all(specs(key, 1).map((s) => loadVarying(s))); // this case's own warm-up
      results[key]!.push(await measure(names[key]!, specs(key, seconds)));
    }
  }

  // Every acknowledged record is stored, none twice.
  await stored.connect();
  let acknowledged = 0;
  let rows = 0;
  for (const samples of Object.values(results)) {
    for (const sample of samples) {
      for (const [i, rowsPlan] of sample.plans.entries()) {
        const outcome = sample.outcomes[i]!;
        const n = Number((await stored.query('SELECT count(*) AS n FROM telemetry WHERE ts >= $1 AND ts < $2', [rowsPlan.start, rowsPlan.start + RANGE])).rows[0].n);
        // Requests still in flight when the generator stopped may have been stored unacknowledged.
        if (n < outcome.responses * BATCH || n > (outcome.responses + CONNECTIONS_PER_NODE) * BATCH) {
          throw new Error(`${sample.name}, ${outcome.name}: ${n} rows stored for ${outcome.responses} acknowledged requests of ${BATCH}`);
        }
        acknowledged += outcome.responses;
        rows += n;
      }
    }
  }

  // ---- report -----------------------------------------------------------------------------------
  const median = (samples: Sample[]) => [...samples].sort((x, y) => x.rate - y.rate)[Math.floor(samples.length / 2)]!;
  const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
  const failures = (s: Sample) => s.outcomes.reduce((sum, o) => sum + o.non2xx + o.errors, 0);
  const latency = (s: Sample, key: 'p50' | 'p99') => s.outcomes.map((o) => ms(o[key])).join(' / ');
  const nodeCell = (s: Sample, i: number) => `${pct(s.nodeCpu[i]!)}${s.throttled[i] === undefined ? '' : ` (${pct(s.throttled[i])})`}`;

  console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}; PostgreSQL ${server.server_version} ` +
    `on the same machine; ${redisNote}; ${capNote}. Load average before the run: ${loadBefore}; after: ` +
    `${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}.`);
  console.log(`${ROUNDS} rounds of ${seconds} s per case, the cases taking turns, each after 1 s of its own warm-up (and ${warmupSeconds} s of every node at the start); ` +
    'the table shows the median round by records/s. Every node\'s batches name all the vehicles (they overlap).');
  console.log('CPU in cores: each node process (in brackets: the share of CFS periods in which its cap throttled it); PostgreSQL (this database\'s ' +
    'backends and the server\'s WAL writer, checkpointer, background writer); the load generators; the whole machine (busy, and stolen by the host) ' +
    'and what of it none of these used (other work on the machine). Backends: busy backends of this database on average, the share waiting on a ' +
    'lock and on I/O or LWLocks, and the three most frequent wait events. WAL: pg_stat_wal, MB written and flushes per second.');
  console.log();
  console.log(`### Fleet batches, POST /v2/telemetry, ${BATCH} records over ${VEHICLES.length} vehicles per request`);
  console.log();
  console.log('| case | records/s | requests/s | p50 ms | p99 ms | failures | node A CPU | node B CPU | node C CPU | PostgreSQL CPU | load generators CPU | ' +
    'machine busy (steal) | of which other | backends busy: on locks, on I/O | top waits | WAL MB/s, flushes/s |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const key of Object.keys(cases)) {
    const s = median(results[key]!);
    console.log(`| ${s.name} | ${Math.round(s.rate)} | ${(s.rate / BATCH).toFixed(1)} | ${latency(s, 'p50')} | ${latency(s, 'p99')} | ${failures(s)} | ` +
      `${nodeCell(s, 0)} | ${nodeCell(s, 1)} | ${nodeCell(s, 2)} | ${pct(s.postgresCpu)} | ${pct(s.loadCpu)} | ${pct(s.machineBusy)} (${pct(s.steal)}) | ` +
      `${pct(s.others)} | ${s.active.toFixed(1)}: ${pct(s.lockWait)}, ${pct(s.ioWait)} | ${s.topWaits} | ${s.walMBps.toFixed(1)}, ${Math.round(s.walSyncsPerS)} |`);
  }
  console.log();
  console.log('Latencies of several nodes are per node, A / B / C.');
  console.log();

  const range = (values: number[]) => `${Math.min(...values).toFixed(2)} to ${Math.max(...values).toFixed(2)} ×`;
  const allFailures = Object.values(results).flat().reduce((sum, s) => sum + failures(s), 0);
  for (const [key, goal] of [['two', 1.7], ['three', 2.4]] as const) {
    const ratio = median(results[key]!).rate / median(results.one!).rate;
    const perRound = results[key]!.map((s, i) => s.rate / results.one![i]!.rate);
    console.log(`${names[key]} / one node: **${ratio.toFixed(2)} ×** (median rounds; per round ${range(perRound)}) ` +
      `(goal ≥ ${goal} ×: ${ratio >= goal ? '**met**' : '**not met**'}).`);
  }
  console.log(`${allFailures} failed requests in all; ${rows} rows stored for ${acknowledged} acknowledged requests of ${BATCH}, none twice.`);
  const errors = nodes.flatMap((n) => errorLines(n).map((line) => `${n.name}: ${line}`));
  if (errors.length > 0) {
    console.log();
    console.log(`Errors the nodes logged (${errors.length}; the first 5):`);
    for (const line of errors.slice(0, 5)) console.log(`    ${line.slice(0, 400)}`);
  }
} finally {
  for (const node of nodes) node.child.kill('SIGTERM');
  await Promise.race([Promise.all(nodes.map((n) => n.closed)), sleep(12_000)]);
  for (const node of nodes) if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
  await Promise.race([Promise.all(nodes.map((n) => n.closed)), sleep(5_000)]);
  if (cgroups.kind !== 'none') leaveGroup(cgroups, process.pid);
  const left = removeAll();
  if (left.length > 0) console.error(`could not remove the cgroups ${left.join(', ')} (processes still in them?)`);
  await stored.end().catch(() => {});
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
  if (redis !== undefined) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    redis.disconnect();
  }
  rmSync(workDir, { recursive: true, force: true });
}
