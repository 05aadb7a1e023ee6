// Redis for tests: FLEET_TEST_REDIS_URL (default: the local server), shared by every test file, so
// each file keeps its keys under a prefix of its own and deletes them afterwards; nothing here
// ever flushes. When the server cannot be reached the Redis suites are skipped with a loud
// message, except under CI=true, where that is a failure.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { REDIS_CLIENT_OPTIONS, connectRedis, redactedRedisUrl } from '../../src/cluster/redis-options.ts';
import { urlProxy } from './proxy.ts';
import { skipUnless } from './skip.ts';

export const TEST_REDIS_URL = process.env.FLEET_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A client made as cluster mode makes them, connected (REDIS_CLIENT_OPTIONS turn the offline queue
 * off, so a command sent before the connection is ready would fail). The caller quits it.
 */
export function connectTestRedis(url: string = TEST_REDIS_URL): Promise<Redis> {
  return connectRedis(url);
}

let reachable: Promise<string | undefined> | undefined;

/** Undefined when Redis answers; otherwise why not. Asked once per process. */
function unreachable(): Promise<string | undefined> {
  reachable ??= (async () => {
    const redis = new Redis(TEST_REDIS_URL, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true, retryStrategy: () => null });
    // connect() rejects with a bare "Connection is closed."; the cause (ECONNREFUSED, …) comes here.
    let cause: Error | undefined;
    redis.on('error', (error: Error) => {
      cause ??= error;
    });
    try {
      await redis.connect();
      await redis.ping();
      return undefined;
    } catch (error) {
      const reported = cause ?? error;
      return reported instanceof Error ? reported.message || (reported as { code?: string }).code || reported.name : String(reported);
    } finally {
      redis.disconnect();
    }
  })();
  return reachable;
}

/**
 * For `describe(name, { skip }, ...)`: false when Redis is there; otherwise the reason, after a
 * loud warning. Under CI=true an unreachable server is a failing test instead.
 */
export async function skipUnlessRedis(): Promise<string | false> {
  const why = await unreachable();
  return skipUnless(why === undefined ? undefined : `unreachable (${why})`, `Redis at ${redactedRedisUrl(TEST_REDIS_URL)}`, 'the Redis suites',
    'Set FLEET_TEST_REDIS_URL or start Redis');
}

/** Every key under `prefix`, found with SCAN (never KEYS, which blocks a shared server). */
export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  // SCAN's MATCH is a glob: escape what it would read as one.
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found;
}

/**
 * A key prefix no other test file or run uses, `fleet-test:<label>:<pid>:<random>:`; `cleanup`
 * deletes every key under it (on its own connection, so it works after the test's clients closed)
 * and returns how many there were.
 */
export function testPrefix(label: string): { prefix: string; cleanup: (url?: string) => Promise<number> } {
  const prefix = `fleet-test:${label.replace(/[^A-Za-z0-9_-]/g, '_')}:${process.pid}:${randomBytes(4).toString('hex')}:`;
  return {
    prefix,
    cleanup: async (url = TEST_REDIS_URL) => {
      const redis = await connectTestRedis(url);
      try {
        const keys = await keysUnder(redis, prefix);
        for (let i = 0; i < keys.length; i += 500) await redis.unlink(...keys.slice(i, i + 500));
        return keys.length;
      } finally {
        redis.disconnect();
      }
    },
  };
}

/** A proxy in front of the test Redis that the test can cut and restore (see tcpProxy). */
export function redisProxy(target: string = TEST_REDIS_URL) {
  return urlProxy(target, 6379);
}
