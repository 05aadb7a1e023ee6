// The behaviour every RateLimitStore must have, whatever holds the counters. Each adapter's test
// file calls rateLimitStoreContract with a factory; time is always passed in, never read, so the
// suite is exact and never sleeps.
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { RateLimitPolicy, RateLimitStore } from '../../src/ratelimit/store.ts';

// Later than any run: a store that also forgets paid-back state by its own clock (Redis expires
// keys) must keep it while the time passed in stands still, however slowly a busy machine runs the
// test. A time already past would leave that to how fast the test runs.
const T0 = Date.parse('2126-11-22T08:00:00.000Z');

export function rateLimitStoreContract(name: string, makeStore: () => RateLimitStore | Promise<RateLimitStore>): void {
  describe(`RateLimitStore contract: ${name}`, () => {
    const open: RateLimitStore[] = [];
    let n = 0;
    async function fresh(): Promise<{ store: RateLimitStore; key: (label?: string) => string }> {
      const store = await makeStore();
      open.push(store);
      // Unique keys, so a store shared between tests (Redis) starts each test clean.
      const run = `${process.pid}-${Date.now()}-${++n}`;
      return { store, key: (label = 'k') => `contract:${run}:${label}` };
    }
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });

    const fivePerMinute: RateLimitPolicy = { limit: 5, windowMs: 60_000 };

    test('a burst takes exactly the limit, counting down by one; the next is refused', async () => {
      const { store, key } = await fresh();
      for (let i = 1; i <= 5; i++) {
        assert.deepEqual(await store.consume(key(), fivePerMinute, T0), {
          allowed: true,
          remaining: 5 - i,
          resetMs: 12_000 * i,
          retryAfterMs: 0,
        });
      }
      assert.deepEqual(await store.consume(key(), fivePerMinute, T0), {
        allowed: false,
        remaining: 0,
        resetMs: 60_000,
        retryAfterMs: 12_000,
      });
    });

    test('the budget refills continuously: one request per window/limit, all of it after one window', async () => {
      const { store, key } = await fresh();
      for (let i = 0; i < 5; i++) await store.consume(key(), fivePerMinute, T0);
      assert.equal((await store.consume(key(), fivePerMinute, T0 + 11_999)).allowed, false);
      const one = await store.consume(key(), fivePerMinute, T0 + 12_000);
      assert.deepEqual(one, { allowed: true, remaining: 0, resetMs: 60_000, retryAfterMs: 0 });
      assert.equal((await store.consume(key(), fivePerMinute, T0 + 12_000)).allowed, false);
      // A full window after the last request, the whole quota is back.
      const later = T0 + 12_000 + 60_000;
      for (let i = 1; i <= 5; i++) assert.equal((await store.consume(key(), fivePerMinute, later)).remaining, 5 - i);
      assert.equal((await store.consume(key(), fivePerMinute, later)).allowed, false);
    });

    test('refused requests change nothing: retrying does not push the client back', async () => {
      const { store, key } = await fresh();
      for (let i = 0; i < 5; i++) await store.consume(key(), fivePerMinute, T0);
      for (let ms = 0; ms < 12_000; ms += 1000) {
        const refused = await store.consume(key(), fivePerMinute, T0 + ms);
        assert.equal(refused.allowed, false);
        assert.equal(refused.retryAfterMs, 12_000 - ms);
      }
      assert.equal((await store.consume(key(), fivePerMinute, T0 + 12_000)).allowed, true);
    });

    test('keys have separate budgets', async () => {
      const { store, key } = await fresh();
      for (let i = 0; i < 5; i++) await store.consume(key('a'), fivePerMinute, T0);
      assert.equal((await store.consume(key('a'), fivePerMinute, T0)).allowed, false);
      assert.deepEqual(await store.consume(key('b'), fivePerMinute, T0), { allowed: true, remaining: 4, resetMs: 12_000, retryAfterMs: 0 });
    });

    test('the same key under another policy is another budget', async () => {
      const { store, key } = await fresh();
      for (let i = 0; i < 5; i++) await store.consume(key(), fivePerMinute, T0);
      assert.equal((await store.consume(key(), fivePerMinute, T0)).allowed, false);
      assert.equal((await store.consume(key(), { limit: 10, windowMs: 60_000 }, T0)).remaining, 9);
    });

    test('concurrent requests never share the last unit', async () => {
      const { store, key } = await fresh();
      const policy: RateLimitPolicy = { limit: 10, windowMs: 1000 };
      const decisions = await Promise.all(Array.from({ length: 50 }, () => store.consume(key(), policy, T0)));
      const allowed = decisions.filter((d) => d.allowed);
      assert.equal(allowed.length, 10);
      assert.deepEqual(allowed.map((d) => d.remaining).sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });

    test('exact when window/limit is not a whole number of milliseconds', async () => {
      const { store, key } = await fresh();
      const threePerSecond: RateLimitPolicy = { limit: 3, windowMs: 1000 }; // one every 333.3 ms
      for (let i = 0; i < 3; i++) assert.equal((await store.consume(key(), threePerSecond, T0)).allowed, true);
      const refused = await store.consume(key(), threePerSecond, T0);
      assert.deepEqual(refused, { allowed: false, remaining: 0, resetMs: 1000, retryAfterMs: 334 });
      assert.equal((await store.consume(key(), threePerSecond, T0 + 333)).allowed, false);
      assert.equal((await store.consume(key(), threePerSecond, T0 + 334)).allowed, true);
      // 1200 per minute, the default: a burst of exactly 1200.
      const policy: RateLimitPolicy = { limit: 1200, windowMs: 60_000 };
      let allowed = 0;
      for (let i = 0; i < 1300; i++) if ((await store.consume(key('big'), policy, T0)).allowed) allowed++;
      assert.equal(allowed, 1200);
    });

    test('a clock that steps back refills nothing', async () => {
      const { store, key } = await fresh();
      for (let i = 0; i < 5; i++) await store.consume(key(), fivePerMinute, T0);
      const earlier = await store.consume(key(), fivePerMinute, T0 - 3_600_000);
      assert.equal(earlier.allowed, false);
      assert.equal(earlier.retryAfterMs, 12_000);
    });

    test('a long idle key is as good as new', async () => {
      const { store, key } = await fresh();
      for (let i = 0; i < 5; i++) await store.consume(key(), fivePerMinute, T0);
      const decision = await store.consume(key(), fivePerMinute, T0 + 365 * 86_400_000);
      assert.deepEqual(decision, { allowed: true, remaining: 4, resetMs: 12_000, retryAfterMs: 0 });
    });

    test('a policy that is not whole positive numbers is refused', async () => {
      const { store, key } = await fresh();
      for (const policy of [{ limit: 0, windowMs: 1000 }, { limit: 1.5, windowMs: 1000 }, { limit: 5, windowMs: 0 }]) {
        await assert.rejects(store.consume(key(), policy, T0), RangeError);
      }
    });
  });
}
