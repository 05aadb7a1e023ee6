// Summary reports, in two parts.
//
// Ingest: telemetry with the summary rollups, the vehicles' meters and driver identification (each
// record adding its step to its hour's and day's rollups, advancing the odometer and engine hours
// in the commit, and naming its driver by iButton for half the vehicles) against the same ingest
// without them, measured in the same run. Both sides detect trips live (the default), so their
// rule state is read and written either way: the difference is what the rollups, the meters and
// the identification add to it. Maintenance adds nothing here: its check runs beside the commits,
// once a minute (maintenance/check.ts).
//
// The store's commits are called directly (no HTTP, no load generator, so less at the mercy of a
// busy machine): each commit holds 100 requests of one vehicle each, of 1 record (as single-record
// ingest groups them) or of 100. SQLite: the CPU time per record of this process (the store runs
// in it). PostgreSQL (FLEET_BENCH_DATABASE_URL, else FLEET_TEST_DATABASE_URL, else the local
// server): the wall time per record, the database being another process. The two sides take
// turns for BENCH_ROUNDS rounds (default 5) of 400 single-record commits or 50 of 100 records
// after a warm-up round; medians.
//
// Summaries (embedded store): a year of rollups for 10,000 vehicles (written straight into the
// tables: a year of their records cannot be made here), summed by vehicle in UTC and in
// Europe/Berlin (whole days plus the hours at both ends); and, on a fleet whose records went through
// the commit (20 vehicles, 14 days, a record a minute), the same rows from the rollups and computed
// from history (reports/summary.ts `fromHistory`), in the same run: the ratio.
import { cpus, release } from 'node:os';
import { createRuleEngine } from '../src/rules/engine.ts';
import { createPostgresStores } from '../src/storage/postgres/index.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { CommitBatch } from '../src/telemetry/store.ts';
import { BENCH_DATABASE_URL, connectAdmin, median, startBenchFleet, tempDatabases } from './lib.ts';
import { trackDataText } from './rows.ts';
import { summaryBench } from './summary-sample.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** BENCH_CASES=sqlite,postgres,summaries picks parts (all by default). */
const parts = new Set((process.env.BENCH_CASES ?? 'sqlite,postgres,summaries').split(','));
/**
 * Commits per round: 50 of 100 records a request, 400 of one (a round of 50 single-record commits
 * lasted about 0.1 s on SQLite, and one collection or checkpoint in it swung its ratio from 0.55
 * to 1.12).
 */
const commitsOf = (per: number) => (per === 1 ? 400 : 50);
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
const url = BENCH_DATABASE_URL;
const print = (line = '') => console.log(line);
const lines: string[] = [];

/** Half the vehicles read their driver's iButton; every record says whether the engine runs. */
const iButtonOf = (v: number) => (v % 2 === 0 ? `00000000${String(v).padStart(8, '0')}` : undefined);

function dataOf(v: number, n: number): CommitBatch['records'][number]['data'] {
  const data = JSON.parse(trackDataText(v, n)) as CommitBatch['records'][number]['data'];
  data.ignition = n % 10 !== 0;
  const iButton = iButtonOf(v);
  if (iButton !== undefined) data.driverIdentifier = iButton;
  return data;
}

interface Side {
  stores: Stores;
  fleet: Awaited<ReturnType<typeof startBenchFleet>>;
  engine: ReturnType<typeof createRuleEngine>;
  commits: number;
  cost: number[];
}

