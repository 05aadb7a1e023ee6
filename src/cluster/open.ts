// Cluster mode's connections to Redis, opened at start by main.ts: the bus to the other nodes and
// the shared rate-limit counters (falling back to this node's memory while Redis is away).
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Bus } from '../bus/bus.ts';
import { createRedisBus } from '../bus/redis.ts';
import type { CheckState } from '../readiness.ts';
import { type FallbackRateLimitStore, createFallbackRateLimitStore } from '../ratelimit/fallback.ts';
import { createRedisRateLimitStore } from '../ratelimit/redis.ts';
import type { StreamDirectory } from '../streams/directory.ts';
import { DEFAULT_STREAM_SETTINGS } from '../streams/settings.ts';
import type { DevicePresence } from '../commands/presence.ts';
import { createRedisDevicePresence } from './device-presence.ts';
import { createRedisStreamDirectory } from './streams-directory.ts';
import { connectRedis, redactedRedisUrl } from './redis-options.ts';

export interface Cluster {
  bus: Bus;
  directory: StreamDirectory;
  presence: DevicePresence;
  rateLimitStore: FallbackRateLimitStore;
  /** For /readyz: degraded while Redis is away (the node keeps serving; see docs/SCALING.md). */
  state(): CheckState;
  close(): Promise<void>;
}

export async function openCluster(options: { url: string; prefix: string; log: Logger }): Promise<Cluster> {
  const { url, prefix, log } = options;
  const bus = await createRedisBus({ url, prefix, log });
  // One connection for commands: rate-limit counters and the stream directory.
  // Its errors are reported through the rate limiter's fallback and /readyz.
  let counters: Redis;
  try {
    counters = await connectRedis(url, `fleet-${bus.node}`);
  } catch (error) {
    await bus.close();
    throw error;
  }
  const rateLimitStore = createFallbackRateLimitStore({ shared: createRedisRateLimitStore({ redis: counters, prefix }), logger: log });
  const directory = createRedisStreamDirectory({
    redis: counters, prefix, maxMessages: DEFAULT_STREAM_SETTINGS.replayMaxMessages, replayWindowMs: DEFAULT_STREAM_SETTINGS.replayWindowMs,
  });
  return {
    bus,
    directory,
    presence: createRedisDevicePresence({ redis: counters, prefix, node: bus.node }),
    rateLimitStore,
    state() {
      const busState = bus.state();
      if (busState !== 'up') return busState;
      // The connection, not the rate limiter's fallback flag: that one clears only at the next request.
      if (counters.status !== 'ready') return { degraded: `Redis at ${redactedRedisUrl(url)} is unreachable; rate limits are counted per node` };
      return 'up';
    },
    async close() {
      await directory.flush();
      await rateLimitStore.close();
      await bus.close();
      await counters.quit().catch(() => counters.disconnect());
    },
  };
}
