// Point-in-geofence answers checked against known cases and against references written here
// independently of the module: a winding-number polygon test and a 3-D chord distance for circles.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { circleBoxes, contains, EARTH_RADIUS_M, geometryBoxes, type BBox } from '../src/geofences/geometry.ts';
import type { GeofenceGeometry } from '../src/geofences/schema.ts';
import { validateGeometry } from '../src/geofences/validation.ts';
import { rng } from './helpers/random.ts';

type Ring = number[][];
const polygon = (...rings: Ring[]): GeofenceGeometry => ({ type: 'Polygon', coordinates: rings });
const circle = (lng: number, lat: number, radius: number): GeofenceGeometry => ({ type: 'Circle', coordinates: [lng, lat], radius });

/** Great-circle distance as the angle between unit vectors (chord form): not the haversine. */
function referenceDistance(lng1: number, lat1: number, lng2: number, lat2: number): number {
  const v = (lng: number, lat: number) => {
    const [l, p] = [(lng * Math.PI) / 180, (lat * Math.PI) / 180];
    return [Math.cos(p) * Math.cos(l), Math.cos(p) * Math.sin(l), Math.sin(p)];
  };
  const a = v(lng1, lat1), b = v(lng2, lat2);
  const chord = Math.hypot(a[0]! - b[0]!, a[1]! - b[1]!, a[2]! - b[2]!);
  return 2 * EARTH_RADIUS_M * Math.asin(chord / 2);
}

/** The point `distance` meters from (lng, lat) on `bearing` degrees (spherical destination formula). */
function destination(lng: number, lat: number, bearing: number, distance: number): [number, number] {
  const d = distance / EARTH_RADIUS_M, b = (bearing * Math.PI) / 180, p1 = (lat * Math.PI) / 180, l1 = (lng * Math.PI) / 180;
  const p2 = Math.asin(Math.sin(p1) * Math.cos(d) + Math.cos(p1) * Math.sin(d) * Math.cos(b));
  const l2 = l1 + Math.atan2(Math.sin(b) * Math.sin(d) * Math.cos(p1), Math.cos(d) - Math.sin(p1) * Math.sin(p2));
  return [((((l2 * 180) / Math.PI + 540) % 360) - 180), (p2 * 180) / Math.PI];
}

/** Winding number of a ring around a point (0 = outside), and the distance to its nearest edge. */
function winding(ring: Ring, x: number, y: number): { wn: number; edgeDistance: number } {
  let wn = 0, edgeDistance = Infinity;
  for (let i = 0; i + 1 < ring.length; i++) {
    const [ax, ay] = ring[i] as [number, number], [bx, by] = ring[i + 1] as [number, number];
    const t = Math.max(0, Math.min(1, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)));
    edgeDistance = Math.min(edgeDistance, Math.hypot(x - (ax + t * (bx - ax)), y - (ay + t * (by - ay))));
    const side = (bx - ax) * (y - ay) - (x - ax) * (by - ay);
    if (ay <= y && by > y && side > 0) wn++;
    else if (ay > y && by <= y && side < 0) wn--;
  }
  return { wn, edgeDistance };
}

test('a square with a hole: inside, outside, edges, vertices, the hole and its edges', () => {
  const g = polygon([[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]], [[4, 4], [6, 4], [6, 6], [4, 6], [4, 4]]);
  const expect: [number, number, boolean][] = [
    [2, 2, true], [-1, 5, false], [11, 5, false], [5, 11, false], [5, -0.000001, false],
    [5, 0, true], [10, 5, true], [5, 10, true], [0, 5, true], // edges
    [0, 0, true], [10, 0, true], [10, 10, true], [0, 10, true], // vertices
    [5, 5, false], [4.5, 5.5, false], // in the hole
    [4, 5, true], [5, 6, true], [4, 4, true], [6, 6, true], // the hole's edges and vertices
    [3.999999, 5, true], [4.000001, 5, false],
  ];
  for (const [x, y, inside] of expect) assert.equal(contains(g, x, y), inside, `(${x}, ${y})`);
});

test('slanted edges, rays through vertices and a concave notch', () => {
  const triangle = polygon([[0, 0], [1, 1], [1, 0], [0, 0]]);
  assert.equal(contains(triangle, 0.5, 0.5), true, 'on the hypotenuse');
  assert.equal(contains(triangle, 0.3, 0.3), true, 'on the hypotenuse');
  assert.equal(contains(triangle, 0.5, 0.5 + 1e-7), false, 'just above the hypotenuse');
  const diamond = polygon([[-1, 0], [0, -1], [1, 0], [0, 1], [-1, 0]]);
  assert.equal(contains(diamond, 0, 0), true, 'ray through a vertex counts once');
  assert.equal(contains(diamond, -2, 0), false, 'ray through two vertices');
  assert.equal(contains(diamond, 0.5, -0.5), true, 'on an edge');
  const u = polygon([[0, 0], [3, 0], [3, 3], [2, 3], [2, 1], [1, 1], [1, 3], [0, 3], [0, 0]]);
  assert.equal(contains(u, 1.5, 2), false, 'in the notch');
  assert.equal(contains(u, 1.5, 0.5), true);
  assert.equal(contains(u, 2.5, 2.5), true);
  assert.equal(contains(u, 1.5, 1), true, 'on the notch floor');
});

