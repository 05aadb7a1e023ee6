// The trip machine alone (src/history/trips.ts; docs/API.md "History: trips, stops, aggregates,
// exports"): known answers on a synthetic day, the events as they become certain, and its state
// as plain data that can be stored between records.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_TRIP_SETTINGS, type MotionRecord, type TripEvent, type TripSettings, type TripState, advance, expire, finish, haversineMeters, initialTripState,
} from '../src/history/trips.ts';
import { START, latAt, route } from './helpers/history.ts';

const s = (seconds: number) => START + seconds * 1000;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** Feeds every record then finishes; every state is frozen, so a change to one would throw. */
function run(records: readonly MotionRecord[], settings: TripSettings = DEFAULT_TRIP_SETTINGS) {
  let state = deepFreeze(initialTripState());
  const events: TripEvent[] = [];
  for (const record of records) {
    const step = advance(state, record, settings);
    state = deepFreeze(step.state);
    events.push(...step.events);
  }
  events.push(...finish(state).events);
  return {
    events,
    trips: events.flatMap((e) => (e.type === 'trip.ended' ? [e.trip] : [])),
    stops: events.flatMap((e) => (e.type === 'stop.ended' ? [e.stop] : [])),
  };
}

test('haversine on one meridian is R times the difference of latitude', () => {
  assert.ok(Math.abs(haversineMeters({ lat: latAt(0), lng: 13.4 }, { lat: latAt(23_990), lng: 13.4 }) - 23_990) < 1e-6);
  assert.ok(Math.abs(haversineMeters({ lat: 0, lng: 0 }, { lat: 0, lng: 180 }) - Math.PI * 6_371_008.8) < 1e-6);
});

test('a day with speeds: one trip through a short pause, three stops, a gap, a trip too short', () => {
  const { trips, stops } = run(route());
  assert.equal(trips.length, 1);
  const [trip] = trips;
  assert.deepEqual({ ...trip, distanceMeters: undefined, averageSpeed: undefined }, {
    startedAt: s(600), endedAt: s(2519), durationSeconds: 1919, distanceMeters: undefined, maxSpeed: 72, averageSpeed: undefined,
    start: { lat: latAt(10), lng: 13.4 }, end: { lat: latAt(24_000), lng: 13.4 }, records: 1920,
  });
  assert.ok(Math.abs(trip!.distanceMeters - 23_990) < 23_990 * 0.005, `distance ${trip!.distanceMeters}`);
  // Both to the thousandth.
  assert.ok(Math.abs(trip!.averageSpeed - (trip!.distanceMeters / 1919) * 3.6) <= 0.0005, `${trip!.averageSpeed}`);
  assert.deepEqual(stops, [
    { startedAt: s(0), endedAt: s(599), durationSeconds: 599, location: { lat: latAt(0), lng: 13.4 } },
    { startedAt: s(2520), endedAt: s(3419), durationSeconds: 899, location: { lat: latAt(24_000), lng: 13.4 } },
    { startedAt: s(7449), endedAt: s(7848), durationSeconds: 399, location: { lat: latAt(24_300), lng: 13.4 } },
  ]);
});

test('without speed, a record moves when it is more than 50 m from the one before', () => {
  const { trips, stops } = run(route({ withoutSpeedEvery: 10 }));
  // Kept every 10 s: the first drive record is 10 m from the last parked one (not moving), the
  // next 110 m; the first parked record after the drive is still 180 m on (moving).
  assert.deepEqual(trips.map((t) => [t.startedAt, t.endedAt, t.maxSpeed, t.records]), [[s(610), s(2520), null, 192]]);
  assert.ok(Math.abs(trips[0]!.distanceMeters - 23_890) < 1e-6);
  assert.deepEqual(stops.map((x) => [x.startedAt, x.endedAt]), [[s(0), s(600)], [s(2530), s(3410)], [s(7459), s(7839)]]);
});

test('an odometer on the first and last records gives the distance; one missing at either end does not', () => {
  const [trip] = run(route({ odometerFactor: 1.01 })).trips;
  assert.ok(Math.abs(trip!.distanceMeters - 23_990 * 1.01) < 1e-6, `distance ${trip!.distanceMeters}`);
  const records = route({ odometerFactor: 1.01 });
  const last = records.findIndex((r) => r.timestamp === s(2519));
  records[last] = { ...records[last]!, data: { ...records[last]!.data, odometer: undefined } };
  assert.ok(Math.abs(run(records).trips[0]!.distanceMeters - 23_990) < 1e-6, 'the great-circle sum');
});

