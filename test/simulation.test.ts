// The simulator's motion model (src/cli/simulation.ts): long runs of every vehicle type stay within
// docs/API.md "Telemetry" (checked by the service's own record schema too), move the way they say they
// move, and use their batteries believably.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  BERLIN,
  PROFILES,
  type SimType,
  type VehicleState,
  advance,
  bearing,
  createScheduler,
  createVehicle,
  distanceMetres,
  geofencesOnRoutes,
  normalizeDegrees,
  sample,
  toLatLng,
  typeFor,
} from '../src/cli/simulation.ts';
import { contains } from '../src/geofences/geometry.ts';
import { DEFAULT_TRIP_SETTINGS, type TripEvent, advanceInPlace, initialTripState } from '../src/history/trips.ts';
import type { GeofenceGeometry } from '../src/geofences/schema.ts';
import { validateGeometry } from '../src/geofences/validation.ts';
import { compileDataValidator } from '../src/schema/validation.ts';
import { TelemetryData } from '../src/telemetry/schema.ts';

const validData = compileDataValidator<TelemetryData>(TelemetryData);
const TYPES = Object.keys(PROFILES) as SimType[];

/** Smallest angle between two headings, degrees. */
const angleBetween = (a: number, b: number) => {
  const d = Math.abs(a - b) % 360;
  return d > 180 ? 360 - d : d;
};

interface Step {
  data: TelemetryData;
  segment: number;
  mode: VehicleState['mode'];
}

/** Samples `v` every `every` seconds for `seconds`; the model itself steps every 0.5 s. */
function run(v: VehicleState, seconds: number, every: number): Step[] {
  const out: Step[] = [];
  for (let t = 0; t < seconds; t += every) {
    advance(v, every);
    out.push({ data: sample(v), segment: v.segment, mode: v.mode });
  }
  return out;
}

