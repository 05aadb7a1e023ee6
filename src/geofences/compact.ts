// The form in which the rule engine keeps a geofence between lookups: typed arrays only. A polygon
// part is its prepared rings (ring.ts) packed into two typed arrays of its own, coordinates in one
// and the band lists in the other; a circle is its four numbers. The GeoJSON arrays it was made
// from, and the per-ring objects of the preparation, are not kept: a position of GeoJSON costs
// about 70 bytes as JavaScript arrays, here its two coordinates and its places in the latitude
// bands. Measured with 100 geofences of 10,000 positions (heap and array buffers after a full
// collection): 175 bytes a position before this form (the GeoJSON arrays as read, their
// preparation, and a second packed copy the index made on each rebuild), 40.5 with it, so an
// organization's full quota of 1,000,000 positions costs about 40 MB a node.
import { BOUNDARY_EPS_DEG, circleHolds, compileGeometry, type BBox, type CircleShape, type PolygonShape } from './geometry.ts';
import { edge } from './ring.ts';
import type { GeofenceGeometry } from './schema.ts';

/** A circle is kept as it is prepared: four numbers and its boxes. */
export type CompactCircle = CircleShape;

/**
 * One polygon: `data` holds at 0 its ring count R, then per ring RING_HEADER numbers (its box
 * minX, minY, maxX, maxY widened by the boundary tolerance; its bands' minY, height and count;
 * where its x,y pairs start in `data`; where its bands start in `bands`), then the x,y pairs.
 * `bands` holds per ring its band starts (count + 1, absolute in `bands`) and each band's edges
 * (absolute positions in `data` of an edge's first x): whole numbers, so 4 bytes each.
 */
export interface CompactPolygon {
  kind: 'polygon';
  data: Float64Array;
  bands: Int32Array;
  boxes: BBox[];
}

export type CompactShape = CompactCircle | CompactPolygon;

/** A geometry ready for the index: one shape per polygon part, or one circle. */
export interface CompactGeometry {
  compact: true;
  shapes: CompactShape[];
}

const RING_HEADER = 9;

function compactPolygon(shape: PolygonShape): CompactPolygon {
  const rings = shape.rings.length;
  const data = new Float64Array(1 + RING_HEADER * rings + shape.rings.reduce((sum, ring) => sum + ring.flat.length, 0));
  const bands = new Int32Array(shape.rings.reduce((sum, ring) => sum + ring.bandStart.length + ring.bandEdges.length, 0));
  data[0] = rings;
  let at = 1 + RING_HEADER * rings;
  let bandAt = 0;
  shape.rings.forEach((ring, r) => {
    const h = 1 + RING_HEADER * r;
    data.set(shape.ringBoxes.subarray(r * 4, r * 4 + 4), h);
    data[h + 4] = ring.minY;
    data[h + 5] = ring.bandHeight;
    data[h + 6] = ring.bands;
    data[h + 7] = at;
    data[h + 8] = bandAt;
    const edges = bandAt + ring.bandStart.length;
    for (let b = 0; b < ring.bandStart.length; b++) bands[bandAt + b] = edges + ring.bandStart[b]!;
    for (let k = 0; k < ring.bandEdges.length; k++) bands[edges + k] = at + ring.bandEdges[k]!;
    data.set(ring.flat, at);
    at += ring.flat.length;
    bandAt = edges + ring.bandEdges.length;
  });
  return { kind: 'polygon', data, bands, boxes: shape.boxes };
}

/** Prepares a geometry that validateGeometry accepted, keeping only what containment tests read. */
export function compactGeometry(geometry: GeofenceGeometry): CompactGeometry {
  return {
    compact: true,
    shapes: compileGeometry(geometry).shapes.map((shape): CompactShape => shape.kind === 'circle'
      ? { kind: 'circle', lng: shape.lng, latRad: shape.latRad, cosLat: shape.cosLat, maxHav: shape.maxHav, boxes: shape.boxes }
      : compactPolygon(shape)),
  };
}

/** Where (x, y) lies relative to the ring whose header is at `h`: as preparedRingSide, 1 inside, 0 on it, -1 outside. */
function ringSide(data: Float64Array, bands: Int32Array, h: number, x: number, y: number): -1 | 0 | 1 {
  const count = data[h + 6]!;
  let band = Math.floor((y - data[h + 4]!) / data[h + 5]!);
  if (band < 0) band = 0;
  else if (band >= count) band = count - 1;
  const starts = data[h + 8]! + band;
  let inside = false;
  for (let k = bands[starts]!, end = bands[starts + 1]!; k < end; k++) {
    const e = bands[k]!;
    const r = edge(data[e]!, data[e + 1]!, data[e + 2]!, data[e + 3]!, x, y);
    if (r === 0) return 0;
    if (r === 1) inside = !inside;
  }
  return inside ? 1 : -1;
}

function polygonHolds(data: Float64Array, bands: Int32Array, x: number, y: number): boolean {
  const rings = data[0]!;
  for (let r = 0; r < rings; r++) {
    const h = 1 + RING_HEADER * r;
    if (x < data[h]! || y < data[h + 1]! || x > data[h + 2]! || y > data[h + 3]!) {
      if (r === 0) return false;
      continue;
    }
    const side = ringSide(data, bands, h, x, y);
    // Outside the outer ring is outside; on any ring's edge (a hole's too) is on the boundary: inside.
    if (r === 0 ? side !== 1 : side !== -1) return side === 0;
  }
  return true;
}

/** Whether a compact polygon holds the point; longitudes 180 and -180 are one meridian (as shapeContains). */
export function compactPolygonContains(data: Float64Array, bands: Int32Array, lng: number, lat: number): boolean {
  if (polygonHolds(data, bands, lng, lat)) return true;
  if (lng >= 180 - BOUNDARY_EPS_DEG) return polygonHolds(data, bands, lng - 360, lat);
  if (lng <= -180 + BOUNDARY_EPS_DEG) return polygonHolds(data, bands, lng + 360, lat);
  return false;
}

/** Whether one compact shape holds the point (boundary inclusive, as shapeContains). */
export function compactContains(shape: CompactShape, lng: number, lat: number): boolean {
  if (shape.kind === 'circle') return circleHolds(shape.lng, shape.latRad, shape.cosLat, shape.maxHav, lng, lat);
  return compactPolygonContains(shape.data, shape.bands, lng, lat);
}
