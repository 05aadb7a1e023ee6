// Device protocols against our own HTTP routes carrying the same records, in one run, each pair
// taking turns for BENCH_ROUNDS rounds (default 3) of BENCH_SECONDS (default 4); medians:
// - Teltonika: BENCH_DEVICES (default 1000) connected trackers, each sending packets of 10 records
//   and waiting for the answer, vs POST /v2/telemetry with the same 10 records per request at the
//   same concurrency over keep-alive. Goal: at least 0.8 ×.
// - OsmAnd: one record per GET /osmand over keep-alive (100 connections) vs POST /v2/telemetry/{id}
//   with one JSON record. Goal: at least 0.8 ×.
// - Memory per idle Teltonika connection: the server's RSS and heap (after a GC) before and after
//   BENCH_IDLE (default 10000) logged-in connections sit idle. Goal: at most 10 KiB each.
// The clients run in a process of their own (bench/protocol-clients.ts).
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { freePort } from '../test/helpers/mqtt.ts';
import { median, startBenchFleet } from './lib.ts';
import type { ClientSpec } from './protocol-clients.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const IDLE = Number(process.env.BENCH_IDLE ?? 10_000);
const OSMAND_CONNECTIONS = 100;
const PER_PACKET = 10;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-protocols-'));
const vehicles = Array.from({ length: DEVICES }, (_, i) => `veh-${String(i).padStart(4, '0')}`);
const teltonikaPort = await freePort();
const fleet = await startBenchFleet(createSqliteStores(path.join(dir, 'fleet.db')), vehicles, () => ({
  FLEET_TELTONIKA_PORT: String(teltonikaPort), FLEET_PROTOCOLS_HOST: '127.0.0.1',
}));
const imeiOf = (i: number) => `35${String(i).padStart(13, '0')}`;
for (const [i, vehicleId] of vehicles.entries()) {
  for (const [protocol, identifier] of [['teltonika', imeiOf(i)], ['osmand', `osm-${i}`]]) {
    const res = await fleet.app.inject({ method: 'POST', url: '/v2/devices', headers: fleet.headers, payload: { protocol, identifier, vehicleId } });
    if (res.statusCode !== 201) throw new Error(res.body);
  }
}
const port = Number(new URL(fleet.url).port);

let start = Date.now() - 20 * 86_400_000;
async function run(mode: ClientSpec['mode'], concurrency: number): Promise<number> {
  const spec: ClientSpec = {
    mode, host: '127.0.0.1', port: mode === 'teltonika' ? teltonikaPort : port, key: fleet.secret, concurrency, seconds, start, perPacket: PER_PACKET,
    devices: vehicles.map((vehicleId, i) => ({ vehicleId, identifier: mode === 'teltonika' ? imeiOf(i) : `osm-${i}` })),
  };
  start += 10_000_000;
  const child = fork(fileURLToPath(new URL('./protocol-clients.ts', import.meta.url)));
  const done = new Promise<{ records: number; seconds: number; errors: number }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { records: number; seconds: number; errors: number }));
    child.once('error', reject);
  });
  child.send(spec);
  const result = await done;
  if (result.errors > 0) console.log(`(${mode}: ${result.errors} errors)`);
  return result.records / result.seconds;
}

const pairs = [
  { name: `Teltonika, ${DEVICES} trackers, packets of ${PER_PACKET}`, ours: () => run('teltonika', DEVICES), baseline: () => run('fleet-batch', DEVICES),
    baselineName: `POST /v2/telemetry, ${PER_PACKET} records a request, ${DEVICES} concurrent` },
  { name: `OsmAnd GET /osmand, one record a request, ${OSMAND_CONNECTIONS} connections`, ours: () => run('osmand', OSMAND_CONNECTIONS),
    baseline: () => run('single', OSMAND_CONNECTIONS), baselineName: `POST /v2/telemetry/{id}, one JSON record, ${OSMAND_CONNECTIONS} connections` },
];
const results = pairs.map(() => ({ ours: [] as number[], baseline: [] as number[] }));
for (const pair of pairs) {
  // A short warm-up of each side.
  await pair.ours();
  await pair.baseline();
}
for (let r = 0; r < ROUNDS; r++) {
  for (const [i, pair] of pairs.entries()) {
    results[i]!.ours.push(await pair.ours());
    results[i]!.baseline.push(await pair.baseline());
  }
}

/** The server's memory with `n` idle, logged-in Teltonika connections. */
async function idleMemory(n: number) {
  const measure = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return { rss: m.rss, heap: m.heapUsed + m.external + m.arrayBuffers };
  };
  await sleep(500);
  const before = measure();
  const child: ChildProcess = fork(fileURLToPath(new URL('./protocol-clients.ts', import.meta.url)));
  const opened = new Promise<{ opened: number }>((resolve) => child.once('message', (m) => resolve(m as { opened: number })));
  child.send({
    mode: 'idle', host: '127.0.0.1', port: teltonikaPort, key: '', concurrency: n, seconds: 0, start: 0, perPacket: 0,
    devices: vehicles.map((vehicleId, i) => ({ vehicleId, identifier: imeiOf(i) })),
  } satisfies ClientSpec);
  const { opened: count } = await opened;
  await sleep(2000);
  const after = measure();
  const closed = new Promise((resolve) => child.once('message', resolve));
  child.send({ end: true });
  await closed;
  return { count, rss: (after.rss - before.rss) / count, heap: (after.heap - before.heap) / count };
}
const idle = await idleMemory(IDLE);

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}; embedded SQLite; ${ROUNDS} rounds of ${seconds} s taking turns; medians. Clients in another process.\n`);
console.log('| case | records/s | baseline | baseline records/s | ratio (goal ≥ 0.8) |\n|---|---|---|---|---|');
for (const [i, pair] of pairs.entries()) {
  const { ours, baseline } = results[i]!;
  const ratios = ours.map((x, r) => x / baseline[r]!);
  console.log(`| ${pair.name} | ${Math.round(median(ours))} | ${pair.baselineName} | ${Math.round(median(baseline))} | **${median(ratios).toFixed(2)} ×** (${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}) |`);
}
console.log(`\nIdle Teltonika connections: ${idle.count} logged in; per connection the server's RSS grew ${kib(idle.rss)} and its heap (JS, external, buffers) ${kib(idle.heap)} (goal ≤ 10 KiB).`);

await fleet.app.close();
await fleet.stores.close();
rmSync(dir, { recursive: true, force: true });
