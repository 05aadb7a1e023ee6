// Geometry validation: each rule named at the right JSON pointer, valid shapes accepted, the request
// schema's structure, and the cost of checking a ring of 10,000 positions for self-intersection.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { compileDataValidator } from '../src/schema/validation.ts';
import { GeofenceGeometry } from '../src/geofences/schema.ts';
import { validateGeometry } from '../src/geofences/validation.ts';

const square = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]];
const polygon = (...rings: unknown[]) => ({ type: 'Polygon', coordinates: rings });

/** The errors of an invalid geometry (fails the test when it is valid). */
function errorsOf(g: unknown) {
  const result = validateGeometry(g);
  assert.equal(result.ok, false, `accepted ${JSON.stringify(g).slice(0, 200)}`);
  return result.ok ? [] : result.errors;
}

function expectError(g: unknown, path: string, words: RegExp): void {
  const errors = errorsOf(g);
  assert.ok(errors.some((e) => e.path === path && words.test(e.message)), `wanted ${path} ${words}, got ${JSON.stringify(errors)}`);
}

/** A ring of `n` positions around (lng, lat), closed, counter-clockwise. */
function circleRing(n: number, lng = 13.4, lat = 52.52, r = 0.1): number[][] {
  const ring = Array.from({ length: n - 1 }, (_, i) => [lng + r * Math.cos((2 * Math.PI * i) / (n - 1)), lat + r * Math.sin((2 * Math.PI * i) / (n - 1))]);
  return [...ring, ring[0]!];
}

test('valid geometries are accepted as given: polygons, holes, altitude, repeated positions, multipolygons, circles', () => {
  const valid = [
    polygon(square),
    polygon([[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]], [[2, 2], [2, 4], [4, 4], [4, 2], [2, 2]], [[6, 6], [6, 8], [8, 8], [8, 6], [6, 6]]),
    polygon([[0, 0, 30], [1, 0, 31], [1, 1, 32], [0, 1, 30], [0, 0, 30]]),
    polygon([[0, 0], [1, 0], [1, 0], [1, 1], [0, 1], [0, 0], [0, 0]]),
    polygon([[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]), // clockwise is accepted too (RFC 7946 §3.1.6)
    polygon([[0, 0], [4, 0], [4, 4], [0, 4], [0, 0]], [[0, 0], [2, 1], [1, 2], [0, 0]]), // a hole touching the outer ring at a vertex
    { type: 'MultiPolygon', coordinates: [[square], [[[170, 0], [180, 0], [180, 5], [170, 5], [170, 0]]], [[[-180, 0], [-170, 0], [-170, 5], [-180, 5], [-180, 0]]]] },
    { type: 'Circle', coordinates: [179.9, 89.9], radius: 100_000 },
    { type: 'Circle', coordinates: [13.4, 52.52, 34], radius: 1 },
    polygon(circleRing(10_000)),
  ];
  for (const g of valid) {
    const result = validateGeometry(g);
    assert.deepEqual(result, { ok: true, geometry: g }, JSON.stringify(g).slice(0, 200));
    assert.equal(result.ok && result.geometry, g);
  }
});

test('positions: finite numbers in range, two or three of them', () => {
  const at = (p: unknown) => polygon([[0, 0], [1, 0], p, [0, 1], [0, 0]]);
  expectError(at([181, 0]), '/coordinates/0/2', /longitude 181 is outside -180 to 180/);
  expectError(at([-180.5, 0]), '/coordinates/0/2', /longitude/);
  expectError(at([0, 90.1]), '/coordinates/0/2', /latitude 90.1 is outside -90 to 90/);
  expectError(at([Number.NaN, 0]), '/coordinates/0/2/0', /longitude must be a finite number/);
  expectError(at([0, Number.POSITIVE_INFINITY]), '/coordinates/0/2/1', /latitude must be a finite number/);
  expectError(at(['1', 1]), '/coordinates/0/2/0', /finite number/);
  expectError(at([1, 1, 'x']), '/coordinates/0/2/2', /altitude/);
  expectError(at([1]), '/coordinates/0/2', /\[longitude, latitude\]/);
  expectError(at([1, 1, 1, 1]), '/coordinates/0/2', /\[longitude, latitude\]/);
  expectError({ type: 'MultiPolygon', coordinates: [[square], [[[0, 0], [1, 0], [1, 95], [0, 0]]]] }, '/coordinates/1/0/2', /latitude 95/);
  // Many bad positions: a bounded list, not one error each.
  const ring = circleRing(5000).map(([x]) => [x, 100]);
  assert.equal(errorsOf(polygon(ring)).length, 20);
});

test('rings: closed, at least 4 positions, at most 10,000 positions in all', () => {
  expectError(polygon([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0.5]]), '/coordinates/0/4', /not closed/);
  expectError(polygon([[0, 0], [1, 0], [0, 0]]), '/coordinates/0', /at least 4 positions.*has 3/);
  expectError(polygon(square, [[0.2, 0.2], [0.3, 0.2], [0.2, 0.2]]), '/coordinates/1', /at least 4/);
  expectError(polygon(circleRing(10_001)), '/coordinates', /10001 positions; at most 10000/);
  const split = { type: 'MultiPolygon', coordinates: [[circleRing(5000)], [circleRing(5001, 20)]] };
  expectError(split, '/coordinates', /10001 positions/);
  expectError(polygon(), '/coordinates', /non-empty array of rings/);
  expectError(polygon('ring'), '/coordinates/0', /array of positions/);
  expectError({ type: 'MultiPolygon', coordinates: [] }, '/coordinates', /non-empty array of polygons/);
});

