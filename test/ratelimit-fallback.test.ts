// The fallback store's own logic against a scripted shared store (no Redis needed): which errors
// switch it to memory, how it goes back, and that a hanging shared store holds up one request at a
// time, not all of them. test/ratelimit-redis.test.ts runs it against a real Redis that is cut.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AppError } from '../src/errors.ts';
import { createFallbackRateLimitStore } from '../src/ratelimit/fallback.ts';
import { createMemoryRateLimitStore } from '../src/ratelimit/memory.ts';
import type { RateLimitDecision, RateLimitStore } from '../src/ratelimit/store.ts';
import { captureLogs } from './helpers/logs.ts';

const T0 = Date.parse('2026-11-22T08:00:00.000Z');
const policy = { limit: 5, windowMs: 60_000 };
const FROM_SHARED: RateLimitDecision = { allowed: true, remaining: 99, resetMs: 1, retryAfterMs: 0 };

/** A shared store whose next answers the test decides: 'up', 'down' (503 at once) or 'hang'. */
function scriptedShared() {
  let mode: 'up' | 'down' | 'hang' = 'up';
  const hanging: Array<() => void> = [];
  let calls = 0;
  const store: RateLimitStore = {
    async consume() {
      calls++;
      if (mode === 'up') return FROM_SHARED;
      if (mode === 'down') throw new AppError('service-unavailable', 'down');
      return new Promise<RateLimitDecision>((_, reject) => hanging.push(() => reject(new AppError('service-unavailable', 'timed out'))));
    },
    async close() {},
  };
  return {
    store,
    set: (next: typeof mode) => (mode = next),
    calls: () => calls,
    timeOut: () => hanging.splice(0).forEach((fail) => fail()),
  };
}

describe('fallback rate-limit store', () => {
  test('answers from memory while the shared store is down, warns once, and returns to it', async () => {
    const shared = scriptedShared();
    const logs = captureLogs();
    let now = T0;
    const store = createFallbackRateLimitStore({ shared: shared.store, logger: logs.logger, clock: { now: () => now } });
    assert.deepEqual(await store.consume('k', policy, T0), FROM_SHARED);
    shared.set('down');
    for (let i = 0; i < 3; i++) assert.equal((await store.consume('k', policy, T0)).remaining, 4 - i);
    assert.deepEqual(store.state(), { degraded: true, since: T0 });
    now = T0 + 5_000;
    shared.set('up');
    assert.deepEqual(await store.consume('k', policy, T0), FROM_SHARED);
    assert.equal(store.degraded(), false);
    const lines = logs.lines();
    assert.deepEqual(lines.map((l) => l.level), [40, 30]);
    assert.equal(lines[1]!.outageMs, 5_000);
    // A second outage is a second warning.
    shared.set('down');
    await store.consume('k', policy, T0);
    assert.equal(logs.lines().filter((l) => l.level === 40).length, 2);
    await store.close();
  });

  test('while degraded, a hanging shared store holds up one request at a time', async () => {
    const shared = scriptedShared();
    // The default local store sweeps paid-back keys on the clock it is given: the test's own, so a
    // sweep that comes while this runs (every 60 s of real time) finds nothing paid back either.
    const store = createFallbackRateLimitStore({ shared: shared.store, logger: captureLogs().logger, clock: { now: () => T0 } });
    shared.set('down');
    await store.consume('k', policy, T0);
    shared.set('hang');
    const probe = store.consume('k', policy, T0);
    const before = shared.calls();
    const others = await Promise.all(Array.from({ length: 10 }, () => store.consume('k', policy, T0)));
    assert.equal(shared.calls(), before, 'the others did not wait for the shared store');
    assert.ok(others.every((d) => d.remaining !== FROM_SHARED.remaining));
    shared.timeOut();
    assert.equal((await probe).allowed, false, 'the probe itself falls back to memory too (5 per minute, 12 used)');
    assert.equal(store.degraded(), true);
    await store.close();
  });

  test('errors other than an outage are passed on, and change nothing', async () => {
    const local = createMemoryRateLimitStore({ sweepIntervalMs: 0 });
    const broken: RateLimitStore = {
      consume: async () => {
        throw new Error('a bug');
      },
      close: async () => {},
    };
    const store = createFallbackRateLimitStore({ shared: broken, local, logger: captureLogs().logger });
    await assert.rejects(store.consume('k', policy, T0), /a bug/);
    assert.equal(store.degraded(), false);
    assert.equal(local.size(), 0);
    await store.close();
  });
});
