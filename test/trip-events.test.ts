// Live trip detection (docs/API.md "Trip events"): a synthetic day sent through the HTTP API in
// batches of many sizes gives, in the event feed, `trip.started` and `trip.ended` for exactly the
// trips that GET /v2/fleet/vehicles/{id}/trips computes over the same range, with the same times,
// distance and record count, on SQLite and on PostgreSQL, with the service restarted halfway
// through (the machine's state is read back from the database). On PostgreSQL, two apps on one
// schema given every batch at once each write each event once. Out-of-order records make no trip
// events.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { buildApp } from '../src/app.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import type { StoredRecord } from '../src/telemetry/store.ts';
import { type TestApp, createTestApp } from './helpers/app.ts';
import { type Leg, START, route } from './helpers/history.ts';
import { openAnotherNode, skipUnlessPostgres } from './helpers/postgres.ts';

const skipPostgres = await skipUnlessPostgres();

/**
 * A stop, then trip A (12 km through a two-minute pause, ended by a
 * 15-minute stop); a gap; a hop of 300 m in 29 s (not a trip); a stop; trip B (13.5 km, ended by a
 * gap of 5000 s); trip C (6 km, ended by a stop); a hop of 800 m in 39 s (too short in time); a
 * last stop, so every trip's end is certain before the data ends.
 */
const DAY: Leg[] = [
  { park: 400 }, { drive: 1200, mps: 10 }, { park: 120 }, { drive: 600, mps: 20 }, { park: 900 },
  { gap: 4000 }, { drive: 30, mps: 10 }, { park: 400 }, { drive: 900, mps: 15 },
  { gap: 5000 }, { drive: 600, mps: 10 }, { park: 400 }, { drive: 40, mps: 20 }, { park: 350 },
];
const TRIPS = 3;

/** Batches of many sizes (one record, a few, many; both of the embedded store's write paths), in order. */
function batches(records: readonly StoredRecord[]): StoredRecord[][] {
  const sizes = [1, 7, 250, 3, 1000, 40, 1, 500, 16, 2, 120];
  const out: StoredRecord[][] = [];
  for (let i = 0, k = 0; i < records.length; k++) {
    const size = sizes[k % sizes.length]!;
    out.push(records.slice(i, i + size));
    i += size;
  }
  return out;
}

const body = (batch: readonly StoredRecord[]) => ({ records: batch.map((r) => ({ timestamp: new Date(r.timestamp).toISOString(), data: r.data })) });

interface Envelope {
  id: string;
  type: string;
  occurredAt: string;
  vehicleId: string;
  data: Record<string, unknown>;
}

type Inject = (method: InjectOptions['method'], url: string, payload?: unknown) => Promise<{ statusCode: number; json(): any; body: string }>;

