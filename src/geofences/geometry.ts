// Point-in-geofence tests and bounding boxes for validated geometries (validation.ts).
//
// Polygons are planar in longitude/latitude, as GeoJSON (RFC 7946) defines them: an edge is a
// straight line on the map, not a great circle. Circles are spherical: a point is inside when its
// great-circle (haversine) distance from the center is at most the radius.
//
// The polygon test is our own crossing-number ray cast (ring.ts), not
// @turf/boolean-point-in-polygon: it runs on flat Float64Arrays prepared once per geofence, with
// per-ring boxes and edges banded by latitude, so a test reads a few edges (turf walks every edge
// of the nested GeoJSON arrays on every call); the boundary rule is ours to state (a point on an
// outer ring's or a hole's edge is inside, with an explicit tolerance); and the tests check it
// against an independent winding-number reference.
import {
  BOUNDARY_EPS_DEG, flatRing, prepareRing, preparedRingSide, type PreparedRing,
} from './ring.ts';
import type { CircleGeometry, GeofenceGeometry } from './schema.ts';

export { BOUNDARY_EPS_DEG };

/** `[minLng, minLat, maxLng, maxLat]` in degrees; `minLng <= maxLng` always (see circleBoxes). */
export type BBox = [minLng: number, minLat: number, maxLng: number, maxLat: number];

export const EARTH_RADIUS_M = 6_371_008.8;
const RAD = Math.PI / 180;

/** The same tolerance for circles, in meters. */
export const BOUNDARY_EPS_M = 1e-4;

/** One polygon (outer ring and holes) prepared for repeated tests. */
export interface PolygonShape {
  kind: 'polygon';
  /** Per ring, its positions as x,y pairs with their edges banded; ring 0 is the outer ring. */
  rings: PreparedRing[];
  /** Per ring, its box widened by the boundary tolerance: minX, minY, maxX, maxY. */
  ringBoxes: Float64Array;
  boxes: BBox[];
}

export interface CircleShape {
  kind: 'circle';
  lng: number;
  latRad: number;
  cosLat: number;
  /** Haversine of the angular radius (with tolerance): the test compares without asin or sqrt. */
  maxHav: number;
  boxes: BBox[];
}

export type Shape = PolygonShape | CircleShape;

/** A geometry prepared for containment tests: one shape per polygon part, or one circle. */
export interface CompiledGeometry {
  shapes: Shape[];
}

