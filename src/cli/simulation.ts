// The simulator's motion model, pure and deterministic (a seeded random source, no clock, no I/O):
// each vehicle drives a loop of waypoints around a city centre at speeds plausible for its type,
// accelerating and braking, stopping at lights and stops, parking now and then (a delivery, a
// break: long enough for the service to see a stop between two trips), and charging at its depot. Values stay
// within the ranges of docs/API.md "Telemetry". src/cli/simulate.ts drives it against a running service.
import type { TelemetryData } from '../telemetry/schema.ts';

export type Rng = () => number;

/** mulberry32: small, fast, and good enough for motion noise. */
export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 32-bit seed from a string (FNV-1a), so a vehicle id always gives the same route. */
export function seedOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

const between = (rng: Rng, min: number, max: number) => min + (max - min) * rng();
/** A standard normal sample (Box-Muller). */
const gaussian = (rng: Rng) => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));
const round = (value: number, digits: number) => {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
};

/** How a kind of vehicle moves and uses its battery. Speeds in km/h, rates per second or km. */
export interface Profile {
  /** Usual speed between stops. */
  cruiseKmh: number;
  /** Never exceeded. */
  maxKmh: number;
  /** m/s² */
  accel: number;
  /** m/s², comfortable braking */
  decel: number;
  /** Battery percent per km at cruise speed; faster costs more. */
  percentPerKm: number;
  /** Battery percent per minute at the depot charger. */
  chargePerMinute: number;
  /** Radius of its loop around the centre, km. */
  radiusKm: readonly [number, number];
  /** Seconds spent at each waypoint (a bus or shuttle stop); [0, 0] for none. */
  dwellSeconds: readonly [number, number];
  /** Red lights and the like: stops per km. */
  stopsPerKm: number;
}

export const PROFILES = {
  van: { cruiseKmh: 40, maxKmh: 60, accel: 1.8, decel: 3, percentPerKm: 0.3, chargePerMinute: 1.5, radiusKm: [2, 6], dwellSeconds: [0, 0], stopsPerKm: 0.6 },
  shuttle: { cruiseKmh: 22, maxKmh: 30, accel: 1, decel: 1.5, percentPerKm: 0.5, chargePerMinute: 1.2, radiusKm: [1, 3], dwellSeconds: [15, 40], stopsPerKm: 0.4 },
  scooter: { cruiseKmh: 18, maxKmh: 20, accel: 1.5, decel: 2.5, percentPerKm: 1.5, chargePerMinute: 2, radiusKm: [0.5, 2], dwellSeconds: [0, 0], stopsPerKm: 0.8 },
  car: { cruiseKmh: 45, maxKmh: 70, accel: 2.5, decel: 3.5, percentPerKm: 0.2, chargePerMinute: 2, radiusKm: [2, 7], dwellSeconds: [0, 0], stopsPerKm: 0.6 },
  bus: { cruiseKmh: 30, maxKmh: 50, accel: 1.2, decel: 2, percentPerKm: 0.4, chargePerMinute: 1, radiusKm: [2, 6], dwellSeconds: [20, 45], stopsPerKm: 0.5 },
  truck: { cruiseKmh: 35, maxKmh: 55, accel: 1, decel: 2.5, percentPerKm: 0.45, chargePerMinute: 1, radiusKm: [3, 8], dwellSeconds: [0, 0], stopsPerKm: 0.5 },
  bicycle: { cruiseKmh: 18, maxKmh: 25, accel: 1, decel: 2, percentPerKm: 0.8, chargePerMinute: 1.5, radiusKm: [0.5, 3], dwellSeconds: [0, 0], stopsPerKm: 0.8 },
  motorcycle: { cruiseKmh: 45, maxKmh: 70, accel: 3, decel: 4, percentPerKm: 0.5, chargePerMinute: 2, radiusKm: [2, 7], dwellSeconds: [0, 0], stopsPerKm: 0.6 },
  robot: { cruiseKmh: 5, maxKmh: 6, accel: 0.5, decel: 1, percentPerKm: 2, chargePerMinute: 2, radiusKm: [0.2, 0.8], dwellSeconds: [10, 30], stopsPerKm: 2 },
} as const satisfies Record<string, Profile>;

export type SimType = keyof typeof PROFILES;

