// Backing services restarting under load, in cluster mode: two real service processes on a
// PostgreSQL and a Redis of this test's own (the shared ones are never stopped), clients sending
// telemetry to both nodes all along. PostgreSQL crashes and comes back; then Redis is killed and
// comes back. Every answer must come within a bound and be 202, or 503 with Retry-After; every
// acknowledged record must be stored; both nodes must serve again without being restarted.
import assert from 'node:assert/strict';
import { generateApiKey } from '../src/auth/keys.ts';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './helpers/mqtt.ts';
import { privatePostgres, privateRedis, whyNoPrivateServers } from './helpers/private-servers.ts';
import { type RunningFleet, startFleet } from './helpers/process.ts';
import { skipUnless } from './helpers/skip.ts';

const skip = skipUnless(whyNoPrivateServers(), 'A private PostgreSQL and Redis', 'the restart-under-load suite',
  'Install PostgreSQL (initdb, pg_ctl) and redis-server');

const VEHICLES = Array.from({ length: 6 }, (_, i) => `load-${i + 1}`);
/** Longer than any answer may take: the database pool gives up on a connection after 5 s. */
const HANG_MS = 8_000;

test('PostgreSQL and Redis restart under load: 503s with Retry-After, never a hang, nothing acknowledged lost, recovery without a restart',
  { skip, timeout: 240_000 }, async (t) => {
    const postgres = await privatePostgres(t);
    const redis = await privateRedis(t);
    const key = generateApiKey();
    const env = {
      FLEET_DATABASE_URL: postgres.url,
      FLEET_REDIS_URL: redis.url,
      FLEET_ADMIN_KEY: key,
      // Counted in Redis (so its loss is felt) but never reached.
      FLEET_RATE_LIMIT_REQUESTS: '1000000',
      FLEET_LOG_LEVEL: 'info', // startFleet finds the port in the "Server listening" line
    };
    const node = async () => {
      const port = await freePort();
      return startFleet(t, { env: { ...env, FLEET_PORT: String(port), FLEET_PUBLIC_URL: `http://127.0.0.1:${port}` } });
    };
    // Both start at once on the empty database: exactly one creates the first organization.
    const nodes: RunningFleet[] = await Promise.all([node(), node()]);

    const call = (fleet: RunningFleet, method: string, pathname: string, body?: unknown) =>
      fetch(fleet.url + pathname, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(HANG_MS),
      });
    for (const vehicleId of VEHICLES) {
      const res = await call(nodes[0]!, 'POST', '/v2/fleet/vehicles', { vehicleId, type: 'van' });
      assert.equal(res.status, 201, await res.text());
    }

    // The load: clients sending batches of 10 records across the vehicles, to both nodes in turn.
    const T0 = Date.now() - 3_600_000;
    let counter = 0;
    const acked: { vehicleId: string; ts: number }[] = [];
    const counts = { accepted: 0, unavailable: 0, slowestMs: 0 };
    const failures: string[] = [];
    let stopped = false;
    async function client(index: number) {
      for (let round = 0; !stopped; round++) {
        const fleet = nodes[(index + round) % nodes.length]!;
        const records = Array.from({ length: 10 }, (_, i) => ({ vehicleId: VEHICLES[(index + round + i) % VEHICLES.length]!, ts: T0 + counter++ }));
        const started = performance.now();
        try {
          const res = await call(fleet, 'POST', '/v2/telemetry', {
            records: records.map((r) => ({ vehicleId: r.vehicleId, timestamp: new Date(r.ts).toISOString(), data: { speed: r.ts % 100 } })),
          });
          const text = await res.text();
          counts.slowestMs = Math.max(counts.slowestMs, performance.now() - started);
          if (res.status === 202) {
            acked.push(...records);
            counts.accepted++;
          } else if (res.status === 503 && res.headers.get('retry-after') !== null && res.headers.get('content-type') === 'application/problem+json') {
            counts.unavailable++;
            await sleep(50); // a client backs off (less than Retry-After asks, to keep the load on)
          } else {
            failures.push(`${res.status} ${res.headers.get('retry-after')} ${text}`);
          }
        } catch (error) {
          failures.push(`no answer within ${HANG_MS} ms from ${fleet.url}: ${String(error)}`);
        }
      }
    }
    const readiness = async (fleet: RunningFleet) => {
      const res = await call(fleet, 'GET', '/readyz');
      const body = (await res.json()) as { status?: string; checks?: Record<string, string> };
      return { code: res.status, status: body.status, retryAfter: res.headers.get('retry-after') };
    };
    async function until(what: string, predicate: () => Promise<boolean> | boolean, ms = 30_000) {
      const deadline = Date.now() + ms;
      while (!(await predicate())) {
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; failures: ${failures.slice(0, 5).join(' | ')}`);
        await sleep(50);
      }
    }
    const allNodes = async (predicate: (r: Awaited<ReturnType<typeof readiness>>) => boolean) =>
      (await Promise.all(nodes.map(readiness))).every(predicate);

    const clients = Array.from({ length: 4 }, (_, i) => client(i));
    try {
      await until('load flowing', () => counts.accepted >= 40);

      // PostgreSQL crashes (every backend killed), stays away a moment, and comes back.
      postgres.crash();
      const unavailableBefore = counts.unavailable;
      await until('both nodes not ready', () => allNodes((r) => r.code === 503 && r.retryAfter !== null), 15_000);
      await until('clients answered 503', () => counts.unavailable > unavailableBefore, 15_000);
      await sleep(1_000);
      postgres.start();
      await until('both nodes ready again', () => allNodes((r) => r.code === 200));
      const afterPostgres = counts.accepted;
      await until('ingestion resumed on both nodes', () => counts.accepted >= afterPostgres + 20);

      // Redis is killed (and everything it held lost), and comes back empty.
      await redis.kill();
      await until('both nodes degraded', () => allNodes((r) => r.code === 200 && r.status === 'degraded'), 15_000);
      const duringRedis = counts.accepted;
      await until('ingestion going on without Redis', () => counts.accepted >= duringRedis + 20, 15_000);
      await redis.start();
      await until('both nodes ready, Redis included', () => allNodes((r) => r.code === 200 && r.status === 'ready'));
      const afterRedis = counts.accepted;
      await until('ingestion going on after Redis', () => counts.accepted >= afterRedis + 20);
    } finally {
      stopped = true;
      await Promise.all(clients);
    }
    t.diagnostic(`${counts.accepted} requests acknowledged, ${counts.unavailable} answered 503; slowest answer ${Math.round(counts.slowestMs)} ms`);
    assert.deepEqual(failures, [], 'every answer was 202, or 503 with Retry-After, and came in time');

    const db = new pg.Client({ connectionString: postgres.url });
    await db.connect();
    try {
      const { rows } = await db.query<{ vehicle_id: string; ts: string }>('SELECT vehicle_id, ts FROM telemetry');
      const stored = new Set(rows.map((r) => `${r.vehicle_id}@${r.ts}`));
      const lost = acked.filter((r) => !stored.has(`${r.vehicleId}@${r.ts}`));
      assert.deepEqual(lost, [], `${lost.length} of ${acked.length} acknowledged records lost`);
    } finally {
      await db.end();
    }
    for (const fleet of nodes) assert.ok(fleet.running(), 'the node served throughout, never restarted');
  });
