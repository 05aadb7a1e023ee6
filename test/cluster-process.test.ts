// Two real service processes on different ports, sharing one PostgreSQL database and one Redis,
// as behind a load balancer. Redis is reached through a proxy the test can cut, to show what
// happens when it goes away and comes back.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { freePort } from './helpers/mqtt.ts';
import { waitUntil } from './helpers/wait.ts';
import { generateApiKey } from '../src/auth/keys.ts';
import { TEST_DATABASE_URL, adminQuery, skipUnlessPostgres } from './helpers/postgres.ts';
import { type RunningFleet, request, startFleet } from './helpers/process.ts';
import { redisProxy, skipUnlessRedis, testPrefix } from './helpers/redis.ts';
import { type StreamClient, attach, closeAll } from './helpers/streams.ts';

const skip = (await skipUnlessPostgres()) || (await skipUnlessRedis());
const ADMIN_KEY = generateApiKey();
// One unit back every 15 s: the rate-limit test spends the whole budget long before a unit returns,
// however slow the machine, and the admin key's requests over the suite stay well within it.
const RATE_LIMIT = 60;
const RATE_LIMIT_WINDOW_SECONDS = 900;
const TIMEOUT = 60_000;

let last = 0;
const stamp = () => new Date((last = Math.max(Date.now(), last + 1))).toISOString();