/** The fleet's mix: mostly vans, shuttles and scooters, with a few of everything else. */
const MIX: readonly SimType[] = [
  'van', 'shuttle', 'scooter', 'van', 'car', 'scooter', 'bus', 'van', 'bicycle', 'shuttle',
  'truck', 'scooter', 'van', 'motorcycle', 'robot', 'car',
];

export function typeFor(index: number): SimType {
  return MIX[index % MIX.length]!;
}

export interface LatLng {
  lat: number;
  lng: number;
}

export const BERLIN: LatLng = { lat: 52.52, lng: 13.405 };

const M_PER_DEG_LAT = 111_320;

/** Local flat coordinates in metres east (x) and north (y) of the centre: exact enough for a city. */
interface Point {
  x: number;
  y: number;
}

export function toLatLng(centre: LatLng, p: Point): LatLng {
  return {
    lat: centre.lat + p.y / M_PER_DEG_LAT,
    lng: centre.lng + p.x / (M_PER_DEG_LAT * Math.cos((centre.lat * Math.PI) / 180)),
  };
}

function toPoint(centre: LatLng, at: LatLng): Point {
  return {
    x: (at.lng - centre.lng) * M_PER_DEG_LAT * Math.cos((centre.lat * Math.PI) / 180),
    y: (at.lat - centre.lat) * M_PER_DEG_LAT,
  };
}

/** Degrees clockwise from north of the direction from `a` to `b`, in [0, 360). */
export function bearing(a: LatLng, b: LatLng): number {
  const φ1 = (a.lat * Math.PI) / 180;
  const φ2 = (b.lat * Math.PI) / 180;
  const Δλ = ((b.lng - a.lng) * Math.PI) / 180;
  const θ = Math.atan2(Math.sin(Δλ) * Math.cos(φ2), Math.cos(φ1) * Math.sin(φ2) - Math.sin(φ1) * Math.cos(φ2) * Math.cos(Δλ));
  return normalizeDegrees((θ * 180) / Math.PI);
}

/** Into [0, 360); -0 and values that round up to 360 become 0. */
export function normalizeDegrees(degrees: number): number {
  const d = ((degrees % 360) + 360) % 360;
  return d >= 360 || Object.is(d, -0) ? 0 : d;
}

/** Great-circle distance in metres. */
export function distanceMetres(a: LatLng, b: LatLng): number {
  const φ1 = (a.lat * Math.PI) / 180;
  const φ2 = (b.lat * Math.PI) / 180;
  const Δφ = φ2 - φ1;
  const Δλ = ((b.lng - a.lng) * Math.PI) / 180;
  const h = Math.sin(Δφ / 2) ** 2 + Math.cos(φ1) * Math.cos(φ2) * Math.sin(Δλ / 2) ** 2;
  return 2 * 6_371_000 * Math.asin(Math.min(1, Math.sqrt(h)));
}

/**
 * A closed loop of 6 to 11 waypoints at varying distance from the centre, in angular order so the
 * loop never crosses itself. Waypoint 0 is the vehicle's depot, where it charges.
 */
function makeRoute(rng: Rng, profile: Profile): Point[] {
  const count = 6 + Math.floor(rng() * 6);
  const start = rng() * 2 * Math.PI;
  const direction = rng() < 0.5 ? 1 : -1;
  const [rMin, rMax] = profile.radiusKm;
  const points: Point[] = [];
  for (let i = 0; i < count; i++) {
    const angle = start + direction * ((2 * Math.PI * (i + between(rng, -0.25, 0.25))) / count);
    const r = between(rng, rMin, rMax) * 1000;
    points.push({ x: r * Math.sin(angle), y: r * Math.cos(angle) });
  }
  return points;
}

const DIAGNOSTICS: readonly Record<string, string | number | boolean>[] = [
  { dtc: 'P0420' }, // catalyst efficiency (hybrids)
  { dtc: 'P0A80' }, // replace hybrid/EV battery pack
  { dtc: 'P0300' }, // random misfire
  { dtc: 'U0100' }, // lost communication with ECM
  { dtc: 'C0035' }, // wheel speed sensor
  { tirePressureLow: true },
  { tirePressureLow: true },
  { brakePadWearPct: 82 },
  { batteryCellDeltaMv: 48 },
];

