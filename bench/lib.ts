// Load generation for the benchmarks: autocannon runs in its own process, so the client never
// competes with the server for the server's event loop.
import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../src/app.ts';
import { startTracing } from '../src/tracing/tracing.ts';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { loadConfig } from '../src/config.ts';
import type { Stores } from '../src/storage/stores.ts';
import pg from 'pg';
import type { LoadOutcome, LoadSpec } from './load.ts';
import type { Plan } from './rows.ts';

const run = promisify(execFile);
const autocannonBin = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

export interface LoadResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export async function load(
  name: string,
  options: { url: string; method?: string; headers?: Record<string, string>; body?: string; connections?: number; seconds?: number; rate?: number },
): Promise<LoadResult> {
  const args = [autocannonBin, '--json', '-c', String(options.connections ?? 50), '-d', String(options.seconds ?? 8)];
  if (options.method !== undefined) args.push('-m', options.method);
  for (const [key, value] of Object.entries(options.headers ?? {})) args.push('-H', `${key}=${value}`);
  if (options.body !== undefined) args.push('-b', options.body);
  if (options.rate !== undefined) args.push('-R', String(options.rate));
  args.push(options.url);
  const { stdout } = await run(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 });
  const result = JSON.parse(stdout) as {
    requests: { average: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
  };
  return { name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors };
}

export function row(r: LoadResult): string {
  return `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.non2xx + r.errors} |`;
}

export const TABLE_HEAD = '| case | req/s | p50 ms | p99 ms | failures |\n|---|---|---|---|---|';

