// Where geofences are kept. The rules store (rules/store.ts) extends this interface: one adapter
// per backend keeps geofences, alert rules and alerts together, since a definitions stamp and the
// rule state (which geofences each vehicle is inside) span both.
import type { GeofenceRecord } from './model.ts';

export interface Page {
  limit: number;
  offset: number;
}

export interface GeofenceVersion {
  id: string;
  revision: number;
  vertices: number;
}

/** What an organization may hold: geofences, and positions over all of them (positionCount). */
export interface GeofenceQuota {
  geofences: number;
  vertices: number;
}

/** Geofences, and which vehicles are inside them now. Every call names the organization. */
export interface GeofenceStore {
  /** Creates nothing when either quota would be passed: 'quota' for the count, 'vertices' for the positions. */
  insertGeofence(geofence: GeofenceRecord, quota: GeofenceQuota): Promise<'created' | 'quota' | 'vertices'>;
  getGeofence(organizationId: string, id: string): Promise<GeofenceRecord | undefined>;
  /**
   * A page in (created_at, id) order, ending early once its geofences' positions would pass
   * `maxVertices` (the first geofence is always in it): it holds fewer than `limit` while more follow.
   */
  listGeofences(organizationId: string, page: Page, maxVertices: number): Promise<{ geofences: GeofenceRecord[]; total: number }>;
  /**
   * Each geofence's id, revision (0 when created, one more with each replacement) and positions,
   * without its geometry: the engine reads again only those whose revision it does not hold.
   */
  geofenceVersions(organizationId: string): Promise<GeofenceVersion[]>;
  /** The geofences of these ids that exist (any order). */
  geofencesById(organizationId: string, ids: readonly string[]): Promise<GeofenceRecord[]>;
  /** Changes nothing when the geofence grows and the organization's positions would pass `maxVertices`. */
  replaceGeofence(geofence: GeofenceRecord, maxVertices: number): Promise<'replaced' | 'missing' | 'vertices'>;
  deleteGeofence(organizationId: string, id: string): Promise<boolean>;

  /**
   * The geofences a vehicle is inside now, and the vehicles inside a geofence now: read from the
   * rule state the telemetry commit writes.
   */
  insideOf(organizationId: string, vehicleId: string): Promise<string[]>;
  vehiclesInside(organizationId: string, geofenceId: string): Promise<string[]>;
}