describe('a long run of every vehicle type', () => {
  // 12 simulated hours of each type, sampled every second: long enough to drain and recharge.
  const runs = TYPES.map((type, i) => {
    const vehicle = createVehicle(`sim-${type}-${i}`, type);
    return { type, vehicle, steps: run(vehicle, 12 * 3600, 1) };
  });

  test('every record is valid telemetry, within the §1 ranges', () => {
    for (const { type, steps } of runs) {
      for (const { data } of steps) {
        assert.ok(validData(data), `${type}: ${JSON.stringify(data)}: ${JSON.stringify(validData.errors)}`);
        const { location, speed, heading, battery, temperature, odometer } = data;
        assert.ok(location !== undefined && speed !== undefined && heading !== undefined);
        assert.ok(battery !== undefined && temperature !== undefined && odometer !== undefined);
        assert.ok(battery >= 0 && battery <= 100, `${type} battery ${battery}`);
        assert.ok(speed >= 0 && speed <= PROFILES[type].maxKmh, `${type} speed ${speed}`);
        assert.ok(heading >= 0 && heading < 360, `${type} heading ${heading}`);
        assert.ok(temperature >= -100 && temperature <= 200, `${type} temperature ${temperature}`);
        assert.ok(odometer >= 0);
        // Within the city: no loop goes further than 8 km from the centre.
        assert.ok(distanceMetres(BERLIN, location) < 8_500, `${type} strayed to ${JSON.stringify(location)}`);
      }
    }
  });

  test('the odometer never goes back, and grows by the distance actually driven', () => {
    for (const { type, steps } of runs) {
      let driven = 0;
      for (let i = 1; i < steps.length; i++) {
        const [before, after] = [steps[i - 1]!.data, steps[i]!.data];
        assert.ok(after.odometer! >= before.odometer!, `${type}: odometer ${before.odometer} then ${after.odometer}`);
        driven += distanceMetres(before.location!, after.location!);
      }
      const counted = (steps.at(-1)!.data.odometer! - steps[0]!.data.odometer!) * 1000;
      assert.ok(driven > 1000, `${type} hardly moved: ${driven} m`);
      // Straight lines between 1 s samples cut corners a little; rounding adds a little.
      assert.ok(Math.abs(counted - driven) / driven < 0.02, `${type}: odometer +${counted} m, positions moved ${driven} m`);
    }
  });

  test('the heading is the direction the vehicle moves in', () => {
    for (const { type, steps } of runs) {
      let checked = 0;
      for (let i = 5; i < steps.length; i++) {
        // 5 s apart on one straight segment, with enough movement for rounded positions to show a direction.
        const [before, after] = [steps[i - 5]!, steps[i]!];
        if (steps.slice(i - 5, i + 1).some((s) => s.segment !== after.segment)) continue;
        if (distanceMetres(before.data.location!, after.data.location!) < 5) continue;
        const moved = bearing(before.data.location!, after.data.location!);
        assert.ok(angleBetween(moved, after.data.heading!) < 3, `${type}: heading ${after.data.heading}, moved towards ${moved}`);
        checked++;
      }
      assert.ok(checked > 1000, `${type}: only ${checked} movements checked`);
    }
  });

  test('vehicles park now and then: the service\'s own trip detection finds trips with stops between them', () => {
    for (const { type, steps } of runs) {
      const parked = steps.filter((s) => s.mode === 'parked');
      assert.ok(parked.every((s) => s.data.speed === 0), `${type} moved while parked`);
      const events: TripEvent[] = [];
      const state = initialTripState();
      const start = Date.parse('2026-11-27T08:00:00Z');
      for (const [i, s] of steps.entries()) {
        advanceInPlace(state, { timestamp: start + i * 1000, data: s.data }, DEFAULT_TRIP_SETTINGS, events);
      }
      const ended = events.filter((e) => e.type === 'trip.ended');
      const stops = events.filter((e) => e.type === 'stop.started');
      // 12 hours: a stop every hour or two at least, as a delivery round has them.
      assert.ok(ended.length >= 6 && stops.length >= 6, `${type}: ${ended.length} trips ended and ${stops.length} stops in 12 hours`);
    }
  });

  test('speeds are plausible for the type, and change at a plausible rate', () => {
    for (const { type, steps } of runs) {
      const profile = PROFILES[type];
      const moving = steps.filter((s) => s.data.speed! > 1);
      const mean = moving.reduce((sum, s) => sum + s.data.speed!, 0) / moving.length;
      assert.ok(mean > profile.cruiseKmh * 0.4 && mean < profile.cruiseKmh * 1.15, `${type}: mean speed ${mean} km/h`);
      for (let i = 1; i < steps.length; i++) {
        const change = (steps[i]!.data.speed! - steps[i - 1]!.data.speed!) / 3.6; // m/s in 1 s
        // Braking may be firmer than the comfortable rate (arriving at a stop), never violent.
        assert.ok(change <= profile.accel + 0.1 && change >= -Math.max(profile.decel * 1.5, 1) - 0.1, `${type}: ${change} m/s²`);
      }
    }
  });

  test('batteries drain while driving and charge only parked at the depot', () => {
    for (const { type, vehicle, steps } of runs) {
      const depot = toLatLng(BERLIN, vehicle.route[0]!);
      let charged = 0;
      let drained = 0;
      for (let i = 1; i < steps.length; i++) {
        const [before, after] = [steps[i - 1]!.data, steps[i]!.data];
        // Charging within the second: arrived and plugged in, or charged up and set off.
        const charging = steps[i - 1]!.mode === 'charging' || steps[i]!.mode === 'charging';
        if (after.battery! > before.battery!) {
          assert.ok(charging, `${type} gained charge without charging`);
          assert.ok(distanceMetres(after.location!, depot) < 10, `${type} charged away from its depot`);
          if (steps[i - 1]!.mode === 'charging' && steps[i]!.mode === 'charging') assert.equal(after.speed, 0, `${type} charged while moving`);
          charged++;
        } else if (!charging) {
          drained += before.battery! - after.battery!;
        }
      }
      assert.ok(charged > 0, `${type} never charged in 12 h`);
      assert.ok(drained > 60, `${type} used only ${drained} % in 12 h`);
      assert.ok(Math.min(...steps.map((s) => s.data.battery!)) > 5, `${type} ran nearly flat`);
    }
  });

  test('temperature drifts slowly', () => {
    for (const { type, steps } of runs) {
      for (let i = 1; i < steps.length; i++) {
        const change = Math.abs(steps[i]!.data.temperature! - steps[i - 1]!.data.temperature!);
        assert.ok(change <= 0.3, `${type}: ${change} °C in 1 s`);
      }
    }
  });

  test('now and then a diagnostic; a low tyre is seen to at the depot', () => {
    const events = runs.flatMap(({ steps }) =>
      steps.flatMap((s) => (s.data.diagnostics === undefined ? [] : [s.data.diagnostics as Record<string, unknown>])),
    );
    // About 3 per driving hour per vehicle: now and then, not every record.
    assert.ok(events.length > TYPES.length * 5 && events.length < TYPES.length * 60, `${events.length} diagnostics`);
    assert.ok(events.some((d) => typeof d.dtc === 'string' && /^[PCBU][0-9A-F]{4}$/.test(d.dtc)));
    assert.ok(events.some((d) => d.tirePressureLow === true));
    assert.ok(events.some((d) => d.tirePressureLow === false));
  });
});

