// How every Redis client of a node connects (rate limits, the cluster bus), so they all fail the
// same way when Redis goes away: at once, never by queueing requests behind a dead connection.
import { Redis, type RedisOptions } from 'ioredis';

export const REDIS_CLIENT_OPTIONS = Object.freeze({
  // While the connection is down a command fails at once instead of waiting in a queue for a
  // reconnect that may never come: the caller decides what to do without Redis (serve, 503).
  enableOfflineQueue: false,
  // A command in flight when the connection drops is sent once more on the next connection, then
  // fails; more retries would hold a request for several reconnect cycles.
  maxRetriesPerRequest: 1,
  // A Redis that accepts connections but does not answer (overloaded, paused, a half-open TCP
  // connection) costs a request at most a second.
  commandTimeout: 1000,
  connectTimeout: 2000,
  // A command its caller was already told had failed is not sent again after a reconnect: a rate
  // limit decided from memory is not also counted in Redis, an event is not published twice.
  autoResendUnfulfilledCommands: false,
} as const satisfies RedisOptions);

/** The URL as it may be logged: the password, if any, replaced by `***`. */
export function redactedRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    // ioredis also takes options from the query string, a password among them.
    if (parsed.password === '' && !parsed.searchParams.has('password')) return url;
    if (parsed.password !== '') parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    // Not a URL the parser takes: still never let what looks like a password through.
    return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}

/**
 * A client made with REDIS_CLIENT_OPTIONS, connected: rejects with `cannot reach Redis at <url>`
 * when it cannot be. Its later errors are not thrown (ioredis reconnects by itself); each user
 * reports the connection's state its own way. The caller quits it.
 */
export async function connectRedis(url: string, connectionName?: string): Promise<Redis> {
  const redis = new Redis(url, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true, ...(connectionName === undefined ? {} : { connectionName }) });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return redis;
  } catch (error) {
    redis.disconnect();
    throw new Error(`cannot reach Redis at ${redactedRedisUrl(url)}`, { cause: error });
  }
}
