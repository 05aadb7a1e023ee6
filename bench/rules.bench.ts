// Telemetry ingest with geofences and alert rules, against the same ingest without any, measured
// in the same run: one Fleet on the embedded store with 10,000 geofences in its organization
// (half circles, half 50-vertex polygons, 50 to 300 m across, over 30 km × 30 km around
// 52.52, 13.40) and 10 threshold rules, and one Fleet with none, on stores of their own. Both
// take the load of bench/telemetry.bench.ts: single-record requests over 100 connections, and
// requests of 1000 records over 8, every record located in that area with speed, heading,
// battery, temperature and odometer, so every record is judged. The goals are single-record
// ingest ≥ 0.85 × and batched ingest ≥ 0.8 × the requests per second without rules, with records
// along tracks (bench/rows.ts trackBody: 12 m apart, as vehicles drive). The same cases are also
// run with telemetry.bench.ts's own records ("jumps"), whose vehicles leap 0.1 to 0.8 km between
// records and so cross geofence edges on a large share of them: a worst case, without a goal.
//
// The two Fleets take turns for BENCH_ROUNDS rounds (default 5) of BENCH_SECONDS (default 3)
// after a warm-up, and the medians are reported: the machine may be shared and noisy.
// BENCH_CASES picks from single,batch,single-jumps,batch-jumps (to profile one:
// BENCH_CASES=single node --cpu-prof bench/rules.bench.ts).
import { cpus, release } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { ms, runPlans, startBenchFleet, tempDatabases, turnTaking } from './lib.ts';
import type { LoadSpec } from './load.ts';
import { cityGeofence, seeded } from './city.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const warmupSeconds = 1;
const cases = new Set((process.env.BENCH_CASES ?? 'single,batch,single-jumps,batch-jumps').split(','));
const GEOFENCES = 10_000;
const BATCH = 1000;
const BATCH_CONNECTIONS = 8;
const SINGLE_CONNECTIONS = 100;
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
const RANGE = 10_000_000;


// Fixed geofences whatever the run: a generator from a constant seed.
const random = seeded(7);
const geometry = (i: number) => cityGeofence(i, random, 25, 125);

/** Rules of the kinds a fleet keeps; some fire now and then on the benchmark's records. */
const RULES = [
  { name: 'Speeding', condition: { kind: 'threshold', field: 'speed', op: '>', value: 85, forSeconds: 0 } },
  { name: 'Fast for a minute', condition: { kind: 'threshold', field: 'speed', op: '>=', value: 80, forSeconds: 60 } },
  { name: 'Battery low', condition: { kind: 'threshold', field: 'battery', op: '<', value: 25, forSeconds: 0 } },
  { name: 'Battery critical', condition: { kind: 'threshold', field: 'battery', op: '<', value: 22, forSeconds: 300 } },
  { name: 'Hot', condition: { kind: 'threshold', field: 'temperature', op: '>', value: 24, forSeconds: 0 } },
  { name: 'Cold', condition: { kind: 'threshold', field: 'temperature', op: '<', value: 15.5, forSeconds: 120 } },
  { name: 'Heading north', condition: { kind: 'threshold', field: 'heading', op: '==', value: 0, forSeconds: 0 } },
  { name: 'Service due', condition: { kind: 'threshold', field: 'odometer', op: '>', value: 12_240, forSeconds: 0 } },
  { name: 'Catalyst', condition: { kind: 'threshold', field: 'diagnostics.dtc', op: '==', value: 'P0420', forSeconds: 0 } },
  { name: 'Tyres', condition: { kind: 'threshold', field: 'diagnostics.tirePressureLow', op: '==', value: true, forSeconds: 0 } },
];

const plan = runPlans(VEHICLES, RANGE);
const { interleaved, summary } = turnTaking({ seconds, rounds: ROUNDS, warmupSeconds, plan });

const databases = tempDatabases();
const tempFile = () => databases.file();

const plainFile = tempFile();
const ruledFile = tempFile();
const plain = await startBenchFleet(createSqliteStores(plainFile), VEHICLES);
const ruled = await startBenchFleet(createSqliteStores(ruledFile), VEHICLES);
const setupStarted = performance.now();
for (let i = 0; i < GEOFENCES; i++) {
  const res = await ruled.app.inject({ method: 'POST', url: '/v2/geofences', headers: ruled.headers, payload: { name: `site-${i}`, geometry: geometry(i) } });
  if (res.statusCode !== 201) throw new Error(res.body);
}
for (const rule of RULES) {
  const res = await ruled.app.inject({ method: 'POST', url: '/v2/alert-rules', headers: ruled.headers, payload: rule });
  if (res.statusCode !== 201) throw new Error(res.body);
}
const setupSeconds = (performance.now() - setupStarted) / 1000;