/** Runs bench/load.ts (programmatic autocannon, per-request bodies) in its own process. */
export async function loadVarying(spec: LoadSpec): Promise<LoadOutcome> {
  const script = fileURLToPath(new URL('./load.ts', import.meta.url));
  const text = JSON.stringify(spec);
  // Past 100 KB (a plan naming 100,000 vehicles), through a file: an argument that long is refused (E2BIG).
  const dir = text.length > 100_000 ? mkdtempSync(path.join(tmpdir(), 'fleet-load-')) : undefined;
  if (dir !== undefined) writeFileSync(path.join(dir, 'spec.json'), text);
  try {
    const { stdout } = await run(process.execPath, [script, dir === undefined ? text : `@${path.join(dir, 'spec.json')}`], { maxBuffer: 16 * 1024 * 1024 });
    return JSON.parse(stdout) as LoadOutcome;
  } finally {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Prints `ms` with a precision that suits it. */
export function ms(value: number): string {
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

/**
 * Fleet in this process on `stores` (fresh: it bootstraps), logs at warn, rate limits and MQTT off
 * (unless `env`, given the organization's id, says otherwise), with `vehicles` registered,
 * listening on a free port of 127.0.0.1.
 */
export async function startBenchFleet(stores: Stores, vehicles: readonly string[], env: (organizationId: string) => Record<string, string> = () => ({})) {
  const first = await createAuthService({ store: stores.auth, clock: systemClock }).bootstrap(undefined);
  if (first === undefined) throw new Error('fresh store did not bootstrap');
  const app = await buildBenchFleet(stores, env(first.organization.id));
  const headers = { authorization: `Bearer ${first.secret}` };
  for (const vehicleId of vehicles) {
    const res = await app.inject({ method: 'POST', url: '/v2/fleet/vehicles', headers, payload: { vehicleId, type: 'van' } });
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app, stores, headers, secret: first.secret, organizationId: first.organization.id,
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
  };
}

/**
 * Fleet on `stores` (not bootstrapped here), logs at warn, rate limits and MQTT off unless `env`
 * says otherwise (traces when it names an OTLP endpoint); not listening yet.
 */
export async function buildBenchFleet(stores: Stores, env: Record<string, string> = {}) {
  const loaded = loadConfig({ FLEET_LOG_LEVEL: 'warn', FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0', ...env });
  if (!loaded.ok) throw new Error(loaded.errors.join('; '));
  const tracing = await startTracing(loaded.config.tracing);
  return buildApp({ config: loaded.config, stores, ...(tracing === undefined ? {} : { tracing }) });
}

/** Database files in temporary folders of their own, all removed by `removeAll` at the end of a run. */
export function tempDatabases(prefix = 'fleet-bench-') {
  const dirs: string[] = [];
  return {
    file(): string {
      const dir = mkdtempSync(path.join(tmpdir(), prefix));
      dirs.push(dir);
      return path.join(dir, 'fleet.db');
    },
    removeAll(): void {
      for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Where each run's records go in time: a range of `range` ms of its own (unique records, never
 * duplicates), all within the last 25 days, so retention (30 days by default) deletes nothing
 * meanwhile.
 */
export function runPlans(vehicles: readonly string[], range = 10_000_000): (size: number) => Plan {
  const base = Date.now() - 25 * 86_400_000;
  let runs = 0;
  return (size) => {
    const start = base + runs++ * range;
    // Records ahead of the server's clock would be refused; no setting should get there.
    if (start + range > Date.now()) throw new Error(`run ${runs}: its timestamps would reach the present; fewer rounds, please`);
    return { vehicles, size, start };
  };
}

export type Measured = LoadOutcome & { serverCpu: number };

/**
 * Loads against Fleets in this process that take turns: `once` runs one (its body planned anew),
 * `interleaved` a warm-up of each then `rounds` rounds in turn, so a slow spell falls on all of
 * them, and `summary` the medians of one's rounds.
 */
export function turnTaking(settings: {
  seconds: number; rounds: number; warmupSeconds: number; plan: (size: number) => Plan;
  /** The CPU seconds used so far by the server `spec` loads; default this process's (Fleets in it). */
  cpuSeconds?: (spec: LoadSpec) => number;
}) {
  const cpuSeconds = settings.cpuSeconds ?? (() => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1e6;
  });
  async function once(spec: LoadSpec, forSeconds: number): Promise<Measured> {
    const body = spec.body === undefined ? {} : { body: { ...spec.body, ...settings.plan(spec.body.size) } };
    const cpu = cpuSeconds(spec);
    const started = performance.now();
    const result = await loadVarying({ ...spec, ...body, seconds: forSeconds });
    const used = cpuSeconds(spec) - cpu;
    if (result.non2xx + result.errors > 0) throw new Error(`${spec.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    return { ...result, serverCpu: used / ((performance.now() - started) / 1000) };
  }
  async function interleaved(specs: LoadSpec[]): Promise<Measured[][]> {
    for (const spec of specs) await once(spec, settings.warmupSeconds);
    const results: Measured[][] = specs.map(() => []);
    for (let round = 0; round < settings.rounds; round++) {
      for (const [i, spec] of specs.entries()) results[i]!.push(await once(spec, settings.seconds));
    }
    return results;
  }
  function summary(results: Measured[]): Measured {
    const pick = (f: (r: Measured) => number) => median(results.map(f));
    return { ...results[0]!, rps: pick((r) => r.rps), p50: pick((r) => r.p50), p99: pick((r) => r.p99), serverCpu: pick((r) => r.serverCpu), loadCpu: pick((r) => r.loadCpu) };
  }
  return { once, interleaved, summary };
}

/** The benchmarks' PostgreSQL: FLEET_BENCH_DATABASE_URL, else FLEET_TEST_DATABASE_URL, else the local server. */
export const BENCH_DATABASE_URL = process.env.FLEET_BENCH_DATABASE_URL ?? process.env.FLEET_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** `url` with its password hidden, for output. */
export const redactUrl = (url: string) => url.replace(/\/\/([^:/@]*):.*@/, '//$1:***@');

/**
 * A client connected to `url` for a benchmark's set-up (schemas), or undefined when the server
 * cannot be reached: that is said, and the benchmark skips its PostgreSQL cases.
 */
export async function connectAdmin(url = BENCH_DATABASE_URL): Promise<pg.Client | undefined> {
  const admin = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
    return admin;
  } catch (error) {
    console.log(`PostgreSQL at ${redactUrl(url)} is unreachable (${(error as Error).message}): its cases are skipped. Set FLEET_BENCH_DATABASE_URL to run them.`);
    return undefined;
  }
}

/** The next message of a forked child, or an error naming `what` if the child exits first. */
export function nextMessage<T>(child: ChildProcess, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const exited = (code: number | null) => reject(new Error(`${what} exited (${code})`));
    child.once('exit', exited);
    child.once('message', (m) => {
      child.off('exit', exited);
      resolve(m as T);
    });
  });
}
