// The Redis rate-limit store: the contract every store meets, then what only a shared, networked
// store has to prove: keys that expire, one budget across nodes, exactness where Lua's doubles
// could round, a prompt 503 when Redis is gone, and the per-node fallback while it is.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { redactedRedisUrl } from '../src/cluster/redis-options.ts';
import { AppError } from '../src/errors.ts';
import { createFallbackRateLimitStore } from '../src/ratelimit/fallback.ts';
import { policyUnits } from '../src/ratelimit/gcra.ts';
import { createMemoryRateLimitStore } from '../src/ratelimit/memory.ts';
import { createRedisRateLimitStore } from '../src/ratelimit/redis.ts';
import type { RateLimitPolicy } from '../src/ratelimit/store.ts';
import { rateLimitStoreContract } from './contract/ratelimit-store.ts';
import { captureLogs } from './helpers/logs.ts';
import { connectTestRedis, keysUnder, redisProxy, skipUnlessRedis, testPrefix } from './helpers/redis.ts';

// Later than any run, as in the contract suite: keys written at a time still to come stay in Redis
// until its clock reaches that time, so a test that holds time still is not raced by expiry.
const T0 = Date.parse('2126-11-22T08:00:00.000Z');

async function waitFor(predicate: () => Promise<boolean> | boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('Redis URLs are logged without their password', () => {
  assert.equal(redactedRedisUrl('redis://:secret@redis.internal:6379/0'), 'redis://:***@redis.internal:6379/0');
  assert.equal(redactedRedisUrl('rediss://fleet:s%40cret@redis.internal:6380'), 'rediss://fleet:***@redis.internal:6380');
  assert.equal(redactedRedisUrl('redis://redis.internal:6379?password=secret&db=2'), 'redis://redis.internal:6379?password=***&db=2');
  assert.equal(redactedRedisUrl('redis://127.0.0.1:6379'), 'redis://127.0.0.1:6379');
});

const skip = await skipUnlessRedis();
const { prefix, cleanup } = testPrefix('ratelimit');

describe('Redis rate-limit store', { skip }, () => {
  let redis: Redis;
  before(async () => {
    redis = await connectTestRedis();
  });
  after(async () => {
    await cleanup();
    assert.deepEqual(await keysUnder(redis, prefix), [], 'no keys left behind');
    redis.disconnect();
  });

  rateLimitStoreContract('redis', () => createRedisRateLimitStore({ redis, prefix }));

  test('a key lives until its debt is paid back by the time passed in; refusals do not extend it', async () => {
    const store = createRedisRateLimitStore({ redis, prefix });
    const policy: RateLimitPolicy = { limit: 2, windowMs: 60_000 }; // one request every 30 s
    const key = `${prefix}rl:2/60000:expiring`;
    // The key's expiry is an instant (T0 + the debt); PTTL counts to it from whenever Redis answers,
    // so it is checked against the real time measured around the calls, which any delay only widens.
    async function expiresAt(): Promise<{ from: number; to: number }> {
      const before = Date.now();
      const pttl = await redis.pttl(key);
      return { from: before + pttl - 1, to: Date.now() + pttl + 1 };
    }
    const within = (span: { from: number; to: number }, at: number) => span.from <= at && at <= span.to;
    await store.consume('expiring', policy, T0);
    const one = await expiresAt();
    assert.ok(within(one, T0 + 30_000), `after one request the key expires at T0 + 30 s: ${JSON.stringify(one)} vs ${T0 + 30_000}`);
    await store.consume('expiring', policy, T0);
    assert.ok(within(await expiresAt(), T0 + 60_000), 'after two, at T0 + 60 s');
    assert.equal((await store.consume('expiring', policy, T0)).allowed, false);
    assert.ok(within(await expiresAt(), T0 + 60_000), 'a refused request leaves the expiry alone');
    assert.deepEqual(await redis.hgetall(key), { debt: String(2 * policyUnits(policy).cost), at: String(T0) });
  });

  test('a key also lasts its debt by Redis\'s clock, so a node whose clock is behind still limits; then it is gone', async () => {
    const store = createRedisRateLimitStore({ redis, prefix });
    const key = (name: string, policy: RateLimitPolicy) => `${prefix}rl:${policy.limit}/${policy.windowMs}:${name}`;
    // An hour behind: by that clock the debt is paid back at once, an hour ago by Redis's.
    const slow: RateLimitPolicy = { limit: 2, windowMs: 60_000 };
    const before = Date.now();
    await store.consume('behind', slow, Date.now() - 3_600_000);
    const pttl = await redis.pttl(key('behind', slow));
    const elapsed = Date.now() - before;
    assert.ok(pttl <= 30_000 && pttl >= 30_000 - elapsed - 1, `PTTL ${pttl} after ${elapsed} ms: the 30 s debt from the call on`);
    assert.equal((await store.consume('behind', slow, Date.now() - 3_600_000)).remaining, 0, 'still counted');
    // On the real clock a short debt ends, and the key goes by itself.
    const fast: RateLimitPolicy = { limit: 2, windowMs: 300 };
    await store.consume('gone', fast, Date.now());
    assert.ok((await redis.pttl(key('gone', fast))) <= 150);
    await waitFor(async () => (await redis.exists(key('gone', fast))) === 0, 'the paid-back key expires', 10_000);
  });

  test('two nodes (two stores, two connections) share one budget', async () => {
    const other = await connectTestRedis();
    try {
      const nodes = [createRedisRateLimitStore({ redis, prefix }), createRedisRateLimitStore({ redis: other, prefix })];
      const policy: RateLimitPolicy = { limit: 6, windowMs: 60_000 };
      const remaining: number[] = [];
      for (let i = 0; i < 6; i++) remaining.push((await nodes[i % 2]!.consume('shared', policy, T0)).remaining);
      assert.deepEqual(remaining, [5, 4, 3, 2, 1, 0]);
      for (const node of nodes) assert.equal((await node.consume('shared', policy, T0)).allowed, false);
      assert.equal((await nodes[1]!.consume('shared', policy, T0 + 10_000)).allowed, true, 'refilled for both');
    } finally {
      other.disconnect();
    }
  });

  test('concurrent requests from two nodes never share the last unit', async () => {
    const other = await connectTestRedis();
    try {
      const nodes = [createRedisRateLimitStore({ redis, prefix }), createRedisRateLimitStore({ redis: other, prefix })];
      const policy: RateLimitPolicy = { limit: 10, windowMs: 60_000 };
      const decisions = await Promise.all(Array.from({ length: 50 }, (_, i) => nodes[i % 2]!.consume('race', policy, T0)));
      const allowed = decisions.filter((d) => d.allowed);
      assert.equal(allowed.length, 10);
      assert.deepEqual(allowed.map((d) => d.remaining).sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    } finally {
      other.disconnect();
    }
  });

  test('decides exactly as the in-process store, also where the numbers pass 10^15', async () => {
    const store = createRedisRateLimitStore({ redis, prefix });
    const memory = createMemoryRateLimitStore({ sweepIntervalMs: 0 });
    // 3 per (2^51 - 1) ms: one request costs 2^51 - 1 units, so the state has 16 digits, past
    // what Lua's tostring keeps (14). Time passed in starts at T0, still to come, so no key expires
    // under the test however long it takes.
    const policies: RateLimitPolicy[] = [
      { limit: 3, windowMs: 2 ** 51 - 1 },
      { limit: 7, windowMs: 60_000 },
      { limit: 1200, windowMs: 60_000 },
      { limit: 999_983, windowMs: 7 * 86_400_000 },
    ];
    for (const policy of policies) {
      const { cost, perMs } = policyUnits(policy);
      let now = T0;
      let seed = 42;
      const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
      for (let i = 0; i < 200; i++) {
        // Steps around one request's worth of time. Never back: a refusal leaves Redis untouched,
        // while memory keeps the latest time it saw, so after a clock step back the two may refill
        // differently (both refill nothing for the step itself, which the contract checks).
        now += Math.floor(random() * 2 * Math.min(cost / perMs, 10 ** 12));
        const expected = await memory.consume('same', policy, now);
        const actual = await store.consume('same', policy, now);
        assert.deepEqual(actual, expected, `${policy.limit}/${policy.windowMs}, step ${i} at ${now}`);
      }
    }
    await memory.close();
  });

  describe('when Redis is lost', () => {
    let proxy: Awaited<ReturnType<typeof redisProxy>>;
    let client: Redis;
    before(async () => {
      proxy = await redisProxy();
      client = await connectTestRedis(proxy.url);
    });
    after(async () => {
      client?.disconnect();
      await proxy?.close();
    });

    test('consume() answers service-unavailable at once, without hanging, and works again after', async () => {
      const store = createRedisRateLimitStore({ redis: client, prefix });
      const policy: RateLimitPolicy = { limit: 5, windowMs: 60_000 };
      assert.equal((await store.consume('lost', policy, T0)).remaining, 4);
      proxy.cut();
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        await assert.rejects(store.consume('lost', policy, T0), (error: unknown) => {
          assert.ok(error instanceof AppError, String(error));
          assert.equal(error.code, 'service-unavailable');
          assert.equal(error.headers?.['retry-after'], '5');
          return true;
        });
        // At most one command timeout (1 s), whatever the state of the connection.
        assert.ok(performance.now() - started < 1_500, `refused after ${Math.round(performance.now() - started)} ms`);
      }
      proxy.restore();
      await waitFor(() => client.status === 'ready', 'the client reconnects');
      // The first request after the cut was already on the wire: the client sends it again on
      // reconnection, after its caller was told it failed. So it may count: towards refusing one
      // request more, never fewer.
      const remaining = (await store.consume('lost', policy, T0)).remaining;
      assert.ok(remaining === 3 || remaining === 2, `the budget in Redis is where it was: ${remaining} left`);
    });

    test('the fallback counts on this node while Redis is gone, says so once, and goes back to Redis when it answers', async () => {
      await waitFor(() => client.status === 'ready', 'the client is connected');
      const logs = captureLogs();
      const store = createFallbackRateLimitStore({
        shared: createRedisRateLimitStore({ redis: client, prefix }),
        local: createMemoryRateLimitStore({ sweepIntervalMs: 0 }),
        logger: logs.logger,
      });
      const policy: RateLimitPolicy = { limit: 5, windowMs: 60_000 };
      for (let i = 0; i < 3; i++) await store.consume('fb', policy, T0);
      assert.equal(store.degraded(), false);
      assert.deepEqual(store.state(), { degraded: false, since: null });

      proxy.cut();
      // Once the client has seen the cut nothing more reaches Redis, so its count stays exact.
      await waitFor(() => client.status !== 'ready', 'the client sees the connection go');
      // Memory starts afresh: this node's own count, not Redis's 3 used.
      const local = [];
      for (let i = 0; i < 6; i++) local.push(await store.consume('fb', policy, T0));
      assert.deepEqual(local.map((d) => d.allowed), [true, true, true, true, true, false]);
      assert.equal(local[0]!.remaining, 4);
      assert.equal(store.degraded(), true);
      assert.equal(typeof store.state().since, 'number');
      const warnings = () => logs.lines().filter((line) => line.level === 40);
      assert.equal(warnings().length, 1, 'one warning per outage, not per request');
      assert.match(String(warnings()[0]!.msg), /shared store cannot be reached/);

      proxy.restore();
      await waitFor(async () => {
        await store.consume('probe', policy, T0);
        return !store.degraded();
      }, 'the shared store is used again');
      // Redis's count again: 3 used before the outage, so 2 left.
      assert.deepEqual(await store.consume('fb', policy, T0), { allowed: true, remaining: 1, resetMs: 48_000, retryAfterMs: 0 });
      assert.equal(warnings().length, 1);
      assert.equal(logs.lines().filter((line) => line.level === 30 && /answers again/.test(String(line.msg))).length, 1);
      await store.close();
      assert.equal(client.status, 'ready', 'closing the store leaves the caller\'s client alone');
    });

    test('the fallback does not hide errors that are not outages', async () => {
      const store = createFallbackRateLimitStore({ shared: createRedisRateLimitStore({ redis: client, prefix }), logger: captureLogs().logger });
      await assert.rejects(store.consume('bad', { limit: 0, windowMs: 1000 }, T0), RangeError);
      assert.equal(store.degraded(), false);
      await store.close();
    });
  });
});
