// History reports through the whole stack, each against a raw baseline measured in the same run
// from this same process, on both stores: one vehicle's day at 1 Hz (86,400 records) among 1,000
// vehicles (the 999 others report every 5 minutes that day), and another vehicle's 1,000,000
// records for the export.
// - aggregates into 288 buckets vs a hand-written SQL aggregate (min, max, avg of the same five
//   fields over the same rows, without `last`);
// - trips, and stops, of that day vs a raw SELECT loop that only reads the same rows;
// - the CSV export of the 1,000,000 records vs a raw SELECT loop writing the same CSV (the same
//   bytes, checked) to a socket, with the server's RSS growth during the export. For this case
//   Fleet runs in a process of its own started just before it (bench/history-server.ts), so its
//   RSS is the server's alone and its first export is a cold process's.
// Fleet and baseline take turns, BENCH_ROUNDS rounds (default 5; 3 for the export), medians
// reported. PostgreSQL from FLEET_BENCH_DATABASE_URL (default: FLEET_TEST_DATABASE_URL, else the
// local server), skipped with a message when unreachable. BENCH_STORES=sqlite picks one store.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { cpus, release, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openSqlite } from '../src/storage/sqlite/database.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { createPostgresStores } from '../src/storage/postgres/index.ts';
import { BENCH_DATABASE_URL, connectAdmin, median, ms, startBenchFleet } from './lib.ts';
import { dataText } from './rows.ts';
import type { HistoryServerMessage, HistoryServerRequest, HistoryServerSpec } from './history-server.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const EXPORT_ROUNDS = Math.min(ROUNDS, 3);
const stores = new Set((process.env.BENCH_STORES ?? 'sqlite,postgres').split(','));
const cases = new Set((process.env.BENCH_CASES ?? 'aggregates,trips,export').split(','));
const pgUrl = BENCH_DATABASE_URL;
const DAY_MS = 86_400_000;
const DAY0 = Math.floor((Date.now() - 20 * DAY_MS) / DAY_MS) * DAY_MS; // inside the 30-day retention
const TARGET = 'veh-0000';
const OTHERS = Array.from({ length: 999 }, (_, i) => `veh-${String(i + 1).padStart(4, '0')}`);
const EXPORTED = 'export';
const EXPORT_RECORDS = 1_000_000;
const CSV_HEADER = 'timestamp,lat,lng,speed,heading,battery,temperature,odometer,diagnostics\r\n';

/** The rows: [vehicle, ts, data text], in batches, vehicle by vehicle. */
function* batches(size: number): Generator<Array<[string, number, string]>> {
  let batch: Array<[string, number, string]> = [];
  const flush = () => [batch, (batch = [])][0]!;
  for (let i = 0; i < 86_400; i++) if (batch.push([TARGET, DAY0 + i * 1000, dataText(i)]) === size) yield flush();
  for (const [v, id] of OTHERS.entries()) for (let k = 0; k < 288; k++) if (batch.push([id, DAY0 + k * 300_000 + v, dataText(k + v)]) === size) yield flush();
  for (let i = 0; i < EXPORT_RECORDS; i++) if (batch.push([EXPORTED, DAY0 + i * 1000, dataText(i)]) === size) yield flush();
  if (batch.length > 0) yield batch;
}

/** One CSV line as the export writes it, from the stored JSON text: the baseline's own code. */
function csvLine(ts: number, d: { location?: { lat: number; lng: number }; [k: string]: unknown }): string {
  const c = (v: unknown) => (typeof v === 'number' ? String(v) : '');
  const diagnostics = d.diagnostics === undefined ? '' : `"${JSON.stringify(d.diagnostics).replaceAll('"', '""')}"`;
  return `${new Date(ts).toISOString()},${c(d.location?.lat)},${c(d.location?.lng)},${c(d.speed)},${c(d.heading)},${c(d.battery)},${c(d.temperature)},${c(d.odometer)},${diagnostics}\r\n`;
}

