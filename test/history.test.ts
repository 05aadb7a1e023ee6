// Trips, stops and aggregates over HTTP on both stores (docs/API.md "History: trips, stops,
// aggregates, exports"): known answers on a synthetic day, the report agreeing with the trip
// machine fed in chunks, and bad input answered 400 or 404 without anything stored.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_TRIP_SETTINGS, type TripEvent, type TripState, advance, finish, initialTripState } from '../src/history/trips.ts';
import type { StoredRecord } from '../src/telemetry/store.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { START, at, latAt, route } from './helpers/history.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

const DAY = { from: at(0), to: at(86_400) };

async function ingest(ctx: TestApp, vehicleId: string, records: readonly StoredRecord[]) {
  for (let i = 0; i < records.length; i += 1000) {
    const body = { records: records.slice(i, i + 1000).map((r) => ({ timestamp: new Date(r.timestamp).toISOString(), data: r.data })) };
    const res = await ctx.request('POST', `/v2/telemetry/${vehicleId}`, { body });
    assert.equal(res.statusCode, 202, res.body);
  }
}

function assertProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): any }, status: number, code: string, path?: string) {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  assert.equal(res.json().code, code);
  if (path !== undefined) assert.ok(res.json().errors.some((e: { path: string }) => e.path === path), JSON.stringify(res.json().errors));
}