test('zero area, self-intersection, folds, touching itself', () => {
  expectError(polygon([[0, 0], [1, 1], [2, 2], [0, 0]]), '/coordinates/0', /zero area/);
  expectError(polygon([[0, 0], [0, 0], [0, 0], [0, 0]]), '/coordinates/0', /zero area/);
  // A bow tie: the edge from position 1 crosses the edge from position 3.
  expectError(polygon([[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]), '/coordinates/0/2', /crosses or touches itself: the edge from \/coordinates\/0\/0 meets the edge from \/coordinates\/0\/2/);
  // A figure eight through one shared vertex.
  expectError(polygon([[0, 0], [1, 1], [2, 0], [2, 2], [1, 1], [0, 2], [0, 0]]), '/coordinates/0/4', /touches itself: the edge from \/coordinates\/0\/0 meets the edge from \/coordinates\/0\/4/);
  // A spike doubling back along its own edge.
  expectError(polygon([[0, 0], [4, 0], [4, 4], [4, 2], [0, 4], [0, 0]]), '/coordinates/0/3', /crosses or touches itself: the edge from \/coordinates\/0\/1 meets/);
  // A vertex on another edge.
  expectError(polygon([[0, 0], [4, 0], [4, 4], [2, 0], [0, 4], [0, 0]]), '/coordinates/0/3', /touches itself: the edge from \/coordinates\/0\/0 meets/);
});

test('holes: must not cross the outer ring or each other, and must lie inside it', () => {
  const outer = [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]];
  expectError(polygon(outer, [[8, 8], [12, 8], [12, 9], [8, 9], [8, 8]]), '/coordinates/1/0', /the outer ring and hole 1 cross/);
  expectError(polygon(outer, [[2, 2], [4, 2], [4, 4], [2, 4], [2, 2]], [[3, 3], [5, 3], [5, 5], [3, 5], [3, 3]]), '/coordinates/2/3', /hole 1 and hole 2 cross: the edge from \/coordinates\/1\/2 meets/);
  expectError(polygon(outer, [[20, 20], [21, 20], [21, 21], [20, 20]]), '/coordinates/1', /hole 1 lies outside the outer ring/);
});

test('a ring spanning more than 180 degrees of longitude is refused: split it at the antimeridian', () => {
  expectError(polygon([[170, 0], [-170, 0], [-170, 10], [170, 10], [170, 0]]), '/coordinates/0', /spans 340 degrees.*MultiPolygon split at longitude ±180/);
  expectError(polygon([[-100, 0], [100, 0], [100, 1], [-100, 1], [-100, 0]]), '/coordinates/0', /spans 200 degrees/);
  assert.equal(validateGeometry(polygon([[-90, 0], [90, 0], [90, 1], [-90, 1], [-90, 0]])).ok, true, 'exactly 180 degrees');
});

