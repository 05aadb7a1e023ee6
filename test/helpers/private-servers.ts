// A PostgreSQL and a Redis of the test's own, for tests that stop and restart them. The machine's
// shared servers are used by every other test file at the same time, so a test never stops those:
// it starts these on free ports in temp directories, and stops and removes them afterwards.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './mqtt.ts';

interface After {
  after(fn: () => Promise<void> | void): void;
}

/** The newest installed PostgreSQL's bin directory holding initdb and pg_ctl, if any. */
function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'pg_ctl'))).sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return path.join(root, versions[0]!, 'bin');
  }
  try {
    return path.dirname(execFileSync('which', ['pg_ctl'], { encoding: 'utf8' }).trim()) || undefined;
  } catch {
    return undefined;
  }
}

function onPath(command: string): boolean {
  try {
    execFileSync('which', [command], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Undefined when private servers can be started here; otherwise what is missing. */
export function whyNoPrivateServers(): string | undefined {
  if (postgresBin() === undefined) return 'missing (no initdb/pg_ctl under /usr/lib/postgresql or on PATH)';
  if (!onPath('redis-server')) return 'missing (no redis-server on PATH)';
  if (process.getuid?.() === 0) {
    // PostgreSQL refuses to run as root: as root the server runs as the `postgres` user.
    if (!onPath('runuser')) return 'not startable as root without runuser';
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      return 'not startable as root without a `postgres` user';
    }
  }
  return undefined;
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  /** `pg_ctl stop -m immediate`: every backend killed at once, as when the server crashes. */
  crash(): void;
  start(): void;
}

/**
 * A fresh cluster (initdb) on a free port, owned by the `postgres` user when the tests run as root
 * (PostgreSQL refuses to run as root). Stopped and removed after the test.
 */
export async function privatePostgres(t: After): Promise<PrivatePostgres> {
  const bin = postgresBin()!;
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const run = (command: string, args: string[]) =>
    execFileSync(asRoot ? 'runuser' : path.join(bin, command), asRoot ? ['-u', 'postgres', '--', path.join(bin, command), ...args] : args, {
      stdio: 'pipe',
      cwd: dir,
      timeout: 60_000,
    });
  const data = path.join(dir, 'data');
  const port = await freePort();
  let running = false;
  t.after(() => {
    if (running) {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already gone: nothing to stop.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const start = () => {
    run('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, 'start']);
    running = true;
  };
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    crash() {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      running = false;
    },
    start,
  };
}

export interface PrivateRedis {
  url: string;
  /** SIGKILL: the server and everything it held are gone (no persistence). */
  kill(): Promise<void>;
  start(): Promise<void>;
}

/** A redis-server without persistence on a free port, killed after the test. */
export async function privateRedis(t: After): Promise<PrivateRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  async function kill() {
    child?.kill('SIGKILL');
    await exited;
    child = undefined;
  }
  async function start() {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
      stdio: 'ignore',
    });
    const started = child;
    exited = new Promise((resolve) => started.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    while (!(await accepts(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server did not listen on ${port} within 10 s`);
      await sleep(20);
    }
  }
  t.after(async () => {
    await kill();
    rmSync(dir, { recursive: true, force: true });
  });
  await start();
  return { url: `redis://127.0.0.1:${port}`, kill, start };
}
