// Trips and stops, found by a state machine fed one record at a time in time order. The same
// machine serves the history report (fed a stored range, then `finish`) and live use (fed each
// vehicle's records as they arrive, its state kept per vehicle between them, `expire` called as
// time passes). Its state is plain JSON, so it can be stored or sent anywhere; `advance` never
// changes the state it is given. Events are reported as they become certain, each carrying what
// is known of the trip or stop then (docs/API.md "History: trips, stops, aggregates, exports").
import { iso } from '../clock.ts';
import type { TelemetryData } from '../telemetry/schema.ts';

export interface TripSettings {
  /** A run of records not moving that lasts this long is a stop, and ends the trip before it. */
  minStopSeconds: number;
  /** A gap in the data longer than this ends the trip (and a stop) before it. */
  maxGapSeconds: number;
  /** Trips shorter than this, or than `minTripSeconds`, are left out. */
  minTripMeters: number;
  minTripSeconds: number;
}

export const DEFAULT_TRIP_SETTINGS: Readonly<TripSettings> = { minStopSeconds: 300, maxGapSeconds: 3600, minTripMeters: 500, minTripSeconds: 60 };
/** A record reporting at least this speed (km/h) is moving. */
export const MOVING_KMH = 3;
/** A record without speed is moving when it is more than this far (m) from the last known location. */
export const MOVING_STEP_METERS = 50;
/** Mean Earth radius (IUGG), m. */
export const EARTH_RADIUS_METERS = 6_371_008.8;

export interface Point {
  lat: number;
  lng: number;
}

/** What the machine reads of a record. */
export interface MotionRecord {
  /** ms since the epoch */
  timestamp: number;
  data: Pick<TelemetryData, 'location' | 'speed' | 'odometer'>;
}

export interface Trip {
  /** ms: the first and the last moving record. */
  startedAt: number;
  endedAt: number;
  durationSeconds: number;
  /** The odometer's difference when the first and last records report one, else the haversine sum. */
  distanceMeters: number;
  /** The highest speed reported in the trip, km/h; null when no record of it reports one. */
  maxSpeed: number | null;
  /** Distance over duration, km/h. */
  averageSpeed: number;
  /** Where it was at the first and at the last moving record (the last known location then). */
  start: Point | null;
  end: Point | null;
  /** Records from the first to the last moving one. */
  records: number;
}

export interface Stop {
  /** ms: the first and the last record of the run. */
  startedAt: number;
  endedAt: number;
  durationSeconds: number;
  /** The first record's location (the last known one if it has none). */
  location: Point | null;
}

export type TripEvent =
  /** The trip has lasted minTripSeconds and covered minTripMeters: it will be reported. */
  | { type: 'trip.started'; trip: Trip }
  /** Ended by a stop, a gap, or the end of the data (`finish`); only a trip that was started. */
  | { type: 'trip.ended'; trip: Trip }
  /** Not moving for minStopSeconds. */
  | { type: 'stop.started'; stop: Stop }
  | { type: 'stop.ended'; stop: Stop };

/** A trip in progress: running sums through the last record, and the trip as of its last moving record. */
interface OpenTrip {
  startedAt: number;
  start: Point | null;
  startOdometer: number | null;
  records: number;
  distance: number;
  maxSpeed: number | null;
  endedAt: number;
  end: Point | null;
  endOdometer: number | null;
  endRecords: number;
  endDistance: number;
  endMaxSpeed: number | null;
  /** `trip.started` was reported, so `trip.ended` will be too. */
  announced: boolean;
}

/** A run of records not moving. */
interface OpenStill {
  startedAt: number;
  endedAt: number;
  location: Point | null;
  /** It lasted minStopSeconds: a stop, reported by `stop.started`. */
  announced: boolean;
}

export interface TripState {
  /** Time of the last record fed; records at or before it are ignored. */
  last: number | null;
  /** Last known location since the last gap. */
  location: Point | null;
  /** Whether the last record was moving. */
  moving: boolean;
  trip: OpenTrip | null;
  still: OpenStill | null;
}

export interface Step {
  state: TripState;
  events: TripEvent[];
}

export function initialTripState(): TripState {
  return { last: null, location: null, moving: false, trip: null, still: null };
}

export function haversineMeters(a: Point, b: Point): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLng = (b.lng - a.lng) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_METERS * Math.asin(Math.min(1, Math.sqrt(h)));
}

const thousandths = (value: number) => Math.round(value * 1000) / 1000;

/** The trip as of its last moving record. */
function tripOf(open: OpenTrip): Trip {
  const odometer = open.startOdometer !== null && open.endOdometer !== null && open.endOdometer >= open.startOdometer
    ? (open.endOdometer - open.startOdometer) * 1000
    : undefined;
  const distance = odometer ?? open.endDistance;
  const durationSeconds = (open.endedAt - open.startedAt) / 1000;
  return {
    // To the millimetre and the thousandth of a km/h: the odometer's difference in metres carries
    // the noise of decimal kilometres in binary (2389.9999999999864 for 2.39 km).
    startedAt: open.startedAt, endedAt: open.endedAt, durationSeconds, distanceMeters: thousandths(distance), maxSpeed: open.endMaxSpeed,
    averageSpeed: durationSeconds > 0 ? thousandths((distance / durationSeconds) * 3.6) : 0,
    start: open.start, end: open.end, records: open.endRecords,
  };
}

