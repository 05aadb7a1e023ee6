// The SDK's retries against real refusals: the service's own rate limit (429 with Retry-After) and
// its database going away (PostgreSQL behind a proxy the test cuts: 503 with Retry-After). What is
// repeated follows the rule in sdk/src/retry.ts: 429 always, 503 only when repeating is safe.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFleetClient, ok, parseRetryAfter, type FleetClientOptions } from '../sdk/src/index.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/oauth.ts';
import { databaseProxy, skipUnlessPostgres } from './helpers/postgres.ts';
import { DEFAULT_RETRY, isRepeatableTelemetry, retryDelay } from '../sdk/src/retry.ts';

const skipPostgres = await skipUnlessPostgres();

/** A client whose every attempt is recorded: [method, status, ms since the call began]. */
function recordingClient(baseUrl: string, apiKey: string, retry?: FleetClientOptions['retry']) {
  const attempts: Array<{ method: string; status: number }> = [];
  const client = createFleetClient({
    baseUrl, apiKey, ...(retry === undefined ? {} : { retry }),
    fetch: async (request, init) => {
      const response = await fetch(request, init);
      attempts.push({ method: request.method, status: response.status });
      return response;
    },
  });
  return { client, attempts, statuses: () => attempts.map((a) => a.status) };
}

async function listening(ctx: TestApp): Promise<string> {
  const port = await freePort();
  await ctx.app.listen({ host: '127.0.0.1', port });
  return `http://127.0.0.1:${port}`;
}

test('Retry-After: delay-seconds and HTTP dates', () => {
  const now = Date.parse('2026-11-25T10:00:00.000Z');
  assert.equal(parseRetryAfter('3', now), 3000);
  assert.equal(parseRetryAfter(' 0 ', now), 0);
  assert.equal(parseRetryAfter('Wed, 25 Nov 2026 10:00:07 GMT', now), 7000);
  assert.equal(parseRetryAfter('Wed, 25 Nov 2026 09:59:00 GMT', now), 0, 'a date in the past: at once');
  assert.equal(parseRetryAfter(null, now), undefined);
  assert.equal(parseRetryAfter('-1', now), undefined);
  assert.equal(parseRetryAfter('soon', now), undefined);
});

test('the wait: Retry-After plus at most 10 % (1 s at most) of jitter, else exponential with jitter, bounded', () => {
  const answer = (retryAfter?: string) => new Response(null, { status: 429, headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter } });
  const settings = { ...DEFAULT_RETRY, baseDelayMs: 100, maxDelayMs: 30_000 };
  assert.equal(retryDelay(answer('2'), 1, settings, () => 0), 2000, 'never before Retry-After');
  assert.equal(retryDelay(answer('2'), 1, settings, () => 1), 2200);
  assert.equal(retryDelay(answer('20'), 1, settings, () => 1), 21_000);
  assert.equal(retryDelay(answer('31'), 1, settings, () => 0), undefined, 'longer than maxDelayMs: not waited out');
  assert.deepEqual([1, 2, 3].map((n) => retryDelay(answer(), n, settings, () => 0)), [50, 100, 200]);
  assert.deepEqual([1, 2, 3].map((n) => retryDelay(answer(), n, settings, () => 1)), [100, 200, 400]);
});

test('telemetry is safe to repeat only when every record carries its timestamp', () => {
  const post = (path: string) => new Request(`http://fleet${path}`, { method: 'POST' });
  const at = '2026-11-25T08:00:00.000Z';
  assert.equal(isRepeatableTelemetry(post('/v2/telemetry/van-1'), JSON.stringify({ timestamp: at, data: { speed: 1 } })), true);
  assert.equal(isRepeatableTelemetry(post('/v2/telemetry/van-1'), JSON.stringify({ data: { speed: 1 } })), false);
  assert.equal(isRepeatableTelemetry(post('/v2/telemetry'), JSON.stringify({ records: [{ vehicleId: 'a', timestamp: at, data: {} }] })), true);
  assert.equal(isRepeatableTelemetry(post('/v2/telemetry'), JSON.stringify({ records: [{ vehicleId: 'a', timestamp: at, data: {} }, { vehicleId: 'b', data: {} }] })), false);
  assert.equal(isRepeatableTelemetry(post('/v2/telemetry/stream'), JSON.stringify({ timestamp: at, events: ['location'] })), false, 'creating a stream');
  assert.equal(isRepeatableTelemetry(post('/v2/fleet/vehicles'), JSON.stringify({ timestamp: at })), false);
});

