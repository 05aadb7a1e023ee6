// Live streams at scale: 10,000 WebSocket subscribers on one Fleet node with telemetry flowing,
// next to a bare `ws` server broadcasting the same messages to the same number of clients, in one
// run on one machine. Reported for each: delivered messages per second, ingest-to-client latency
// p50/p99 (record timestamp, set by the load generator at send time, to the client's receive
// time: same machine, same clock), the server's event-loop delay p99, and memory per connection
// (server RSS after connecting and running, minus before, over the connections; both after a GC).
//
// Processes: this one orchestrates and generates telemetry (HTTP batches, one record per
// vehicle); the server under test runs in its own process; subscribers run in CLIENT_PROCESSES
// processes. Fleet's subscribers each create a stream (`POST /v2/telemetry/{vehicle}/stream`,
// location, interval 0) and attach with its ticket; the bare server's subscribe by query string.
// The bare server parses each batch and sends one JSON string per record to that vehicle's
// sockets; Fleet commits the batch to SQLite first (durably), then fans it out.
//
// Needs about 10,100 open files in the server process: children raise their soft limit to the
// hard one (`ulimit -n`); the run stops early with a message if that is still too few.
// Tuning: BENCH_STREAM_CLIENTS (10000), BENCH_STREAM_VEHICLES (100), BENCH_STREAM_RATE (updates
// per vehicle per second, 2), BENCH_STREAM_SECONDS (measured seconds, 10). To look inside:
// BENCH_STREAM_PROFILE=<dir> (CPU profiles of the servers), BENCH_STREAM_SNAPSHOT=<dir> (heap
// snapshots at the end), BENCH_STREAM_DEBUG=1 (memory usage before and after).
import { spawn, type ChildProcess, execSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import WebSocket, { WebSocketServer } from 'ws';
import { freePort } from '../test/helpers/ports.ts';

const CLIENTS = Number(process.env.BENCH_STREAM_CLIENTS ?? 10_000);
const VEHICLES = Number(process.env.BENCH_STREAM_VEHICLES ?? 100);
/** Updates per vehicle per second. */
const RATE = Number(process.env.BENCH_STREAM_RATE ?? 2);
/** Ingest requests per second: the updates are spread over them, as devices report independently. */
const TICKS = 20;
const SECONDS = Number(process.env.BENCH_STREAM_SECONDS ?? 10);
const WARMUP_SECONDS = 3;
const CLIENT_PROCESSES = 4;
const vehicleIds = Array.from({ length: VEHICLES }, (_, i) => `veh-${String(i).padStart(4, '0')}`);
const self = fileURLToPath(import.meta.url);

type Mode = 'bare' | 'fleet';
type Reply = Record<string, any>;

// ---- orchestrator ------------------------------------------------------------------------------

/** Runs a role of this file in a child process, with the open-file limit raised to the hard limit. */
function spawnRole(args: string[], gc = false): ChildProcess {
  const profile = process.env.BENCH_STREAM_PROFILE !== undefined && args[0] === 'server' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_STREAM_PROFILE}`] : [];
  const node = [process.execPath, ...(gc ? ['--expose-gc'] : []), ...profile, self, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return spawn('sh', ['-c', `ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec ${node}`], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

let asked = 0;
function ask(child: ChildProcess, cmd: string, extra: Reply = {}): Promise<Reply> {
  const id = ++asked;
  return new Promise((resolve, reject) => {
    const onMessage = (message: Reply) => {
      if (message.id !== id) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message);
    };
    const onExit = (code: number | null) => reject(new Error(`child exited (${code}) while asked ${cmd}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send({ id, cmd, ...extra });
  });
}

function firstMessage(child: ChildProcess): Promise<Reply> {
  return new Promise((resolve, reject) => {
    child.once('message', (message: Reply) => resolve(message));
    child.once('exit', (code) => reject(new Error(`child exited (${code}) before it was ready`)));
  });
}

interface Outcome {
  mode: Mode;
  delivered: number;
  expected: number;
  p50: number;
  p99: number;
  loopP99: number;
  bytesPerConnection: number;
}