/** Gathers text and writes it to the socket in pieces of about 64 KiB; `add` says when to wait for `drain`. */
function socketWriter(socket: net.Socket) {
  let pending = CSV_HEADER;
  let bytes = 0;
  return {
    /** True when the socket is full: await `drained()` before adding more. */
    add(line: string): boolean {
      pending += line;
      if (pending.length < 65_536) return false;
      bytes += Buffer.byteLength(pending);
      const full = !socket.write(pending);
      pending = '';
      return full;
    },
    drained: () => once(socket, 'drain'),
    end() {
      bytes += Buffer.byteLength(pending);
      socket.write(pending);
      return bytes;
    },
  };
}

interface Backend {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The same store for Fleet in its own process, once `closeFleet` has closed this process's. */
  server: HistoryServerSpec;
  closeFleet(): Promise<void>;
  rawAggregate(): Promise<number>;
  rawRead(): Promise<number>;
  rawCsv(socket: net.Socket): Promise<number>;
  close(): Promise<void>;
}

const FIELDS = ['speed', 'battery', 'temperature', 'odometer', 'heading'];
const DAY = { from: DAY0, to: DAY0 + DAY_MS };

async function sqliteBackend(): Promise<Backend> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-history-'));
  const file = path.join(dir, 'fleet.db');
  const fleet = await startBenchFleet(createSqliteStores(file), [TARGET, ...OTHERS, EXPORTED]);
  const db = openSqlite(file);
  const insert = db.prepare('INSERT INTO telemetry (organization_id, vehicle_id, ts, data) VALUES (?, ?, ?, ?)');
  for (const batch of batches(10_000)) {
    db.exec('BEGIN');
    for (const [v, ts, data] of batch) insert.run(fleet.organizationId, v, ts, data);
    db.exec('COMMIT');
  }
  const args = [fleet.organizationId, TARGET, DAY.from, DAY.to] as const;
  const aggregate = db.prepare(
    `SELECT ts / 300000 AS bucket, count(*) AS n, ${FIELDS.map((f) => `min(data ->> '$.${f}'), max(data ->> '$.${f}'), avg(data ->> '$.${f}')`).join(', ')}
     FROM telemetry WHERE organization_id = ? AND vehicle_id = ? AND ts >= ? AND ts < ? GROUP BY bucket`,
  );
  const read = db.prepare('SELECT ts, data FROM telemetry WHERE organization_id = ? AND vehicle_id = ? AND ts >= ? AND ts < ? ORDER BY ts');
  const closeFleet = onlyOnce(async () => {
    await fleet.app.close();
    await fleet.stores.close();
  });
  return {
    name: 'SQLite', url: fleet.url, headers: fleet.headers, server: { store: 'sqlite', file }, closeFleet,
    rawAggregate: async () => aggregate.all(...args).length,
    rawRead: async () => {
      let n = 0;
      for (const row of read.iterate(...args)) if (row.data !== null) n++;
      return n;
    },
    rawCsv: async (socket) => {
      const out = socketWriter(socket);
      for (const row of read.iterate(fleet.organizationId, EXPORTED, 0, Number.MAX_SAFE_INTEGER)) {
        if (out.add(csvLine(row.ts as number, JSON.parse(row.data as string) as Record<string, unknown>))) await out.drained();
      }
      return out.end();
    },
    close: async () => {
      db.close();
      await closeFleet();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresBackend(admin: pg.Client): Promise<Backend> {
  const schema = `fleet_bench_history_${process.pid}`;
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  const fleet = await startBenchFleet(await createPostgresStores({ url: pgUrl, poolSize: 10, schema, keepDays: 30 }), [TARGET, ...OTHERS, EXPORTED]);
  const pool = new pg.Pool({ connectionString: pgUrl, max: 2, options: `-c search_path=${schema}` });
  for (const batch of batches(10_000)) {
    await pool.query(
      'INSERT INTO telemetry (organization_id, vehicle_id, ts, data) SELECT $1, v, t, d FROM unnest($2::text[], $3::bigint[], $4::json[]) AS r (v, t, d)',
      [fleet.organizationId, batch.map((r) => r[0]), batch.map((r) => r[1]), batch.map((r) => r[2])],
    );
  }
  await pool.query('ANALYZE telemetry');
  const args = [fleet.organizationId, TARGET, DAY.from, DAY.to];
  const closeFleet = onlyOnce(async () => {
    await fleet.app.close();
    await fleet.stores.close();
  });
  return {
    name: 'PostgreSQL', url: fleet.url, headers: fleet.headers, server: { store: 'postgres', url: pgUrl, schema }, closeFleet,
    rawAggregate: async () => (await pool.query(
      `SELECT t.ts / 300000 AS bucket, count(*) AS n, ${FIELDS.map((f) => `min(x.${f}), max(x.${f}), avg(x.${f})`).join(', ')}
       FROM telemetry t CROSS JOIN LATERAL json_to_record(t.data) AS x(${FIELDS.map((f) => `${f} float8`).join(', ')})
       WHERE t.organization_id = $1 AND t.vehicle_id = $2 AND t.ts >= $3 AND t.ts < $4 GROUP BY 1`, args)).rowCount ?? 0,
    rawRead: async () => (await pool.query('SELECT ts, data::text FROM telemetry WHERE organization_id = $1 AND vehicle_id = $2 AND ts >= $3 AND ts < $4 ORDER BY ts', args)).rowCount ?? 0,
    rawCsv: async (socket) => {
      // Pages of 10,000 by time: one SELECT of a million rows would hold them all in memory.
      const out = socketWriter(socket);
      let from = 0;
      for (;;) {
        // ts as it comes (text): ordering by a converted alias would sort instead of using the key.
        const { rows } = await pool.query<{ ts: string; data: Record<string, unknown> }>({
          name: 'raw-page',
          text: 'SELECT ts, data FROM telemetry WHERE organization_id = $1 AND vehicle_id = $2 AND ts >= $3 ORDER BY ts LIMIT 10000',
          values: [fleet.organizationId, EXPORTED, from],
        });
        for (const row of rows) if (out.add(csvLine(Number(row.ts), row.data))) await out.drained();
        if (rows.length < 10_000) return out.end();
        from = Number(rows.at(-1)!.ts) + 1;
      }
    },
    close: async () => {
      await pool.end();
      await closeFleet();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    },
  };
}

/** `fn` run on the first call only; later calls get the first one's promise. */
function onlyOnce(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
}

/** Fleet in a process of its own on `spec`'s store: its URL, its RSS (from /proc), its memoryUsage(), and closing it. */
async function startServer(spec: HistoryServerSpec) {
  const child = fork(fileURLToPath(new URL('./history-server.ts', import.meta.url)), [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T extends HistoryServerMessage['type']>(type: T) => new Promise<Extract<HistoryServerMessage, { type: T }>>((resolve, reject) => {
    const onMessage = (message: HistoryServerMessage) => {
      if (message.type !== type) return;
      child.off('message', onMessage).off('exit', onExit);
      resolve(message as Extract<HistoryServerMessage, { type: T }>);
    };
    const onExit = (code: number | null) => reject(new Error(`the server process exited (${code})`));
    child.on('message', onMessage).once('exit', onExit);
  });
  const ask = (request: HistoryServerRequest) => child.send(request);
  const { url } = await next('ready');
  return {
    url,
    /** Resident set size in bytes, read by this process: the server does nothing to tell it. */
    rss: () => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024,
    memory: async () => {
      const answer = next('memory');
      ask({ op: 'memory' });
      return (await answer).usage;
    },
    close: async () => {
      const exited = once(child, 'exit');
      ask({ op: 'close' });
      await exited;
    },
  };
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** Fleet and the baseline in turns, after one warm-up each; the medians, in ms. */
async function pair(rounds: number, fleet: () => Promise<unknown>, raw: () => Promise<unknown>) {
  await fleet();
  await raw();
  const f: number[] = [];
  const r: number[] = [];
  for (let i = 0; i < rounds; i++) {
    f.push(await time(fleet));
    r.push(await time(raw));
  }
  return { fleet: median(f), raw: median(r) };
}

async function measure(backend: Backend) {
  const get = async (route: string, query: Record<string, string | number>) => {
    const res = await fetch(`${backend.url}${route}?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()}`, { headers: backend.headers });
    if (res.status !== 200) throw new Error(`${route}: ${res.status} ${await res.text()}`);
    return res;
  };
  const range = { from: new Date(DAY.from).toISOString(), to: new Date(DAY.to).toISOString() };
  const aggregates = !cases.has('aggregates') ? undefined : await pair(ROUNDS, async () => {
    const body = await (await get(`/v2/telemetry/${TARGET}/aggregates`, { ...range, bucket: 300 })).json() as { buckets: unknown[] };
    if (body.buckets.length !== 288) throw new Error(`${body.buckets.length} buckets`);
  }, () => backend.rawAggregate());
  const trips = !cases.has('trips') ? undefined : await pair(ROUNDS, () => get(`/v2/fleet/vehicles/${TARGET}/trips`, range).then((r) => r.json()), () => backend.rawRead());
  const stops = !cases.has('trips') ? undefined : await pair(ROUNDS, () => get(`/v2/fleet/vehicles/${TARGET}/stops`, range).then((r) => r.json()), () => backend.rawRead());

  if (!cases.has('export')) return { aggregates, trips, stops, exported: undefined, rssGrowth: 0, firstRssGrowth: 0, rawRssGrowth: 0, bytes: 0, memory: undefined };
  // Fleet in a process of its own from here on, started now on the same store: its RSS is the
  // server's alone (not also this process's HTTP client and baseline), and its first export is
  // the first since it started.
  await backend.closeFleet();
  const server = await startServer(backend.server);
  // The warm-ups' bytes are hashed, to check they are the same; the timed rounds' only counted.
  let fleetHash = '';
  let rawHash = '';
  let hashRaw = true;
  const sink = net.createServer((socket) => {
    if (hashRaw) {
      hashRaw = false;
      const hash = createHash('sha256');
      socket.on('data', (chunk: Buffer) => hash.update(chunk)).on('end', () => (rawHash = hash.digest('hex')));
    }
    socket.resume();
  });
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  let fleetBytes = 0;
  let rawBytes = 0;
  const exportRange = { from: new Date(DAY0).toISOString(), to: new Date(DAY0 + EXPORT_RECORDS * 1000).toISOString(), format: 'csv' };
  const growths: number[] = [];
  let rawRssGrowth = 0;
  /** The most `rss()` grew over its value at the start while `fn` ran, sampled every 20 ms. */
  const rssDuring = async (rss: () => number, fn: () => Promise<void>) => {
    const before = rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);
    await fn();
    clearInterval(sampler);
    return Math.max(peak, rss()) - before;
  };
  const memoryBefore = await server.memory();
  let memoryAfter: NodeJS.MemoryUsage | undefined;
  let exported;
  try {
    exported = await pair(EXPORT_ROUNDS, async () => {
      fleetBytes = 0;
      const hash = fleetHash === '' ? createHash('sha256') : undefined;
      const growth = await rssDuring(server.rss, async () => {
        // A plain HTTP client reading as fast as it can: the server's pace and memory are measured.
        const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
          http.get(`${server.url}/v2/telemetry/${EXPORTED}/export?${new URLSearchParams(exportRange).toString()}`, { headers: backend.headers }, resolve).on('error', reject);
        });
        if (res.statusCode !== 200) throw new Error(`export: ${res.statusCode}`);
        for await (const chunk of res) {
          fleetBytes += (chunk as Buffer).length;
          hash?.update(chunk as Buffer);
        }
      });
      if (hash !== undefined) fleetHash = hash.digest('hex');
      growths.push(growth);
      memoryAfter ??= await server.memory();
    }, async () => {
      const growth = await rssDuring(() => process.memoryUsage.rss(), async () => {
        const socket = net.connect((sink.address() as net.AddressInfo).port, '127.0.0.1');
        await once(socket, 'connect');
        rawBytes = await backend.rawCsv(socket);
        socket.end();
        await once(socket, 'close');
      });
      rawRssGrowth = Math.max(rawRssGrowth, growth);
    });
  } finally {
    sink.close();
    await server.close();
  }
  if (fleetBytes !== rawBytes) throw new Error(`the export wrote ${fleetBytes} bytes, the baseline ${rawBytes}`);
  if (fleetHash !== rawHash) throw new Error(`the export's bytes differ from the baseline's (SHA-256 ${fleetHash} and ${rawHash})`);
  // The first export (the warm-up) also grows the heap to its working size and compiles the code.
  return {
    aggregates, trips, stops, exported, rssGrowth: Math.max(...growths.slice(1)), firstRssGrowth: growths[0]!, rawRssGrowth, bytes: fleetBytes,
    memory: { before: memoryBefore, after: memoryAfter! },
  };
}

function report(name: string, m: Awaited<ReturnType<typeof measure>>) {
  const goal = (ratio: number) => `${ratio.toFixed(2)} × (goal ≥ 0.5 ×: ${ratio >= 0.5 ? 'met' : '**not met**'})`;
  const row = (label: string, baseline: string, p: { fleet: number; raw: number } | undefined) =>
    p !== undefined && console.log(`| ${label} | ${ms(p.fleet)} | ${baseline} | ${ms(p.raw)} | ${goal(p.raw / p.fleet)} |`);
  console.log(`### ${name}\n`);
  console.log('| Fleet | ms | baseline | ms | Fleet speed / baseline |\n|---|---|---|---|---|');
  row('aggregates, 1 day into 288 buckets, 5 fields', 'hand-written SQL aggregate (no `last`)', m.aggregates);
  row('trips of the day (86,400 records)', 'raw SELECT loop reading the rows', m.trips);
  row('stops of the day', 'raw SELECT loop reading the rows', m.stops);
  row(`CSV export, ${EXPORT_RECORDS.toLocaleString('en')} records over HTTP`, 'raw SELECT loop writing the same CSV to a socket', m.exported);
  if (m.exported === undefined) return;
  const mb = m.rssGrowth / 1024 / 1024;
  console.log(`\nExport: ${(m.bytes / 1024 / 1024).toFixed(0)} MiB, the same bytes as the baseline's; RSS growth during it ${mb.toFixed(1)} MB ` +
    `at most (goal < 50 MB: ${mb < 50 ? 'met' : '**not met**'}); in the first export after start ${(m.firstRssGrowth / 1024 / 1024).toFixed(1)} MB; ` +
    `the baseline's own growth ${(m.rawRssGrowth / 1024 / 1024).toFixed(1)} MB.`);
  const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)}`;
  const { before, after } = m.memory;
  console.log(`The server process (its own) around its first export, MiB before → after: RSS ${mib(before.rss)} → ${mib(after.rss)}, ` +
    `heapTotal ${mib(before.heapTotal)} → ${mib(after.heapTotal)}, heapUsed ${mib(before.heapUsed)} → ${mib(after.heapUsed)}, ` +
    `external ${mib(before.external)} → ${mib(after.external)} (arrayBuffers ${mib(before.arrayBuffers)} → ${mib(after.arrayBuffers)}).\n`);
}

console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Linux ${release()}; ` +
  `medians of ${ROUNDS} rounds (${EXPORT_ROUNDS} for the export) after a warm-up.\n`);
const started = Date.now();
if (stores.has('sqlite')) {
  const backend = await sqliteBackend();
  report('SQLite (embedded)', await measure(backend));
  await backend.close();
}
if (stores.has('postgres')) {
  const admin = await connectAdmin(pgUrl) ?? process.exit(0);
  const version = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
  const backend = await postgresBackend(admin);
  report(`PostgreSQL ${version} (cluster mode, same machine)`, await measure(backend));
  await backend.close();
  await admin.end();
}
console.log(`Run took ${Math.round((Date.now() - started) / 1000)} s.`);
