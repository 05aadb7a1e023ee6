// Rows to records, once for every backend. The backends store the same columns and differ only
// in how a few column types arrive (SQLite: scopes as a space-separated string, JSON as text,
// booleans as 0/1, blobs as Uint8Array; PostgreSQL: text[], json, boolean, Buffer), which each
// passes in as decoders.
import type { NumericField } from '../telemetry/schema.ts';
import type { AggregateBucket } from '../telemetry/store.ts';
import type { OAuthClientRecord, SigningKeyRecord } from '../auth/oauth/store.ts';
import { type LoggedEvent, type Position, StoredEvent } from '../events/store.ts';
import type { EventType } from '../events/types.ts';
import { isScope } from '../auth/scopes.ts';
import type { ApiKeyRecord, OrganizationRecord } from '../auth/store.ts';
import type { Configuration, VehicleStatus, VehicleType } from '../vehicles/schema.ts';
import type { StatusChange, VehicleRecord } from '../vehicles/store.ts';
import { vehicleDriver } from './driver-rows.ts';

export type Row = Record<string, unknown>;

export interface ColumnDecoders {
  bytes(value: unknown): Uint8Array;
  list(value: unknown): string[];
  json<T>(value: unknown): T;
  bool(value: unknown): boolean;
}

export const VEHICLE_COLUMNS = 'organization_id, id, type, name, status, configuration, created_at, updated_at, status_changed_at';

/**
 * A vehicle's group ids as a JSON array, by id, and its ongoing driver, for the select (or
 * RETURNING) list of a statement over `vehicles` (not aliased), in each backend's SQL: every
 * vehicle row read carries them.
 */
export const VEHICLE_RELATIONS = {
  sqlite: `(SELECT json_group_array(group_id) FROM (SELECT group_id FROM vehicle_group_members m
     WHERE m.organization_id = vehicles.organization_id AND m.vehicle_id = vehicles.id ORDER BY group_id)) AS group_ids, ${vehicleDriver()}`,
  postgres: `(SELECT coalesce(json_agg(m.group_id ORDER BY m.group_id), '[]'::json) FROM vehicle_group_members m
     WHERE m.organization_id = vehicles.organization_id AND m.vehicle_id = vehicles.id) AS group_ids, ${vehicleDriver()}`,
};

function groupIdsOf(row: Row, d: ColumnDecoders): string[] {
  if (row.group_ids === undefined) throw new Error('a vehicle row read without its group_ids (VEHICLE_RELATIONS)');
  return d.json<string[]>(row.group_ids);
}

const orNull = <T>(value: unknown): T | null => (value as T | null | undefined) ?? null;

function driverIdOf(row: Row): string | null {
  if (row.driver_id === undefined) throw new Error('a vehicle row read without its driver_id (VEHICLE_RELATIONS)');
  return row.driver_id as string | null;
}

/** A credential's groups (JSON text in SQLite, text[] in PostgreSQL); null: the whole organization. */
const credentialGroups = (row: Row, d: ColumnDecoders): string[] | null => (row.group_ids === null || row.group_ids === undefined ? null : d.json<string[]>(row.group_ids));

export function rowMappers(d: ColumnDecoders) {
  return {
    key: (row: Row): ApiKeyRecord => ({
      id: row.id as string,
      organizationId: row.organization_id as string,
      name: row.name as string,
      lookupId: row.lookup_id as string,
      displayPrefix: row.display_prefix as string,
      hash: d.bytes(row.hash),
      scopes: d.list(row.scopes).filter(isScope),
      groupIds: credentialGroups(row, d),
      createdAt: row.created_at as number,
      expiresAt: orNull<number>(row.expires_at),
      revokedAt: orNull<number>(row.revoked_at),
      lastUsedAt: orNull<number>(row.last_used_at),
    }),
    organization: (row: Row): OrganizationRecord => ({
      id: row.id as string,
      name: row.name as string,
      platform: d.bool(row.platform),
      createdAt: row.created_at as number,
    }),
    /** The organization columns a credential lookup joins in as `org_*`. */
    joinedOrganization: (row: Row): OrganizationRecord => ({
      id: row.organization_id as string,
      name: row.org_name as string,
      platform: d.bool(row.org_platform),
      createdAt: row.org_created_at as number,
    }),
    vehicle: (row: Row): VehicleRecord => ({
      organizationId: row.organization_id as string,
      id: row.id as string,
      type: row.type as VehicleType,
      name: orNull<string>(row.name),
      status: row.status as VehicleStatus,
      configuration: d.json<Configuration>(row.configuration),
      createdAt: row.created_at as number,
      updatedAt: row.updated_at as number,
      statusChangedAt: row.status_changed_at as number,
      groupIds: groupIdsOf(row, d),
      driverId: driverIdOf(row),
    }),
    change: (row: Row): StatusChange => ({
      from: orNull<VehicleStatus>(row.from_status),
      to: row.to_status as VehicleStatus,
      reason: orNull<string>(row.reason),
      at: row.at as number,
      by: row.by as string,
    }),
    signingKey: (row: Row): SigningKeyRecord => ({
      kid: row.kid as string,
      algorithm: row.algorithm as 'ES256',
      privateJwk: row.private_jwk as string,
      publicJwk: row.public_jwk as string,
      createdAt: row.created_at as number,
      retiredAt: orNull<number>(row.retired_at),
    }),
    client: (row: Row): OAuthClientRecord => ({
      id: row.id as string,
      organizationId: row.organization_id as string,
      name: row.name as string,
      secretHash: d.bytes(row.secret_hash),
      scopes: d.list(row.scopes).filter(isScope),
      groupIds: credentialGroups(row, d),
      createdAt: row.created_at as number,
      createdBy: row.created_by as string,
    }),
  };
}

export const sqliteRows = rowMappers({
  bytes: (value) => value as Uint8Array,
  list: (value) => (value as string).split(' '),
  json: <T>(value: unknown) => JSON.parse(value as string) as T,
  bool: (value) => value === 1,
});

export const postgresRows = rowMappers({
  bytes: (value) => new Uint8Array(value as Buffer),
  list: (value) => value as string[],
  json: <T>(value: unknown) => value as T,
  bool: (value) => value as boolean,
});

/** One bucket row as both adapters read it: `n`, and `<field>_min`, `_max`, `_avg`, `_last` per field. */
export function bucketOf(row: Row, fields: readonly NumericField[]): AggregateBucket {
  const bucket: AggregateBucket = { start: Number(row.bucket), count: Number(row.n), fields: {} };
  for (const field of fields) {
    const min = row[`${field}_min`];
    if (min === null || min === undefined) continue; // no record of the bucket has it
    bucket.fields[field] = {
      min: Number(min), max: Number(row[`${field}_max`]), avg: Number(row[`${field}_avg`]), last: Number(row[`${field}_last`]),
    };
  }
  return bucket;
}

/** An event-log row (both backends store the same columns; `data` arrives as JSON text from both). */
/** `envelope`: the event's public envelope as JSON text (stored, or written from the row). */
export function eventOfRow(row: Row, position: Position, envelope: string): LoggedEvent {
  return new StoredEvent({
    position,
    id: row.id as string,
    organizationId: row.organization_id as string,
    type: row.type as EventType,
    vehicleId: (row.vehicle_id as string | null) ?? null,
    occurredAt: row.occurred_at as number,
    recordedAt: row.recorded_at as number,
    envelope,
  });
}