test('a MultiPolygon holds what any part holds; an altitude is ignored', () => {
  const g: GeofenceGeometry = {
    type: 'MultiPolygon',
    coordinates: [[[[0, 0, 5], [1, 0, 5], [1, 1, 5], [0, 1, 5], [0, 0, 5]]], [[[5, 5], [6, 5], [6, 6], [5, 6], [5, 5]]]],
  };
  assert.equal(contains(g, 0.5, 0.5), true);
  assert.equal(contains(g, 5.5, 5.5), true);
  assert.equal(contains(g, 3, 3), false);
  assert.deepEqual(geometryBoxes(g).map((b) => b.map((v) => Math.round(v) + 0)), [[0, 0, 1, 1], [5, 5, 6, 6]]);
});

test('a shape split at the antimeridian holds points on both sides and on ±180', () => {
  const g: GeofenceGeometry = {
    type: 'MultiPolygon',
    coordinates: [[[[170, -10], [180, -10], [180, 10], [170, 10], [170, -10]]], [[[-180, -10], [-170, -10], [-170, 10], [-180, 10], [-180, -10]]]],
  };
  for (const lng of [179.5, -179.5, 180, -180, 170, -170]) assert.equal(contains(g, lng, 0), true, String(lng));
  for (const lng of [0, 169.9, -169.9]) assert.equal(contains(g, lng, 0), false, String(lng));
  // One half alone still holds the meridian written the other way.
  const east = polygon([[170, -10], [180, -10], [180, 10], [170, 10], [170, -10]]);
  assert.equal(contains(east, -180, 5), true);
  assert.equal(contains(east, -179.9, 5), false);
});

test('circles agree with an independent great-circle distance, across the antimeridian and near the poles', () => {
  const random = rng(7);
  const cases: [number, number, number][] = [[13.4, 52.52, 250], [179.9, 0, 50_000], [-179.95, 45, 80_000], [0, 89.9, 50_000], [120, -89.95, 30_000], [0, 0, 1], [-70, -30, 100_000]];
  for (const [lng, lat, radius] of cases) {
    const g = circle(lng, lat, radius);
    let inside = 0;
    for (let i = 0; i < 4000; i++) {
      const [x, y] = destination(lng, lat, random() * 360, random() * radius * 2);
      const d = referenceDistance(lng, lat, x, y);
      if (Math.abs(d - radius) < 1e-3) continue; // too close to the rim to judge by a reference
      assert.equal(contains(g, x, y), d <= radius, `circle ${lng},${lat} r=${radius}: (${x}, ${y}) at ${d} m`);
      if (d <= radius) inside++;
    }
    assert.ok(inside > 1000 && inside < 3000, 'the sample covers both sides of the rim');
  }
  const antimeridian = circle(179.9, 0, 50_000);
  assert.equal(contains(antimeridian, -179.9, 0), true, '22 km away across ±180');
  assert.equal(contains(antimeridian, -179.6, 0), false, '55 km away');
  const polar = circle(0, 89.9, 50_000);
  assert.equal(contains(polar, 0, 90), true, 'the pole, 11 km away');
  assert.equal(contains(polar, 180, 89.9), true, 'across the pole, 22 km away');
  assert.equal(contains(polar, 180, 89.4), false, 'across the pole, 78 km away');
});

test('a circle holds its rim and not 1 cm beyond it', () => {
  for (const [lng, lat] of [[13.4, 52.52], [179.99, -60], [45, 89.5]] as const) {
    for (const bearing of [0, 45, 90, 180, 270, 333]) {
      const g = circle(lng, lat, 1000);
      assert.equal(contains(g, ...destination(lng, lat, bearing, 1000)), true, `rim at ${bearing}`);
      assert.equal(contains(g, ...destination(lng, lat, bearing, 999.99)), true);
      assert.equal(contains(g, ...destination(lng, lat, bearing, 1000.01)), false, `1 cm out at ${bearing}`);
    }
  }
});

