// `npm run bench -- commands`: commands to Teltonika trackers (docs/API.md "Commands"), in one run,
// about 70 s. A real service process (src/main.ts) on a fresh embedded store, BENCH_DEVICES
// (default 1000) vehicles each with a Teltonika device registered through the API, every tracker
// connected for the whole run and answering each Codec 12 command at once. Commands are
// `positionSingle`, POSTed at a fixed pace (open loop) to the trackers in turn.
// - To the frame: BENCH_FRAME_COMMANDS (default 2000) commands at 200 a second, the trackers
//   otherwise quiet: p50 and p99 from sending the POST to the frame arriving on the tracker's socket.
// - Round trip: BENCH_RATE (default 500) commands a second for BENCH_SECONDS (default 10): the rate
//   achieved, and p50 and p99 from the POST to the command's `command.succeeded` being read from
//   the event feed (one reader, polling back to back, 5 ms pause after a page that caught up).
// - Ingest beside commands: every tracker sending packets of 10 records, each after the last one's
//   acknowledgement, alone and with BENCH_RATE commands a second beside it, taking turns for
//   BENCH_ROUNDS (default 3) rounds of BENCH_INGEST_SECONDS (default 5): the ratio of acknowledged
//   records a second (goal: at least 0.9 ×). The feed is read only after each round, which ends
//   when all of its commands have succeeded: none is left to weigh on the next.
// At the end every command the run sent is read back by listing each vehicle's commands: each must
// be `succeeded`; the others are counted by status as lost.
//
// The service runs in a cgroup capped at BENCH_SERVER_CPU of a core (default 1; 0: no cap), so that
// it, not the clients, is the bottleneck; this process and the clients' (bench/command-clients.ts)
// are in an uncapped one, both weighted 8 × a process outside them (bench/cgroup.ts), so other work
// on a shared machine does not starve them. Without root the run says so and runs uncapped.
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { generateApiKey } from '../src/auth/keys.ts';
import { freePort } from '../test/helpers/mqtt.ts';
import { type CpuGroup, cpuCgroups, cpuGroup, leaveGroup, removeAll } from './cgroup.ts';
import type { CommandClientMessage, CommandClientSetup, CommandPhase, CommandPhaseResult } from './command-clients.ts';
import { median } from './lib.ts';
import { processCpuSeconds } from './proc-cpu.ts';

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const FRAME_COMMANDS = Number(process.env.BENCH_FRAME_COMMANDS ?? 2000);
const FRAME_RATE = 200;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const INGEST_SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? 5);
const SERVER_CPU = Number(process.env.BENCH_SERVER_CPU ?? 1);
/** Weight of the benchmark's groups against other work on a shared machine (see cgroup.ts). */
const WEIGHT = 8;
const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-commands-'));
const cgroups = SERVER_CPU > 0 ? cpuCgroups() : { kind: 'none' as const, why: 'BENCH_SERVER_CPU=0' };

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