/** What the judging wrote: events by type, per record stored (so the rules were not idle). */
function judged(): { records: number; events: Record<string, number> } {
  const db = new DatabaseSync(ruledFile, { readOnly: true });
  const records = Number(db.prepare('SELECT (SELECT count(*) FROM telemetry) + (SELECT count(*) FROM telemetry_recent) AS n').get()!.n);
  const events = Object.fromEntries(db.prepare("SELECT type, count(*) AS n FROM events WHERE type LIKE 'geofence.%' OR type LIKE 'alert.%' GROUP BY type").all()
    .map((row) => [row.type as string, Number(row.n)]));
  db.close();
  return { records, events };
}

const print = (line = '') => console.log(line);
const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
const verdict = (ok: boolean) => (ok ? '**met**' : '**not met**');

print(
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}. ` +
    `Each case: ${warmupSeconds} s of warm-up, then ${ROUNDS} rounds of ${seconds} s taking turns with the same load on a Fleet without rules; medians of the rounds.`,
);
print(`Setup: ${GEOFENCES} geofences and ${RULES.length} threshold rules created through the API in ${setupSeconds.toFixed(1)} s.`);
print('Server CPU: the serving process (both Fleets live in it; one is loaded at a time), in cores.');

const goals: string[] = [];
for (const [name, kind, size, connections, goal] of [
  ['single', 'track', 1, SINGLE_CONNECTIONS, 0.85],
  ['batch', 'track', BATCH, BATCH_CONNECTIONS, 0.8],
  ['single-jumps', 'single', 1, SINGLE_CONNECTIONS, undefined],
  ['batch-jumps', 'records', BATCH, BATCH_CONNECTIONS, undefined],
] as const) {
  if (!cases.has(name)) continue;
  const spec = (fleet: typeof plain, label: string): LoadSpec => ({
    name: label, url: fleet.url, method: 'POST', path: '/v2/telemetry/{vehicle}', headers: fleet.headers, connections, seconds,
    body: { kind, ...plan(size) },
  });
  const before = judged();
  const [withouts, withs] = await interleaved([
    spec(plain, `no geofences or rules (baseline), ${size === 1 ? 'one record' : `${BATCH} records`} per request`),
    spec(ruled, `${GEOFENCES} geofences + ${RULES.length} threshold rules`),
  ]);
  const after = judged();
  const without = summary(withouts!);
  const withRules = summary(withs!);
  const ratio = withRules.rps / without.rps;
  const records = after.records - before.records;
  const eventsPer1000 = (type: string) => (((after.events[type] ?? 0) - (before.events[type] ?? 0)) * 1000) / records;
  print();
  const data = kind === 'track' ? 'records along tracks' : 'records leaping 0.1 to 0.8 km (worst case)';
  print(`### ${size === 1 ? `Single-record ingest, ${SINGLE_CONNECTIONS} connections` : `Batched ingest: ${BATCH} records per request, ${BATCH_CONNECTIONS} connections`}; ${data}`);
  print();
  print('| case | records/s | requests/s | p50 ms | p99 ms | server CPU | load generator CPU |');
  print('|---|---|---|---|---|---|---|');
  for (const r of [without, withRules]) {
    print(`| ${r.name} | ${Math.round(r.rps * size)} | ${r.rps.toFixed(1)} | ${ms(r.p50)} | ${ms(r.p99)} | ${pct(r.serverCpu)} | ${pct(r.loadCpu)} |`);
  }
  const ratios = withs!.map((r, i) => r.rps / withouts![i]!.rps);
  print();
  print(`Events written per 1000 records judged: ${['geofence.entered', 'geofence.exited', 'alert.opened', 'alert.resolved'].map((t) => `${t} ${eventsPer1000(t).toFixed(1)}`).join(', ')}.`);
  const line = `${size === 1 ? 'Single-record' : 'Batched'} ingest, ${data}, with rules / without: **${ratio.toFixed(2)} ×** ` +
    `(rounds: ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}` +
    `${goal === undefined ? '; no goal' : `; goal ≥ ${goal} ×: ${verdict(ratio >= goal)}`}).`;
  print(line);
  goals.push(line);
}

print();
for (const line of goals) print(line);
for (const fleet of [plain, ruled]) {
  await fleet.app.close();
  await fleet.stores.close();
}
databases.removeAll();