describe('429 from the rate limit (2 requests per 2 s: one more each second)', () => {
  let ctx: TestApp;
  let baseUrl: string;
  before(async () => {
    ctx = await createTestApp({ env: { FLEET_RATE_LIMIT_REQUESTS: '2', FLEET_RATE_LIMIT_WINDOW_SECONDS: '2' } });
    baseUrl = await listening(ctx);
  });
  after(() => ctx.close());

  test('a refused request is sent again once Retry-After has passed, and succeeds', async () => {
    const key = await ctx.keyWith(['fleet:read', 'fleet:write']);
    const { client, statuses } = recordingClient(baseUrl, key);
    ok(await client.GET('/v2/fleet/vehicles', {}));
    ok(await client.GET('/v2/fleet/vehicles', {}));
    const started = Date.now();
    const third = await client.GET('/v2/fleet/vehicles', {});
    const waited = Date.now() - started;
    assert.equal(third.response.status, 200);
    assert.deepEqual(statuses(), [200, 200, 429, 200]);
    assert.ok(waited >= 1000, `retried after ${waited} ms, before Retry-After: 1`);
    assert.ok(waited < 3000, `waited ${waited} ms`);
  });

  test('a POST refused with 429 did nothing, so it is sent again: the vehicle is created once', async () => {
    const key = await ctx.keyWith(['fleet:read', 'fleet:write']);
    const { client, attempts } = recordingClient(baseUrl, key);
    ok(await client.GET('/v2/fleet/vehicles', {}));
    ok(await client.GET('/v2/fleet/vehicles', {}));
    const created = await client.POST('/v2/fleet/vehicles', { body: { vehicleId: 'after-429', type: 'van' } });
    assert.equal(created.response.status, 201, JSON.stringify(created.error));
    assert.deepEqual(attempts.slice(2), [{ method: 'POST', status: 429 }, { method: 'POST', status: 201 }]);
  });

  test('bounded: a wait longer than maxDelayMs, or no attempts left, returns the 429 at once', async () => {
    const key = await ctx.keyWith(['fleet:read']);
    const impatient = recordingClient(baseUrl, key, { maxDelayMs: 500 });
    ok(await impatient.client.GET('/v2/fleet/vehicles', {}));
    ok(await impatient.client.GET('/v2/fleet/vehicles', {}));
    const started = Date.now();
    const refused = await impatient.client.GET('/v2/fleet/vehicles', {});
    assert.equal(refused.response.status, 429);
    assert.equal(refused.error?.code, 'rate-limited');
    assert.ok(Date.now() - started < 500);
    assert.deepEqual(impatient.statuses(), [200, 200, 429]);

    const once = recordingClient(baseUrl, key, { attempts: 1 });
    assert.equal((await once.client.GET('/v2/fleet/vehicles', {})).response.status, 429);
    assert.deepEqual(once.statuses(), [429]);

    const off = recordingClient(baseUrl, key, false);
    assert.equal((await off.client.GET('/v2/fleet/vehicles', {})).response.status, 429);
    assert.deepEqual(off.statuses(), [429]);
  });
});

describe('503 while the database is away (Retry-After: 5)', { skip: skipPostgres }, () => {
  let ctx: TestApp;
  let proxy: Awaited<ReturnType<typeof databaseProxy>>;
  let baseUrl: string;
  before(async () => {
    proxy = await databaseProxy();
    ctx = await createTestApp({ backend: 'postgres', databaseUrl: proxy.url, env: { FLEET_RATE_LIMIT_REQUESTS: '0' } });
    await ctx.registerVehicle('pg-van');
    baseUrl = await listening(ctx);
  });
  after(async () => {
    await ctx?.close();
    await proxy?.close();
  });

  /** Cuts the database, runs `call`, and brings the database back after `backAfterMs`. */
  async function duringOutage<T>(call: () => Promise<T>, backAfterMs = 1000): Promise<{ result: T; ms: number }> {
    proxy.cut();
    const back = new Promise<void>((resolve) => setTimeout(() => {
      proxy.restore();
      resolve();
    }, backAfterMs));
    const started = Date.now();
    try {
      const result = await call();
      return { result, ms: Date.now() - started };
    } finally {
      await back;
    }
  }

  test('a GET is sent again after Retry-After and gets its answer', async () => {
    const { client, statuses } = recordingClient(baseUrl, ctx.adminKey);
    const { result, ms } = await duringOutage(() => client.GET('/v2/fleet/vehicles/{id}', { params: { path: { id: 'pg-van' } } }));
    assert.equal(result.response.status, 200, JSON.stringify(result.error));
    assert.deepEqual(statuses(), [503, 200]);
    assert.ok(ms >= 5000, `retried after ${ms} ms, before Retry-After: 5`);
  });

  test('telemetry with timestamps is sent again (a repeat would be a duplicate); without, it is not', async () => {
    const { client, statuses } = recordingClient(baseUrl, ctx.adminKey);
    const records = [0, 1, 2].map((i) => ({ timestamp: new Date(Date.now() - 60_000 + i * 1000).toISOString(), data: { speed: 10 + i } }));
    const { result } = await duringOutage(() => client.POST('/v2/telemetry/{vehicleId}', { params: { path: { vehicleId: 'pg-van' } }, body: { records } }));
    assert.equal(result.response.status, 202, JSON.stringify(result.error));
    assert.deepEqual(statuses(), [503, 202]);
    const stored = [];
    for await (const record of client.paginate.history('pg-van')) stored.push(record.data.speed);
    assert.deepEqual(stored, [10, 11, 12], 'each record stored once');

    const untimed = recordingClient(baseUrl, ctx.adminKey);
    const { result: refused } = await duringOutage(() => untimed.client.POST('/v2/telemetry/{vehicleId}', {
      params: { path: { vehicleId: 'pg-van' } }, body: { data: { speed: 99 } },
    }));
    assert.equal(refused.response.status, 503);
    assert.equal(refused.error?.code, 'service-unavailable');
    assert.deepEqual(untimed.statuses(), [503], 'the time received would differ on a repeat: not sent again');
  });

  test('a POST that creates something is not sent again after a 503', async () => {
    const { client, statuses } = recordingClient(baseUrl, ctx.adminKey);
    const { result, ms } = await duringOutage(() => client.POST('/v2/fleet/vehicles', { body: { vehicleId: 'pg-new', type: 'car' } }));
    assert.equal(result.response.status, 503);
    assert.deepEqual(statuses(), [503]);
    assert.ok(ms < 5000, `answered after ${ms} ms: it waited for a retry`);
  });
});
