// What a geofence is, as the service keeps it. Times are ms since the epoch. See docs/API.md
// "Geofences".
/** A geofence's shape: GeoJSON Polygon or MultiPolygon ([lng, lat] positions), or a circle. */
export type Geometry =
  | { type: 'Polygon'; coordinates: number[][][] }
  | { type: 'MultiPolygon'; coordinates: number[][][][] }
  | { type: 'Circle'; coordinates: [number, number]; radius: number };

export interface GeofenceRecord {
  id: string;
  organizationId: string;
  name: string;
  geometry: Geometry;
  /** The vehicles it applies to; null: every vehicle of the organization. */
  vehicleIds: string[] | null;
  createdAt: number;
  updatedAt: number;
}