async function side(stores: Stores, meters: boolean): Promise<Side> {
  const fleet = await startBenchFleet(stores, VEHICLES);
  for (const [v] of VEHICLES.entries()) {
    const value = iButtonOf(v);
    if (value === undefined) continue;
    const res = await fleet.app.inject({ method: 'POST', url: '/v2/drivers', headers: fleet.headers, payload: { name: `Driver ${v}`, identifiers: [{ kind: 'ibutton', value }] } });
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  const engine = createRuleEngine({ store: stores.rules, trips: true, meters });
  await engine.prepare(fleet.organizationId);
  return { stores, fleet, engine, commits: 0, cost: [] };
}

/** Both sides in turns; the cost per record of each round: CPU (this process) or wall time, µs. */
async function compare(label: string, off: Side, on: Side, per: number, measure: 'cpu' | 'wall') {
  const start = Date.now() - 20 * 86_400_000;
  for (let round = 0; round <= ROUNDS; round++) {
    for (const s of [off, on]) {
      const cpu = process.cpuUsage();
      const wall = performance.now();
      for (let c = 0; c < commitsOf(per); c++, s.commits++) {
        const batches: CommitBatch[] = VEHICLES.map((vehicleId, v) => ({
          organizationId: s.fleet.organizationId, at: Date.now(),
          records: Array.from({ length: per }, (_, i) => {
            const n = s.commits * per + i;
            return { vehicleId, timestamp: start + n * 1000, data: dataOf(v, n) };
          }),
        }));
        const outcomes = await s.stores.telemetry.commit(batches, mergeLatest, s.engine.commitRules);
        if (outcomes.some((o) => !o.ok || o.accepted !== per)) throw new Error('a commit did not store every record');
      }
      const used = process.cpuUsage(cpu);
      const records = commitsOf(per) * VEHICLES.length * per;
      const cost = measure === 'cpu' ? (used.user + used.system) / records : ((performance.now() - wall) * 1000) / records;
      if (round > 0) s.cost.push(cost); // the first round warms up
    }
  }
  const ratios = on.cost.map((c, i) => off.cost[i]! / c);
  const speed = median(off.cost) / median(on.cost);
  const what = measure === 'cpu' ? 'CPU' : 'wall time';
  print(`| ${label} | ${VEHICLES.length} × ${per} | ${median(off.cost).toFixed(1)} | ${median(on.cost).toFixed(1)} | ` +
    `**${speed.toFixed(2)} ×** (${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}) |`);
  lines.push(`${label} commits of ${VEHICLES.length} × ${per} record${per === 1 ? '' : 's'}: ingest with rollups, meters and driver identification at ` +
    `**${speed.toFixed(2)} ×** the rate without (${what} per record ${median(off.cost).toFixed(1)} → ${median(on.cost).toFixed(1)} µs).`);
  off.cost = [];
  on.cost = [];
}

print(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}. ` +
  `${ROUNDS} rounds of ${commitsOf(1)} commits (of single records) or ${commitsOf(100)} (of 100) per side after a warm-up round, taking turns; medians.`);
print();
print('| store | requests per commit × records per request | without, µs per record | with, µs per record | rate with / without (rounds) |');
print('|---|---|---|---|---|');

if (parts.has('sqlite')) {
  const databases = tempDatabases();
  for (const per of [1, 100]) {
    const off = await side(createSqliteStores(databases.file()), false);
    const on = await side(createSqliteStores(databases.file()), true);
    await compare('SQLite (CPU)', off, on, per, 'cpu');
    for (const s of [off, on]) {
      await s.fleet.app.close();
      await s.stores.close();
    }
  }
  databases.removeAll();
}

const admin = parts.has('postgres') ? await connectAdmin(url) : undefined;
if (admin !== undefined) {
  for (const per of [1, 100]) {
    const schemas: string[] = [];
    const open = async (label: string): Promise<Stores> => {
      const schema = `fleet_bench_meters_${label}_${per}_${process.pid}`;
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
      schemas.push(schema);
      return createPostgresStores({ url, poolSize: 10, schema, keepDays: 30 });
    };
    const off = await side(await open('off'), false);
    const on = await side(await open('on'), true);
    await compare('PostgreSQL (wall)', off, on, per, 'wall');
    for (const s of [off, on]) {
      await s.fleet.app.close();
      await s.stores.close();
    }
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
  await admin.end();
}

print();
for (const line of lines) print(line);
print();
if (parts.has('summaries')) await summaryBench(print);
