// Geofences over a city for the geometry and rules benchmarks: circles and 50-vertex polygons in a
// 30 km square around Berlin's center, from a seeded generator, so every run draws the same ones.
import type { GeofenceGeometry } from '../src/geofences/schema.ts';

export const CENTER = [13.4, 52.52] as const;
export const HALF_SIDE_M = 15_000;
export const M_PER_DEG_LAT = 111_195;
export const M_PER_DEG_LNG = M_PER_DEG_LAT * Math.cos((CENTER[1] * Math.PI) / 180);

/** mulberry32: a full-period generator (an LCG on doubles loses bits and falls into short cycles). */
export { rng as seeded } from '../test/helpers/random.ts';

/** A position in the area, `dx`/`dy` meters from the center. */
export const at = (dx: number, dy: number): [number, number] => [CENTER[0] + dx / M_PER_DEG_LNG, CENTER[1] + dy / M_PER_DEG_LAT];

/** The `i`th geofence: a circle when `i` is even, else a 50-vertex polygon, of radius `minRadius` + up to `spread` meters. */
export function cityGeofence(i: number, random: () => number, minRadius: number, spread: number): GeofenceGeometry {
  const [lng, lat] = at((random() * 2 - 1) * HALF_SIDE_M, (random() * 2 - 1) * HALF_SIDE_M);
  const radius = minRadius + random() * spread;
  if (i % 2 === 0) return { type: 'Circle', coordinates: [lng, lat], radius: Math.max(1, radius) };
  const ring: number[][] = [];
  for (let k = 0; k < 50; k++) {
    const angle = (2 * Math.PI * k) / 50, r = radius * (0.6 + random() * 0.4);
    ring.push([lng + (r * Math.cos(angle)) / M_PER_DEG_LNG, lat + (r * Math.sin(angle)) / M_PER_DEG_LAT]);
  }
  ring.push(ring[0]!);
  return { type: 'Polygon', coordinates: [ring] };
}