const ms = (value: number) => `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;
const int = (value: number) => Math.round(value).toLocaleString('en-US');
const spread = (values: readonly number[]) => `p50 ${ms(percentile(values, 50))}, p99 **${ms(percentile(values, 99))}**, max ${ms(Math.max(...values))}`;

async function run(): Promise<void> {
  const key = generateApiKey();
  const httpPort = await freePort();
  const teltonikaPort = await freePort();
  const base = `http://127.0.0.1:${httpPort}`;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  let group: CpuGroup | undefined;
  if (cgroups.kind !== 'none') {
    cpuGroup(cgroups, `fleet-bench-${process.pid}-run`, undefined, WEIGHT).add(process.pid);
    group = cpuGroup(cgroups, `fleet-bench-${process.pid}-server`, SERVER_CPU, WEIGHT);
  }
  let output = '';
  // BENCH_SERVER_ARGS: extra Node options for the service, e.g. "--cpu-prof --cpu-prof-dir=/tmp/profiles".
  const nodeArgs = process.env.BENCH_SERVER_ARGS?.split(/\s+/).filter((arg) => arg !== '') ?? [];
  server = spawn(process.execPath, [...nodeArgs, MAIN], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir,
      FLEET_HOST: '127.0.0.1', FLEET_PORT: String(httpPort), FLEET_DATABASE_URL: `sqlite:${path.join(dir, 'fleet.db')}`, FLEET_ADMIN_KEY: key,
      FLEET_LOG_LEVEL: 'warn', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: String(teltonikaPort), FLEET_PROTOCOLS_HOST: '127.0.0.1',
      // Every tracker connects from 127.0.0.1.
      FLEET_TELTONIKA_CONNECTIONS_PER_ADDRESS: String(DEVICES + 100),
      FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // At once, before the service has started its threads: every thread it makes later stays in the group.
  group?.add(server.pid!);
  server.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  server.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const serverPid = server.pid!;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null) throw new Error(`the service exited before it was ready:\n${output}`);
    const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (res?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`the service was not ready after 30 s:\n${output}`);
    await sleep(100);
  }

  const devices = Array.from({ length: DEVICES }, (_, i) => ({ vehicleId: `veh-${String(i).padStart(4, '0')}`, imei: `35${String(i).padStart(13, '0')}` }));
  async function call(method: string, route: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const res = await fetch(`${base}${route}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, json: await res.json() };
  }
  async function inTurn<T>(items: readonly T[], work: (item: T) => Promise<void>, concurrency = 16): Promise<void> {
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }));
  }
  await inTurn(devices, async ({ vehicleId, imei }) => {
    const vehicle = await call('POST', '/v2/fleet/vehicles', { vehicleId, type: 'van' });
    if (vehicle.status !== 201) throw new Error(`vehicle ${vehicleId}: ${vehicle.status} ${JSON.stringify(vehicle.json)}`);
    const device = await call('POST', '/v2/devices', { protocol: 'teltonika', identifier: imei, vehicleId });
    if (device.status !== 201) throw new Error(`device ${imei}: ${device.status} ${JSON.stringify(device.json)}`);
  });

  clients = fork(fileURLToPath(new URL('./command-clients.ts', import.meta.url)));
  const child = clients;
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code) => reject(new Error(`the clients exited (${code})`)));
    server!.once('exit', (code, signal) => reject(new Error(`the service exited (${signal ?? code}); its last output:\n${output.slice(-3000)}`)));
  });
  exited.catch(() => {});
  function ask<T>(message: CommandClientMessage): Promise<T> {
    const answered = new Promise<T>((resolve) => child.once('message', (m) => resolve(m as T)));
    child.send(message);
    // A service that stops answering without exiting must not hold the run for ever.
    let stuck: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      stuck = setTimeout(() => reject(new Error(`no answer to ${message.kind} within 3 minutes; the service's last output:\n${output.slice(-3000)}`)), 180_000);
    });
    return Promise.race([answered, exited, limit]).finally(() => clearTimeout(stuck));
  }
  const setup: CommandClientSetup = { host: '127.0.0.1', httpPort, teltonikaPort, key, devices, start: Date.now() - 20 * 86_400_000 };
  const { connected } = await ask<{ connected: number }>({ kind: 'setup', setup });

  /** serverCpu: cores the service used; throttled: the share of the cap's periods in which it hit the cap. */
  type Measured = CommandPhaseResult & { name: string; serverCpu: number; throttled: number | undefined };
  const results: Measured[] = [];
  async function phase(name: string, spec: CommandPhase): Promise<Measured> {
    const cpu = processCpuSeconds(serverPid);
    const capped = group?.stat();
    const wall = performance.now();
    const result = await ask<CommandPhaseResult>({ kind: 'phase', phase: spec });
    const now = group?.stat();
    const throttled = capped === undefined || now === undefined ? undefined : (now.throttled - capped.throttled) / Math.max(1, now.periods - capped.periods);
    const done = { ...result, name, serverCpu: (processCpuSeconds(serverPid) - cpu) / ((performance.now() - wall) / 1000), throttled };
    results.push(done);
    console.log(`- ${describe(done)}`);
    return done;
  }

  function describe(r: Measured): string {
    return `${r.name}: ${r.seconds.toFixed(1)} s, ${int(r.records / r.seconds)} records/s, ${r.posted} POSTed, ${r.accepted} accepted, ${r.toFrame.length} framed, ` +
      `${r.succeeded} succeeded in the feed, server CPU ${Math.round(100 * r.serverCpu)} %` +
      `${r.throttled === undefined ? '' : ` (throttled in ${Math.round(100 * r.throttled)} % of periods)`}, pacer at most ${ms(r.pacerLateMs)} late` +
      `${r.closed > 0 ? `, **${r.closed} trackers' connections closed**` : ''}`;
  }

  // A warm-up of both paths, then the measures.
  console.log('Phases:');
  await phase('warm-up', { rate: RATE, seconds: 3, ingest: true, feed: true, settleSeconds: 20 });
  const toFrame = await phase('to the frame', { rate: FRAME_RATE, seconds: FRAME_COMMANDS / FRAME_RATE, ingest: false, feed: true, settleSeconds: 20 });
  const roundTrip = await phase('round trip', { rate: RATE, seconds: SECONDS, ingest: false, feed: true, settleSeconds: 20 });
  const alone: Measured[] = [];
  const beside: Measured[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    alone.push(await phase(`ingest alone, round ${round + 1}`, { rate: 0, seconds: INGEST_SECONDS, ingest: true, feed: false, settleSeconds: 0 }));
    beside.push(await phase(`ingest with commands, round ${round + 1}`, { rate: RATE, seconds: INGEST_SECONDS, ingest: true, feed: false, settleSeconds: 20 }));
  }
  await ask({ kind: 'end' });

  // Every command the run sent, as the service has it now.
  const statuses = new Map<string, string>();
  await inTurn(devices, async ({ vehicleId }) => {
    let cursor: string | null = null;
    do {
      const page = await call('GET', `/v2/fleet/vehicles/${vehicleId}/commands?limit=200${cursor === null ? '' : `&cursor=${cursor}`}`);
      if (page.status !== 200) throw new Error(`commands of ${vehicleId}: ${page.status} ${JSON.stringify(page.json)}`);
      const { commands, nextCursor } = page.json as { commands: Array<{ id: string; status: string }>; nextCursor: string | null };
      for (const command of commands) statuses.set(command.id, command.status);
      cursor = nextCursor;
    } while (cursor !== null);
  });
  const ids = results.flatMap((r) => r.ids);
  const byStatus = new Map<string, number>();
  for (const id of ids) {
    const status = statuses.get(id) ?? 'missing';
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }
  const posted = results.reduce((n, r) => n + r.posted, 0);
  const refused = results.reduce((n, r) => n + r.refused, 0);
  const seen = results.reduce((n, r) => n + r.succeeded, 0);
  const stray = results.reduce((n, r) => n + r.strayFrames, 0);
  const lost = ids.length - (byStatus.get('succeeded') ?? 0);
  const others = [...byStatus].filter(([status]) => !['queued', 'sent', 'succeeded'].includes(status)).map(([status, n]) => `, ${status} ${n}`).join('');
  // Commands the service holds that no 202 answered (a request that failed on the way back).
  const unanswered = statuses.size - ids.length;

  const recordsPerSecond = (r: CommandPhaseResult) => r.records / r.seconds;
  const ratios = beside.map((r, i) => recordsPerSecond(r) / recordsPerSecond(alone[i]!));
  const cap = group === undefined ? `**uncapped (${cgroups.kind === 'none' ? cgroups.why : ''})**` : `in a cgroup (${cgroups.kind}) capped at ${SERVER_CPU} of a core`;
  const cpu = (rs: ReadonlyArray<{ serverCpu: number }>) => `${Math.round(100 * median(rs.map((r) => r.serverCpu)))} %`;
  const late = Math.max(...results.map((r) => r.pacerLateMs));

  console.log(`\nNode ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}; load average ${loadavg()[0]!.toFixed(1)} at the end; embedded SQLite; ` +
    `the service ${cap}; ${connected} Teltonika trackers connected; clients in another process (their pacer at most ${ms(late)} late).\n`);
  console.log('| measure | figure | server CPU | goal |\n|---|---|---|---|');
  console.log(`| POST → Codec 12 frame on the tracker's socket, ${int(toFrame.posted)} commands at ${FRAME_RATE}/s | ${spread(toFrame.toFrame)} (${int(toFrame.toFrame.length)} frames) | ${cpu([toFrame])} | |`);
  console.log(`| the same at ${RATE}/s, ${int(roundTrip.posted)} commands | ${spread(roundTrip.toFrame)} | ${cpu([roundTrip])} | |`);
  console.log(`| POST → \`command.succeeded\` read from the feed, ${RATE}/s for ${SECONDS} s | ${spread(roundTrip.toSucceeded)}; ` +
    `${int(roundTrip.accepted / roundTrip.seconds)} accepted/s, ${int(roundTrip.succeeded / roundTrip.completedSeconds)} succeeded/s | | ${RATE}/s |`);
  if (ROUNDS > 0) {
    console.log(`| ingest alone, ${DEVICES} trackers, packets of 10, records acknowledged/s | ${int(median(alone.map(recordsPerSecond)))} | ${cpu(alone)} | |`);
    console.log(`| ingest with ${RATE} commands/s beside it / alone | ${int(median(beside.map(recordsPerSecond)))}: **${median(ratios).toFixed(2)} ×** ` +
      `(rounds ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}); ${int(median(beside.map((r) => r.accepted / INGEST_SECONDS)))} commands accepted/s | ${cpu(beside)} | ≥ 0.9 × |`);
    console.log(`| during that ingest: POST → frame | ${spread(beside.flatMap((r) => r.toFrame))} | | |`);
  }
  const count = (status: string) => int(byStatus.get(status) ?? 0);
  console.log(`| commands POSTed / accepted (202) / succeeded in the feed; at the end queued / sent / succeeded | ${int(posted)} / ${int(ids.length)} / ${int(seen)}; ` +
    `${count('queued')} / ${count('sent')} / ${count('succeeded')}${others}: **${lost} lost**` +
    `${refused > 0 ? `; ${refused} refused, first: ${results.find((r) => r.firstRefusal)?.firstRefusal}` : ''}` +
    `${unanswered !== 0 ? `; ${unanswered} held by the service unanswered` : ''}${stray > 0 ? `; ${stray} stray frames` : ''} | | 0 lost |`);
  const errors = output.split('\n').filter((line) => /"level":(50|60)/.test(line));
  if (errors.length > 0) console.log(`\nThe service logged ${errors.length} errors; the first: ${errors[0]!.slice(0, 500)}`);
}

let server: ChildProcess | undefined;
let clients: ChildProcess | undefined;
try {
  await run();
} catch (error) {
  console.error(`\nFAILED: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  clients?.kill('SIGKILL');
  if (server !== undefined && server.exitCode === null && server.signalCode === null) {
    const closed = new Promise((resolve) => server!.once('close', resolve));
    server.kill('SIGTERM');
    const stuck = setTimeout(() => server!.kill('SIGKILL'), 10_000);
    await closed;
    clearTimeout(stuck);
  }
  if (cgroups.kind !== 'none') leaveGroup(cgroups, process.pid);
  let left = removeAll();
  for (let i = 0; left.length > 0 && i < 20; i++) {
    await sleep(100);
    left = removeAll();
  }
  if (left.length > 0) console.error(`cgroups left behind: ${left.join(', ')}`);
  rmSync(dir, { recursive: true, force: true });
}