describe('two service processes on one PostgreSQL and one Redis', { skip, timeout: TIMEOUT }, () => {
  const database = `fleet_cluster_${process.pid}_${randomBytes(4).toString('hex')}`;
  const { prefix, cleanup } = testPrefix('cluster');
  let proxy: Awaited<ReturnType<typeof redisProxy>>;
  let a: RunningFleet;
  let b: RunningFleet;
  const clients: StreamClient[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  const json = async (fleet: RunningFleet, method: string, path: string, body?: unknown, key = ADMIN_KEY) => {
    const res = await request(fleet, method, path, { key, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text), headers: res.headers };
  };
  const ingest = (fleet: RunningFleet, vehicleId: string, data: Record<string, unknown>, timestamp = stamp()) =>
    json(fleet, 'POST', `/v2/telemetry/${vehicleId}`, { timestamp, data });

  before(async () => {
    await adminQuery(`CREATE DATABASE ${database}`);
    proxy = await redisProxy();
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${database}`;
    const env = {
      FLEET_DATABASE_URL: url.toString(),
      FLEET_REDIS_URL: proxy.url,
      FLEET_REDIS_PREFIX: prefix,
      FLEET_ADMIN_KEY: ADMIN_KEY,
      FLEET_RATE_LIMIT_REQUESTS: String(RATE_LIMIT),
      FLEET_RATE_LIMIT_WINDOW_SECONDS: String(RATE_LIMIT_WINDOW_SECONDS),
      FLEET_LOG_LEVEL: 'info',
      FLEET_STREAM_ALLOWED_ORIGINS: '*',
    };
    // Both start at once on the empty database: exactly one creates the first organization.
    // The processes live for the whole suite: their clean-up runs in the suite's after hook.
    const ctx = { after: (fn: () => Promise<void> | void) => void cleanups.push(async () => fn()) } as unknown as Parameters<typeof startFleet>[0];
    const node = async () => {
      const port = await freePort();
      return startFleet(ctx, { env: { ...env, FLEET_PORT: String(port), FLEET_PUBLIC_URL: `http://127.0.0.1:${port}` } });
    };
    [a, b] = await Promise.all([node(), node()]);
  });
  after(async () => {
    await closeAll(clients);
    await Promise.all([a, b].filter(Boolean).map((fleet) => fleet.stop('SIGTERM')));
    for (const fn of cleanups) await fn();
    await proxy?.close();
    await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await cleanup();
  });

  test('both start on one empty database: one first organization, created once', async () => {
    // Each logs which it was right after it starts listening.
    const said = (fleet: RunningFleet, start: string) => fleet.logs().some((l) => String(l.msg).startsWith(start));
    await waitUntil(() => [a, b].every((fleet) => said(fleet, 'empty store: created') || said(fleet, 'FLEET_ADMIN_KEY is only used')), 'both logs');
    const created = [a, b].filter((fleet) => fleet.logs().some((l) => String(l.msg).startsWith('empty store: created the first organization')));
    assert.equal(created.length, 1, [a, b].map((fleet) => fleet.stdout()).join('\n----\n'));
    const organizations = await json(b, 'GET', '/v2/organizations');
    assert.equal(organizations.status, 200, JSON.stringify(organizations.body));
    assert.equal(organizations.body.organizations.length, 1);
    for (const fleet of [a, b]) assert.deepEqual((await json(fleet, 'GET', '/readyz')).body.checks.cluster, 'up');
  });

  test('a vehicle registered on one node is read on the other; telemetry ingested on one reaches a WebSocket client of the other', async () => {
    assert.equal((await json(a, 'POST', '/v2/fleet/vehicles', { vehicleId: 'p-1', type: 'van' })).status, 201);
    assert.equal((await json(b, 'GET', '/v2/fleet/vehicles/p-1')).body.status, 'registered');
    const stream = await json(b, 'POST', '/v2/telemetry/p-1/stream', { events: ['location', 'status'], interval: 0 });
    assert.equal(stream.status, 201, JSON.stringify(stream.body));
    const client = await attach(stream.body.url, {}, clients);
    await client.next((m) => m.type === 'connected');
    assert.equal((await ingest(a, 'p-1', { speed: 21, location: { lat: 48.1, lng: 11.5 } })).status, 202);
    const location = await client.next((m) => m.type === 'location');
    assert.deepEqual(location.data, { location: { lat: 48.1, lng: 11.5 }, speed: 21 });
    await client.waitFor(() => client.all((m) => m.type === 'status' && m.data?.to === 'active')[0], 5_000, 'the activation');
    await waitUntil(async () => (await json(b, 'GET', '/v2/telemetry/p-1')).status === 200, 'latest state on B');
  });

  test('a client reconnecting to the other node resumes its stream with lastSeq, missing nothing', async () => {
    assert.equal((await json(a, 'POST', '/v2/fleet/vehicles', { vehicleId: 'p-3', type: 'van' })).status, 201);
    const stream = (await json(a, 'POST', '/v2/telemetry/p-3/stream', { events: ['location'], interval: 0 })).body;
    const first = await attach(stream.url, {}, clients);
    await first.next((m) => m.type === 'connected');
    await ingest(b, 'p-3', { speed: 1 });
    const seen = await first.next((m) => m.type === 'location');
    await first.close();
    await ingest(b, 'p-3', { speed: 2 });
    await ingest(a, 'p-3', { speed: 3 });
    const ticket = (await json(b, 'POST', `/v2/streams/${stream.streamId}/tickets`)).body;
    const second = await attach(`${ticket.url}&lastSeq=${seen.seq}`, {}, clients);
    assert.equal((await second.next((m) => m.type === 'connected')).resumed, true);
    const replayed = await second.take(2, (m) => m.type === 'location');
    assert.deepEqual(replayed.map((m) => [m.seq, m.data?.speed]), [[seen.seq! + 1, 2], [seen.seq! + 2, 3]]);
  });

  test('the rate limit is one budget across both nodes', async () => {
    const key = (await json(a, 'POST', '/v2/api-keys', { name: 'limited', scopes: ['fleet:read'] })).body.key as string;
    const statuses: number[] = [];
    for (let i = 0; i < RATE_LIMIT; i++) statuses.push((await request(i % 2 === 0 ? a : b, 'GET', '/v2/fleet/vehicles', { key })).status);
    assert.deepEqual(new Set(statuses), new Set([200]));
    for (const fleet of [a, b]) {
      const res = await request(fleet, 'GET', '/v2/fleet/vehicles', { key });
      assert.equal(res.status, 429, 'the budget spent on both nodes together is gone on each');
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
    }
  });

  test('a key revoked on one node is refused on the other at once', async () => {
    const created = (await json(a, 'POST', '/v2/api-keys', { name: 'revoked', scopes: ['fleet:read'] })).body;
    assert.equal((await request(b, 'GET', '/v2/fleet/vehicles', { key: created.key })).status, 200, 'B caches the key');
    assert.equal((await json(a, 'DELETE', `/v2/api-keys/${created.id}`)).status, 204);
    // One bus hop; far below the 5 s B would otherwise keep the key cached.
    await waitUntil(async () => (await request(b, 'GET', '/v2/fleet/vehicles', { key: created.key })).status === 401, 'refused on B', 1_000);
  });

  test('Redis lost: both nodes keep ingesting and streaming their own events, /readyz degraded, rate limits per node; back: all recovers by itself', async () => {
    assert.equal((await json(a, 'POST', '/v2/fleet/vehicles', { vehicleId: 'p-2', type: 'van' })).status, 201);
    const onB = await json(b, 'POST', '/v2/telemetry/p-2/stream', { events: ['location'], interval: 0 });
    const client = await attach(onB.body.url, {}, clients);
    await client.next((m) => m.type === 'connected');
    const accepted: string[] = [];

    proxy.cut();
    try {
      for (const fleet of [a, b]) {
        await waitUntil(async () => (await json(fleet, 'GET', '/readyz')).body.status === 'degraded', 'degraded', 10_000);
        assert.match((await json(fleet, 'GET', '/readyz')).body.checks.cluster, /^degraded: /);
      }
      for (const [fleet, speed] of [[a, 1], [b, 2], [a, 3]] as const) {
        const timestamp = stamp();
        const res = await ingest(fleet, 'p-2', { speed }, timestamp);
        assert.equal(res.status, 202, 'ingestion does not need Redis');
        accepted.push(timestamp);
      }
      // B's own record reaches B's client; A's cannot cross without the bus.
      assert.equal((await client.next((m) => m.type === 'location')).data?.speed, 2);
      assert.deepEqual(await client.quiet(300, (m) => m.type === 'location'), []);
      // Rate limits fall back to each node's own count: requests are served, not refused.
      assert.equal((await request(b, 'GET', '/v2/fleet/vehicles', { key: ADMIN_KEY })).status, 200);
    } finally {
      proxy.restore();
    }

    for (const fleet of [a, b]) {
      await waitUntil(async () => (await json(fleet, 'GET', '/readyz')).body.status === 'ready', 'ready again', 15_000);
    }
    // B caught up from the database: its latest state has A's newest record, and the stream got a snapshot.
    await waitUntil(async () => (await json(b, 'GET', '/v2/telemetry/p-2')).body.data.speed === 3, 'B caught up', 10_000);
    await client.next((m) => m.type === 'location' && m.data?.speed === 3, 10_000);
    // Events cross again.
    assert.equal((await ingest(a, 'p-2', { speed: 4 })).status, 202);
    // (A snapshot may come more than once after an outage: each resync sends one.)
    await client.next((m) => m.type === 'location' && m.data?.speed === 4);
    // Nothing acknowledged was lost.
    const history = await json(a, 'GET', '/v2/telemetry/p-2/history?limit=100');
    const stored = new Set(history.body.records.map((r: { timestamp: string }) => r.timestamp));
    for (const timestamp of accepted) assert.ok(stored.has(timestamp), `${timestamp} was stored`);
  });
});