function compilePolygon(coordinates: readonly (readonly (readonly number[])[])[]): PolygonShape {
  const flats = coordinates.map(flatRing);
  const ringBoxes = new Float64Array(flats.length * 4);
  flats.forEach((ring, r) => {
    let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (let k = 0; k < ring.length; k += 2) {
      const x = ring[k]!, y = ring[k + 1]!;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    ringBoxes.set([minX - BOUNDARY_EPS_DEG, minY - BOUNDARY_EPS_DEG, maxX + BOUNDARY_EPS_DEG, maxY + BOUNDARY_EPS_DEG], r * 4);
  });
  // Holes lie within the outer ring, so its box is the polygon's.
  const box: BBox = [ringBoxes[0]!, ringBoxes[1]!, ringBoxes[2]!, ringBoxes[3]!];
  return { kind: 'polygon', rings: flats.map(prepareRing), ringBoxes, boxes: [box] };
}

function compileCircle(circle: CircleGeometry): CircleShape {
  const [lng, lat] = circle.coordinates as [number, number];
  const half = Math.sin((circle.radius + BOUNDARY_EPS_M) / EARTH_RADIUS_M / 2);
  return {
    kind: 'circle', lng, latRad: lat * RAD, cosLat: Math.cos(lat * RAD), maxHav: half * half,
    boxes: circleBoxes(lng, lat, circle.radius),
  };
}

/**
 * The boxes holding a circle: one, or two when it crosses the antimeridian (one box per side, so
 * neither spans the globe). Latitude reaches lat ± the angular radius; longitude reaches
 * lng ± asin(sin δ / cos φ), the exact extent of a spherical cap. A cap holding a pole holds
 * every longitude near it, so its box is the whole band from its lower edge to the pole.
 */
export function circleBoxes(lng: number, lat: number, radius: number): BBox[] {
  const delta = (radius + BOUNDARY_EPS_M) / EARTH_RADIUS_M;
  const dLat = delta / RAD + BOUNDARY_EPS_DEG;
  const minLat = lat - dLat;
  const maxLat = lat + dLat;
  if (maxLat >= 90 || minLat <= -90) return [[-180, Math.max(minLat, -90), 180, Math.min(maxLat, 90)]];
  const dLng = Math.asin(Math.min(1, Math.sin(delta) / Math.cos(lat * RAD))) / RAD + BOUNDARY_EPS_DEG;
  const west = lng - dLng;
  const east = lng + dLng;
  if (west < -180) return [[-180, minLat, east, maxLat], [west + 360, minLat, 180, maxLat]];
  if (east > 180) return [[west, minLat, 180, maxLat], [-180, minLat, east - 360, maxLat]];
  return [[west, minLat, east, maxLat]];
}

/** Prepares a geometry that validateGeometry accepted. */
export function compileGeometry(geometry: GeofenceGeometry): CompiledGeometry {
  switch (geometry.type) {
    case 'Circle':
      return { shapes: [compileCircle(geometry)] };
    case 'Polygon':
      return { shapes: [compilePolygon(geometry.coordinates)] };
    case 'MultiPolygon':
      return { shapes: geometry.coordinates.map(compilePolygon) };
  }
}

/** Every box of a geometry: one per polygon part, one or two for a circle. */
export function geometryBoxes(geometry: GeofenceGeometry | CompiledGeometry): BBox[] {
  const compiled = 'shapes' in geometry ? geometry : compiledOf(geometry);
  return compiled.shapes.flatMap((shape) => shape.boxes);
}

function polygonContains(shape: PolygonShape, x: number, y: number): boolean {
  const boxes = shape.ringBoxes;
  if (x < boxes[0]! || y < boxes[1]! || x > boxes[2]! || y > boxes[3]!) return false;
  const outer = preparedRingSide(shape.rings[0]!, x, y);
  if (outer !== 1) return outer === 0;
  for (let r = 1; r < shape.rings.length; r++) {
    const b = r * 4;
    if (x < boxes[b]! || y < boxes[b + 1]! || x > boxes[b + 2]! || y > boxes[b + 3]!) continue;
    const side = preparedRingSide(shape.rings[r]!, x, y);
    // On a hole's edge is on the geofence's boundary: inside.
    if (side !== -1) return side === 0;
  }
  return true;
}

/** The circle test on a circle's four numbers (see CircleShape), wherever they are kept. */
export function circleHolds(centerLng: number, centerLatRad: number, cosCenterLat: number, maxHav: number, lng: number, lat: number): boolean {
  const phi = lat * RAD;
  const sinDPhi = Math.sin((phi - centerLatRad) / 2);
  // sin² of half the longitude difference has period 360°: no wrapping needed at ±180.
  const sinDLambda = Math.sin(((lng - centerLng) * RAD) / 2);
  return sinDPhi * sinDPhi + cosCenterLat * Math.cos(phi) * sinDLambda * sinDLambda <= maxHav;
}

function circleContains(shape: CircleShape, lng: number, lat: number): boolean {
  return circleHolds(shape.lng, shape.latRad, shape.cosLat, shape.maxHav, lng, lat);
}

/** Whether one prepared shape holds the point (boundary inclusive). */
export function shapeContains(shape: Shape, lng: number, lat: number): boolean {
  if (shape.kind === 'circle') return circleContains(shape, lng, lat);
  if (polygonContains(shape, lng, lat)) return true;
  // Longitudes 180 and -180 are one meridian: a part ending at 180 holds a point given at -180.
  if (lng >= 180 - BOUNDARY_EPS_DEG) return polygonContains(shape, lng - 360, lat);
  if (lng <= -180 + BOUNDARY_EPS_DEG) return polygonContains(shape, lng + 360, lat);
  return false;
}

/** Whether any part of a prepared geometry holds the point. */
export function compiledContains(compiled: CompiledGeometry, lng: number, lat: number): boolean {
  for (const shape of compiled.shapes) if (shapeContains(shape, lng, lat)) return true;
  return false;
}

// Geometries are plain JSON values that callers keep; preparing one per call would cost more
// than the test itself, and a WeakMap lets the preparation go when the geometry does.
const compiledCache = new WeakMap<GeofenceGeometry, CompiledGeometry>();
function compiledOf(geometry: GeofenceGeometry): CompiledGeometry {
  let compiled = compiledCache.get(geometry);
  if (compiled === undefined) {
    compiled = compileGeometry(geometry);
    compiledCache.set(geometry, compiled);
  }
  return compiled;
}

/**
 * Whether a validated geometry holds the point (`lng`, `lat`): a point on an edge, a vertex, a
 * hole's edge or a circle's rim is inside; a point in a hole is not; a MultiPolygon holds what
 * any of its parts holds. The geometry must not be mutated after its first test (the preparation
 * is cached).
 */
export function contains(geometry: GeofenceGeometry, lng: number, lat: number): boolean {
  return compiledContains(compiledOf(geometry), lng, lat);
}

/** Great-circle distance in meters (haversine, mean Earth radius). */
export function haversineMeters(lng1: number, lat1: number, lng2: number, lat2: number): number {
  const s1 = Math.sin(((lat2 - lat1) * RAD) / 2);
  const s2 = Math.sin(((lng2 - lng1) * RAD) / 2);
  const h = s1 * s1 + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * s2 * s2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}
