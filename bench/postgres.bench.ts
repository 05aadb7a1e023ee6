// Batched telemetry ingest on PostgreSQL through the whole stack, against a baseline measured in
// the same run from this same process: the same rows inserted raw, 1000 per multi-row
// INSERT ... SELECT FROM unnest(...) ON CONFLICT DO NOTHING (the statement the store uses), into
// an identical schema (same partitions and indexes): a loop on one connection (the baseline, as
// the SQLite benchmark's), and the same on 8 connections at once (what the server takes at most).
//
// PostgreSQL from FLEET_BENCH_DATABASE_URL (default: FLEET_TEST_DATABASE_URL, else the local
// server); skipped with a message when it cannot be reached. Each side gets its own fresh schema,
// dropped at the end. BENCH_SECONDS sets each case's length (default 5).
import { cpus, release } from 'node:os';
import pg from 'pg';
import { createPostgresStores } from '../src/storage/postgres/index.ts';
import { BENCH_DATABASE_URL, connectAdmin, loadVarying, ms, startBenchFleet } from './lib.ts';
import type { LoadOutcome, LoadSpec } from './load.ts';
import { dataText, type Plan, timestampOf, vehicleOf } from './rows.ts';

const url = BENCH_DATABASE_URL;
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const warmupSeconds = 1;
const BATCH = 1000;
const CONNECTIONS = 8;
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
const RANGE = 100_000_000;
const INSERT = `INSERT INTO telemetry (organization_id, vehicle_id, ts, data)
  SELECT $1, v, t, d FROM unnest($2::text[], $3::bigint[], $4::json[]) AS r (v, t, d) ON CONFLICT DO NOTHING`;

// Every run writes its own range of timestamps (unique records), within the last 25 days: inside
// the partitions made for the default 30-day retention, as live traffic would be.
const base = Date.now() - 25 * 86_400_000;
let runs = 0;
const plan = (size: number): Plan => ({ vehicles: VEHICLES, size, start: base + runs++ * RANGE });

const admin = await connectAdmin(url) ?? process.exit(0);
const schemas: string[] = [];
async function freshSchema(label: string): Promise<string> {
  const name = `fleet_bench_${label}_${process.pid}`;
  await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE; CREATE SCHEMA ${name}`);
  schemas.push(name);
  return name;
}
const countRows = async (schema: string, rows: Plan) =>
  Number((await admin.query(`SELECT count(*) AS n FROM ${schema}.telemetry WHERE ts >= $1 AND ts < $2`, [rows.start, rows.start + RANGE])).rows[0].n);

/** The baseline: request k's rows, as Fleet would store them, inserted raw by `lanes` loops at once. */
async function rawInserts(schema: string, organizationId: string, rows: Plan, forSeconds: number, lanes: number) {
  const pool = new pg.Pool({ connectionString: url, max: lanes, options: `-c search_path=${schema}` });
  let next = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const lane = async () => {
    while (performance.now() - started < forSeconds * 1000) {
      const k = next++;
      const ids = new Array<string>(rows.size).fill(vehicleOf(rows, k));
      const times = Array.from({ length: rows.size }, (_, i) => timestampOf(rows, k, i));
      const data = Array.from({ length: rows.size }, (_, i) => dataText(k * rows.size + i));
      await pool.query({ name: 'raw-insert', text: INSERT, values: [organizationId, ids, times, data] });
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await pool.end();
  const stored = await countRows(schema, rows);
  if (stored !== next * rows.size) throw new Error(`raw inserts: ${stored} rows stored of ${next * rows.size}`);
  return { rate: stored / elapsed, cpu: (used.user + used.system) / 1e6 / elapsed };
}

/** Fleet on PostgreSQL with VEHICLES registered, listening on a free port. */
async function startFleet(schema: string) {
  return startBenchFleet(await createPostgresStores({ url, poolSize: 10, schema, keepDays: 30 }), VEHICLES);
}

type Measured = LoadOutcome & { rows: Plan; serverCpu: number };

/** A warm-up run, then the measured one, each with fresh timestamps; fails on any non-2xx. */
async function measured(spec: LoadSpec & { body: NonNullable<LoadSpec['body']> }): Promise<Measured> {
  await loadVarying({ ...spec, body: { ...spec.body, ...plan(BATCH) }, seconds: warmupSeconds });
  const rows = plan(BATCH);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await loadVarying({ ...spec, body: { ...spec.body, ...rows } });
  const used = process.cpuUsage(cpu);
  if (result.non2xx + result.errors > 0) throw new Error(`${spec.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { ...result, rows, serverCpu: (used.user + used.system) / 1000 / (performance.now() - started) };
}

const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
const server = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]!;