test('circles: radius 1 m to 100 km, a valid center', () => {
  expectError({ type: 'Circle', coordinates: [0, 0], radius: 0.5 }, '/radius', /0.5 m is outside 1 to 100000 m/);
  expectError({ type: 'Circle', coordinates: [0, 0], radius: 100_001 }, '/radius', /outside/);
  expectError({ type: 'Circle', coordinates: [0, 0], radius: Number.NaN }, '/radius', /finite number/);
  expectError({ type: 'Circle', coordinates: [0, 0] }, '/radius', /finite number/);
  expectError({ type: 'Circle', coordinates: [200, 0], radius: 10 }, '/coordinates', /longitude 200/);
});

test('type and properties', () => {
  expectError({ type: 'Point', coordinates: [0, 0] }, '/type', /"Polygon", "MultiPolygon" or "Circle"/);
  expectError([], '', /object/);
  expectError(null, '', /object/);
  expectError({ ...polygon(square), bbox: [0, 0, 1, 1] }, '/bbox', /unknown property/);
  expectError({ type: 'Circle', coordinates: [0, 0], radius: 5, center: 1 }, '/center', /unknown property/);
});

test('the request schema checks structure only', () => {
  const check = compileDataValidator(GeofenceGeometry);
  for (const g of [polygon(square), { type: 'Circle', coordinates: [1, 2], radius: 3 }, { type: 'MultiPolygon', coordinates: [[square]] }, polygon([[0, 0], [1, 0]])]) {
    assert.equal(check(g), true, JSON.stringify(g));
  }
  for (const g of [{ ...polygon(square), extra: 1 }, polygon([['0', 0]]), polygon([[0, 0, 0, 0]]), { type: 'Circle', coordinates: [1, 2] }, { type: 'Line', coordinates: [] }, polygon(square, 'x')]) {
    assert.equal(check(g), false, JSON.stringify(g));
  }
});

test('a ring of 10,000 positions is checked quickly, whether it crosses itself or not', (t) => {
  const ring = circleRing(10_000);
  const crossed = ring.map((p) => [...p]);
  [crossed[5000], crossed[5001]] = [crossed[5001]!, crossed[5000]!]; // two neighbours swapped: a bow tie
  // A star: 5,000 thin spikes whose long edges overlap in both axes, the sweep's worst kind of input.
  const star = Array.from({ length: 9999 }, (_, i) => {
    const angle = (2 * Math.PI * i) / 9999, r = i % 2 === 0 ? 0.5 : 0.001;
    return [13.4 + r * Math.cos(angle), 52.52 + r * Math.sin(angle)];
  });
  star.push(star[0]!);
  for (const [name, g, ok] of [['circle-like ring', polygon(ring), true], ['same with two positions swapped', polygon(crossed), false], ['star of 5,000 spikes', polygon(star), true]] as const) {
    validateGeometry(g);
    const runs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      assert.equal(validateGeometry(g).ok, ok, name);
      runs.push(performance.now() - started);
    }
    const best = Math.min(...runs);
    t.diagnostic(`validation of a 10,000-position ${name}: ${best.toFixed(1)} ms (best of 5, sort-and-sweep on longitude)`);
    // Generous: the machine running the suite may be shared and busy.
    assert.ok(best < 1500, `${name}: ${best} ms`);
  }
  expectError(polygon(crossed), '/coordinates/0/5001', /crosses or touches itself: the edge from \/coordinates\/0\/4999 meets the edge from \/coordinates\/0\/5001/);
});

test('a star of 10,000 positions with one spike laid across its neighbours is refused', () => {
  const star = Array.from({ length: 9999 }, (_, i) => {
    const angle = (2 * Math.PI * i) / 9999, r = i % 2 === 0 ? 0.5 : 0.001;
    return [13.4 + r * Math.cos(angle), 52.52 + r * Math.sin(angle)];
  });
  // The tip of spike 2,000 turned by a few spikes' width: its edges cross the spikes beside it.
  const turned = (2 * Math.PI * 4010) / 9999;
  star[4000] = [13.4 + 0.5 * Math.cos(turned), 52.52 + 0.5 * Math.sin(turned)];
  star.push(star[0]!);
  const errors = errorsOf(polygon(star));
  assert.equal(errors.length, 1);
  assert.match(errors[0]!.message, /the ring crosses or touches itself/);
});