test('the settings: a shorter minimum stop splits the trip at the pause; no minimums keep the short trip', () => {
  const split = run(route(), { ...DEFAULT_TRIP_SETTINGS, minStopSeconds: 100 });
  assert.deepEqual(split.trips.map((t) => [t.startedAt, t.endedAt, Math.round(t.distanceMeters * 1e6) / 1e6]), [[s(600), s(1799), 11_990], [s(1920), s(2519), 11_980]]);
  assert.deepEqual(split.stops.map((x) => x.durationSeconds), [599, 119, 899, 399]);

  const all = run(route(), { ...DEFAULT_TRIP_SETTINGS, minTripMeters: 0, minTripSeconds: 0 });
  assert.deepEqual(all.trips.map((t) => [t.startedAt, t.endedAt, t.records]), [[s(600), s(2519), 1920], [s(7419), s(7448), 30]]);
  const gapless = run(route(), { ...DEFAULT_TRIP_SETTINGS, maxGapSeconds: 5000 });
  assert.deepEqual(gapless.stops.map((x) => [x.startedAt, x.endedAt]), [[s(0), s(599)], [s(2520), s(3419)], [s(7449), s(7848)]],
    'a gap within maxGapSeconds is no gap: the stop before it ends at the next moving record');
});

test('events come as they become certain, each with what is known then', () => {
  const { events } = run(route());
  const summary = events.map((e) => `${e.type}@${(('trip' in e ? e.trip : e.stop).endedAt - START) / 1000}`);
  // The first stop was certain after 300 s; the trip once it had lasted 60 s and covered 500 m
  // (at 660 s: 600 m); it ended when the next stop had lasted 300 s (2820 s), and that stop at the gap.
  assert.deepEqual(summary, [
    'stop.started@300', 'stop.ended@599', 'trip.started@660', 'trip.ended@2519', 'stop.started@2820', 'stop.ended@3419',
    'stop.started@7749', 'stop.ended@7848',
  ]);
  const started = events.find((e) => e.type === 'trip.started')!;
  assert.equal(started.type === 'trip.started' && started.trip.startedAt, s(600));
});

test('the state is plain data: fed in chunks, stored as JSON between them, the answer is the same', () => {
  const records = route();
  const whole = run(records).events;
  for (const chunk of [1, 7, 1000, records.length]) {
    let stored = JSON.stringify(initialTripState());
    const events: TripEvent[] = [];
    for (let i = 0; i < records.length; i += chunk) {
      let state = JSON.parse(stored) as TripState;
      for (const record of records.slice(i, i + chunk)) {
        const step = advance(state, record, DEFAULT_TRIP_SETTINGS);
        state = step.state;
        events.push(...step.events);
      }
      stored = JSON.stringify(state);
    }
    events.push(...finish(JSON.parse(stored) as TripState).events);
    assert.deepEqual(events, whole, `chunks of ${chunk}`);
  }
});

test('live use: time passing without records ends the trip as a gap would; late records are ignored', () => {
  const records = route().filter((r) => r.timestamp <= s(2000));
  let state = initialTripState();
  for (const record of records) state = advance(state, record, DEFAULT_TRIP_SETTINGS).state;
  assert.deepEqual(expire(state, s(2000) + 3_600_000, DEFAULT_TRIP_SETTINGS).events, [], 'not yet longer than maxGapSeconds');
  const late = advance(state, { timestamp: s(1000), data: { speed: 0 } }, DEFAULT_TRIP_SETTINGS);
  assert.equal(late.state, state);
  const expired = expire(state, s(2000) + 3_600_001, DEFAULT_TRIP_SETTINGS);
  assert.deepEqual(expired.events.map((e) => [e.type, 'trip' in e && e.trip.endedAt]), [['trip.ended', s(2000)]]);
  assert.equal(expired.state.trip, null);
});

test('a record with neither speed nor location goes on as the record before it', () => {
  // Battery-only records every 10 s through the drive and the parking: the same trip and stops.
  const records = route();
  const extra: MotionRecord[] = [];
  for (let t = 5; t < 3419; t += 10) extra.push({ timestamp: s(t) + 500, data: {} });
  const mixed = [...records, ...extra].sort((a, b) => a.timestamp - b.timestamp);
  const plain = run(records);
  const withExtra = run(mixed);
  assert.deepEqual(withExtra.trips.map((t) => [t.startedAt, t.endedAt, t.distanceMeters]), plain.trips.map((t) => [t.startedAt, t.endedAt, t.distanceMeters]));
  assert.deepEqual(withExtra.stops, plain.stops);
  assert.equal(withExtra.trips[0]!.records, plain.trips[0]!.records + 192, 'the records within the trip count');
});