/** Diagnostic events per vehicle per hour of driving. */
const DIAGNOSTIC_RATE_PER_HOUR = 3;
/** Of the waypoints a vehicle reaches (its depot aside), the share where it parks for a while. */
const PARK_CHANCE = 0.25;
/** How long it parks there, seconds: past the service's 5 minutes that make a stop. */
const PARK_SECONDS: readonly [number, number] = [300, 900];
/** Below this on arrival at the depot, a vehicle parks and charges. */
const CHARGE_BELOW = 40;
/** Integration step: the model advances in steps of at most this many seconds. */
const STEP_SECONDS = 0.5;

/** `dwelling`: at a light or a stop for seconds; `parked`: for minutes (a delivery, a break). */
export type Mode = 'driving' | 'dwelling' | 'parked' | 'charging';

export interface VehicleState {
  readonly id: string;
  readonly type: SimType;
  readonly profile: Profile;
  readonly centre: LatLng;
  readonly route: readonly Point[];
  readonly rng: Rng;
  /** The segment from route[segment] to route[segment + 1] (wrapping) being driven. */
  segment: number;
  /** Metres along that segment. */
  along: number;
  /** m/s */
  speed: number;
  /** Where the current cruise target sits this minute, as a factor of cruise speed. */
  pace: number;
  /** Metres ahead, along the current segment, of a stop (red light); undefined for none. */
  stopAhead: number | undefined;
  mode: Mode;
  /** Heading home to charge: decided when starting the last segment of the loop. */
  chargeAtDepot: boolean;
  /** Parks at the end of this segment: decided when starting it, so it brakes in good time. */
  parkAhead: boolean;
  /** Parks nowhere before its odometer reads this (km): it drives through its geofences first. */
  noParkBeforeKm: number;
  /** Seconds left dwelling (stop, light), or the charge level to reach when charging. */
  waitSeconds: number;
  chargeTo: number;
  /** State of charge, percent, kept within 0..100. */
  battery: number;
  odometerKm: number;
  temperature: number;
  ambient: number;
  /** Diagnostics raised since the last sample, sent with the next one. */
  pending: Record<string, string | number | boolean> | undefined;
  tirePressureLow: boolean;
  /** The iButtons of the drivers who take turns at the wheel (none for a vehicle without a reader). */
  drivers: string[];
  /** Whose iButton is in the reader now. */
  driver: number;
  /** Simulated seconds so far. */
  clock: number;
}

/** Vehicles with a driver-identification reader: most of them, each shared by two or three drivers. */
const DRIVER_READER_SHARE = 0.7;
/** The chance that another driver takes over at the depot. */
const DRIVER_CHANGE_AT_DEPOT = 0.5;

/**
 * The iButtons of the drivers of a vehicle (16 uppercase hex digits, from its id): a driver's is the
 * same wherever it is read, so the drivers the simulation registers match what the vehicles send.
 */
