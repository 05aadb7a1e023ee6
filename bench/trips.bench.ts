// Telemetry ingest with live trip detection (every vehicle's records fed to the trip machine in
// the commit, its state read and written with the rule state) against the same ingest with
// FLEET_TRIP_EVENTS=false, measured in the same run: on the embedded store, and on PostgreSQL when
// it can be reached (FLEET_BENCH_DATABASE_URL, else FLEET_TEST_DATABASE_URL, else the local
// server). Neither Fleet has geofences or alert rules; both keep their vehicles' meters in the rule
// state row (bench/reports.bench.ts measures those), so the difference is the trip machine's. The load is bench/rules.bench.ts's
// along tracks: single-record requests over 100 connections, and requests of 1000 records over 8.
//
// The two Fleets of a backend take turns for BENCH_ROUNDS rounds (default 5) of BENCH_SECONDS
// (default 3) after a warm-up, and the medians are reported: the machine may be shared and noisy.
// BENCH_CASES picks from sqlite-single,sqlite-batch,postgres-single,postgres-batch,sqlite-store.
//
// `sqlite-store`: the embedded store's commits called directly (no HTTP, no load generator, so
// less at the mercy of a busy machine), each commit 100 requests of one vehicle each, of 1 record
// (as single-record ingest groups them) or of 100; the CPU time per record of this process, with
// the rule engine's trip detection on and off, taking turns for ROUNDS rounds of 100 commits.
import { cpus, release } from 'node:os';
import { createPostgresStores } from '../src/storage/postgres/index.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { createRuleEngine } from '../src/rules/engine.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { CommitBatch } from '../src/telemetry/store.ts';
import { BENCH_DATABASE_URL, type Measured, connectAdmin, median, ms, runPlans, startBenchFleet, tempDatabases, turnTaking } from './lib.ts';
import type { LoadSpec } from './load.ts';
import { trackDataText } from './rows.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const warmupSeconds = 1;
const cases = new Set((process.env.BENCH_CASES ?? 'sqlite-single,sqlite-batch,postgres-single,postgres-batch,sqlite-store').split(','));
const BATCH = 1000;
const BATCH_CONNECTIONS = 8;
const SINGLE_CONNECTIONS = 100;
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
const RANGE = 10_000_000;
const url = BENCH_DATABASE_URL;

const plan = runPlans(VEHICLES, RANGE);
const { interleaved, summary } = turnTaking({ seconds, rounds: ROUNDS, warmupSeconds, plan });

type Fleet = Awaited<ReturnType<typeof startBenchFleet>>;



const print = (line = '') => console.log(line);
const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
const lines: string[] = [];

/** Both Fleets of one backend through the single and batched loads. */
async function compare(backend: string, plain: Fleet, tracked: Fleet, stateRows: () => Promise<number>) {
  for (const [name, size, connections] of [['single', 1, SINGLE_CONNECTIONS], ['batch', BATCH, BATCH_CONNECTIONS]] as const) {
    if (!cases.has(`${backend}-${name}`)) continue;
    const spec = (fleet: Fleet, label: string): LoadSpec => ({
      name: label, url: fleet.url, method: 'POST', path: '/v2/telemetry/{vehicle}', headers: fleet.headers, connections, seconds,
      body: { kind: 'track', ...plan(size) },
    });
    const [withouts, withs] = await interleaved([
      spec(plain, 'FLEET_TRIP_EVENTS=false (baseline)'),
      spec(tracked, 'live trip detection'),
    ]);
    const without = summary(withouts!);
    const withTrips = summary(withs!);
    const ratio = withTrips.rps / without.rps;
    const ratios = withs!.map((r, i) => r.rps / withouts![i]!.rps);
    print();
    print(`### ${backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}: ${size === 1 ? `single-record ingest, ${SINGLE_CONNECTIONS} connections` : `batched ingest, ${BATCH} records per request, ${BATCH_CONNECTIONS} connections`}`);
    print();
    print('| case | records/s | requests/s | p50 ms | p99 ms | server CPU | server CPU ms per 1000 records (median of rounds) | load generator CPU |');
    print('|---|---|---|---|---|---|---|---|');
    // CPU per record: what the detection costs the serving process, less at the mercy of a busy machine than the rate.
    const cpuPer1000 = (r: Measured) => (r.serverCpu * 1_000_000) / (r.rps * size);
    const cpuWithout = median(withouts!.map(cpuPer1000));
    const cpuWith = median(withs!.map(cpuPer1000));
    for (const [r, cpu] of [[without, cpuWithout], [withTrips, cpuWith]] as const) {
      print(`| ${r.name} | ${Math.round(r.rps * size)} | ${r.rps.toFixed(1)} | ${ms(r.p50)} | ${ms(r.p99)} | ${pct(r.serverCpu)} | ${cpu.toFixed(1)} | ${pct(r.loadCpu)} |`);
    }
    const cpuRatio = cpuWith / cpuWithout;
    const line = `${backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'} ${size === 1 ? 'single-record' : 'batched'} ingest with trip detection / without: ` +
      `**${ratio.toFixed(2)} ×** the records per second (rounds: ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}), ` +
      `${cpuRatio.toFixed(2)} × the server CPU per record.`;
    print();
    print(line);
    lines.push(line);
  }
  // The detection ran: the vehicles sent to have their machine state.
  const rows = await stateRows();
  if (rows === 0) throw new Error(`${backend}: no trip state written`);
}

