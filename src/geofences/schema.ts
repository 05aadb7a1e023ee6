// The request shape of a geofence's geometry. Structure only (types, arrays, numbers): the rules
// that need arithmetic (closed rings, ranges, self-intersection, the position limit) live in
// validateGeometry, which names the offending position in its message, something a JSON Schema
// keyword cannot do well for a ring of thousands of positions.
import { Type, type Static } from 'typebox';
import { named } from '../schema/named.ts';

export const MAX_POSITIONS = 10_000;
/**
 * Positions a page of `GET /v2/geofences` may hold (docs/API.md "Geofences"): about 4 MB of JSON,
 * so that concurrent pages of the largest geofences cannot exhaust the heap. A page ends before
 * the geofence that would pass it; its first geofence is always in it.
 */
export const PAGE_POSITIONS = 100_000;
export const MIN_RADIUS_M = 1;
export const MAX_RADIUS_M = 100_000;

const Position = Type.Array(Type.Number(), {
  minItems: 2,
  maxItems: 3,
  description: '[longitude, latitude] in WGS 84 decimal degrees; a third value (altitude) is accepted and ignored.',
  examples: [[13.405, 52.52]],
});

const Ring = Type.Array(Position, {
  description: 'A closed ring: at least 4 positions, the last equal to the first; it must not cross itself.',
});

const PolygonCoordinates = Type.Array(Ring, {
  minItems: 1,
  description: 'The outer ring, then any holes.',
});

export const PolygonGeometry = named('PolygonGeometry', Type.Object(
  { type: Type.Literal('Polygon'), coordinates: PolygonCoordinates },
  { additionalProperties: false },
), 'A GeoJSON Polygon.');
export type PolygonGeometry = Static<typeof PolygonGeometry>;

export const MultiPolygonGeometry = named('MultiPolygonGeometry', Type.Object(
  { type: Type.Literal('MultiPolygon'), coordinates: Type.Array(PolygonCoordinates, { minItems: 1 }) },
  { additionalProperties: false },
), 'A GeoJSON MultiPolygon.');
export type MultiPolygonGeometry = Static<typeof MultiPolygonGeometry>;

export const CircleGeometry = named('CircleGeometry', Type.Object(
  {
    type: Type.Literal('Circle'),
    coordinates: Position,
    radius: Type.Number({ description: `Meters, ${MIN_RADIUS_M} to ${MAX_RADIUS_M}; distance along the Earth's surface.` }),
  },
  { additionalProperties: false, examples: [{ type: 'Circle', coordinates: [13.405, 52.52], radius: 250 }] },
), 'A circle around a position.');
export type CircleGeometry = Static<typeof CircleGeometry>;

export const GeofenceGeometry = named('GeofenceGeometry', Type.Union([PolygonGeometry, MultiPolygonGeometry, CircleGeometry], {
  description:
    'A GeoJSON (RFC 7946) Polygon or MultiPolygon, or a circle. At most 10,000 positions in all. ' +
    'A point on the boundary is inside. A ring may span at most 180 degrees of longitude: a shape ' +
    'crossing the antimeridian is a MultiPolygon split at ±180.',
}));
export type GeofenceGeometry = Static<typeof GeofenceGeometry>;

/**
 * What a geometry costs in memory and in a list page: its positions, a circle counting as one
 * (the per-organization FLEET_QUOTA_GEOFENCE_VERTICES and the list's page budget count these).
 */
export function positionCount(geometry: GeofenceGeometry): number {
  switch (geometry.type) {
    case 'Circle':
      return 1;
    case 'Polygon':
      return geometry.coordinates.reduce((sum, ring) => sum + ring.length, 0);
    case 'MultiPolygon':
      return geometry.coordinates.reduce((sum, polygon) => sum + polygon.reduce((s, ring) => s + ring.length, 0), 0);
  }
}