test('random points against a winding-number reference, on star polygons with holes', () => {
  const random = rng(11);
  for (let shape = 0; shape < 40; shape++) {
    const cx = (random() - 0.5) * 300, cy = (random() - 0.5) * 140, scale = 0.001 + random() * 10;
    const star = (count: number, lo: number, hi: number): Ring => {
      const ring: Ring = [];
      for (let i = 0; i < count; i++) {
        const angle = (i / count) * 2 * Math.PI, r = scale * (lo + random() * (hi - lo));
        ring.push([cx + r * Math.cos(angle), cy + r * Math.sin(angle)]);
      }
      return [...ring, ring[0]!];
    };
    // At least 8 outer vertices at 0.5 to 1: every outer edge stays beyond 0.46, clear of the hole.
    const outer = star(8 + Math.floor(random() * 60), 0.5, 1);
    const hole = star(3 + Math.floor(random() * 20), 0.1, 0.4);
    const g = polygon(outer, hole);
    assert.equal(validateGeometry(g).ok, true);
    for (let i = 0; i < 500; i++) {
      // Some points exactly on vertices, the rest anywhere around the shape.
      const ring = i % 50 === 0 ? outer : hole;
      const vertex = i % 25 === 0 ? ring[Math.floor(random() * (ring.length - 1))] : undefined;
      const x = vertex?.[0] ?? cx + (random() - 0.5) * 2.2 * scale, y = vertex?.[1] ?? cy + (random() - 0.5) * 2.2 * scale;
      const o = winding(outer, x, y), h = winding(hole, x, y);
      const nearest = Math.min(o.edgeDistance, h.edgeDistance);
      if (nearest > 0 && nearest < 1e-8) continue; // within the tolerance band: either answer is fair
      const expected = nearest === 0 || (o.wn !== 0 && h.wn === 0);
      assert.equal(contains(g, x, y), expected, `shape ${shape}: (${x}, ${y})`);
    }
  }
});

function inAnyBox(boxes: BBox[], x: number, y: number): boolean {
  return boxes.some(([w, s, e, n]) => x >= w && x <= e && y >= s && y <= n);
}

test('circle boxes hold the circle, are tight, and split at the antimeridian or reach the pole', () => {
  const random = rng(3);
  for (const [lng, lat, radius, parts] of [[13.4, 52.52, 5000, 1], [179.9, 10, 50_000, 2], [-179.8, -70, 100_000, 2], [0, 89.9, 50_000, 1], [10, 75, 100_000, 1]] as const) {
    const boxes = circleBoxes(lng, lat, radius);
    assert.equal(boxes.length, parts, `${lng},${lat}`);
    for (const [w, s, e, n] of boxes) assert.ok(w <= e && s <= n && w >= -180 && e <= 180 && s >= -90 && n <= 90);
    for (let i = 0; i < 2000; i++) {
      const [x, y] = destination(lng, lat, random() * 360, random() * radius);
      assert.ok(inAnyBox(boxes, x, y), `(${x}, ${y}) outside the boxes of ${lng},${lat}`);
    }
    if (lat + (radius / EARTH_RADIUS_M) * (180 / Math.PI) < 90) {
      // Tight: the northernmost point and the widest point touch the box (within 1 m).
      const north = Math.max(...boxes.map((b) => b[3]));
      assert.ok(Math.abs(north - destination(lng, lat, 0, radius)[1]) < 1e-5);
      let widest = 0;
      for (let b = 0; b < 180; b += 0.25) widest = Math.max(widest, Math.abs(((destination(lng, lat, b, radius)[0] - lng + 540) % 360) - 180));
      const span = boxes.reduce((sum, [w, , e]) => sum + e - w, 0);
      assert.ok(Math.abs(span - 2 * widest) < 1e-4, `span ${span} vs ${2 * widest}`);
    } else {
      assert.deepEqual([boxes[0]![0], boxes[0]![2], boxes[0]![3]], [-180, 180, 90]);
    }
  }
});

test('a ring of long thin spikes (edges across many latitude bands) against the reference', () => {
  const random = rng(19);
  const ring: Ring = Array.from({ length: 400 }, (_, i) => {
    const angle = (2 * Math.PI * i) / 400, r = i % 2 === 0 ? 1 : 0.01;
    return [r * Math.cos(angle), r * Math.sin(angle)];
  });
  ring.push(ring[0]!);
  const g = polygon(ring);
  let inside = 0;
  for (let i = 0; i < 20_000; i++) {
    const x = (random() - 0.5) * 2.2, y = (random() - 0.5) * 2.2;
    const { wn, edgeDistance } = winding(ring, x, y);
    if (edgeDistance < 1e-8) continue;
    assert.equal(contains(g, x, y), wn !== 0, `(${x}, ${y})`);
    if (wn !== 0) inside++;
  }
  assert.ok(inside > 100, `${inside} points inside the spikes`);
  for (const [x, y] of ring) assert.equal(contains(g, x!, y!), true, 'every vertex');
});