async function run(mode: Mode): Promise<Outcome> {
  const server = spawnRole(['server', mode], true);
  const { url, key, fds } = await firstMessage(server);
  if (fds < CLIENTS + 100) {
    server.kill();
    console.error(`The server may open only ${fds} files; ${CLIENTS + 100} are needed. Raise the hard limit (ulimit -Hn) and run again.`);
    process.exit(2);
  }
  const beforeReply = await ask(server, 'rss');
  const before = beforeReply.rss as number;

  const per = Math.ceil(CLIENTS / CLIENT_PROCESSES);
  const children = Array.from({ length: CLIENT_PROCESSES }, (_, p) => {
    const spec: ClientSpec = { mode, url, key, offset: p * per, count: Math.min(per, CLIENTS - p * per) };
    return spawnRole(['clients', JSON.stringify(spec)]);
  });
  const connectStarted = Date.now();
  await Promise.all(children.map((child) => firstMessage(child)));
  const connectSeconds = (Date.now() - connectStarted) / 1000;

  // Telemetry: TICKS requests a second, each with the next vehicles in turn, so that every vehicle
  // reports RATE times a second; records are stamped at send time.
  let running = true;
  let batches = 0;
  let records = 0;
  const perBatch = Math.min(VEHICLES, Math.ceil((RATE * VEHICLES) / TICKS));
  const ingestUrl = mode === 'fleet' ? `${url}/v2/telemetry` : `${url}/ingest`;
  const generator = (async () => {
    const period = 1000 / TICKS;
    let next = Date.now();
    let cursor = 0;
    while (running) {
      const timestamp = new Date().toISOString();
      const body = JSON.stringify({
        records: Array.from({ length: perBatch }, () => {
          const i = cursor++ % VEHICLES;
          return { vehicleId: vehicleIds[i], timestamp, data: { location: { lat: 52 + i / 1000, lng: 13 + batches / 1e5 }, speed: batches % 120, heading: i % 360 } };
        }),
      });
      const res = await fetch(ingestUrl, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
      if (res.status !== 202) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
      batches++;
      records += perBatch;
      next += period;
      await sleep(Math.max(0, next - Date.now()));
    }
  })();

  await sleep(WARMUP_SECONDS * 1000);
  const recordsAtStart = records;
  await Promise.all([...children.map((child) => ask(child, 'start')), ask(server, 'start')]);
  const started = Date.now();
  await sleep(SECONDS * 1000);
  const [loop, ...counts] = await Promise.all([ask(server, 'stop'), ...children.map((child) => ask(child, 'stop'))]);
  const elapsed = (Date.now() - started) / 1000;
  const recordsMeasured = records - recordsAtStart;
  running = false;
  await generator;
  if (process.env.BENCH_STREAM_SNAPSHOT !== undefined) await ask(server, 'snapshot', { file: `${process.env.BENCH_STREAM_SNAPSHOT}/${mode}.heapsnapshot` });
  const afterReply = await ask(server, 'rss');
  const after = afterReply.rss as number;
  if (process.env.BENCH_STREAM_DEBUG !== undefined) console.log(mode, JSON.stringify(beforeReply.usage), JSON.stringify(afterReply.usage));

  const buckets = new Map<number, number>();
  let delivered = 0;
  for (const c of counts) {
    delivered += c.count as number;
    for (const [ms, n] of c.buckets as Array<[number, number]>) buckets.set(ms, (buckets.get(ms) ?? 0) + n);
  }
  for (const child of children) child.kill();
  server.kill();
  await sleep(1_000); // sockets close before the next run
  console.log(`  ${mode}: ${CLIENTS} subscribers connected in ${connectSeconds.toFixed(1)} s; ${recordsMeasured} records ingested in ${elapsed.toFixed(1)} s`);
  return {
    mode,
    delivered: delivered / elapsed,
    expected: (recordsMeasured * (CLIENTS / VEHICLES)) / elapsed,
    p50: percentile(buckets, 0.5),
    p99: percentile(buckets, 0.99),
    loopP99: loop.loopP99 as number,
    bytesPerConnection: (after - before) / CLIENTS,
  };
}

function percentile(buckets: Map<number, number>, q: number): number {
  const total = [...buckets.values()].reduce((a, b) => a + b, 0);
  let seen = 0;
  for (const ms of [...buckets.keys()].sort((a, b) => a - b)) {
    seen += buckets.get(ms)!;
    if (seen >= q * total) return ms;
  }
  return NaN;
}

async function orchestrate() {
  console.log(`\nLive streams: ${CLIENTS} subscribers (${CLIENT_PROCESSES} client processes), ${VEHICLES} vehicles, ` +
    `${RATE} updates per vehicle per second in ${TICKS} requests/s (${RATE * VEHICLES} records/s, ${RATE * CLIENTS} messages/s to deliver), ` +
    `${SECONDS} s measured after ${WARMUP_SECONDS} s; ${cpus().length} CPUs, Node ${process.version}\n`);
  const bare = await run('bare');
  const fleet = await run('fleet');
  const kib = (bytes: number) => (bytes / 1024).toFixed(1);
  console.log('\n| server | delivered msg/s | of offered | latency p50 ms | p99 ms | event-loop delay p99 ms | memory per connection KiB |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of [bare, fleet]) {
    console.log(`| ${r.mode === 'bare' ? 'bare ws broadcast' : 'Fleet streams'} | ${Math.round(r.delivered)} | ${(r.delivered / r.expected * 100).toFixed(1)} % | ` +
      `${r.p50} | ${r.p99} | ${r.loopP99.toFixed(1)} | ${kib(r.bytesPerConnection)} |`);
  }
  const delivery = fleet.delivered / bare.delivered;
  const memory = fleet.bytesPerConnection / bare.bytesPerConnection;
  const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
  console.log(`\nGoals: delivery ${delivery.toFixed(2)} x bare (>= 0.7: ${verdict(delivery >= 0.7)}); ` +
    `memory per connection ${memory.toFixed(2)} x bare (<= 1.5: ${verdict(memory <= 1.5)}); ` +
    `p99 latency ${fleet.p99} ms (< 100: ${verdict(fleet.p99 < 100)})`);
}

// ---- servers -----------------------------------------------------------------------------------

async function serve(mode: Mode) {
  process.on('disconnect', () => process.exit(0)); // the orchestrator is gone
  const loop = monitorEventLoopDelay({ resolution: 10 });
  const fds = Number(execSync('ulimit -n', { shell: '/bin/sh' }).toString().trim());
  const started = mode === 'fleet' ? await startFleet() : await startBare();
  process.on('message', (message: Reply) => {
    const reply = (extra: Reply) => process.send!({ id: message.id, ...extra });
    switch (message.cmd) {
      case 'rss':
        (globalThis as { gc?: () => void }).gc?.();
        reply({ rss: process.memoryUsage.rss(), usage: process.memoryUsage() });
        break;
      case 'snapshot':
        (globalThis as { gc?: () => void }).gc?.();
        reply({ file: writeHeapSnapshot(message.file as string) });
        break;
      case 'start':
        loop.reset();
        loop.enable();
        reply({});
        break;
      case 'stop':
        loop.disable();
        reply({ loopP99: loop.percentile(99) / 1e6 });
        break;
    }
  });
  process.send!({ ...started, fds });
}

async function startFleet() {
  const { buildApp } = await import('../src/app.ts');
  const { createAuthService } = await import('../src/auth/service.ts');
  const { systemClock } = await import('../src/clock.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { createSqliteStores } = await import('../src/storage/sqlite/index.ts');
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-streams-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  process.on('SIGTERM', () => process.exit(0));
  const stores = createSqliteStores(path.join(dir, 'fleet.db'));
  const first = await createAuthService({ store: stores.auth, clock: systemClock }).bootstrap(undefined);
  if (first === undefined) throw new Error('fresh store did not bootstrap');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const loaded = loadConfig({
    FLEET_LOG_LEVEL: 'warn', FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0', FLEET_QUOTA_STREAMS: String(CLIENTS + 100),
    FLEET_HOST: '127.0.0.1', FLEET_PORT: String(port), FLEET_PUBLIC_URL: url,
  });
  if (!loaded.ok) throw new Error(loaded.errors.join('; '));
  const app = await buildApp({ config: loaded.config, stores });
  await app.listen({ host: '127.0.0.1', port });
  const headers = { authorization: `Bearer ${first.secret}` };
  for (const vehicleId of vehicleIds) {
    const res = await app.inject({ method: 'POST', url: '/v2/fleet/vehicles', headers, payload: { vehicleId, type: 'van' } });
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  return { url, key: first.secret };
}

/** The baseline: node:http + ws, one JSON string per record sent to that vehicle's sockets. */
async function startBare() {
  process.on('SIGTERM', () => process.exit(0));
  const subscribers = new Map<string, Set<WebSocket>>(vehicleIds.map((id) => [id, new Set()]));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { records } = JSON.parse(Buffer.concat(chunks).toString()) as { records: Array<{ vehicleId: string; timestamp: string; data: unknown }> };
      for (const { vehicleId, timestamp, data } of records) {
        const message = JSON.stringify({ type: 'location', seq: 1, vehicleId, timestamp, data });
        for (const ws of subscribers.get(vehicleId) ?? []) ws.send(message);
      }
      res.writeHead(202, { 'content-type': 'application/json' }).end(`{"accepted":${records.length},"duplicates":0}`);
    });
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  server.on('upgrade', (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const vehicle = new URL(req.url ?? '/', 'http://x').searchParams.get('vehicle') ?? '';
      const set = subscribers.get(vehicle);
      if (set === undefined) return ws.close(1008);
      set.add(ws);
      ws.on('close', () => set.delete(ws));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key: 'none' };
}

// ---- subscribers -------------------------------------------------------------------------------

interface ClientSpec {
  mode: Mode;
  url: string;
  key: string;
  offset: number;
  count: number;
}

async function subscribe(spec: ClientSpec) {
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
  const sockets: WebSocket[] = [];
  let counting = false;
  let count = 0;
  const buckets = new Map<number, number>();
  const MARK = Buffer.from('"timestamp":"');

  function onMessage(data: WebSocket.RawData) {
    if (!counting) return;
    const buffer = data as Buffer;
    const at = buffer.indexOf(MARK);
    if (at < 0) return; // `connected`
    count++;
    const sent = Date.parse(buffer.toString('latin1', at + MARK.length, at + MARK.length + 24));
    const ms = Date.now() - sent;
    buckets.set(ms, (buckets.get(ms) ?? 0) + 1);
  }

  async function open(i: number): Promise<void> {
    const vehicle = vehicleIds[(spec.offset + i) % vehicleIds.length]!;
    let target: string;
    if (spec.mode === 'fleet') {
      const res = await fetch(`${spec.url}/v2/telemetry/${vehicle}/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${spec.key}` },
        body: JSON.stringify({ events: ['location'], interval: 0 }),
      });
      if (res.status !== 201) throw new Error(`create stream: ${res.status} ${await res.text()}`);
      target = ((await res.json()) as { url: string }).url;
    } else {
      target = `${spec.url.replace(/^http/, 'ws')}/?vehicle=${vehicle}`;
    }
    const ws = new WebSocket(target, { skipUTF8Validation: true, perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.on('message', onMessage);
    sockets.push(ws);
  }

  const CONCURRENCY = 50;
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < spec.count) await open(next++);
  }));

  process.on('message', (message: Reply) => {
    if (message.cmd === 'start') {
      count = 0;
      buckets.clear();
      counting = true;
      process.send!({ id: message.id });
    } else if (message.cmd === 'stop') {
      counting = false;
      process.send!({ id: message.id, count, buckets: [...buckets] });
    }
  });
  process.send!({ connected: sockets.length });
}

// Declared above, run here: module-level bindings (`asked`, ...) are initialized by now.
const role = process.argv[2] ?? 'orchestrator';
if (role === 'server') await serve(process.argv[3] as Mode);
else if (role === 'clients') await subscribe(JSON.parse(process.argv[3]!) as ClientSpec);
else await orchestrate();
