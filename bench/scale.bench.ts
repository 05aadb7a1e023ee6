// One node on the embedded store at 1,000 and at 1,000,000 registered vehicles (BENCH_SCALE_VEHICLES),
// each with a latest state: the service process's start-up time to ready, its resident memory per
// vehicle, GET latest and GET details throughput at the large size against the small one, and the
// vehicle list filtered by status (with its total) page latency. The vehicles are bulk-loaded into
// the database file (one registered and reported through the API, copied by SQL), not POSTed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { buildBenchFleet, load, loadVarying, median, tempDatabases } from './lib.ts';
import { startNode } from './soak/nodes.ts';

const LARGE = Number(process.env.BENCH_SCALE_VEHICLES ?? 1_000_000);
const SMALL = 1_000;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const databases = tempDatabases('fleet-scale-');
const idOf = (i: number) => `veh-${String(i).padStart(7, '0')}`;

/** A store of `count` vehicles, each with a latest state; every tenth inactive. Returns the file and the admin key. */
async function prepare(count: number): Promise<{ file: string; key: string }> {
  const file = databases.file();
  const stores = createSqliteStores(file);
  const first = await createAuthService({ store: stores.auth, clock: systemClock }).bootstrap(undefined);
  if (first === undefined) throw new Error('fresh store did not bootstrap');
  const app = await buildBenchFleet(stores);
  const headers = { authorization: `Bearer ${first.secret}` };
  const made = await app.inject({ method: 'POST', url: '/v2/fleet/vehicles', headers, payload: { vehicleId: idOf(0), type: 'van', name: 'Van 0' } });
  if (made.statusCode !== 201) throw new Error(made.body);
  const sent = await app.inject({
    method: 'POST', url: `/v2/telemetry/${idOf(0)}`, headers,
    payload: { data: { location: { lat: 52.52, lng: 13.405 }, speed: 42.5, heading: 87, battery: 76.5 } },
  });
  if (sent.statusCode !== 202) throw new Error(sent.body);
  await app.close();
  await stores.close();
  const started = performance.now();
  const db = new DatabaseSync(file);
  db.exec('BEGIN');
  // Every column copied from the one made through the API, the id (and every tenth's status) aside.
  const columns = (table: string) => (db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[]).map((c) => c.name);
  const copy = (table: string, key: string, overrides: Record<string, string>) => {
    const names = columns(table);
    const values = names.map((n) => overrides[n] ?? n);
    db.prepare(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO ${table} (${names.join(', ')}) SELECT ${values.join(', ')} FROM n, ${table} t WHERE t.${key} = ?`).run(count - 1, idOf(0));
  };
  copy('vehicles', 'id', { id: "printf('veh-%07d', i)", name: "'Van ' || i", status: "CASE WHEN i % 10 = 0 THEN 'inactive' ELSE t.status END" });
  copy('telemetry_latest', 'vehicle_id', { vehicle_id: "printf('veh-%07d', i)" });
  db.exec('COMMIT');
  db.close();
  console.log(`${count.toLocaleString('en')} vehicles loaded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { file, key: first.secret };
}

/** The service as a process of its own on `file` (bench/soak/nodes.ts): the time from spawn to ready, and its RSS then. */
async function start(file: string) {
  const began = performance.now();
  const node = await startNode('scale', path.dirname(file), { FLEET_DATABASE_URL: `sqlite:${file}`, FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0' });
  return { ...node, startMs: performance.now() - began, rssBytes: rssOf(node.pid) };
}

interface Figures {
  startMs: number; rssBytes: number; latest: number; details: number; listP99: number; listRps: number;
  /** At the large size: single-record ingest spread over 100 and over INGEST_VEHICLES vehicles, and the RSS after. */
  ingest?: { few: number; many: number; rssAfterBytes: number; liveHeapBytes: number };
}

const INGEST_VEHICLES = Number(process.env.BENCH_SCALE_REPORTING ?? 100_000);
let runs = 0;
/** Single-record bodies for `vehicles`, in a time range of the run's own within the last 25 days. */
const singlePlan = (vehicles: string[]) => ({ kind: 'single' as const, vehicles, size: 1, start: Date.now() - 25 * 86_400_000 + runs++ * 10_000_000 });
/** Vehicles that take telemetry (not the inactive tenth): 1, 11, 21, ... */
const reporting = (n: number) => Array.from({ length: n }, (_, j) => idOf(j * 10 + 1));
const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

async function measure(count: number): Promise<Figures> {
  const { file, key } = await prepare(count);
  const service = await start(file);
  try {
    const headers = { authorization: `Bearer ${key}` };
    const middle = idOf(Math.floor(count / 2));
    const latest: number[] = [];
    const details: number[] = [];
    const listP99: number[] = [];
    const listRps: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      latest.push((await load('latest', { url: `${service.url}/v2/telemetry/${middle}`, headers, connections: 50, seconds: SECONDS })).rps);
      details.push((await load('details', { url: `${service.url}/v2/fleet/vehicles/${middle}`, headers, connections: 50, seconds: SECONDS })).rps);
      const list = await load('list', { url: `${service.url}/v2/fleet/vehicles?status=inactive&limit=50&offset=50`, headers, connections: 10, seconds: SECONDS });
      listP99.push(list.p99);
      listRps.push(list.rps);
    }
    const figures: Figures = { startMs: service.startMs, rssBytes: service.rssBytes, latest: median(latest), details: median(details), listP99: median(listP99), listRps: median(listRps) };
    if (count >= INGEST_VEHICLES * 10) {
      const few: number[] = [];
      const many: number[] = [];
      const ingest = (name: string, vehicles: string[], seconds: number) => loadVarying({
        name, url: service.url, method: 'POST', path: '/v2/telemetry/{vehicle}', headers: { ...headers, 'content-type': 'application/json' },
        connections: 50, seconds, body: singlePlan(vehicles),
      });
      // Every one of the many reports once before the rounds: the process holds what it keeps of each.
      const warm = await ingest('warm-up', reporting(INGEST_VEHICLES), Number(process.env.BENCH_SCALE_WARMUP_SECONDS ?? 30));
      if (warm.non2xx + warm.errors > 0) throw new Error(`warm-up: ${warm.non2xx + warm.errors} failures`);
      for (let round = 0; round < ROUNDS; round++) {
        few.push((await ingest('100 vehicles', reporting(100), SECONDS)).rps);
        many.push((await ingest(`${INGEST_VEHICLES} vehicles`, reporting(INGEST_VEHICLES), SECONDS)).rps);
      }
      const metrics = await (await fetch(`${service.url}/metrics`, { headers })).text();
      const liveHeap = Number(/^fleet_nodejs_heap_live_bytes (\S+)$/m.exec(metrics)?.[1] ?? Number.NaN);
      figures.ingest = { few: median(few), many: median(many), rssAfterBytes: rssOf(service.pid), liveHeapBytes: liveHeap };
    }
    return figures;
  } finally {
    await service.stop();
  }
}

try {
  const small = await measure(SMALL);
  const large = await measure(LARGE);
  const perVehicle = (large.rssBytes - small.rssBytes) / (LARGE - SMALL);
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
  console.log(`\nOne node, embedded store, ${LARGE.toLocaleString('en')} against ${SMALL.toLocaleString('en')} vehicles (medians of ${ROUNDS} rounds of ${SECONDS} s)\n`);
  console.log('| case | at 1,000 | at the large size | ratio | goal |\n|---|---|---|---|---|');
  console.log(`| start-up to ready | ${(small.startMs / 1000).toFixed(1)} s | ${(large.startMs / 1000).toFixed(1)} s | | |`);
  console.log(`| resident memory after start | ${mb(small.rssBytes)} | ${mb(large.rssBytes)} | ${perVehicle.toFixed(0)} bytes a vehicle | |`);
  console.log(`| GET latest | ${Math.round(small.latest)} req/s | ${Math.round(large.latest)} req/s | **${(large.latest / small.latest).toFixed(2)} ×** | ≥ 0.8 × |`);
  console.log(`| GET details | ${Math.round(small.details)} req/s | ${Math.round(large.details)} req/s | **${(large.details / small.details).toFixed(2)} ×** | ≥ 0.8 × |`);
  console.log(`| list, status filter and total, page 2 (10 connections) | p99 ${small.listP99} ms, ${Math.round(small.listRps)} req/s | p99 ${large.listP99} ms, ${Math.round(large.listRps)} req/s | | p99 < 100 ms |`);
  if (large.ingest !== undefined) {
    const { few, many, rssAfterBytes, liveHeapBytes } = large.ingest;
    console.log(`| single-record ingest over ${INGEST_VEHICLES.toLocaleString('en')} vehicles against over 100 (the large store) | ${Math.round(few)} req/s | ${Math.round(many)} req/s | **${(many / few).toFixed(2)} ×** | ≥ 0.9 × |`);
    console.log(`| resident memory once ${INGEST_VEHICLES.toLocaleString('en')} vehicles have reported | | ${mb(rssAfterBytes)} | ${((rssAfterBytes - large.rssBytes) / INGEST_VEHICLES).toFixed(0)} bytes a reporting vehicle (live heap after the last full GC: ${mb(liveHeapBytes)}) | |`);
  }
} finally {
  databases.removeAll();
}