const stopOf = (still: OpenStill): Stop => ({
  startedAt: still.startedAt, endedAt: still.endedAt, durationSeconds: (still.endedAt - still.startedAt) / 1000, location: still.location,
});

const qualifies = (trip: Trip, settings: TripSettings) =>
  trip.durationSeconds >= settings.minTripSeconds && trip.distanceMeters >= settings.minTripMeters;

/**
 * A trip is reported once, at a moving record, what is known of it qualifies (duration and
 * distance only grow, so it then qualifies at its end too); it is ended only if it was reported.
 * An odometer that goes backwards cannot take back a trip already reported.
 */
function endTrip(open: OpenTrip, events: TripEvent[]): void {
  if (open.announced) events.push({ type: 'trip.ended', trip: tripOf(open) });
}

/** Ends the trip and the stop in progress (a gap, or the end of the data). */
function close(state: TripState, events: TripEvent[]): void {
  if (state.trip !== null) endTrip(state.trip, events);
  if (state.still?.announced === true) events.push({ type: 'stop.ended', stop: stopOf(state.still) });
  state.trip = null;
  state.still = null;
  state.location = null;
  state.moving = false;
}

/** A copy of a state that `advanceInPlace` may change without touching the original. */
export function copyTripState(previous: TripState): TripState {
  return { ...previous, trip: previous.trip && { ...previous.trip }, still: previous.still && { ...previous.still } };
}

/** The public form of a trip: what the trips report answers and what `trip.ended` carries. */
export const tripView = (trip: Trip) => ({ ...trip, startedAt: iso(trip.startedAt), endedAt: iso(trip.endedAt) });

/** Feeds one record; records must come in time order (one at or before the last is ignored). */
export function advance(previous: TripState, record: MotionRecord, settings: TripSettings): Step {
  if (previous.last !== null && record.timestamp <= previous.last) return { state: previous, events: [] };
  const state = copyTripState(previous);
  const events: TripEvent[] = [];
  advanceInPlace(state, record, settings, events);
  return { state, events };
}

/**
 * `advance` for a caller that owns its state and lets it change (a report over a long range:
 * no copy per record); events are appended to `events`.
 */
export function advanceInPlace(state: TripState, record: MotionRecord, settings: TripSettings, events: TripEvent[]): void {
  if (state.last !== null && record.timestamp <= state.last) return;
  const t = record.timestamp;
  if (state.last !== null && t - state.last > settings.maxGapSeconds * 1000) close(state, events);

  const { location, speed, odometer } = record.data;
  const step = location !== undefined && state.location !== null ? haversineMeters(state.location, location) : 0;
  const moving = speed !== undefined
    ? speed >= MOVING_KMH
    // Without speed, the distance from the last known location tells; with nothing to judge by
    // (no location, or none before it), the record goes on as the one before it.
    : location !== undefined && state.location !== null ? step > MOVING_STEP_METERS : state.moving;
  const here = location ?? state.location;

  let trip = state.trip;
  if (trip !== null) {
    trip.records++;
    trip.distance += step;
    if (speed !== undefined && (trip.maxSpeed === null || speed > trip.maxSpeed)) trip.maxSpeed = speed;
  }
  if (moving) {
    if (state.still?.announced === true) events.push({ type: 'stop.ended', stop: stopOf(state.still) });
    state.still = null;
    if (trip === null) {
      trip = state.trip = {
        startedAt: t, start: here, startOdometer: odometer ?? null, records: 1, distance: 0, maxSpeed: speed ?? null,
        endedAt: t, end: here, endOdometer: null, endRecords: 1, endDistance: 0, endMaxSpeed: null, announced: false,
      };
    }
    trip.endedAt = t;
    trip.end = here;
    trip.endOdometer = odometer ?? null;
    trip.endRecords = trip.records;
    trip.endDistance = trip.distance;
    trip.endMaxSpeed = trip.maxSpeed;
    if (!trip.announced) {
      const sofar = tripOf(trip);
      if (qualifies(sofar, settings)) {
        trip.announced = true;
        events.push({ type: 'trip.started', trip: sofar });
      }
    }
  } else {
    const still = state.still ??= { startedAt: t, endedAt: t, location: here, announced: false };
    still.endedAt = t;
    if (!still.announced && t - still.startedAt >= settings.minStopSeconds * 1000) {
      still.announced = true;
      if (trip !== null) endTrip(trip, events);
      state.trip = null;
      events.push({ type: 'stop.started', stop: stopOf(still) });
    }
  }
  state.last = t;
  state.location = here;
  state.moving = moving;
}

/**
 * Live use: no record has come for longer than maxGapSeconds before `now`, which is a gap: the
 * trip and the stop in progress end (as they would at the next record).
 */
export function expire(previous: TripState, now: number, settings: TripSettings): Step {
  if (previous.last === null || now - previous.last <= settings.maxGapSeconds * 1000) return { state: previous, events: [] };
  const state: TripState = { ...previous };
  const events: TripEvent[] = [];
  close(state, events);
  return { state, events };
}

/** The end of the data (a report's range): the trip and the stop in progress end, cut there. */
export function finish(previous: TripState): Step {
  const state: TripState = { ...previous };
  const events: TripEvent[] = [];
  close(state, events);
  return { state, events };
}
