// Geofence schemas: they validate requests, serialize responses and make the OpenAPI document.
// A geometry's schema is its structure only (types, arrays, numbers): the rules that need
// arithmetic (closed rings, ranges, self-intersection, the position limit) live in
// validateGeometry, which names the offending position in its message, something a JSON Schema
// keyword cannot do well for a ring of thousands of positions.
import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging, PlainText } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { VehicleId } from '../vehicles/schema.ts';

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

/** A geofence's or an alert rule's name, and the vehicles it applies to (rules/schema.ts shares them). */
export const Name = PlainText({ minLength: 1, maxLength: 200, description: 'A name people read.' });
export const VehicleIds = Type.Union([Type.Array(VehicleId, { maxItems: 1000, uniqueItems: true }), Type.Null()], {
  description: 'The vehicles it applies to; absent or null: every vehicle of the organization.',
});
export const GeofenceId = Type.String({ pattern: '^gf_[A-Za-z0-9]{1,64}$', examples: ['gf_4kTq9ZbW8xYc2LmN4pRs'] });

export const GeofenceIdParams = Type.Object({ id: GeofenceId }, { additionalProperties: false });

export const GeofenceBody = named('GeofenceInput', Type.Object(
  { name: Name, geometry: GeofenceGeometry, vehicleIds: Type.Optional(VehicleIds) },
  {
    additionalProperties: false,
    examples: [{ name: 'Depot', geometry: { type: 'Circle', coordinates: [13.405, 52.52], radius: 250 } }],
  },
), 'A geofence to create, or its new definition.');
export type GeofenceBody = Static<typeof GeofenceBody>;

export const Geofence = named('Geofence', Type.Object(
  { id: GeofenceId, name: Type.String(), geometry: GeofenceGeometry, vehicleIds: Type.Union([Type.Array(Type.String()), Type.Null()]), createdAt: IsoTimestamp, updatedAt: IsoTimestamp },
  { additionalProperties: false },
), 'A geofence.');
export const GeofenceList = named('GeofenceList', Type.Object(
  {
    geofences: Type.Array(Geofence), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(),
    nextOffset: Type.Union([Type.Integer(), Type.Null()], {
      description: 'The `offset` of the next page, or null on the last. A page also ends early, with fewer than `limit` geofences, '
        + `once their positions would pass ${PAGE_POSITIONS.toLocaleString('en')} (its first geofence is always in it): continue from \`nextOffset\`, not from \`offset + limit\`.`,
    }),
  },
  { additionalProperties: false },
), 'A page of geofences.');
export const PageQuery = Type.Object(Paging, { additionalProperties: false });
export type PageQuery = Static<typeof PageQuery>;
export const VehiclesInside = named('VehiclesInsideGeofence', Type.Object({ vehicleIds: Type.Array(Type.String()) }, { additionalProperties: false }), 'The vehicles inside a geofence now.');
export const GeofencesOfVehicle = named('GeofencesOfVehicle', Type.Object(
  { geofences: Type.Array(Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false })) },
  { additionalProperties: false },
), 'The geofences a vehicle is inside now.');
