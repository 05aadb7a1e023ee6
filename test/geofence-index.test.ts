// The geofence index answers exactly what testing every geofence would, through additions,
// replacements and removals at any point between lookups (so through its pending list, its
// skipped removals and its rebuilds).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contains } from '../src/geofences/geometry.ts';
import type { GeofenceGeometry } from '../src/geofences/schema.ts';
import { createGeofenceIndex } from '../src/geofences/spatial-index.ts';
import { rect, rng } from './helpers/random.ts';

/** Circles, rectangles with holes and two-part MultiPolygons around Berlin. */
function randomGeometry(random: () => number): GeofenceGeometry {
  const lng = 13.2 + random() * 0.4, lat = 52.4 + random() * 0.25, size = 0.002 + random() * 0.03;
  const kind = random();
  if (kind < 0.4) return { type: 'Circle', coordinates: [lng, lat], radius: 50 + random() * 2000 };
  if (kind < 0.8) return { type: 'Polygon', coordinates: [rect(lng, lat, lng + size, lat + size), rect(lng + size / 4, lat + size / 4, lng + size / 2, lat + size / 2)] };
  return { type: 'MultiPolygon', coordinates: [[rect(lng, lat, lng + size, lat + size)], [rect(lng + size * 2, lat, lng + size * 3, lat + size)]] };
}

/** What the index must answer: every geofence tested. */
function bruteForce(all: Map<string, GeofenceGeometry>, lng: number, lat: number): string[] {
  return [...all].filter(([, g]) => contains(g, lng, lat)).map(([id]) => id).sort();
}

test('the index agrees with testing every geofence, through additions, replacements and removals', () => {
  const random = rng(5);
  const index = createGeofenceIndex();
  const all = new Map<string, GeofenceGeometry>();
  let checked = 0, hits = 0;
  const lookups = (count: number) => {
    for (let i = 0; i < count; i++) {
      const lng = 13.2 + random() * 0.5, lat = 52.4 + random() * 0.3;
      const found = index.containing(lng, lat).sort();
      assert.deepEqual(found, bruteForce(all, lng, lat), `(${lng}, ${lat})`);
      const candidates = new Set(index.candidates(lng, lat));
      for (const id of found) assert.ok(candidates.has(id), 'a geofence holding the point is a candidate');
      checked++;
      hits += found.length;
    }
  };
  // One at a time with lookups between (the pending list), then a burst (a rebuild).
  for (let i = 0; i < 30; i++) {
    const g = randomGeometry(random);
    index.set(`g${i}`, g);
    all.set(`g${i}`, g);
    lookups(5);
  }
  for (let i = 30; i < 400; i++) {
    const g = randomGeometry(random);
    index.set(`g${i}`, g);
    all.set(`g${i}`, g);
  }
  lookups(300);
  // Replace some and remove others, interleaved with lookups.
  for (let i = 0; i < 400; i += 3) {
    if (i % 2 === 0) {
      const g = randomGeometry(random);
      index.set(`g${i}`, g);
      all.set(`g${i}`, g);
    } else {
      assert.equal(index.remove(`g${i}`), true);
      all.delete(`g${i}`);
    }
    if (i % 30 === 0) lookups(20);
  }
  lookups(300);
  assert.equal(index.size, all.size);
  assert.equal(index.remove('g3'), false, 'already removed');
  assert.ok(hits > checked, `the sample hits geofences (${hits} hits in ${checked} lookups)`);
  for (const id of [...all.keys()]) index.remove(id);
  all.clear();
  lookups(50);
  assert.equal(index.size, 0);
});

test('a point on a shared boundary, in overlapping parts, or in two boxes of one geofence is reported once', () => {
  const index = createGeofenceIndex();
  index.set('left', { type: 'Polygon', coordinates: [rect(0, 0, 1, 1)] });
  index.set('right', { type: 'Polygon', coordinates: [rect(1, 0, 2, 1)] });
  index.set('overlap', { type: 'MultiPolygon', coordinates: [[rect(0, 0, 1, 1)], [rect(0.5, 0, 1.5, 1)]] });
  index.set('dateline', { type: 'Circle', coordinates: [179.9, 0], radius: 50_000 });
  assert.deepEqual(index.containing(1, 0.5).sort(), ['left', 'overlap', 'right']);
  assert.deepEqual(index.containing(0.75, 0.5).sort(), ['left', 'overlap']);
  assert.deepEqual(index.containing(180, 0), ['dateline']);
  assert.deepEqual(index.containing(-180, 0), ['dateline']);
  assert.deepEqual(index.containing(-179.9, 0), ['dateline']);
  assert.deepEqual(index.containing(179.4, 0), []);
  assert.deepEqual(index.candidates(-179.9, 0), ['dateline']);
});

