// What a summary report counts (docs/API.md "Summary reports"), record by record: a machine fed
// one vehicle's records in time order adds each step (two consecutive records at most an hour
// apart) to the tally of its first record's bucket and driver. The same machine keeps the
// rollups as records are committed (hourly buckets, rules/engine.ts), replays a vehicle's history
// when a late record or a changed assignment made them stale (storage/*/rollups.ts), and computes
// a summary straight from history (reports/summary.ts: the check of the rollups, and zones whose
// days do not start on the hour). It reads section 16's trip machine (history/trips.ts) fed the
// same records: in the commit, the live trip detection's own state (one machine, one state);
// elsewhere, one `feedRollup` advances. Its state is plain JSON, so it is stored as it is.
import { DEFAULT_TRIP_SETTINGS, type Point, type TripEvent, type TripState, advanceInPlace, haversineMeters, initialTripState } from '../history/trips.ts';

/** A step counts when its two records are at most this far apart (ms). */
export const STEP_GAP_MS = 3_600_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export interface RollupState {
  /** The last record's time (ms), `ignition`, own location and driver; null before any record. */
  t: number | null;
  ign: boolean;
  loc: Point | null;
  drv: string | null;
  /** The driver the next record has unless it names one: the last record's, or the assignment a replay found ongoing. */
  cur: string | null;
  /** The driver when the trip in progress started. */
  tdrv: string | null;
  /**
   * Tallies not written to the rollups yet: those of the last record's hour (and of earlier hours
   * that a trip counted since), written when a later hour's record comes. A commit then writes
   * rollups once an hour per vehicle, not once a record; a summary adds these (the state is read).
   */
  pend: PackedTally[];
}

export type TallyRow = Tally & { bucket: number; driver: string };

/** A tally as the state keeps it: `[bucket, driver, distanceM, drivingS, idleS, engineS, trips, maxSpeed]` (the row is written with every commit). */
export type PackedTally = [number, string, number, number, number, number, number, number | null];

export const packTally = (t: TallyRow): PackedTally => [t.bucket, t.driver, t.distanceM, t.drivingS, t.idleS, t.engineS, t.trips, t.maxSpeed];
export const unpackTally = ([bucket, driver, distanceM, drivingS, idleS, engineS, trips, maxSpeed]: PackedTally): TallyRow =>
  ({ bucket, driver, distanceM, drivingS, idleS, engineS, trips, maxSpeed });

export const initialRollup = (): RollupState => ({ t: null, ign: false, loc: null, drv: null, cur: null, tdrv: null, pend: [] });

/** The sums of one bucket and driver. Seconds and metres, unrounded. */
export interface Tally {
  distanceM: number;
  drivingS: number;
  idleS: number;
  engineS: number;
  trips: number;
  /** The highest `speed` of its records, km/h; null when none reported one. */
  maxSpeed: number | null;
}

/** Tallies by bucket (its index: the bucket's start over its length) and driver ('' for none). */
export type Tallies = Map<string, TallyRow>;

/**
 * Where a record's counts go: tallies by key, or a short list (a commit's few hours of a vehicle:
 * searched, no key made per record).
 */
export type TallySink = Tallies | TallyRow[];

export const emptyTally = (): Tally => ({ distanceM: 0, drivingS: 0, idleS: 0, engineS: 0, trips: 0, maxSpeed: null });

function tallyOf(into: TallySink, bucket: number, driver: string | null): Tally {
  const d = driver ?? '';
  if (Array.isArray(into)) {
    let found = into.find((t) => t.bucket === bucket && t.driver === d);
    if (found === undefined) into.push((found = { ...emptyTally(), bucket, driver: d }));
    return found;
  }
  const key = `${bucket}\n${d}`;
  let tally = into.get(key);
  if (tally === undefined) into.set(key, (tally = { ...emptyTally(), bucket, driver: d }));
  return tally;
}

/** Adds `b` into `a`. */
export function addTally(a: Tally, b: Tally): void {
  a.distanceM += b.distanceM;
  a.drivingS += b.drivingS;
  a.idleS += b.idleS;
  a.engineS += b.engineS;
  a.trips += b.trips;
  if (b.maxSpeed !== null && (a.maxSpeed === null || b.maxSpeed > a.maxSpeed)) a.maxSpeed = b.maxSpeed;
}

/** Where a replay starts: the rollup machine's state and the trip machine's, before an hour's first record. */
export interface Mark {
  roll: RollupState;
  trip: TripState;
}

export const initialMark = (): Mark => ({ roll: initialRollup(), trip: initialTripState() });

const reported: TripEvent[] = [];

/**
 * Feeds one record, newer than the last fed, driven by `driverId` (null: none assigned), into
 * `into`, with buckets `bucketMs` long: advances the trip machine, then counts. Changes both
 * states in place.
 */
export function feedRollup(
  state: Mark, record: { timestamp: number; data: Record<string, unknown> }, driverId: string | null, bucketMs: number, into: Tallies,
): void {
  advanceInPlace(state.trip, record, DEFAULT_TRIP_SETTINGS, reported);
  countRecord(state.roll, state.trip, reported, record, driverId, bucketMs, into);
  reported.length = 0;
}

/**
 * Counts one record once `trip`, the trip machine, has been advanced by it (`events`: what that
 * reported). Changes `state` in place.
 */
export function countRecord(
  state: RollupState, trip: TripState, events: readonly TripEvent[], record: { timestamp: number; data: Record<string, unknown> },
  driverId: string | null, bucketMs: number, into: TallySink,
): void {
  const t = record.timestamp;
  const { data } = record;
  const location = data.location as Point | undefined;
  const speed = typeof data.speed === 'number' ? data.speed : undefined;
  // A trip opened at this record: its driver is this record's.
  if (trip.trip !== null && trip.trip.startedAt === t) state.tdrv = driverId;
  if (speed !== undefined) {
    const own = tallyOf(into, Math.floor(t / bucketMs), driverId);
    if (own.maxSpeed === null || speed > own.maxSpeed) own.maxSpeed = speed;
  }
  if (state.t !== null && t - state.t <= STEP_GAP_MS) {
    const step = tallyOf(into, Math.floor(state.t / bucketMs), state.drv);
    const seconds = (t - state.t) / 1000;
    if (trip.moving) {
      step.drivingS += seconds;
      if (state.loc !== null && location !== undefined) step.distanceM += haversineMeters(state.loc, location);
    } else if (state.ign) {
      step.idleS += seconds;
    }
    if (state.ign) step.engineS += seconds;
  }
  for (const e of events) {
    if (e.type === 'trip.started') tallyOf(into, Math.floor(e.trip.startedAt / bucketMs), state.tdrv).trips++;
  }
  state.t = t;
  state.ign = data.ignition === true;
  state.loc = location ?? null;
  state.drv = driverId;
  state.cur = driverId;
}

/** The UTC month (months since January 1970) of a UTC day (days since 1970-01-01). */
export function monthOfDay(day: number): number {
  const d = new Date(day * DAY_MS);
  return (d.getUTCFullYear() - 1970) * 12 + d.getUTCMonth();
}

/** The first UTC day of a month. */
export const firstDayOfMonth = (month: number): number => Date.UTC(1970 + Math.floor(month / 12), month % 12, 1) / DAY_MS;

/** Whether a mark is one a replay may start from: no trip in progress that is not yet counted. */
export const replayable = (m: Mark): boolean => m.trip.trip === null || m.trip.trip.announced;