print(
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}. ` +
    `Each case: ${warmupSeconds} s of warm-up, then ${ROUNDS} rounds of ${seconds} s taking turns with the same load on a Fleet without trip detection; medians of the rounds.`,
);
print('Server CPU: the serving process (both Fleets live in it; one is loaded at a time), in cores.');

if (cases.has('sqlite-single') || cases.has('sqlite-batch')) {
  const databases = tempDatabases();
  const plain = await startBenchFleet(createSqliteStores(databases.file()), VEHICLES, () => ({ FLEET_TRIP_EVENTS: 'false' }));
  const trackedFile = databases.file();
  const tracked = await startBenchFleet(createSqliteStores(trackedFile), VEHICLES);
  await compare('sqlite', plain, tracked, async () => {
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(trackedFile, { readOnly: true });
    const n = Number(db.prepare('SELECT count(*) AS n FROM vehicle_rule_state WHERE trip IS NOT NULL').get()!.n);
    db.close();
    return n;
  });
  for (const fleet of [plain, tracked]) {
    await fleet.app.close();
    await fleet.stores.close();
  }
  databases.removeAll();
}

if (cases.has('postgres-single') || cases.has('postgres-batch')) {
  const admin = await connectAdmin(url);
  if (admin !== undefined) {
    const schemas: string[] = [];
    const open = async (label: string): Promise<Stores> => {
      const schema = `fleet_bench_trips_${label}_${process.pid}`;
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
      schemas.push(schema);
      return createPostgresStores({ url, poolSize: 10, schema, keepDays: 30 });
    };
    const plain = await startBenchFleet(await open('plain'), VEHICLES, () => ({ FLEET_TRIP_EVENTS: 'false' }));
    const tracked = await startBenchFleet(await open('tracked'), VEHICLES);
    await compare('postgres', plain, tracked, async () =>
      Number((await admin.query(`SELECT count(*) AS n FROM ${schemas[1]}.vehicle_rule_state WHERE trip IS NOT NULL`)).rows[0].n));
    for (const fleet of [plain, tracked]) {
      await fleet.app.close();
      await fleet.stores.close();
    }
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
}

if (cases.has('sqlite-store')) {
  const databases = tempDatabases();
  print();
  print('### SQLite store commits, called directly: CPU per record');
  print();
  print('| requests per commit × records per request | without trips, µs per record | with trips, µs per record | with / without (rounds) |');
  print('|---|---|---|---|');
  const start = Date.now() - 26 * 86_400_000; // a day before the HTTP runs' ranges (runPlans)
  for (const per of [1, 100]) {
    const sides = [];
    for (const trips of [false, true]) {
      const stores = createSqliteStores(databases.file());
      const fleet = await startBenchFleet(stores, VEHICLES);
      const engine = createRuleEngine({ store: stores.rules, trips });
      await engine.prepare(fleet.organizationId);
      sides.push({ stores, fleet, engine, commits: 0, cpu: [] as number[] });
    }
    for (let round = 0; round <= ROUNDS; round++) {
      for (const side of sides) {
        const cpu = process.cpuUsage();
        for (let c = 0; c < 100; c++, side.commits++) {
          const batches: CommitBatch[] = VEHICLES.map((vehicleId, v) => ({
            organizationId: side.fleet.organizationId, at: Date.now(),
            records: Array.from({ length: per }, (_, i) => {
              const n = side.commits * per + i;
              return { vehicleId, timestamp: start + n * 1000, data: JSON.parse(trackDataText(v, n)) as CommitBatch['records'][number]['data'] };
            }),
          }));
          const outcomes = await side.stores.telemetry.commit(batches, mergeLatest, side.engine.commitRules);
          if (outcomes.some((o) => !o.ok || o.accepted !== per)) throw new Error('a commit did not store every record');
        }
        const used = process.cpuUsage(cpu);
        if (round > 0) side.cpu.push((used.user + used.system) / (100 * VEHICLES.length * per)); // the first round warms up
      }
    }
    const [off, on] = sides as [typeof sides[0], typeof sides[0]];
    const ratios = on.cpu.map((c, i) => c / off.cpu[i]!);
    const line = `SQLite store commits of ${VEHICLES.length} × ${per} record${per === 1 ? '' : 's'}, CPU per record with trip detection / without: ` +
      `**${(median(on.cpu) / median(off.cpu)).toFixed(2)} ×** (${median(off.cpu).toFixed(1)} → ${median(on.cpu).toFixed(1)} µs).`;
    print(`| ${VEHICLES.length} × ${per} | ${median(off.cpu).toFixed(1)} | ${median(on.cpu).toFixed(1)} | ${(median(on.cpu) / median(off.cpu)).toFixed(2)} × (${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}) |`);
    lines.push(line);
    for (const side of sides) {
      await side.fleet.app.close();
      await side.stores.close();
    }
  }
  databases.removeAll();
}

print();
for (const line of lines) print(line);
