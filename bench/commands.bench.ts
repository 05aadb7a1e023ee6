// Commands to Teltonika trackers, in one run (docs/API.md "Commands"), BENCH_DEVICES (default
// 1000) trackers connected, answering every command at once:
// - From POST to the Codec 12 frame on the tracker's socket, and to its `command.succeeded` event
//   on a live stream, at BENCH_RATE (default 500) commands a second for BENCH_SECONDS (default 10):
//   p50 and p99, with the trackers quiet and with them sending as fast as they are answered; every
//   command must end succeeded (none lost). Goal: p99 to the frame under 50 ms.
// - Ingest from the same trackers (packets of 10 records, closed-loop) with those commands flowing
//   vs without: the ratio of records a second. Goal: at least 0.9 ×.
// The clients run in a process of their own (bench/command-clients.ts); the server in this one.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { freePort } from '../test/helpers/mqtt.ts';
import type { CommandClientResult, CommandClientSpec } from './command-clients.ts';
import { median, startBenchFleet } from './lib.ts';

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-commands-'));
const vehicles = Array.from({ length: DEVICES }, (_, i) => `veh-${String(i).padStart(4, '0')}`);
const teltonikaPort = await freePort();
const fleet = await startBenchFleet(createSqliteStores(path.join(dir, 'fleet.db')), vehicles, () => ({
  FLEET_TELTONIKA_PORT: String(teltonikaPort), FLEET_PROTOCOLS_HOST: '127.0.0.1', FLEET_TELTONIKA_CONNECTIONS_PER_ADDRESS: String(DEVICES + 100),
}));
const imeiOf = (i: number) => `35${String(i).padStart(13, '0')}`;
for (const [i, vehicleId] of vehicles.entries()) {
  const res = await fleet.app.inject({ method: 'POST', url: '/v2/devices', headers: fleet.headers, payload: { protocol: 'teltonika', identifier: imeiOf(i), vehicleId } });
  if (res.statusCode !== 201) throw new Error(res.body);
}

let start = Date.now() - 20 * 86_400_000;
async function run(rate: number, ingest = true): Promise<CommandClientResult> {
  const spec: CommandClientSpec = {
    host: '127.0.0.1', httpPort: Number(new URL(fleet.url).port), teltonikaPort, key: fleet.secret, seconds: SECONDS, ingest, rate, start,
    devices: vehicles.map((vehicleId, i) => ({ vehicleId, imei: imeiOf(i) })),
  };
  start += DEVICES * 100_000;
  const child = fork(fileURLToPath(new URL('./command-clients.ts', import.meta.url)));
  const done = new Promise<CommandClientResult>((resolve, reject) => {
    child.once('message', (m) => resolve(m as CommandClientResult));
    child.once('error', reject);
  });
  child.send(spec);
  return done;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

// A short warm-up, then rounds taking turns: commands alone (the trackers connected, quiet),
// ingest alone, ingest with commands.
await run(0);
const alone: number[] = [];
const commandsOnly: CommandClientResult[] = [];
const withCommands: CommandClientResult[] = [];
for (let r = 0; r < ROUNDS; r++) {
  commandsOnly.push(await run(RATE, false));
  const quiet = await run(0);
  alone.push(quiet.records / quiet.seconds);
  withCommands.push(await run(RATE));
}

// Every command of every round must have ended succeeded.
let lost = 0;
let posted = 0;
for (const result of [...commandsOnly, ...withCommands]) {
  posted += result.commands;
  lost += result.errors + result.commands - result.ids.length;
  for (const id of result.ids) {
    const res = await fleet.app.inject({ method: 'GET', url: `/v2/commands/${id}`, headers: fleet.headers });
    if (res.json<{ status: string }>().status !== 'succeeded') lost++;
  }
}
const latencies = (results: CommandClientResult[]) => ({ toFrame: results.flatMap((r) => r.toFrame), toSucceeded: results.flatMap((r) => r.toSucceeded) });
const quietLatency = latencies(commandsOnly);
const busyLatency = latencies(withCommands);
const ratios = withCommands.map((r, i) => (r.records / r.seconds) / alone[i]!);
const ms = (n: number) => `${n.toFixed(1)} ms`;
console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}; embedded SQLite; ${DEVICES} Teltonika trackers; ${ROUNDS} rounds of ${SECONDS} s; clients in another process.\n`);
console.log('| measure | value | goal |\n|---|---|---|');
console.log(`| commands sent at ${RATE}/s (achieved) | ${posted} (${(posted / (2 * ROUNDS * SECONDS)).toFixed(0)}/s) | |`);
console.log(`| POST → frame on the tracker's socket, p50 / p99 | ${ms(percentile(quietLatency.toFrame, 50))} / **${ms(percentile(quietLatency.toFrame, 99))}** | p99 < 50 ms |`);
console.log(`| POST → command.succeeded on a stream, p50 / p99 | ${ms(percentile(quietLatency.toSucceeded, 50))} / ${ms(percentile(quietLatency.toSucceeded, 99))} | |`);
console.log(`| the same while every tracker sends as fast as it is answered: to the frame, p50 / p99 | ${ms(percentile(busyLatency.toFrame, 50))} / ${ms(percentile(busyLatency.toFrame, 99))} | |`);
console.log(`| commands not succeeded (lost) | **${lost}** | 0 |`);
console.log(`| ingest with commands / without, records/s | ${Math.round(median(withCommands.map((r) => r.records / r.seconds)))} / ${Math.round(median(alone))}: **${median(ratios).toFixed(2)} ×** (${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}) | ≥ 0.9 × |`);

await fleet.app.close();
await fleet.stores.close();
rmSync(dir, { recursive: true, force: true });
