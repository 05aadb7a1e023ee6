// The semantic rules of a geofence geometry, each problem named with a JSON pointer into the
// geometry. The request schema (schema.ts) checks the shape; this checks what needs arithmetic.
import { MAX_POSITIONS, MAX_RADIUS_M, MIN_RADIUS_M, type GeofenceGeometry } from './schema.ts';
import { flatRing, ringSide } from './ring.ts';
import { findCrossing, type RingInput } from './crossings.ts';

export interface GeometryProblem {
  /** JSON pointer into the geometry, e.g. `/coordinates/0/3`. */
  path: string;
  message: string;
}

export type GeometryValidation =
  | { ok: true; geometry: GeofenceGeometry }
  | { ok: false; errors: GeometryProblem[] };

/** A response naming 10,000 bad positions helps nobody; the first few show the pattern. */
const MAX_PROBLEMS = 20;

type Problems = GeometryProblem[];
type Position = number[];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkKeys(g: Record<string, unknown>, allowed: readonly string[], problems: Problems): void {
  for (const key of Object.keys(g)) {
    if (!allowed.includes(key)) problems.push({ path: `/${key}`, message: `unknown property "${key}"` });
  }
}

/** Checks one position; true when it is usable. An altitude (third value) is allowed and ignored. */
function checkPosition(p: unknown, path: string, problems: Problems): p is Position {
  if (!Array.isArray(p) || p.length < 2 || p.length > 3) {
    problems.push({ path, message: 'a position is [longitude, latitude], optionally with an altitude' });
    return false;
  }
  const values = p as unknown[];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      problems.push({ path: `${path}/${i}`, message: `${['longitude', 'latitude', 'altitude'][i]} must be a finite number` });
      return false;
    }
  }
  const [lng, lat] = values as [number, number];
  if (lng < -180 || lng > 180) {
    problems.push({ path, message: `longitude ${lng} is outside -180 to 180` });
    return false;
  }
  if (lat < -90 || lat > 90) {
    problems.push({ path, message: `latitude ${lat} is outside -90 to 90` });
    return false;
  }
  return true;
}

function countPositions(coordinates: unknown, depth: number): number {
  if (!Array.isArray(coordinates)) return 0;
  if (depth === 0) return coordinates.length;
  let total = 0;
  for (const child of coordinates) total += countPositions(child, depth - 1);
  return total;
}

/**
 * Whether every position lies on one line through the first (within rounding, relative to the
 * ring's size): such a ring encloses nothing. Collinearity rather than a zero signed area, which a
 * bow tie also has and which is reported as a crossing instead.
 */
function collinear(ring: Float64Array, size: number): boolean {
  const x0 = ring[0]!, y0 = ring[1]!;
  let fx = x0, fy = y0, far = 0;
  for (let k = 2; k < ring.length; k += 2) {
    const d = (ring[k]! - x0) ** 2 + (ring[k + 1]! - y0) ** 2;
    if (d > far) [far, fx, fy] = [d, ring[k]!, ring[k + 1]!];
  }
  if (far === 0) return true;
  const length = Math.sqrt(far);
  for (let k = 2; k < ring.length; k += 2) {
    const cross = (fx - x0) * (ring[k + 1]! - y0) - (fy - y0) * (ring[k]! - x0);
    if (Math.abs(cross) / length > 1e-12 * size) return false;
  }
  return true;
}

/** Checks a ring on its own; returns it as x,y pairs when the polygon-wide checks may use it. */
function checkRing(ring: unknown, path: string, problems: Problems): Float64Array | undefined {
  if (!Array.isArray(ring)) {
    problems.push({ path, message: 'a ring is an array of positions' });
    return undefined;
  }
  const positions = ring as unknown[];
  let valid = true;
  for (let i = 0; i < positions.length; i++) {
    // Past the cap the answer is already "invalid"; the rest need not be named.
    if (problems.length >= MAX_PROBLEMS) return undefined;
    if (!checkPosition(positions[i], `${path}/${i}`, problems)) valid = false;
  }
  if (positions.length < 4) {
    problems.push({ path, message: `a ring needs at least 4 positions (the last repeating the first); this one has ${positions.length}` });
    return undefined;
  }
  if (!valid) return undefined;
  const flat = flatRing(positions as Position[]);
  const n = flat.length;
  if (flat[0] !== flat[n - 2] || flat[1] !== flat[n - 1]) {
    problems.push({ path: `${path}/${positions.length - 1}`, message: 'the ring is not closed: its last position must equal its first' });
    return undefined;
  }
  let west = Infinity, east = -Infinity, south = Infinity, north = -Infinity;
  for (let k = 0; k < n; k += 2) {
    west = Math.min(west, flat[k]!);
    east = Math.max(east, flat[k]!);
    south = Math.min(south, flat[k + 1]!);
    north = Math.max(north, flat[k + 1]!);
  }
  if (east - west > 180) {
    problems.push({
      path,
      message: `the ring spans ${+(east - west).toFixed(6)} degrees of longitude (at most 180): a shape crossing the antimeridian must be a MultiPolygon split at longitude ±180`,
    });
    return undefined;
  }
  if (collinear(flat, east - west + (north - south))) {
    problems.push({ path, message: 'the ring has zero area: its positions lie on one line (or all coincide)' });
    return undefined;
  }
  return flat;
}

