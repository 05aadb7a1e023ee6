// Rate-limit state in Redis (cluster mode): every node counts against one budget per key. The Lua
// script below is gcra.ts step for step, run atomically by Redis, so two nodes can never both take
// the last unit. Lua numbers are doubles: policyUnits (called here, before Redis) has already
// checked that every quantity stays an exact integer, and the state is written with %.0f, never
// with tostring, which keeps only 14 significant digits.
//
// Decisions use the `now` the caller passes, not Redis's TIME. All nodes read the same
// (NTP-synchronized) wall clock, so decisions agree with the in-process store and the contract
// suite can pass time in.
// The cost: a node whose clock runs ahead refills budgets early by its skew, and one that runs
// behind refills nothing until its clock passes the state's `at` (gcra never refills backwards).
// With skews of milliseconds against windows of seconds, that is noise.
//
// One hash per key and policy: `debt` and `at`. It expires when the debt is paid back, when it
// would be the same as no state at all, so idle keys cost Redis nothing: paid back by both clocks,
// the caller's and Redis's, which agree within the nodes' NTP skew. A caller's time that stands
// still (tests pass one in) then keeps the key until Redis's clock has passed it; with Redis's
// clock alone, a key could expire between two calls made at one and the same `now`.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError } from '../errors.ts';
import { policyUnits } from './gcra.ts';
import type { RateLimitDecision, RateLimitPolicy, RateLimitStore } from './store.ts';

const GCRA_LUA = `
local cost = tonumber(ARGV[1])
local perMs = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local t = tonumber(ARGV[4])

local function floorDiv(x, y)
  local q = math.floor(x / y)
  if q * y > x then q = q - 1 elseif (q + 1) * y <= x then q = q + 1 end
  return q
end
local function ceilDiv(x, y)
  if x <= 0 then return 0 end
  return floorDiv(x + y - 1, y)
end

local debt = 0
local at = t
local state = redis.call('HMGET', KEYS[1], 'debt', 'at')
if state[1] and state[2] then
  local was = tonumber(state[2])
  at = math.max(was, t)
  debt = math.max(0, tonumber(state[1]) - (at - was) * perMs)
end

local allowed = debt + cost <= capacity
if allowed then
  debt = debt + cost
  redis.call('HSET', KEYS[1], 'debt', string.format('%.0f', debt), 'at', string.format('%.0f', at))
  -- Paid back at paidAt by the caller's clock, which is paidAt - t from now by Redis's (at is
  -- later than t only when this node's clock is behind the last writer's). The key goes when both
  -- clocks say so: by Redis's alone, a caller whose time runs behind Redis's (or stands still)
  -- would see state it still owes on vanish; by the caller's alone, a node whose clock is behind
  -- Redis's would write keys that expire at once and never limit anyone.
  local paidAt = at + ceilDiv(debt, perMs)
  local clock = redis.call('TIME')
  local redisNow = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  redis.call('PEXPIREAT', KEYS[1], string.format('%.0f', math.max(paidAt, redisNow + paidAt - t)))
end

local retryAfter = 0
if not allowed then retryAfter = ceilDiv(debt + cost - capacity, perMs) end
return { allowed and 1 or 0, floorDiv(math.max(0, capacity - debt), cost), ceilDiv(debt, perMs), retryAfter }
`;
const GCRA_SHA = createHash('sha1').update(GCRA_LUA).digest('hex');

export interface RedisRateLimitStoreOptions {
  /** A client the caller owns and closes; see REDIS_CLIENT_OPTIONS for how it should be made. */
  redis: Redis;
  /** Put before every key, e.g. `fleet:`; keys are `${prefix}rl:${limit}/${windowMs}:${key}`. */
  prefix: string;
}

/** Replies that mean "Redis cannot serve this right now", not "this command is wrong". */
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|OOM|NOREPLICAS|MISCONF)\b/;

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // Anything that is not a reply from the server is about the connection: closed, refused,
  // "Stream isn't writeable" (offline queue off), "Command timed out", retries exhausted.
  if (error.name !== 'ReplyError') return true;
  return UNAVAILABLE_REPLIES.test(error.message);
}

export function createRedisRateLimitStore(options: RedisRateLimitStoreOptions): RateLimitStore {
  const { redis, prefix } = options;

  async function run(key: string, args: string[]): Promise<unknown> {
    try {
      return await redis.evalsha(GCRA_SHA, 1, key, ...args);
    } catch (error) {
      // The script cache is empty after a restart or failover: send the script itself once.
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw error;
      return redis.eval(GCRA_LUA, 1, key, ...args);
    }
  }

  return {
    async consume(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision> {
      const { cost, perMs, capacity } = policyUnits(policy);
      const redisKey = `${prefix}rl:${policy.limit}/${policy.windowMs}:${key}`;
      let reply: unknown;
      try {
        reply = await run(redisKey, [String(cost), String(perMs), String(capacity), String(Math.floor(now))]);
      } catch (error) {
        if (!isUnavailable(error)) throw error;
        throw new AppError('service-unavailable', 'Rate limits cannot be checked right now; try again shortly.', {
          headers: { 'retry-after': '5' },
          cause: error,
        });
      }
      const [allowed, remaining, resetMs, retryAfterMs] = (reply as unknown[]).map(Number) as [number, number, number, number];
      return { allowed: allowed === 1, remaining, resetMs, retryAfterMs };
    },
    // The client belongs to the caller, and the store holds nothing else.
    async close() {},
  };
}