describe('vehicles', () => {
  test('the same id and seed give the same vehicle and the same run; another id another', () => {
    const a = run(createVehicle('sim-0001', 'van'), 600, 5);
    const b = run(createVehicle('sim-0001', 'van'), 600, 5);
    const c = run(createVehicle('sim-0002', 'van'), 600, 5);
    const d = run(createVehicle('sim-0001', 'van', { seed: 7 }), 600, 5);
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
    assert.notDeepEqual(a, d);
  });

  test('the mix has vans, shuttles, scooters and more, all types the service knows', () => {
    const types = new Set(Array.from({ length: 20 }, (_, i) => typeFor(i)));
    for (const type of ['van', 'shuttle', 'scooter', 'car', 'bus'] as const) assert.ok(types.has(type), type);
    const known = ['car', 'van', 'truck', 'bus', 'shuttle', 'motorcycle', 'scooter', 'bicycle', 'robot', 'drone', 'other'];
    for (const type of TYPES) assert.ok(known.includes(type), type);
  });

  test('resuming continues from the last state: on the route near the last position', () => {
    const first = createVehicle('sim-0003', 'scooter');
    const last = run(first, 900, 1).at(-1)!.data;
    const resumed = createVehicle('sim-0003', 'scooter', {
      resume: { location: last.location, battery: last.battery, odometer: last.odometer, temperature: last.temperature },
    });
    const now = sample(resumed);
    assert.ok(distanceMetres(now.location!, last.location!) < 1, `resumed ${distanceMetres(now.location!, last.location!)} m away`);
    assert.equal(now.odometer, last.odometer);
    assert.equal(now.battery, last.battery);
    assert.equal(now.temperature, last.temperature);
  });

  test('a flat battery strands the vehicle, never below 0, until it is topped up', () => {
    const v = createVehicle('sim-flat', 'robot');
    v.battery = 0.02;
    const steps = run(v, 3600, 1);
    assert.ok(steps.every((s) => s.data.battery! >= 0));
    assert.ok(steps.some((s) => s.data.battery === 0));
    assert.ok(steps.at(-1)!.data.battery! > 0);
  });

  test('headings are normalized into [0, 360)', () => {
    assert.equal(normalizeDegrees(360), 0);
    assert.equal(normalizeDegrees(-90), 270);
    assert.equal(normalizeDegrees(720.5), 0.5);
    assert.equal(bearing({ lat: 52, lng: 13 }, { lat: 53, lng: 13 }), 0);
    assert.ok(Math.abs(bearing({ lat: 52, lng: 13 }, { lat: 52, lng: 14 }) - 90) < 0.5);
  });
});

describe('scheduler', () => {
  test('spreads the rate evenly over the vehicles and across each tick', () => {
    const scheduler = createScheduler(20, 50);
    const counts = new Array<number>(20).fill(0);
    let total = 0;
    for (let tick = 0; tick < 10; tick++) {
      const plan = scheduler.tick(1000);
      assert.equal(plan.length, 50);
      for (const { index, offsetMs } of plan) {
        counts[index]!++;
        assert.ok(offsetMs >= 0 && offsetMs < 1000);
      }
      total += plan.length;
    }
    assert.equal(total, 500);
    assert.deepEqual(counts, new Array<number>(20).fill(25));
  });

  test('carries fractions over, so slow and uneven ticks keep the long-run rate', () => {
    const slow = createScheduler(5, 0.5);
    assert.equal([1, 2, 3, 4].reduce((n) => n + slow.tick(1000).length, 0), 2);
    const uneven = createScheduler(3, 30);
    assert.equal([250, 1750, 1000, 333, 667].reduce((n, ms) => n + uneven.tick(ms).length, 0), 120);
  });
});