function suite(backend: 'sqlite' | 'postgres') {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ backend });
    await ctx.registerVehicle('drive');
    await ctx.registerVehicle('odo');
    await ctx.registerVehicle('quiet');
    await ingest(ctx, 'drive', route());
    await ingest(ctx, 'odo', route({ odometerFactor: 1.01 }));
  });
  after(async () => {
    await ctx?.close();
  });

  const get = (url: string, query: Record<string, string>, key?: string) => ctx.request('GET', url, { query, key });

  test('trips and stops of the day: known distance, durations and places', async () => {
    const trips = (await get('/v2/fleet/vehicles/drive/trips', DAY)).json();
    assert.equal(trips.vehicleId, 'drive');
    assert.equal(trips.trips.length, 1);
    const [trip] = trips.trips;
    assert.deepEqual([trip.startedAt, trip.endedAt, trip.durationSeconds, trip.records, trip.maxSpeed], [at(600), at(2519), 1919, 1920, 72]);
    assert.ok(Math.abs(trip.distanceMeters - 23_990) <= 23_990 * 0.005, `distance ${trip.distanceMeters}`);
    // Both to the thousandth.
    assert.ok(Math.abs(trip.averageSpeed - (trip.distanceMeters / 1919) * 3.6) <= 0.0005, `${trip.averageSpeed}`);
    assert.deepEqual([trip.start, trip.end], [{ lat: latAt(10), lng: 13.4 }, { lat: latAt(24_000), lng: 13.4 }]);

    const stops = (await get('/v2/fleet/vehicles/drive/stops', DAY)).json();
    assert.deepEqual(stops, {
      vehicleId: 'drive',
      stops: [
        { startedAt: at(0), endedAt: at(599), durationSeconds: 599, location: { lat: latAt(0), lng: 13.4 } },
        { startedAt: at(2520), endedAt: at(3419), durationSeconds: 899, location: { lat: latAt(24_000), lng: 13.4 } },
        { startedAt: at(7449), endedAt: at(7848), durationSeconds: 399, location: { lat: latAt(24_300), lng: 13.4 } },
      ],
    });
  });

  test('the settings are query parameters; a range starting inside a trip cuts it there', async () => {
    const split = (await get('/v2/fleet/vehicles/drive/trips', { ...DAY, minStopSeconds: '100' })).json();
    assert.deepEqual(split.trips.map((t: { startedAt: string; endedAt: string }) => [t.startedAt, t.endedAt]), [[at(600), at(1799)], [at(1920), at(2519)]]);
    const all = (await get('/v2/fleet/vehicles/drive/trips', { ...DAY, minTripMeters: '0', minTripSeconds: '0', maxGapSeconds: '5000' })).json();
    assert.deepEqual(all.trips.map((t: { startedAt: string }) => t.startedAt), [at(600), at(7419)], 'the gap is no gap at 5000 s');
    const stops = (await get('/v2/fleet/vehicles/drive/stops', { ...DAY, minStopSeconds: '100' })).json();
    assert.deepEqual(stops.stops.map((x: { durationSeconds: number }) => x.durationSeconds), [599, 119, 899, 399]);
    const cut = (await get('/v2/fleet/vehicles/drive/trips', { from: at(1000), to: at(2000) })).json();
    assert.deepEqual(cut.trips.map((t: { startedAt: string; endedAt: string; records: number }) => [t.startedAt, t.endedAt, t.records]), [[at(1000), at(1999), 1000]]);
  });

  test('with an odometer on the first and last records, the distance is its difference', async () => {
    const [trip] = (await get('/v2/fleet/vehicles/odo/trips', DAY)).json().trips;
    assert.ok(Math.abs(trip.distanceMeters - 23_990 * 1.01) < 1e-6, `distance ${trip.distanceMeters}`);
  });

  test('the report agrees with the trip machine fed the same records in chunks, its state kept as JSON', async () => {
    const records = route();
    let stored = JSON.stringify(initialTripState());
    const events: TripEvent[] = [];
    for (let i = 0; i < records.length; i += 97) {
      let state = JSON.parse(stored) as TripState;
      for (const record of records.slice(i, i + 97)) {
        const step = advance(state, record, DEFAULT_TRIP_SETTINGS);
        state = step.state;
        events.push(...step.events);
      }
      stored = JSON.stringify(state);
    }
    events.push(...finish(JSON.parse(stored) as TripState).events);
    const iso = <T extends { startedAt: number; endedAt: number }>(x: T) => ({ ...x, startedAt: new Date(x.startedAt).toISOString(), endedAt: new Date(x.endedAt).toISOString() });
    // No driver was assigned: each trip's driverId is null.
    const trips = events.flatMap((e) => (e.type === 'trip.ended' ? [{ ...iso(e.trip), driverId: null }] : []));
    const stops = events.flatMap((e) => (e.type === 'stop.ended' ? [iso(e.stop)] : []));
    assert.ok(trips.length > 0 && stops.length > 0);
    assert.deepEqual((await get('/v2/fleet/vehicles/drive/trips', DAY)).json().trips, trips);
    assert.deepEqual((await get('/v2/fleet/vehicles/drive/stops', DAY)).json().stops, stops);
  });

  test('aggregates: aligned buckets, every record counted, empty buckets left out, only the fields asked for', async () => {
    const res = await get('/v2/telemetry/drive/aggregates', { ...DAY, bucket: '600', fields: 'speed' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.bucket, 600);
    // Buckets of 600 s from START (on the hour): 0-599 parked, 600-1199 and 1200-1799 at 36 km/h,
    // 1800-2399 a 120 s pause then 72 km/h, ..., nothing from 3420 to 7418 (the gap).
    assert.deepEqual(body.buckets.slice(0, 4), [
      { start: at(0), count: 600, speed: { min: 0, max: 0, avg: 0, last: 0 } },
      { start: at(600), count: 600, speed: { min: 36, max: 36, avg: 36, last: 36 } },
      { start: at(1200), count: 600, speed: { min: 36, max: 36, avg: 36, last: 36 } },
      { start: at(1800), count: 600, speed: { min: 0, max: 72, avg: (480 * 72) / 600, last: 72 } },
    ]);
    assert.deepEqual(body.buckets.map((b: { start: string }) => b.start), [0, 600, 1200, 1800, 2400, 3000, 7200, 7800].map(at));
    assert.equal(body.buckets.reduce((n: number, b: { count: number }) => n + b.count, 0), route().length);
    const odo = (await get('/v2/telemetry/odo/aggregates', { from: at(600), to: at(1200), bucket: '86400' })).json();
    assert.deepEqual(Object.keys(odo.buckets[0]).sort(), ['count', 'odometer', 'speed', 'start'], 'fields no record has are left out');
    assert.equal(odo.buckets[0].start, new Date(Math.floor(START / 86_400_000) * 86_400_000).toISOString());
    assert.ok(Math.abs(odo.buckets[0].odometer.last - (1000 + (6000 * 1.01) / 1000)) < 1e-9);
    const none = (await get('/v2/telemetry/quiet/aggregates', { ...DAY, bucket: '60' })).json();
    assert.deepEqual(none, { vehicleId: 'quiet', bucket: 60, buckets: [] });
  });

  test('bad input answers 400 with a problem naming the parameter', async () => {
    const trips = '/v2/fleet/vehicles/drive/trips';
    const aggregates = '/v2/telemetry/drive/aggregates';
    const cases: Array<[string, Record<string, string>, string]> = [
      [trips, { from: at(0), to: at(32 * 86_400) }, '/to'],
      ['/v2/fleet/vehicles/drive/stops', { from: at(0), to: at(31 * 86_400 + 1) }, '/to'],
      [trips, { from: at(10), to: at(10) }, '/from'],
      [trips, { from: at(10), to: at(5) }, '/from'],
      [trips, { to: at(5) }, ''],
      [trips, { ...DAY, from: 'yesterday' }, '/from'],
      [trips, { ...DAY, minStopSeconds: '-1' }, '/minStopSeconds'],
      [trips, { ...DAY, maxGapSeconds: 'abc' }, '/maxGapSeconds'],
      [trips, { ...DAY, minTripMeters: 'Infinity' }, '/minTripMeters'],
      [trips, { ...DAY, minStopSeconds: '-Infinity' }, '/minStopSeconds'],
      // The same check guards every query: a page size of Infinity is no page size.
      ['/v2/telemetry/drive/history', { limit: 'Infinity' }, '/limit'],
      [trips, { ...DAY, minTripSeconds: '1.5' }, '/minTripSeconds'],
      [trips, { ...DAY, color: 'red' }, ''],
      [aggregates, { ...DAY }, ''],
      [aggregates, { ...DAY, bucket: '0' }, '/bucket'],
      [aggregates, { ...DAY, bucket: '86401' }, '/bucket'],
      [aggregates, { from: at(0), to: at(10_001), bucket: '1' }, '/bucket'],
      [aggregates, { ...DAY, bucket: '60', fields: 'speed,location' }, '/fields'],
      [aggregates, { ...DAY, bucket: '60', fields: 'speed,,battery' }, '/fields'],
      ['/v2/telemetry/drive/export', { ...DAY, format: 'xml' }, '/format'],
      ['/v2/telemetry/drive/export', { from: at(5), to: at(1) }, '/from'],
    ];
    for (const [url, query, path] of cases) {
      const res = await get(url, query);
      assert.equal(res.statusCode, 400, `${url} ${JSON.stringify(query)}: ${res.body}`);
      assertProblem(res, 400, 'validation-failed', path === '' ? undefined : path);
    }
    const fields = await get(aggregates, { ...DAY, bucket: '60', fields: 'speed,location' });
    assert.match(fields.json().detail, /allowed: speed, battery, temperature, odometer, heading/);
    const exact = await get(aggregates, { from: at(0), to: at(10_000), bucket: '1' });
    assert.equal(exact.statusCode, 200, '10,000 buckets is within the limit');
    const month = await get(trips, { from: at(0), to: at(31 * 86_400) });
    assert.equal(month.statusCode, 200, '31 days is within the limit');
  });

  test('an unknown vehicle, or another organization\'s, answers 404 on every history route', async () => {
    const other = await ctx.otherOrganization();
    for (const [url, extra] of [['/v2/fleet/vehicles/%s/trips', {}], ['/v2/fleet/vehicles/%s/stops', {}], ['/v2/telemetry/%s/aggregates', { bucket: '60' }], ['/v2/telemetry/%s/export', {}]] as const) {
      assertProblem(await get(url.replace('%s', 'nobody'), { ...DAY, ...extra }), 404, 'vehicle-not-found');
      assertProblem(await get(url.replace('%s', 'drive'), { ...DAY, ...extra }, other.key), 404, 'vehicle-not-found');
    }
  });
}

describe('history on SQLite', () => suite('sqlite'));
describe('history on PostgreSQL', { skip: await skipUnlessPostgres() }, () => suite('postgres'));
