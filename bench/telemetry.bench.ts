// Telemetry ingest and reads through the whole stack, each against a baseline measured in the
// same run: batched ingest vs a raw node:sqlite insert loop of the same rows (same pragmas, same
// rows per transaction); single-record ingest vs a bare Fastify route that parses the same body;
// GET latest vs a bare Fastify route serializing the same record through a response schema, in
// throughput and in p99 latency at one fixed rate. Load comes from bench/load.ts in its own process.
//
// Each case and its baseline take turns for BENCH_ROUNDS rounds (default 5) of BENCH_SECONDS
// (default 3) after a warm-up, and the medians are reported: the machine may be shared and noisy.
// BENCH_CASES=batch,single,latest picks cases (to profile one: BENCH_CASES=single node --cpu-prof
// bench/telemetry.bench.ts).
import type { AddressInfo } from 'node:net';
import { cpus, release } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import Fastify, { type FastifyInstance } from 'fastify';
import { openSqlite } from '../src/storage/sqlite/database.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { inlineNamed } from '../src/schema/named.ts';
import { TelemetryRecord } from '../src/telemetry/schema.ts';
import { loadVarying, median, ms, runPlans, startBenchFleet, tempDatabases } from './lib.ts';
import type { LoadOutcome, LoadSpec } from './load.ts';
import { dataText, type Plan, singleBody, timestampOf, vehicleOf } from './rows.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const warmupSeconds = 1;
const cases = new Set((process.env.BENCH_CASES ?? 'batch,single,latest').split(','));
const BATCH = 1000;
const BATCH_CONNECTIONS = 8;
const SINGLE_CONNECTIONS = 100;
const READ_CONNECTIONS = 50;
const LATENCY_CONNECTIONS = 10;
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
// Timestamps each run may use: 10^7 ms (2.8 h) holds a run of 10,000 batched requests or 10
// million single-record ones.
const RANGE = 10_000_000;

const plan = runPlans(VEHICLES, RANGE);

const databases = tempDatabases();
const tempFile = () => databases.file();