test('a shape split at the antimeridian is found from either side', () => {
  const index = createGeofenceIndex();
  index.set('pacific', { type: 'MultiPolygon', coordinates: [[rect(170, -10, 180, 10)], [rect(-180, -10, -170, 10)]] });
  index.set('east-only', { type: 'Polygon', coordinates: [rect(175, 0, 180, 5)] });
  index.set('west-only', { type: 'Polygon', coordinates: [rect(-180, 0, -175, 5)] });
  const onMeridian = ['east-only', 'pacific', 'west-only'];
  for (const [lng, expected] of [[179, ['east-only', 'pacific']], [-179, ['pacific', 'west-only']], [-180, onMeridian], [180, onMeridian], [0, []]] as const) {
    assert.deepEqual(index.containing(lng, 1).sort(), expected, String(lng));
  }
});

test('the filter is asked before the exact test, and only geofences it accepts are reported', () => {
  const index = createGeofenceIndex();
  index.set('a', { type: 'Circle', coordinates: [13.4, 52.52], radius: 500 });
  index.set('b', { type: 'Circle', coordinates: [13.4, 52.52], radius: 1000 });
  index.set('far', { type: 'Circle', coordinates: [2.35, 48.85], radius: 1000 });
  const asked: string[] = [];
  assert.deepEqual(index.containing(13.4, 52.52, (id) => (asked.push(id), id === 'b')), ['b']);
  assert.deepEqual(asked.sort(), ['a', 'b'], 'a geofence whose box misses the point is not asked about');
  assert.deepEqual(index.containing(13.4, 52.52).sort(), ['a', 'b']);
  assert.equal(index.has('far'), true);
});

test('small and huge geofences over the whole globe, built into the grid and the tree, agree with testing every one', () => {
  const random = rng(11);
  const index = createGeofenceIndex();
  const all = new Map<string, GeofenceGeometry>();
  const centers: Array<[number, number]> = [];
  for (let i = 0; i < 3000; i++) {
    // Mostly 10 m to 2 km circles and small squares anywhere, a few regions of hundreds of km, a
    // few near the poles and on the antimeridian.
    const lng = i % 97 === 0 ? 179.99 : -180 + random() * 360;
    const lat = i % 89 === 0 ? 88 + random() * 1.9 : -80 + random() * 160;
    const huge = i % 50 === 0;
    const size = huge ? 2 + random() * 20 : 0.0001 + random() * 0.02;
    const g: GeofenceGeometry = random() < 0.5
      ? { type: 'Circle', coordinates: [lng, lat], radius: huge ? 100_000 + random() * 1_000_000 : 10 + random() * 2000 }
      : { type: 'Polygon', coordinates: [rect(Math.min(lng, 180 - size), Math.min(lat, 89 - size), Math.min(lng, 180 - size) + size, Math.min(lat, 89 - size) + size)] };
    index.set(`w${i}`, g);
    all.set(`w${i}`, g);
    centers.push([lng, lat]);
  }
  let hits = 0;
  for (let i = 0; i < 3000; i++) {
    // Half the points near a geofence's center, half anywhere; some exactly on ±180.
    const [cx, cy] = centers[Math.floor(random() * centers.length)]!;
    const near = i % 2 === 0;
    let lng = near ? cx + (random() - 0.5) * 0.01 : -180 + random() * 360;
    const lat = near ? Math.max(-90, Math.min(90, cy + (random() - 0.5) * 0.01)) : -90 + random() * 180;
    if (i % 101 === 0) lng = i % 202 === 0 ? 180 : -180;
    lng = Math.max(-180, Math.min(180, lng));
    const found = index.containing(lng, lat).sort();
    assert.deepEqual(found, bruteForce(all, lng, lat), `(${lng}, ${lat})`);
    hits += found.length;
  }
  assert.ok(hits > 1000, `the points hit geofences (${hits} hits)`);
});