function positionPath(ringPath: string, index: number): string {
  return `${ringPath}/${index}`;
}

/** Rings of one polygon; crossings within and between its rings, and holes outside the outer ring. */
function checkPolygon(coordinates: unknown, path: string, problems: Problems): void {
  if (!Array.isArray(coordinates) || coordinates.length === 0) {
    problems.push({ path, message: 'a polygon is a non-empty array of rings: the outer ring, then any holes' });
    return;
  }
  const rings: RingInput[] = [];
  for (let r = 0; r < coordinates.length && problems.length < MAX_PROBLEMS; r++) {
    const flat = checkRing(coordinates[r], `${path}/${r}`, problems);
    if (flat !== undefined) rings.push({ ring: r, flat });
  }
  if (rings.length !== coordinates.length) return;
  const crossing = findCrossing(rings);
  if (crossing !== undefined) {
    const a = `${path}/${crossing.ringA}`;
    const b = `${path}/${crossing.ringB}`;
    const what = crossing.ringA !== crossing.ringB
      ? `${crossing.ringA === 0 ? 'the outer ring' : `hole ${crossing.ringA}`} and hole ${crossing.ringB} cross`
      : 'the ring crosses or touches itself';
    problems.push({
      path: positionPath(b, crossing.segmentB),
      message: `${what}: the edge from ${positionPath(a, crossing.segmentA)} meets the edge from ${positionPath(b, crossing.segmentB)}`,
    });
    return;
  }
  // Without crossings a hole is wholly inside or wholly outside; one vertex off the outer
  // ring's edge tells which.
  const outer = rings[0]!.flat;
  for (let r = 1; r < rings.length; r++) {
    const hole = rings[r]!.flat;
    for (let k = 0; k < hole.length; k += 2) {
      const side = ringSide(outer, hole[k]!, hole[k + 1]!);
      if (side === 0) continue;
      if (side === -1) problems.push({ path: `${path}/${r}`, message: `hole ${r} lies outside the outer ring` });
      break;
    }
  }
}

function checkCircle(g: Record<string, unknown>, problems: Problems): void {
  checkKeys(g, ['type', 'coordinates', 'radius'], problems);
  checkPosition(g.coordinates, '/coordinates', problems);
  const radius = g.radius;
  if (typeof radius !== 'number' || !Number.isFinite(radius)) {
    problems.push({ path: '/radius', message: 'radius must be a finite number of meters' });
  } else if (radius < MIN_RADIUS_M || radius > MAX_RADIUS_M) {
    problems.push({ path: '/radius', message: `radius ${radius} m is outside ${MIN_RADIUS_M} to ${MAX_RADIUS_M} m` });
  }
}

/**
 * Checks a geofence geometry against every rule (positions, closed rings of at least 4 positions,
 * at most 10,000 positions in all, longitude span of a ring at most 180 degrees, no zero-area ring,
 * no ring crossing itself or another ring of its polygon, holes inside their outer ring, circle
 * radius 1 m to 100 km). Accepts any value, so it is safe on input the schema has not seen.
 */
export function validateGeometry(g: unknown): GeometryValidation {
  const problems: Problems = [];
  if (!isRecord(g)) {
    problems.push({ path: '', message: 'a geometry is an object with "type" and "coordinates"' });
  } else if (g.type === 'Circle') {
    checkCircle(g, problems);
  } else if (g.type === 'Polygon' || g.type === 'MultiPolygon') {
    checkKeys(g, ['type', 'coordinates'], problems);
    const multi = g.type === 'MultiPolygon';
    const total = countPositions(g.coordinates, multi ? 2 : 1);
    if (total > MAX_POSITIONS) {
      problems.push({ path: '/coordinates', message: `${total} positions; at most ${MAX_POSITIONS} in all` });
    } else if (!multi) {
      checkPolygon(g.coordinates, '/coordinates', problems);
    } else if (!Array.isArray(g.coordinates) || g.coordinates.length === 0) {
      problems.push({ path: '/coordinates', message: 'a MultiPolygon is a non-empty array of polygons' });
    } else {
      const parts = g.coordinates as unknown[];
      for (let p = 0; p < parts.length && problems.length < MAX_PROBLEMS; p++) checkPolygon(parts[p], `/coordinates/${p}`, problems);
    }
  } else {
    problems.push({ path: '/type', message: 'type must be "Polygon", "MultiPolygon" or "Circle"' });
  }
  if (problems.length > 0) return { ok: false, errors: problems.slice(0, MAX_PROBLEMS) };
  return { ok: true, geometry: g as GeofenceGeometry };
}
