// Device presence on Redis (commands/presence.ts). One sorted set per key, under the deployment's
// prefix: `presence:{organization}\n{vehicle}\n{channel}` → the nodes holding such a connection,
// scored by when each node's lease ends (Redis's clock), expiring with the newest lease. A node
// renews its keys every third of a lease; one that dies drops out when its lease ends.
import type { Redis } from 'ioredis';
import type { DevicePresence } from '../commands/presence.ts';

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS the sets; ARGV node, lease (ms). */
const HOLD_LUA = `${NOW}
local lease = tonumber(ARGV[2])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[i], lease)
end
return 1`;

/** KEYS[1] the set; ARGV node. 1 when another node's lease runs. */
const ELSEWHERE_LUA = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
for _, node in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if node ~= ARGV[1] then return 1 end
end
return 0`;

export const PRESENCE_LEASE_MS = 30_000;

export function createRedisDevicePresence(options: { redis: Redis; prefix: string; node: string; leaseMs?: number }): DevicePresence {
  const { redis, prefix, node } = options;
  const leaseMs = options.leaseMs ?? PRESENCE_LEASE_MS;
  const keyOf = (key: string) => `${prefix}presence:${key}`;
  return {
    set(key, present) {
      const write = present
        ? redis.eval(HOLD_LUA, 1, keyOf(key), node, String(leaseMs))
        : redis.zrem(keyOf(key), node);
      // Lost while Redis is away: the next renewal holds it again; a stale hold ends with its lease.
      void write.catch(() => undefined);
    },
    async renew(keys) {
      for (let i = 0; i < keys.length; i += 500) {
        const batch = keys.slice(i, i + 500).map(keyOf);
        await redis.eval(HOLD_LUA, batch.length, ...batch, node, String(leaseMs));
      }
    },
    async elsewhere(key) {
      return (await redis.eval(ELSEWHERE_LUA, 1, keyOf(key), node)) === 1;
    },
  };
}
