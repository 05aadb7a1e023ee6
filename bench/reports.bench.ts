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
// Each side is a process of its own (bench/reports-side.ts), as a deployed Fleet runs one
// configuration. The store's commits are called directly (no HTTP, no load generator, so less at
// the mercy of a busy machine): each commit holds 100 requests of one vehicle each, of 1 record (as
// single-record ingest groups them) or of 100. SQLite: the CPU time per record of the side's
// process (the store runs in it). PostgreSQL (FLEET_BENCH_DATABASE_URL, else FLEET_TEST_DATABASE_URL, else the local
// server): the wall time per record, the database being another process. The two sides take
// turns for BENCH_ROUNDS rounds (default 5) of 400 single-record commits or 50 of 100 records
// after a warm-up round; medians.
//
// Summaries (embedded store): a year of rollups for 10,000 vehicles (written straight into the
// tables: a year of their records cannot be made here), summed by vehicle in UTC and in
// Europe/Berlin (whole days plus the hours at both ends); and, on a fleet whose records went through
// the commit (20 vehicles, 14 days, a record a minute), the same rows from the rollups and computed
// from history (reports/summary.ts `fromHistory`), in the same run: the ratio.
import { fork } from 'node:child_process';
import { cpus, release } from 'node:os';
import { BENCH_DATABASE_URL, connectAdmin, median, nextMessage, tempDatabases } from './lib.ts';
import type { ReportsSideCost, ReportsSideSpec } from './reports-side.ts';
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
const VEHICLE_COUNT = 100;
const url = BENCH_DATABASE_URL;
const print = (line = '') => console.log(line);
const lines: string[] = [];

interface Side {
  child: ReturnType<typeof fork>;
  cost: number[];
}

/** A side's process (bench/reports-side.ts), once it is ready. */
async function side(spec: ReportsSideSpec): Promise<Side> {
  const child = fork(new URL('./reports-side.ts', import.meta.url), [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await nextMessage(child, 'a side');
  return { child, cost: [] };
}

/** One round of `commits` commits on `s`: its cost per record, µs. */
async function round(s: Side, commits: number): Promise<number> {
  const reply = nextMessage<ReportsSideCost>(s.child, 'a side');
  s.child.send({ commits });
  return (await reply).cost;
}

/** Both sides in turns; the cost per record of each round: CPU (of the side's process) or wall time, µs. */
async function compare(label: string, specs: (meters: boolean) => ReportsSideSpec, per: number, measure: 'cpu' | 'wall') {
  const off = await side(specs(false));
  const on = await side(specs(true));
  try {
    for (let r = 0; r <= ROUNDS; r++) {
      for (const s of [off, on]) {
        const cost = await round(s, commitsOf(per));
        if (r > 0) s.cost.push(cost); // the first round warms up
      }
    }
  } finally {
    for (const s of [off, on]) {
      const exited = new Promise((resolve) => s.child.once('exit', resolve));
      s.child.disconnect();
      await exited;
    }
  }
  const ratios = on.cost.map((c, i) => off.cost[i]! / c);
  const speed = median(off.cost) / median(on.cost);
  const what = measure === 'cpu' ? 'CPU' : 'wall time';
  print(`| ${label} | ${VEHICLE_COUNT} × ${per} | ${median(off.cost).toFixed(1)} | ${median(on.cost).toFixed(1)} | ` +
    `**${speed.toFixed(2)} ×** (${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}) |`);
  lines.push(`${label} commits of ${VEHICLE_COUNT} × ${per} record${per === 1 ? '' : 's'}: ingest with rollups, meters and driver identification at ` +
    `**${speed.toFixed(2)} ×** the rate without (${what} per record ${median(off.cost).toFixed(1)} → ${median(on.cost).toFixed(1)} µs).`);
}

print(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}. ` +
  `${ROUNDS} rounds of ${commitsOf(1)} commits (of single records) or ${commitsOf(100)} (of 100) per side after a warm-up round, taking turns; medians.`);
print();
print('| store | requests per commit × records per request | without, µs per record | with, µs per record | rate with / without (rounds) |');
print('|---|---|---|---|---|');

if (parts.has('sqlite')) {
  const databases = tempDatabases();
  for (const per of [1, 100]) await compare('SQLite (CPU)', (meters) => ({ meters, per, file: databases.file() }), per, 'cpu');
  databases.removeAll();
}

const admin = parts.has('postgres') ? await connectAdmin(url) : undefined;
if (admin !== undefined) {
  for (const per of [1, 100]) {
    const schemas = [false, true].map((meters) => `fleet_bench_meters_${meters ? 'on' : 'off'}_${per}_${process.pid}`);
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    await compare('PostgreSQL (wall)', (meters) => ({ meters, per, url, schema: schemas[meters ? 1 : 0]! }), per, 'wall');
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
  await admin.end();
}

print();
for (const line of lines) print(line);
print();
if (parts.has('summaries')) await summaryBench(print);
