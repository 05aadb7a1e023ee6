// A day's drive with known answers, for the trip and stop tests: records at 1 Hz along one
// meridian, where the great-circle distance between two points is exactly R * Δlatitude.
import { EARTH_RADIUS_METERS } from '../../src/history/trips.ts';
import type { StoredRecord } from '../../src/telemetry/store.ts';

/** Three days ago, on the hour: inside retention and never ahead of the clock. */
export const START = Math.floor((Date.now() - 3 * 86_400_000) / 3_600_000) * 3_600_000;
const LNG = 13.4;
const metersToLat = (x: number) => 52.5 + (x / EARTH_RADIUS_METERS) * (180 / Math.PI);

export type Leg = { park: number } | { drive: number; mps: number } | { gap: number };

/**
 * park P1 0..599 s; drive 10 m/s 600..1799; park 1800..1919 (a pause shorter than a stop); drive
 * 20 m/s 1920..2519; park P3 2520..3419; a gap of 4000 s; drive 10 m/s for 30 s (a trip too
 * short to count); park P4 for 400 s. Times in seconds after START.
 */
export const LEGS: Leg[] = [
  { park: 600 }, { drive: 1200, mps: 10 }, { park: 120 }, { drive: 600, mps: 20 }, { park: 900 }, { gap: 4000 }, { drive: 30, mps: 10 }, { park: 400 },
];

export interface RouteOptions {
  /** Leave out `speed`, and keep every n-th record only (so steps are long enough to tell motion). */
  withoutSpeedEvery?: number;
  /** Report an odometer reading `factor` times the true distance. */
  odometerFactor?: number;
  /** Another day than LEGS; `vehicleId` names its records (default `trip-test`). */
  legs?: readonly Leg[];
  vehicleId?: string;
}

/** The records of LEGS, in time order, with `x` the metres travelled. */
export function route(options: RouteOptions = {}): StoredRecord[] {
  const records: StoredRecord[] = [];
  let t = 0;
  let x = 0;
  const push = (speedKmh: number) => {
    const data: StoredRecord['data'] = { location: { lat: metersToLat(x), lng: LNG } };
    if (options.withoutSpeedEvery === undefined) data.speed = speedKmh;
    if (options.odometerFactor !== undefined) data.odometer = 1000 + (x * options.odometerFactor) / 1000;
    records.push({ vehicleId: options.vehicleId ?? 'trip-test', timestamp: START + t * 1000, data });
    t++;
  };
  for (const leg of options.legs ?? LEGS) {
    if ('gap' in leg) t += leg.gap - 1;
    else if ('park' in leg) for (let i = 0; i < leg.park; i++) push(0);
    else for (let i = 0; i < leg.drive; i++) {
      x += leg.mps;
      push(leg.mps * 3.6);
    }
  }
  const every = options.withoutSpeedEvery;
  return every === undefined ? records : records.filter((_, i) => i % every === 0);
}

export const at = (seconds: number) => new Date(START + seconds * 1000).toISOString();
export const latAt = metersToLat;
