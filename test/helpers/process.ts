// Real Fleet processes for end-to-end tests: spawn src/main.ts under the test runner's own Node,
// in a fresh directory, with an environment built from scratch (nothing leaks from the
// developer's shell). Every process is killed in t.after, and every wait is bounded.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitUntil } from './wait.ts';

export const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/**
 * The one variable a spawned process takes from the test run: `npm test` keeps Node's compile cache
 * (NODE_COMPILE_CACHE), so that every process it starts loads the modules without compiling them again.
 */
export const COMPILE_CACHE: Record<string, string> =
  process.env.NODE_COMPILE_CACHE === undefined ? {} : { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A temp directory removed after the test. */
export function tempDir(t: TestContext, prefix = 'fleet-proc-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Rejects with a clear message when `promise` has not settled within `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface FleetProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Everything written to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
  /** stdout's complete lines, each parsed as JSON (throws on a line that is not JSON). */
  logs(): Record<string, unknown>[];
  /** Settles once the process has exited and its output streams are drained. */
  closed: Promise<Exit>;
  running(): boolean;
  /** Polls `predicate` until true; fails after `ms` or when the process ends first. */
  waitFor(predicate: () => boolean, what: string, ms?: number): Promise<void>;
  /** Sends `signal` and waits (bounded) for the exit. */
  stop(signal?: NodeJS.Signals, ms?: number): Promise<Exit>;
}

export interface SpawnOptions {
  /** Working directory; a fresh temp directory when absent. */
  cwd?: string;
  /** FLEET_* variables. PATH and HOME are set by the helper. */
  env?: Record<string, string>;
}

export function spawnFleet(t: TestContext, options: SpawnOptions = {}): FleetProcess & { cwd: string } {
  const cwd = options.cwd ?? tempDir(t);
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, ...COMPILE_CACHE, ...options.env };
  const child = spawn(process.execPath, [MAIN], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let ended = false;
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (out += chunk));
  child.stderr.on('data', (chunk: string) => (err += chunk));
  const closed = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      ended = true;
      resolve({ code, signal });
    });
    child.once('error', (error) => {
      err += `\n[spawn error] ${error.message}\n`;
      ended = true;
      resolve({ code: null, signal: null });
    });
  });

  // Registered before anything can fail, so the process never outlives its test.
  t.after(async () => {
    if (!ended) {
      child.kill('SIGKILL');
      await withTimeout(closed, 5_000, 'a killed fleet process to exit');
    }
  });

  const proc: FleetProcess & { cwd: string } = {
    cwd,
    child,
    stdout: () => out,
    stderr: () => err,
    logs: () =>
      out
        .split('\n')
        .slice(0, -1)
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    closed,
    running: () => !ended,
    waitFor(predicate, what, ms = 10_000) {
      const output = () => `\n--- stdout:\n${out}\n--- stderr:\n${err}`;
      return waitUntil(() => {
        if (predicate()) return true;
        if (ended) throw new Error(`fleet exited before ${what}${output()}`);
        return false;
      }, what, ms, { seen: output });
    },
    async stop(signal = 'SIGTERM', ms = 10_000) {
      if (!ended) child.kill(signal);
      return withTimeout(closed, ms, `fleet to exit after ${signal}`);
    },
  };
  return proc;
}

const LISTENING = /^Server listening at http:\/\/127\.0\.0\.1:(\d+)$/;

export interface RunningFleet extends FleetProcess {
  cwd: string;
  port: number;
  /** http://127.0.0.1:PORT */
  url: string;
}

/**
 * Spawns main.ts on 127.0.0.1 with FLEET_PORT=0 (unless given) and resolves once it has started:
 * it logs the address it listens on (the real port is taken from it), then `started`. No overload refusals unless the test
 * asks for them: beside the rest of a run on a busy machine, a process's event loop lags for
 * reasons of the machine's, not of the test's (as in testConfig).
 */
export async function startFleet(t: TestContext, options: SpawnOptions = {}): Promise<RunningFleet> {
  const proc = spawnFleet(t, {
    ...options,
    env: {
      FLEET_HOST: '127.0.0.1', FLEET_PORT: '0', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0',
      ...options.env,
    },
  });
  let port: number | undefined;
  // Starting loads every module first: beside the rest of a CI run on a busy machine, that took over 30 s.
  await proc.waitFor(() => {
    for (const line of proc.logs()) {
      const match = typeof line.msg === 'string' ? LISTENING.exec(line.msg) : null;
      if (match !== null) {
        port = Number(match[1]);
        return true;
      }
    }
    return false;
  }, 'the "Server listening at" log line', 60_000);
  if (port === undefined) throw new Error('unreachable: no port');
  // Served from the line above on; the first start's organization and admin key are in the store
  // from this one on (made after listening, so that a start that cannot listen makes nothing).
  await proc.waitFor(() => proc.logs().some((line) => line.msg === 'started'), 'the "started" log line', 30_000);
  return { ...proc, port, url: `http://127.0.0.1:${port}` };
}

/** fetch against the process, bounded by a timeout. */
export function request(
  fleet: { url: string },
  method: string,
  pathname: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(5_000) };
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(options.body);
  }
  return fetch(fleet.url + pathname, init);
}

/** Every Fleet-format key (`fleet_` + 38 base62 characters) that occurs in `text`. */
/** Every stored record of a vehicle, following nextCursor over all pages. */
export async function historyOf(fleet: RunningFleet, key: string, vehicleId: string): Promise<Record<string, unknown>[]> {
  const records: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const query: string = cursor === null ? '' : `&cursor=${cursor}`;
    const res = await request(fleet, 'GET', `/v2/telemetry/${vehicleId}/history?limit=500${query}`, { key });
    if (res.status !== 200) throw new Error(`${vehicleId} history: ${res.status} ${await res.text()}`);
    const page = (await res.json()) as { records: Record<string, unknown>[]; nextCursor: string | null };
    records.push(...page.records);
    cursor = page.nextCursor;
    if (cursor === null) return records;
  }
  throw new Error(`${vehicleId}: more than 1000 pages of history`);
}

export function printedKeys(text: string): string[] {
  return [...text.matchAll(/fleet_[0-9A-Za-z]{38}/g)].map((m) => m[0]);
}