describe('geofences on the routes (--geofences)', () => {
  /** The simulator's fleet at its start: 20 vehicles of the usual mix. */
  const fleet = (seed: number) => Array.from({ length: 20 }, (_, i) => createVehicle(`sim-${String(i + 1).padStart(4, '0')}`, typeFor(i), { seed }));

  /**
   * Drives the geofence's vehicle (of the fleet it was placed for, as the simulator does), sampled
   * every `every` s: when it went in and out.
   */
  function crossings(vehicles: readonly VehicleState[], vehicleId: string, geometry: GeofenceGeometry, every: number, seconds: number) {
    const v = vehicles.find((x) => x.id === vehicleId)!;
    const out: { inside: boolean; at: number }[] = [];
    let inside = false;
    for (let t = every; t <= seconds; t += every) {
      advance(v, every);
      const { lat, lng } = sample(v).location!;
      const now = contains(geometry, lng, lat);
      if (now !== inside) out.push({ inside: now, at: t });
      inside = now;
    }
    return out;
  }

  test('valid circles and counter-clockwise octagons, named by prefix, just ahead of a vehicle that is not inside yet', () => {
    const vehicles = fleet(0);
    const placed = geofencesOnRoutes(vehicles, 12, { prefix: 'sim', secondsBetweenRecords: 2 });
    assert.deepEqual(placed.map((g) => g.name), Array.from({ length: 12 }, (_, k) => `sim-geofence-${String(k + 1).padStart(2, '0')}`));
    assert.deepEqual(placed.map((g) => g.geometry.type), placed.map((_, k) => (k % 2 === 0 ? 'Circle' : 'Polygon')));
    for (const g of placed) {
      const result = validateGeometry(g.geometry);
      assert.ok(result.ok, `${g.name}: ${JSON.stringify(result)}`);
      const host = vehicles.find((v) => v.id === g.vehicleId)!;
      assert.notEqual(host.type, 'robot', 'slow vehicles get none while there are others');
      const { lat, lng } = sample(host).location!;
      assert.ok(!contains(g.geometry, lng, lat), `${g.name}: its vehicle starts outside`);
      if (g.geometry.type === 'Polygon') {
        const ring = g.geometry.coordinates[0]!;
        let twiceArea = 0;
        for (let i = 0; i + 1 < ring.length; i++) twiceArea += ring[i]![0] * ring[i + 1]![1] - ring[i + 1]![0] * ring[i]![1];
        assert.ok(twiceArea > 0, `${g.name}: the outer ring runs counter-clockwise`);
      }
    }
    // 20 vehicles, 19 of them fast: geofences 1 and 20 share a vehicle, one after the other on its route.
    const many = geofencesOnRoutes(vehicles, 20, { prefix: 'x', secondsBetweenRecords: 2 });
    assert.equal(many[0]!.vehicleId, many[19]!.vehicleId);
    assert.equal(many[19]!.name, 'x-geofence-20');
  });

  test('the default run (20 vehicles, 10 records/s): each vehicle drives into its geofence within a minute, and once out again', () => {
    for (let seed = 0; seed < 10; seed++) {
      const vehicles = fleet(seed);
      for (const g of geofencesOnRoutes(vehicles, 5, { prefix: 'sim', secondsBetweenRecords: 2 })) {
        const seen = crossings(vehicles, g.vehicleId, g.geometry, 2, 180);
        assert.ok(seen.length >= 1 && seen[0]!.inside && seen[0]!.at <= 60, `seed ${seed}, ${g.name}: ${JSON.stringify(seen)}`);
        assert.deepEqual(seen.map((c) => c.inside), [true, false], `seed ${seed}, ${g.name}: one way in and one way out in 3 minutes`);
      }
    }
  });

  test('records further apart get wider geofences, so no crossing falls between two records', () => {
    const vehicles = fleet(3);
    const radius = (every: number) => (geofencesOnRoutes(vehicles, 1, { prefix: 's', secondsBetweenRecords: every })[0]!.geometry as { radius: number }).radius;
    assert.equal(radius(0.1), 40, 'never smaller than 40 m');
    assert.ok(radius(20) > 300, `at 20 s between records: ${radius(20)} m`);
    const sparse = fleet(3);
    for (const g of geofencesOnRoutes(sparse, 4, { prefix: 's', secondsBetweenRecords: 20 })) {
      const seen = crossings(sparse, g.vehicleId, g.geometry, 20, 900);
      assert.equal(seen[0]?.inside, true, `${g.name}: entered although sampled every 20 s (${JSON.stringify(seen)})`);
    }
  });
});