const rawSchema = await freshSchema('raw');
const raw = await startFleet(rawSchema); // the same schema, organization and vehicles, then closed
await raw.app.close();
await raw.stores.close();
await rawInserts(rawSchema, raw.organizationId, plan(BATCH), warmupSeconds, 1);
const loop = await rawInserts(rawSchema, raw.organizationId, plan(BATCH), seconds, 1);
const parallel = await rawInserts(rawSchema, raw.organizationId, plan(BATCH), seconds, CONNECTIONS);

const fleetSchema = await freshSchema('fleet');
const fleet = await startFleet(fleetSchema);
const ingest = await measured({
  name: 'Fleet: POST /v2/telemetry/{id}, {records: 1000}',
  url: fleet.url, method: 'POST', path: '/v2/telemetry/{vehicle}', headers: fleet.headers,
  connections: CONNECTIONS, seconds, body: { kind: 'records', ...plan(BATCH) },
});
// Every acknowledged record is stored, and none was a duplicate.
const stored = await countRows(fleetSchema, ingest.rows);
if (stored < ingest.responses * BATCH || stored > (ingest.responses + CONNECTIONS) * BATCH) {
  throw new Error(`batched ingest: ${stored} rows stored for ${ingest.responses} acknowledged requests`);
}
const fleetRate = (ingest.responses * BATCH) / ingest.seconds;

console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}; PostgreSQL ${server.server_version} on the same machine; ` +
  `${seconds} s per case after ${warmupSeconds} s of warm-up.`);
console.log('CPU: this process (Fleet, or the raw loop), in cores; the database server\'s own CPU is not counted.');
console.log();
console.log(`### Batched ingest into PostgreSQL: 1000 records per request, ${CONNECTIONS} connections`);
console.log();
console.log('| case | records/s | requests/s | p50 ms | p99 ms | process CPU |');
console.log('|---|---|---|---|---|---|');
console.log(`| raw unnest insert, same rows, 1000 per statement, one connection (baseline) | ${Math.round(loop.rate)} | ${(loop.rate / BATCH).toFixed(1)} | | | ${pct(loop.cpu)} |`);
console.log(`| raw unnest insert, same rows, ${CONNECTIONS} connections at once | ${Math.round(parallel.rate)} | ${(parallel.rate / BATCH).toFixed(1)} | | | ${pct(parallel.cpu)} |`);
console.log(`| ${ingest.name} | ${Math.round(fleetRate)} | ${ingest.rps.toFixed(1)} | ${ms(ingest.p50)} | ${ms(ingest.p99)} | ${pct(ingest.serverCpu)} |`);
console.log();
const ratio = fleetRate / loop.rate;
console.log(`Fleet batched ingest / raw insert loop: **${ratio.toFixed(2)} ×** (goal ≥ 0.5 ×: ${ratio >= 0.5 ? '**met**' : '**not met**'}); ` +
  `/ ${CONNECTIONS} raw connections: ${(fleetRate / parallel.rate).toFixed(2)} ×; ${stored} rows stored for ${ingest.responses} acknowledged requests of 1000, no duplicates.`);

await fleet.app.close();
await fleet.stores.close();
for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await admin.end();