export function driverIButtons(id: string, rng: Rng): string[] {
  if (rng() >= DRIVER_READER_SHARE) return [];
  const count = 2 + Math.floor(rng() * 2);
  return Array.from({ length: count }, (_, i) => {
    const high = seedOf(`${id}/driver-${i}`) >>> 0;
    const low = seedOf(`driver-${i}/${id}`) >>> 0;
    return (high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0')).toUpperCase();
  });
}

export interface Resume {
  location?: LatLng | undefined;
  battery?: number | undefined;
  odometer?: number | undefined;
  temperature?: number | undefined;
}

/**
 * A vehicle at a random point of its loop. Its route and everything random about it follow from
 * its id (and `seed`), so a re-run puts the same vehicle on the same route; `resume` continues
 * from the last state the service holds (position snapped to the route, odometer, battery).
 */
export function createVehicle(id: string, type: SimType, options: { centre?: LatLng; seed?: number; resume?: Resume } = {}): VehicleState {
  const rng = createRng(seedOf(id) ^ (options.seed ?? 0));
  const profile: Profile = PROFILES[type];
  const centre = options.centre ?? BERLIN;
  const route = makeRoute(rng, profile);
  const ambient = between(rng, 12, 22);
  const vehicle: VehicleState = {
    id, type, profile, centre, route, rng,
    segment: Math.floor(rng() * route.length),
    along: 0,
    speed: 0,
    pace: between(rng, 0.85, 1.05),
    stopAhead: undefined,
    mode: 'driving',
    chargeAtDepot: false,
    parkAhead: false,
    noParkBeforeKm: 0,
    waitSeconds: 0,
    chargeTo: 100,
    battery: between(rng, 45, 100),
    odometerKm: between(rng, 500, 60_000),
    temperature: ambient + gaussian(rng),
    ambient,
    pending: undefined,
    tirePressureLow: false,
    drivers: [],
    driver: 0,
    clock: 0,
  };
  vehicle.drivers = driverIButtons(id, rng);
  vehicle.along = rng() * segmentLength(vehicle, vehicle.segment);
  const resume = options.resume;
  if (resume !== undefined) {
    if (resume.location !== undefined) snapToRoute(vehicle, toPoint(centre, resume.location));
    if (resume.battery !== undefined) vehicle.battery = clamp(resume.battery, 0, 100);
    if (resume.odometer !== undefined && resume.odometer >= 0) vehicle.odometerKm = resume.odometer;
    if (resume.temperature !== undefined) vehicle.temperature = clamp(resume.temperature, -40, 60);
  }
  vehicle.chargeAtDepot = vehicle.segment === route.length - 1 && vehicle.battery < CHARGE_BELOW;
  // Half the fleet parks at the end of the segment it starts on: a run shows trips and stops
  // within its first quarter of an hour, not only after the first hour.
  vehicle.parkAhead = !vehicle.chargeAtDepot && vehicle.segment !== route.length - 1 && rng() < 0.5;
  return vehicle;
}

function waypoint(v: VehicleState, index: number): Point {
  return v.route[((index % v.route.length) + v.route.length) % v.route.length]!;
}

function segmentLength(v: VehicleState, index: number): number {
  const a = waypoint(v, index);
  const b = waypoint(v, index + 1);
  return Math.hypot(b.x - a.x, b.y - a.y);
}

/** Direction of segment `index`, degrees clockwise from north. */
function segmentHeading(v: VehicleState, index: number): number {
  const a = waypoint(v, index);
  const b = waypoint(v, index + 1);
  return normalizeDegrees((Math.atan2(b.x - a.x, b.y - a.y) * 180) / Math.PI);
}

function snapToRoute(v: VehicleState, p: Point): void {
  let best = Infinity;
  for (let i = 0; i < v.route.length; i++) {
    const a = waypoint(v, i);
    const b = waypoint(v, i + 1);
    const length = segmentLength(v, i);
    const t = length === 0 ? 0 : clamp(((p.x - a.x) * (b.x - a.x) + (p.y - a.y) * (b.y - a.y)) / (length * length), 0, 1);
    const d = Math.hypot(a.x + t * (b.x - a.x) - p.x, a.y + t * (b.y - a.y) - p.y);
    if (d < best) {
      best = d;
      v.segment = i;
      v.along = t * length;
    }
  }
}

function point(v: VehicleState): Point {
  const a = waypoint(v, v.segment);
  const b = waypoint(v, v.segment + 1);
  const length = segmentLength(v, v.segment);
  const t = length === 0 ? 0 : v.along / length;
  return { x: a.x + t * (b.x - a.x), y: a.y + t * (b.y - a.y) };
}

export function locationOf(v: VehicleState): LatLng {
  return toLatLng(v.centre, point(v));
}

/** The direction of travel: the current segment's, degrees clockwise from north. */
export function headingOf(v: VehicleState): number {
  return segmentHeading(v, v.segment);
}

/** Angle between the current segment and the next, degrees (0 straight on, 180 a U-turn). */
function turnAngle(v: VehicleState): number {
  const delta = Math.abs(segmentHeading(v, v.segment + 1) - segmentHeading(v, v.segment)) % 360;
  return delta > 180 ? 360 - delta : delta;
}

/** Speed (m/s) the vehicle may have at the end of this segment. */
function speedAtWaypoint(v: VehicleState): number {
  const arrivingAtDepot = (v.segment + 1) % v.route.length === 0;
  if (v.profile.dwellSeconds[1] > 0 || v.parkAhead || (arrivingAtDepot && v.chargeAtDepot)) return 0;
  return (v.profile.cruiseKmh / 3.6) * Math.max(0.2, 1 - turnAngle(v) / 150);
}

function arriveAtWaypoint(v: VehicleState): void {
  v.segment = (v.segment + 1) % v.route.length;
  v.along = 0;
  v.stopAhead = undefined;
  const park = v.parkAhead;
  // Decided on the way in, so the vehicle can brake for the charger, or a parking place, in good time.
  if (v.segment === v.route.length - 1) v.chargeAtDepot = v.battery < CHARGE_BELOW;
  v.parkAhead = v.segment !== v.route.length - 1 && v.rng() < PARK_CHANCE && v.odometerKm >= v.noParkBeforeKm;
  const [dwellMin, dwellMax] = v.profile.dwellSeconds;
  if (v.segment === 0) {
    // The depot: tyres are seen to, a low battery is charged, and now and then the driver changes.
    if (v.drivers.length > 1 && v.rng() < DRIVER_CHANGE_AT_DEPOT) v.driver = (v.driver + 1) % v.drivers.length;
    if (v.tirePressureLow) {
      v.tirePressureLow = false;
      v.pending = { ...v.pending, tirePressureLow: false };
    }
    if (v.chargeAtDepot) {
      v.chargeAtDepot = false;
      v.mode = 'charging';
      v.chargeTo = between(v.rng, 85, 100);
      v.speed = 0;
      return;
    }
  }
  if (park) {
    v.mode = 'parked';
    v.waitSeconds = between(v.rng, PARK_SECONDS[0], PARK_SECONDS[1]);
    v.speed = 0;
  } else if (dwellMax > 0) {
    v.mode = 'dwelling';
    v.waitSeconds = between(v.rng, dwellMin, dwellMax);
    v.speed = 0;
  }
}

function step(v: VehicleState, dt: number): void {
  const p = v.profile;
  v.clock += dt;

  if (v.mode === 'charging') {
    v.battery = Math.min(v.chargeTo, v.battery + (p.chargePerMinute / 60) * dt);
    if (v.battery >= v.chargeTo) v.mode = 'driving';
  } else if (v.mode === 'dwelling' || v.mode === 'parked') {
    v.waitSeconds -= dt;
    if (v.waitSeconds <= 0) v.mode = 'driving';
  } else if (v.battery <= 0) {
    // Flat: stranded until roadside assistance tops it up a little.
    v.speed = 0;
    v.mode = 'charging';
    v.chargeTo = 15;
  } else {
    // Pace wanders slowly around cruise speed: traffic, the driver, the road.
    if (v.rng() < dt / 30) v.pace = clamp(v.pace + gaussian(v.rng) * 0.1, 0.6, 1.15);
    const remaining = segmentLength(v, v.segment) - v.along;
    if (v.stopAhead === undefined && v.rng() < (p.stopsPerKm * v.speed * dt) / 1000) {
      // A red light or a crossing a little way ahead, if there is room to brake for it.
      const distance = (v.speed * v.speed) / (2 * p.decel) + 2 * v.speed * dt + between(v.rng, 10, 60);
      if (distance < remaining) v.stopAhead = v.along + distance;
    }
    const cruise = Math.min((p.cruiseKmh / 3.6) * v.pace, p.maxKmh / 3.6);
    let target = cruise;
    // Brake so as to reach the next stop, or the next corner, at the speed it allows...
    const limits: [number, number][] = [[remaining, speedAtWaypoint(v)]];
    if (v.stopAhead !== undefined) limits.push([v.stopAhead - v.along, 0]);
    for (const [distance, allowed] of limits) {
      // The distance left once this step is driven: brake before it is too late, not after.
      target = Math.min(target, Math.sqrt(allowed * allowed + 2 * p.decel * Math.max(0, distance - v.speed * dt)));
    }
    // ...and creep the last metre rather than stall short of it.
    target = Math.max(target, Math.min(cruise, 1));
    const before = v.speed;
    v.speed = target > v.speed ? Math.min(target, v.speed + p.accel * dt) : Math.max(target, v.speed - p.decel * 1.5 * dt);
    v.speed = clamp(v.speed, 0, p.maxKmh / 3.6);
    let moved = ((before + v.speed) / 2) * dt;

    if (v.stopAhead !== undefined && v.along + moved >= v.stopAhead) {
      // At the light: wait for green.
      moved = Math.max(0, v.stopAhead - v.along);
      v.along = v.stopAhead;
      v.speed = 0;
      v.stopAhead = undefined;
      v.mode = 'dwelling';
      v.waitSeconds = between(v.rng, 5, 45);
    } else {
      let left = moved;
      while (left > 0) {
        const toEnd = segmentLength(v, v.segment) - v.along;
        if (left < toEnd) {
          v.along += left;
          break;
        }
        left -= toEnd;
        arriveAtWaypoint(v);
        if (v.mode !== 'driving') {
          moved -= left;
          break;
        }
      }
    }
    v.odometerKm += moved / 1000;
    // Faster costs more (air resistance); a little goes on the electronics even at rest.
    const speedFactor = 0.8 + 0.4 * (v.speed / (p.cruiseKmh / 3.6)) ** 2;
    v.battery = Math.max(0, v.battery - (p.percentPerKm * speedFactor * moved) / 1000 - (0.5 / 3600) * dt);
    if (moved > 0 && v.rng() < (DIAGNOSTIC_RATE_PER_HOUR * dt) / 3600) raiseDiagnostic(v);
  }

  // Temperature drifts slowly towards the ambient (a little warmer when driving).
  const target = v.ambient + (v.mode === 'driving' && v.speed > 1 ? 4 : 0) + (v.mode === 'charging' ? 6 : 0);
  v.temperature += ((target - v.temperature) * dt) / 1800 + gaussian(v.rng) * 0.02 * Math.sqrt(dt);
  v.temperature = clamp(v.temperature, -40, 60);
  if (v.rng() < dt / 3600) v.ambient = clamp(v.ambient + gaussian(v.rng), -10, 35);
}

function raiseDiagnostic(v: VehicleState): void {
  const event = DIAGNOSTICS[Math.floor(v.rng() * DIAGNOSTICS.length)]!;
  if (event.tirePressureLow === true) v.tirePressureLow = true;
  v.pending = { ...v.pending, ...event };
}

/** Moves the vehicle on by `seconds` of simulated time. */
export function advance(v: VehicleState, seconds: number): void {
  let left = seconds;
  while (left > 1e-9) {
    const dt = Math.min(STEP_SECONDS, left);
    step(v, dt);
    left -= dt;
  }
}

/** Telemetry data whose diagnostics are flat values, as the API's request type (and the SDK's) has them. */
export type Sample = TelemetryData & { diagnostics?: Record<string, string | number | boolean> };

/** The vehicle's telemetry now, rounded as a device would send it; takes pending diagnostics. */
export function sample(v: VehicleState): Sample {
  const at = locationOf(v);
  const heading = round(headingOf(v), 1);
  const data: Sample = {
    location: { lat: round(at.lat, 6), lng: round(at.lng, 6) },
    speed: round(v.speed * 3.6, 1),
    heading: heading >= 360 ? 0 : heading,
    battery: clamp(round(v.battery, 1), 0, 100),
    temperature: round(v.temperature, 1),
    odometer: round(v.odometerKm, 3),
    // The engine runs while driving and waiting at a light or a stop; not while parked or charging.
    ignition: v.mode === 'driving' || v.mode === 'dwelling',
  };
  const driver = v.drivers[v.driver];
  if (driver !== undefined) data.driverIdentifier = driver;
  if (v.pending !== undefined) {
    data.diagnostics = v.pending;
    v.pending = undefined;
  }
  return data;
}

/**
 * Spreads `rate` records per second over `count` vehicles in turn. Each tick names which vehicles
 * report and when within the tick (ms from its start), evenly spaced; fractions carry over, so
 * the long-run rate is exact whatever the tick length.
 */
export function createScheduler(count: number, rate: number) {
  let carry = 0;
  let next = 0;
  return {
    tick(ms: number): { index: number; offsetMs: number }[] {
      carry += (rate * ms) / 1000;
      const n = Math.floor(carry);
      carry -= n;
      const out: { index: number; offsetMs: number }[] = [];
      for (let i = 0; i < n; i++) {
        out.push({ index: next, offsetMs: Math.floor((i * ms) / n) });
        next = (next + 1) % count;
      }
      return out;
    },
  };
}

/** The point `metres` ahead of the vehicle along its loop, with the direction of travel there. */
export function pointAhead(v: VehicleState, metres: number): { at: LatLng; heading: number } {
  let segment = v.segment;
  let along = v.along + metres;
  // A loop of zero length (every waypoint the same) has nowhere to go.
  for (let guard = 0; guard < 10_000 && along > segmentLength(v, segment); guard++) {
    along -= segmentLength(v, segment);
    segment = (segment + 1) % v.route.length;
  }
  const a = waypoint(v, segment);
  const b = waypoint(v, segment + 1);
  const length = segmentLength(v, segment);
  const t = length === 0 ? 0 : Math.min(1, along / length);
  return { at: toLatLng(v.centre, { x: a.x + t * (b.x - a.x), y: a.y + t * (b.y - a.y) }), heading: segmentHeading(v, segment) };
}

export type SimGeometry =
  | { type: 'Circle'; coordinates: [number, number]; radius: number }
  | { type: 'Polygon'; coordinates: [number, number][][] };

export interface SimGeofence {
  name: string;
  geometry: SimGeometry;
  /** The vehicle whose route it was placed on. */
  vehicleId: string;
}

/** Between the vehicle and a geofence's near edge: far enough that its next record is outside. */
const GEOFENCE_GAP_M = 25;
const GEOFENCE_MIN_RADIUS_M = 40;
const GEOFENCE_MAX_RADIUS_M = 2000;

/**
 * `count` geofences placed across the routes of `vehicles`, just ahead of where each vehicle is
 * now, so that they drive in and out within a minute or so: circles (even k) and small octagons
 * (odd k), named `<prefix>-geofence-01`... Geofence k goes to the k-th vehicle, skipping the slow
 * kinds (robots) while there are others; a vehicle given several has them one after another
 * along its route. Each is wide enough to hold at least two of its vehicle's records at top
 * speed, `secondsBetweenRecords` apart, so no crossing falls between two records. The vehicles
 * are told to park nowhere before they have driven through theirs.
 */
export function geofencesOnRoutes(
  vehicles: readonly VehicleState[], count: number, options: { prefix: string; secondsBetweenRecords: number },
): SimGeofence[] {
  const fast = vehicles.filter((v) => v.profile.cruiseKmh >= 15);
  const hosts = fast.length > 0 ? fast : vehicles;
  if (hosts.length === 0) return [];
  /** Metres ahead already taken on each vehicle's route. */
  const used = new Map<string, number>();
  const out: SimGeofence[] = [];
  const digits = Math.max(2, String(count).length);
  for (let k = 0; k < count; k++) {
    const v = hosts[k % hosts.length]!;
    const radius = clamp(1.2 * (v.profile.maxKmh / 3.6) * options.secondsBetweenRecords, GEOFENCE_MIN_RADIUS_M, GEOFENCE_MAX_RADIUS_M);
    const start = (used.get(v.id) ?? 0) + GEOFENCE_GAP_M;
    used.set(v.id, start + 2 * radius);
    const { at, heading } = pointAhead(v, start + radius);
    // It drives through the geofence, and a little past it, before it next parks.
    v.parkAhead = false;
    v.noParkBeforeKm = v.odometerKm + (start + 2 * radius + GEOFENCE_GAP_M) / 1000;
    const name = `${options.prefix}-geofence-${String(k + 1).padStart(digits, '0')}`;
    const centre = { lat: round(at.lat, 6), lng: round(at.lng, 6) };
    if (k % 2 === 0) {
      out.push({ name, vehicleId: v.id, geometry: { type: 'Circle', coordinates: [centre.lng, centre.lat], radius: Math.round(radius) } });
      continue;
    }
    // An octagon turned to the road, its vertices alternately at the full radius and a little
    // inside: convex, so a route crosses its edge once on the way in and once on the way out.
    const ring: [number, number][] = [];
    for (let i = 0; i < 8; i++) {
      const angle = ((heading + 22.5 + i * 45) * Math.PI) / 180;
      const r = radius * (i % 2 === 0 ? 1 : 0.9);
      const p = toLatLng(centre, { x: r * Math.sin(angle), y: r * Math.cos(angle) });
      ring.push([round(p.lng, 6), round(p.lat, 6)]);
    }
    // Those angles turn clockwise; RFC 7946 wants an outer ring counter-clockwise.
    ring.reverse();
    ring.push(ring[0]!);
    out.push({ name, vehicleId: v.id, geometry: { type: 'Polygon', coordinates: [ring] } });
  }
  return out;
}
