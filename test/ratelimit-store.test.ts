// The in-process rate-limit store: the shared contract, then what only memory has to prove (its
// bounds). A Redis store's test file runs the same contract:
//   rateLimitStoreContract('redis', () => createRedisRateLimitStore(...))
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { policyUnits } from '../src/ratelimit/gcra.ts';
import { createMemoryRateLimitStore } from '../src/ratelimit/memory.ts';
import { rateLimitStoreContract } from './contract/ratelimit-store.ts';

export { rateLimitStoreContract };

rateLimitStoreContract('memory', () => createMemoryRateLimitStore({ sweepIntervalMs: 0 }));

const T0 = Date.parse('2026-11-22T08:00:00.000Z');
const policy = { limit: 5, windowMs: 60_000 };

describe('memory store bounds', () => {
  test('never holds more than maxKeys; the least recently used key goes first', async () => {
    const store = createMemoryRateLimitStore({ maxKeys: 3, sweepIntervalMs: 0 });
    for (const key of ['a', 'b', 'c']) for (let i = 0; i < 5; i++) await store.consume(key, policy, T0);
    await store.consume('a', policy, T0); // a is now the most recent; b the least
    await store.consume('d', policy, T0);
    assert.equal(store.size(), 3);
    assert.equal((await store.consume('b', policy, T0)).remaining, 4, 'b was forgotten, so it starts afresh');
    assert.equal(store.size(), 3);
    assert.equal((await store.consume('a', policy, T0)).allowed, false, 'a, recently used, is still limited');
    await store.close();
  });

  test('a full store drops paid-back keys before forgetting one that still owes', async () => {
    const store = createMemoryRateLimitStore({ maxKeys: 2, sweepIntervalMs: 0 });
    for (let i = 0; i < 5; i++) await store.consume('busy', policy, T0); // owes until T0 + 60 s
    await store.consume('idle', policy, T0 + 1_000); // paid back at T0 + 13 s
    await store.consume('new', policy, T0 + 20_000);
    // busy, the least recent, paid back 20 s of its 60 s debt: one more request, none after it.
    assert.equal((await store.consume('busy', policy, T0 + 20_000)).remaining, 0, 'busy still owed, so it was kept');
    assert.equal(store.size(), 2);
    await store.close();
  });

  test('paid-back keys are swept, lazily as requests come and by sweep()', async () => {
    const store = createMemoryRateLimitStore({ sweepIntervalMs: 0 });
    for (let i = 0; i < 100; i++) await store.consume(`k${i}`, policy, T0);
    assert.equal(store.size(), 100);
    assert.equal(store.sweep(T0 + 11_999), 0);
    // Each request drops a few paid-back keys from the least recent end.
    for (let i = 0; i < 10; i++) await store.consume('other', policy, T0 + 12_000);
    assert.ok(store.size() < 100 - 10, `lazy sweep: ${store.size()} keys left`);
    const before = store.size();
    assert.equal(store.sweep(T0 + 12_000), before - 1);
    assert.equal(store.size(), 1);
    await store.close();
  });

  test('the background sweep uses the clock and does not hold the process open', async () => {
    let now = T0;
    const store = createMemoryRateLimitStore({ clock: { now: () => now }, sweepIntervalMs: 5 });
    await store.consume('k', policy, T0);
    now = T0 + 60_000;
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(store.size(), 0);
    await store.close();
  });

  test('refuses a policy that exact integer counting cannot represent', () => {
    assert.throws(() => policyUnits({ limit: 999_999_937, windowMs: 86_400_000 }), RangeError);
    assert.doesNotThrow(() => policyUnits({ limit: 1_000_000_000, windowMs: 86_400_000 }));
  });
});