function injector(app: FastifyInstance, key: string): Inject {
  return (method, url, payload) => app.inject({
    method, url, headers: { authorization: `Bearer ${key}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });
}

async function send(inject: Inject, vehicleId: string, batch: readonly StoredRecord[]): Promise<void> {
  const res = await inject('POST', `/v2/telemetry/${vehicleId}`, body(batch));
  assert.equal(res.statusCode, 202, res.body);
}

/** The vehicle's trip events, following `next` to the end; on PostgreSQL until `count` are there. */
async function tripEvents(inject: Inject, vehicleId: string, count: number): Promise<Envelope[]> {
  for (const deadline = Date.now() + 15_000; ;) {
    const events: Envelope[] = [];
    let after = '';
    for (;;) {
      const res = await inject('GET', `/v2/events?vehicleId=${vehicleId}&types=trip.started,trip.ended&limit=1000${after}`);
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json() as { events: Envelope[]; next: string };
      events.push(...page.events);
      if (page.events.length === 0) break;
      after = `&after=${encodeURIComponent(page.next)}`;
    }
    if (events.length >= count || Date.now() > deadline) return events;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The report over the whole day, from an hour before the first record to an hour after the last. */
async function report(inject: Inject, vehicleId: string, records: readonly StoredRecord[]) {
  const from = new Date(records[0]!.timestamp - 3_600_000).toISOString();
  const to = new Date(records.at(-1)!.timestamp + 3_600_000).toISOString();
  const res = await inject('GET', `/v2/fleet/vehicles/${vehicleId}/trips?from=${from}&to=${to}`);
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as { trips: Record<string, unknown>[] }).trips;
}

/** The events are the report's trips: each started then ended, in order, with the same figures. */
function assertAgree(events: Envelope[], trips: Record<string, unknown>[], vehicleId: string): void {
  assert.equal(trips.length, TRIPS, `the report: ${JSON.stringify(trips)}`);
  assert.deepEqual(events.map((e) => e.type), trips.flatMap(() => ['trip.started', 'trip.ended']));
  for (const [i, trip] of trips.entries()) {
    const started = events[2 * i]!;
    const ended = events[2 * i + 1]!;
    assert.equal(started.vehicleId, vehicleId);
    assert.equal(started.occurredAt, trip.startedAt);
    assert.deepEqual(started.data, { startedAt: trip.startedAt, start: trip.start, driverId: trip.driverId });
    assert.equal(ended.occurredAt, trip.endedAt);
    assert.deepEqual(ended.data, trip, `trip ${i}: the event and the report agree on every field`);
  }
}

const DAY_RECORDS = (vehicleId: string) => route({ legs: DAY, vehicleId });

/** Sends the day to `vehicleId`, restarting the service after `restartAfter` batches; then compares. */
async function dayWithRestart(backend: 'sqlite' | 'postgres') {
  const t = await createTestApp({ backend });
  let app = t.app;
  let stores: Stores = t.stores;
  const opened: { app: FastifyInstance; stores: Stores }[] = [];
  try {
    const vehicleId = 'van-day';
    await t.registerVehicle(vehicleId);
    const records = DAY_RECORDS(vehicleId);
    const all = batches(records);
    // Halfway through trip B: the machine is in a trip already announced when the service stops.
    const middle = records.findIndex((r) => r.timestamp >= START + 8100 * 1000);
    let sent = 0;
    let restarted = false;
    for (const batch of all) {
      if (!restarted && sent >= middle) {
        await app.close();
        if (backend === 'sqlite') {
          await stores.close();
          stores = createSqliteStores(t.file);
        } else {
          stores = await openAnotherNode((t.stores as Stores & { schema: string }).schema);
        }
        app = await buildApp({ config: t.config, stores });
        await app.ready();
        opened.push({ app, stores });
        restarted = true;
        // Before the restart trip B had started and not ended.
        const before = await tripEvents(injector(app, t.adminKey), vehicleId, 3);
        assert.deepEqual(before.map((e) => e.type), ['trip.started', 'trip.ended', 'trip.started']);
      }
      await send(injector(app, t.adminKey), vehicleId, batch);
      sent += batch.length;
    }
    assert.ok(restarted);
    const inject = injector(app, t.adminKey);
    assertAgree(await tripEvents(inject, vehicleId, 2 * TRIPS), await report(inject, vehicleId, records), vehicleId);
  } finally {
    for (const o of opened) {
      await o.app.close();
      if (o.stores !== t.stores) await o.stores.close();
    }
    if (backend === 'sqlite') {
      if (opened.length === 0) await t.close();
      else rmSync(t.dir, { recursive: true, force: true });
    } else {
      await t.stores.close();
    }
  }
}

describe('live trip events agree with the trips report', () => {
  test('SQLite: a day in batches of many sizes, the service restarted in the middle of a trip', () => dayWithRestart('sqlite'));

  test('PostgreSQL: the same, reopened on the same schema', { skip: skipPostgres }, () => dayWithRestart('postgres'));

  test('out-of-order records make no trip events; FLEET_TRIP_EVENTS=false makes none at all', async () => {
    const t = await createTestApp();
    const off = await createTestApp({ env: { FLEET_TRIP_EVENTS: 'false' } });
    try {
      await t.registerVehicle('van-late');
      const records = DAY_RECORDS('van-late');
      // A record after the whole day first: every record of the day is then older than the newest.
      await send(injector(t.app, t.adminKey), 'van-late', [{ ...records.at(-1)!, timestamp: records.at(-1)!.timestamp + 60_000 }]);
      for (const batch of batches(records)) await send(injector(t.app, t.adminKey), 'van-late', batch);
      assert.deepEqual(await tripEvents(injector(t.app, t.adminKey), 'van-late', 0), []);
      // The report reads what is stored, in time order: it finds the trips.
      assert.equal((await report(injector(t.app, t.adminKey), 'van-late', records)).length, TRIPS);

      await off.registerVehicle('van-off');
      for (const batch of batches(DAY_RECORDS('van-off'))) await send(injector(off.app, off.adminKey), 'van-off', batch);
      assert.deepEqual(await tripEvents(injector(off.app, off.adminKey), 'van-off', 0), []);
      assert.equal((await report(injector(off.app, off.adminKey), 'van-off', DAY_RECORDS('van-off'))).length, TRIPS);
    } finally {
      await t.close();
      await off.close();
    }
  });
});

describe('a deleted vehicle takes its trip state with it', () => {
  for (const backend of ['sqlite', 'postgres'] as const) {
    test(`${backend}: registered again under the same id, its next drive is a new trip`, { skip: backend === 'postgres' && skipPostgres }, async () => {
      const t = await createTestApp({ backend });
      try {
        const inject = injector(t.app, t.adminKey);
        const records = DAY_RECORDS('van-again');
        // Into trip A (started, not ended), then deleted.
        const inTripA = records.filter((r) => r.timestamp < START + 1000 * 1000);
        await t.registerVehicle('van-again');
        for (const batch of batches(inTripA)) await send(inject, 'van-again', batch);
        assert.deepEqual((await tripEvents(inject, 'van-again', 1)).map((e) => e.type), ['trip.started']);
        assert.equal((await inject('DELETE', '/v2/fleet/vehicles/van-again')).statusCode, 204);
        // The same vehicle id again, its whole day from after those records: a state kept from
        // before would carry on trip A (no new start, and a trip of more records than the report's).
        await t.registerVehicle('van-again');
        const rest = records.filter((r) => r.timestamp >= START + 1000 * 1000);
        for (const batch of batches(rest)) await send(inject, 'van-again', batch);
        // The feed still holds the first vehicle's `trip.started` (its trip never ended).
        const [old, ...events] = await tripEvents(inject, 'van-again', 1 + 2 * TRIPS);
        assert.equal(old!.type, 'trip.started');
        assertAgree(events, await report(inject, 'van-again', rest), 'van-again');
      } finally {
        await t.close();
      }
    });
  }
});

describe('live trip events on two apps sharing one PostgreSQL schema', { skip: skipPostgres, timeout: 120_000 }, () => {
  const apps: TestApp[] = [];
  after(async () => {
    // The joined node first: closing the first one drops the schema.
    for (const app of apps.reverse()) await app.close();
  });

  test('every batch sent to both at once, the first to each in turn: each event once, the same trips as the report', async () => {
    const a = await createTestApp({ backend: 'postgres' });
    apps.push(a);
    const b = await createTestApp({ join: { stores: a.stores, adminKey: a.adminKey, organizationId: a.organizationId } });
    apps.push(b);
    const vehicleId = 'van-two-nodes';
    await a.registerVehicle(vehicleId);
    const records = DAY_RECORDS(vehicleId);
    const ia = injector(a.app, a.adminKey);
    const ib = injector(b.app, a.adminKey);
    for (const [i, batch] of batches(records).entries()) {
      const [first, second] = i % 2 === 0 ? [ia, ib] : [ib, ia];
      await Promise.all([send(first, vehicleId, batch), send(second, vehicleId, batch)]);
    }
    const events = await tripEvents(ia, vehicleId, 2 * TRIPS);
    // A moment more, so that an event written twice would show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const again = await tripEvents(ib, vehicleId, 2 * TRIPS);
    assert.deepEqual(again.map((e) => e.id), events.map((e) => e.id), 'both nodes read the same events');
    assertAgree(again, await report(ib, vehicleId, records), vehicleId);
  });

  test('batches of ten alternated, two at once (one to each): each trip starts and ends once', async () => {
    const [a, b] = apps as [TestApp, TestApp];
    const vehicleId = 'van-alternated';
    await a.registerVehicle(vehicleId);
    const records = DAY_RECORDS(vehicleId);
    const tens: StoredRecord[][] = [];
    for (let i = 0; i < records.length; i += 10) tens.push(records.slice(i, i + 10));
    const ia = injector(a.app, a.adminKey);
    const ib = injector(b.app, a.adminKey);
    // Two commits of the same vehicle at once: whichever judges second must find the state the
    // first left (a record older than the other's newest is then out of order and judged by
    // neither, as the rules do; no leg is short enough to be lost that way).
    for (let i = 0; i < tens.length; i += 2) {
      await Promise.all([send(ia, vehicleId, tens[i]!), ...(i + 1 < tens.length ? [send(ib, vehicleId, tens[i + 1]!)] : [])]);
    }
    const events = await tripEvents(ia, vehicleId, 2 * TRIPS);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const again = await tripEvents(ib, vehicleId, 2 * TRIPS);
    assert.deepEqual(again.map((e) => e.type), Array.from({ length: TRIPS }, () => ['trip.started', 'trip.ended']).flat());
    assert.equal(new Set(again.map((e) => e.id)).size, again.length);
    assert.deepEqual(again.map((e) => e.id), events.map((e) => e.id));
  });
});
