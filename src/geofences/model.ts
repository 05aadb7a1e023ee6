// What a geofence is, as the service keeps it. Times are ms since the epoch. See docs/API.md
// "Geofences".
import type { GeofenceGeometry } from './schema.ts';

/** A geofence's shape: GeoJSON Polygon or MultiPolygon ([lng, lat] positions), or a circle; as the API takes it. */
export type Geometry = GeofenceGeometry;

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
