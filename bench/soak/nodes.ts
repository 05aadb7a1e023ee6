// The Fleet processes of a soak run and the store they share. Each node is src/main.ts in a process
// of its own, with an environment built from scratch (nothing from the caller's shell leaks in),
// its HTTP, MQTT, OsmAnd and Teltonika listeners on free ports of 127.0.0.1. Output is kept only as
// a bounded tail plus the lines logged at error or worse: a run of hours must not grow this
// process's memory with the server's logs.
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { freePort } from '../../test/helpers/ports.ts';

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const TAIL = 64 * 1024;
const KEPT_ERRORS = 20;

export interface Node {
  name: string;
  pid: number;
  /** http://127.0.0.1:PORT */
  url: string;
  mqttPort: number;
  osmandPort: number;
  teltonikaPort: number;
  /** The last 64 KiB of stdout and stderr. */
  tail(): string;
  /** Log lines at error or worse (the first 20), and how many there were. */
  errors(): { count: number; first: string[] };
  running(): boolean;
  /** How it ended, once it has; undefined while it runs. */
  exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** SIGTERM, then SIGKILL after `ms`; resolves with how it ended. */
  stop(ms?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface Store {
  /** What the report says about the store. */
  description: string;
  /** FLEET_* variables every node gets for it. */
  env: Record<string, string>;
  /** Removes what the run made (the schema, the Redis keys, the files); safe to call once the nodes are gone. */
  cleanup(): Promise<void>;
}

export function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
}

/** The embedded store: one SQLite file in a fresh directory, removed at the end. */
export function sqliteStore(dir: string): Store {
  return {
    description: 'embedded SQLite (one node)',
    env: { FLEET_DATABASE_URL: `sqlite:${path.join(dir, 'fleet.db')}` },
    async cleanup() {},
  };
}

/**
 * Cluster mode: a fresh schema in the PostgreSQL database at `databaseUrl` (the service reaches it
 * through the URL's `options=-c search_path=…`, which node-postgres passes to the server at login)
 * and a fresh Redis prefix. Both are removed by cleanup().
 */
export async function clusterStore(databaseUrl: string, redisUrl: string): Promise<Store> {
  const tag = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const schema = `fleet_soak_${tag}`;
  const prefix = `fleet-soak-${tag}:`;
  const admin = async <T>(work: (client: pg.Client) => Promise<T>) => {
    const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  const redis = new Redis(redisUrl, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    throw new Error(`Redis at ${redact(redisUrl)} does not answer: ${(error as Error).message}`, { cause: error });
  }
  const server = await admin(async (client) => {
    await client.query(`CREATE SCHEMA ${schema}`);
    return (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
  });
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    description: `PostgreSQL ${server} (schema ${schema} of ${redact(databaseUrl)}) and Redis (prefix ${prefix}), two nodes`,
    env: { FLEET_DATABASE_URL: url.toString(), FLEET_REDIS_URL: redisUrl, FLEET_REDIS_PREFIX: prefix },
    async cleanup() {
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
      redis.disconnect();
    },
  };
}

/** A fresh working directory for the nodes (and the SQLite file), removed by the returned function. */
export function workDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-soak-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Starts a node and resolves once /readyz answers 200 with every listener up. */
export async function startNode(name: string, cwd: string, env: Record<string, string>): Promise<Node> {
  const [port, mqttPort, osmandPort, teltonikaPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  // FLEET_SOAK_NODE_ARGS: Node options for the service, e.g. to profile it or take heap snapshots.
  const nodeArgs = process.env.FLEET_SOAK_NODE_ARGS?.split(/\s+/).filter((arg) => arg !== '') ?? [];
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(process.execPath, [...nodeArgs, MAIN], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd,
      FLEET_HOST: '127.0.0.1', FLEET_PORT: String(port), FLEET_MQTT_PORT: String(mqttPort),
      FLEET_OSMAND_PORT: String(osmandPort), FLEET_TELTONIKA_PORT: String(teltonikaPort),
      FLEET_PUBLIC_URL: `http://127.0.0.1:${port}`,
      // Warn: a line per request at info would make the logs, not the service, what is measured.
      FLEET_LOG_LEVEL: 'warn',
      // The soak offers a known load; a rate limit would answer part of it 429 instead.
      FLEET_RATE_LIMIT_REQUESTS: '0',
      FLEET_WEBHOOK_ALLOW_PRIVATE: 'true',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  let partial = '';
  let errorCount = 0;
  const firstErrors: string[] = [];
  const take = (chunk: string) => {
    tail = (tail + chunk).slice(-TAIL);
    const lines = (partial + chunk).split('\n');
    partial = (lines.pop() ?? '').slice(-TAIL);
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      try {
        if (((JSON.parse(line) as { level?: number }).level ?? 0) >= 50) {
          errorCount++;
          if (firstErrors.length < KEPT_ERRORS) firstErrors.push(line.slice(0, 600));
        }
      } catch {
        // Not a log line.
      }
    }
  };
  child.stdout.setEncoding('utf8').on('data', take);
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (tail = (tail + chunk).slice(-TAIL)));
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('close', (code, signal) => resolve((exit = { code, signal })));
  });
  const node: Node = {
    name, pid: child.pid!, url: `http://127.0.0.1:${port}`, mqttPort, osmandPort, teltonikaPort,
    tail: () => tail,
    errors: () => ({ count: errorCount, first: [...firstErrors] }),
    running: () => exit === undefined,
    exit: () => exit,
    async stop(ms = 15_000) {
      if (exit !== undefined) return exit;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), ms);
      try {
        return await closed;
      } finally {
        clearTimeout(timer);
      }
    },
  };

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exit !== undefined) throw new Error(`${name} exited (${exit.signal ?? `code ${exit.code}`}) before it was ready:\n${tail}`);
    const res = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
    if (res !== undefined) {
      const body = (await res.json().catch(() => ({}))) as { checks?: Record<string, string> };
      const down = ['mqtt', 'osmand', 'teltonika'].filter((check) => body.checks?.[check] !== 'up');
      if (res.status === 200 && down.length === 0) return node;
      if (res.status === 200) {
        await node.stop();
        throw new Error(`${name} is ready without ${down.map((check) => `${check} (${body.checks?.[check]})`).join(', ')}`);
      }
    }
    if (Date.now() > deadline) {
      await node.stop();
      throw new Error(`${name} not ready after 60 s:\n${tail}`);
    }
    await sleep(100);
  }
}
