// Geofence writes of one organization run one at a time (geofences/write-gate.ts): while one is in
// progress a few more wait their turn, and one past those answers 429 with Retry-After at once and
// stores nothing; another organization's writes are not held up. On PostgreSQL, where the test can
// keep a write in progress by holding the lock its transaction needs.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import type { LightMyRequestResponse } from 'fastify';
import { MAX_WAITING } from '../src/geofences/write-gate.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { TEST_DATABASE_URL, skipUnlessPostgres } from './helpers/postgres.ts';

/** A star of 5,000 thin spikes (10,000 positions): the costliest shape to check. */
function star(): { type: string; coordinates: number[][][] } {
  const ring = Array.from({ length: 9999 }, (_, i) => {
    const a = (2 * Math.PI * i) / 9999;
    const r = i % 2 === 0 ? 0.1 : 0.001;
    return [13.4 + r * Math.cos(a), 52.5 + r * Math.sin(a)];
  });
  ring.push(ring[0]!);
  return { type: 'Polygon', coordinates: [ring] };
}

describe('geofence writes one at a time per organization', { skip: await skipUnlessPostgres() }, () => {
  let ctx: TestApp;
  let holder: pg.Client;
  before(async () => {
    ctx = await createTestApp({ backend: 'postgres' });
    holder = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await holder.connect();
  });
  after(async () => {
    await holder?.end();
    await ctx?.close();
  });

  test('past the writes waiting behind one in progress, another answers 429 at once; other organizations go on', async () => {
    const key = `fleet:geofences:${ctx.organizationId}`;
    // The organization's geofence lock, which every creation's transaction takes first.
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
    const waitingOnLock = async () => (await holder.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
         AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`, [key])).rows[0]!.n;

    const geometry = star();
    const answered: LightMyRequestResponse[] = [];
    const writes = Array.from({ length: MAX_WAITING + 2 }, (_, i) =>
      ctx.request('POST', '/v2/geofences', { body: { name: `star ${i}`, geometry } }).then((res) => (answered.push(res), res)));
    // Until one is answered while the lock is held, or every write waits on the lock (no gate).
    while (answered.length === 0 && (await waitingOnLock()) < writes.length) await sleep(20);
    assert.equal(answered.length, 1, 'one write is answered while the others wait');
    assert.equal(answered[0]!.statusCode, 429, answered[0]!.body);
    assert.equal(answered[0]!.headers['retry-after'], '1');
    assert.equal(answered[0]!.json().code, 'rate-limited');
    // The write in progress reaches the lock once its geometry is checked (a moment on a busy machine).
    for (const deadline = Date.now() + 10_000; (await waitingOnLock()) === 0 && Date.now() < deadline;) await sleep(20);
    assert.equal(await waitingOnLock(), 1, 'the others wait for their turn, not on the store');

    const other = await ctx.otherOrganization();
    const theirs = await ctx.request('POST', '/v2/geofences', { key: other.key, body: { name: 'theirs', geometry } });
    assert.equal(theirs.statusCode, 201, 'another organization writes meanwhile');

    await holder.query('COMMIT');
    const statuses = (await Promise.all(writes)).map((res) => res.statusCode).sort();
    assert.deepEqual(statuses, [...Array<number>(MAX_WAITING + 1).fill(201), 429]);
    const list = (await ctx.request('GET', '/v2/geofences', { query: { limit: '1' } })).json<{ total: number }>();
    assert.equal(list.total, MAX_WAITING + 1, 'the refused write stored nothing');
  });
});