function urlOf(app: FastifyInstance): string {
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** Fleet on its own store with VEHICLES registered, listening on a free port. */
async function startFleet(file: string) {
  return startBenchFleet(createSqliteStores(file), VEHICLES);
}

function countRows(db: DatabaseSync, rows: Plan): number {
  return Number(db.prepare('SELECT count(*) AS n FROM telemetry WHERE ts >= ? AND ts < ?').get(rows.start, rows.start + RANGE)!.n);
}

/** The baseline for batched ingest: the same rows, inserted by a bare loop, 1000 per transaction. */
function rawInsertLoop(file: string, organizationId: string, rows: Plan, forSeconds: number) {
  const db = openSqlite(file);
  // The statement the store uses, and data as the JSON text the store would write.
  const insert = db.prepare('INSERT INTO telemetry (organization_id, vehicle_id, ts, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
  const cpu = process.cpuUsage();
  const started = performance.now();
  let k = 0;
  while (performance.now() - started < forSeconds * 1000) {
    const vehicleId = vehicleOf(rows, k);
    db.exec('BEGIN IMMEDIATE');
    for (let i = 0; i < rows.size; i++) insert.run(organizationId, vehicleId, timestampOf(rows, k, i), dataText(k * rows.size + i));
    db.exec('COMMIT');
    k++;
  }
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const stored = countRows(db, rows);
  db.close();
  if (stored !== k * rows.size) throw new Error(`raw loop: ${stored} rows stored of ${k * rows.size}`);
  return { rate: stored / elapsed, cpu: (used.user + used.system) / 1e6 / elapsed };
}

type Measured = LoadOutcome & { rows: Plan | undefined; serverCpu: number };

/**
 * One measured run with fresh timestamps; fails on any non-2xx. The server's CPU is this
 * process's while the load runs (it serves, and otherwise only waits).
 */
async function once(spec: LoadSpec, forSeconds = seconds): Promise<Measured> {
  const body = spec.body === undefined ? {} : { body: { ...spec.body, ...plan(spec.body.size) } };
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await loadVarying({ ...spec, ...body, seconds: forSeconds });
  const used = process.cpuUsage(cpu);
  if (result.non2xx + result.errors > 0) throw new Error(`${spec.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { ...result, rows: body.body, serverCpu: (used.user + used.system) / 1000 / (performance.now() - started) };
}

/** Each case's rounds summed up: the median of each figure. */
function summary(name: string, results: Measured[]): Measured {
  const pick = (f: (r: Measured) => number) => median(results.map(f));
  return {
    ...results[0]!, name,
    rps: pick((r) => r.rps), p50: pick((r) => r.p50), p99: pick((r) => r.p99), serverCpu: pick((r) => r.serverCpu), loadCpu: pick((r) => r.loadCpu),
  };
}

/**
 * A warm-up of each case, then ROUNDS rounds in which the cases take turns, so a slow spell of a
 * shared machine falls on all of them rather than on one.
 */
async function interleaved<T>(cases: Array<(forSeconds: number) => Promise<T>>): Promise<T[][]> {
  for (const run of cases) await run(warmupSeconds);
  const results: T[][] = cases.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, run] of cases.entries()) results[i]!.push(await run(seconds));
  }
  return results;
}

const print = (line = '') => console.log(line);
const verdict = (ok: boolean) => (ok ? '**met**' : '**not met**');
const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
const range = (ratios: number[]) => `${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}`;
const HEAD = '| case | req/s | p50 ms | p99 ms | server CPU | load generator CPU |\n|---|---|---|---|---|---|';
const line = (r: Measured) => `| ${r.name} | ${Math.round(r.rps)} | ${ms(r.p50)} | ${ms(r.p99)} | ${pct(r.serverCpu)} | ${pct(r.loadCpu)} |`;

const fleetFile = tempFile();
const fleet = await startFleet(fleetFile);
const bare = Fastify({ bodyLimit: 1024 * 1024 });
bare.post('/sink/:vehicleId', async (request, reply) => reply.code(202).send({ accepted: (request.body as { records: unknown[] }).records.length, duplicates: 0 }));
bare.post('/v2/telemetry/:vehicleId', async (_request, reply) => reply.code(204).send());
let latestSample: unknown;
// The same schema Fleet's serializer compiles: its named parts written out in place.
bare.get('/latest', { schema: { response: { 200: inlineNamed(TelemetryRecord) } } }, async () => latestSample);
await bare.listen({ host: '127.0.0.1', port: 0 });
const bareUrl = urlOf(bare);

print(
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}. ` +
    `Each case: ${warmupSeconds} s of warm-up, then ${ROUNDS} rounds of ${seconds} s taking turns with its baseline; medians of the rounds.`,
);
print('Server CPU: the serving process, in cores; load generator CPU: the autocannon process (near 100 % would make it the bottleneck).');

if (cases.has('batch')) {
  const rawFile = tempFile();
  const raw = await startFleet(rawFile); // the same schema, organization and vehicles, then closed
  await raw.app.close();
  await raw.stores.close();
  const ingestSpec: LoadSpec = {
    name: 'Fleet: POST /v2/telemetry/{id}, {records: 1000}',
    url: fleet.url, method: 'POST', path: '/v2/telemetry/{vehicle}', headers: fleet.headers,
    connections: BATCH_CONNECTIONS, seconds, body: { kind: 'records', ...plan(BATCH) },
  };
  const sinkSpec: LoadSpec = {
    name: 'bare Fastify: parse the same 1000-record body, 202',
    url: bareUrl, method: 'POST', path: '/sink/{vehicle}', connections: BATCH_CONNECTIONS, seconds, body: { kind: 'records', ...plan(BATCH) },
  };
  const [baselines, ingests, sinks] = await interleaved<{ rate: number; cpu: number } | Measured>([
    async (forSeconds) => rawInsertLoop(rawFile, raw.organizationId, plan(BATCH), forSeconds),
    async (forSeconds) => {
      const run = await once(ingestSpec, forSeconds);
      // Every acknowledged record is stored, and none was a duplicate.
      const db = new DatabaseSync(fleetFile, { readOnly: true });
      const stored = countRows(db, run.rows!);
      db.close();
      if (stored < run.responses * BATCH || stored > (run.responses + BATCH_CONNECTIONS) * BATCH) {
        throw new Error(`batched ingest: ${stored} rows stored for ${run.responses} acknowledged requests`);
      }
      return run;
    },
    async (forSeconds) => once(sinkSpec, forSeconds),
  ]) as [Array<{ rate: number; cpu: number }>, Measured[], Measured[]];
  const baselineRate = median(baselines.map((b) => b.rate));
  const ingest = summary(ingestSpec.name, ingests);
  const sink = summary(sinkSpec.name, sinks);
  const ratios = ingests.map((r, i) => (r.rps * BATCH) / baselines[i]!.rate);
  const ratio = (ingest.rps * BATCH) / baselineRate;

  print();
  print(`### Batched ingest: 1000 records per request, ${BATCH_CONNECTIONS} connections`);
  print();
  print('| case | records/s | requests/s | p50 ms | p99 ms | server CPU | load generator CPU |');
  print('|---|---|---|---|---|---|---|');
  print(`| raw node:sqlite insert loop, same rows, 1000 per transaction (baseline) | ${Math.round(baselineRate)} | ${(baselineRate / BATCH).toFixed(1)} | | | ${pct(median(baselines.map((b) => b.cpu)))} | |`);
  for (const r of [ingest, sink]) {
    print(`| ${r.name} | ${Math.round(r.rps * BATCH)} | ${r.rps.toFixed(1)} | ${ms(r.p50)} | ${ms(r.p99)} | ${pct(r.serverCpu)} | ${pct(r.loadCpu)} |`);
  }
  print();
  print(`Fleet batched ingest / raw insert loop: **${ratio.toFixed(2)} ×** (rounds: ${range(ratios)}; goal ≥ 0.6 ×: ${verdict(ratio >= 0.6)}). ` +
    'Every acknowledged record was found stored, none a duplicate.');
}

if (cases.has('single')) {
  const common = { method: 'POST' as const, path: '/v2/telemetry/{vehicle}', connections: SINGLE_CONNECTIONS, seconds };
  // The bare route stores nothing, so one body (of the same shape and size) serves every request
  // and the generator spends the least it can; Fleet needs a unique timestamp per record.
  const bareSpec: LoadSpec = {
    ...common, name: 'bare Fastify: parse the body, 204 (baseline)', url: bareUrl, path: '/v2/telemetry/veh-001', fixedBody: singleBody(plan(1), 0),
  };
  const fleetSpec: LoadSpec = {
    ...common, name: 'Fleet: POST /v2/telemetry/{id}, one record', url: fleet.url, headers: fleet.headers, body: { kind: 'single', ...plan(1) },
  };
  const [baselines, ingests] = await interleaved([(s) => once(bareSpec, s), (s) => once(fleetSpec, s)]);
  const baseline = summary(bareSpec.name, baselines!);
  const ingest = summary(fleetSpec.name, ingests!);
  const ratio = ingest.rps / baseline.rps;
  print();
  print(`### Single-record ingest, ${SINGLE_CONNECTIONS} connections`);
  print();
  print(HEAD);
  for (const r of [baseline, ingest]) print(line(r));
  print();
  print(`Fleet single-record ingest / bare route: **${ratio.toFixed(2)} ×** ` +
    `(rounds: ${range(ingests!.map((r, i) => r.rps / baselines![i]!.rps))}; goal ≥ 0.6 ×: ${verdict(ratio >= 0.6)}).`);
}

if (cases.has('latest')) {
  // Something recent to read, and the bare route returns exactly what Fleet does.
  const seeded = await fleet.app.inject({
    method: 'POST', url: '/v2/telemetry/veh-001', headers: fleet.headers,
    payload: { timestamp: new Date(Date.now() - 60_000).toISOString(), data: JSON.parse(dataText(1)) as unknown },
  });
  if (seeded.statusCode !== 202) throw new Error(seeded.body);
  latestSample = (await fleet.app.inject({ method: 'GET', url: '/v2/telemetry/veh-001', headers: fleet.headers })).json();

  const bareSpec: LoadSpec = {
    name: 'bare Fastify: GET small JSON with response schema (baseline)', url: bareUrl, method: 'GET', path: '/latest', connections: READ_CONNECTIONS, seconds,
  };
  const fleetSpec: LoadSpec = {
    name: 'Fleet: GET /v2/telemetry/{id}', url: fleet.url, method: 'GET', path: '/v2/telemetry/veh-001', headers: fleet.headers, connections: READ_CONNECTIONS, seconds,
  };
  const [baselines, reads] = await interleaved([(s) => once(bareSpec, s), (s) => once(fleetSpec, s)]);
  const baseline = summary(bareSpec.name, baselines!);
  const read = summary(fleetSpec.name, reads!);
  // One fixed rate for both, well within what each sustains.
  const rate = Math.max(100, Math.floor((Math.min(baseline.rps, read.rps) * 0.5) / 100) * 100);
  const atRate = (spec: LoadSpec): LoadSpec => ({ ...spec, name: `${spec.name.replace(' (baseline)', '')}, at ${rate} req/s`, connections: LATENCY_CONNECTIONS, rate });
  const [baselinesAtRate, readsAtRate] = await interleaved([(s) => once(atRate(bareSpec), s), (s) => once(atRate(fleetSpec), s)]);
  const baselineAtRate = summary(atRate(bareSpec).name, baselinesAtRate!);
  const readAtRate = summary(atRate(fleetSpec).name, readsAtRate!);
  const throughput = read.rps / baseline.rps;
  const latency = readAtRate.p99 / baselineAtRate.p99;
  print();
  print(`### GET latest: ${READ_CONNECTIONS} connections for throughput; ${rate} req/s (autocannon -R) over ${LATENCY_CONNECTIONS} connections for latency`);
  print();
  print(HEAD);
  for (const r of [baseline, read, baselineAtRate, readAtRate]) print(line(r));
  print();
  print(`Fleet GET latest / bare route: **${throughput.toFixed(2)} ×** throughput ` +
    `(rounds: ${range(reads!.map((r, i) => r.rps / baselines![i]!.rps))}; goal ≥ 0.85 ×: ${verdict(throughput >= 0.85)}); ` +
    `p99 at ${rate} req/s **${latency.toFixed(2)} ×** the bare route's ` +
    `(rounds: ${range(readsAtRate!.map((r, i) => r.p99 / baselinesAtRate![i]!.p99))}; goal ≤ 1.5 ×: ${verdict(latency <= 1.5)}).`);
}

await fleet.app.close();
await fleet.stores.close();
await bare.close();
databases.removeAll();
