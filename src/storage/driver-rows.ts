// Driver and assignment rows to records, for both backends (the identifiers arrive as JSON text
// from SQLite, parsed from PostgreSQL's json; bigints as strings from PostgreSQL).
import type { DriverIdentifier } from '../drivers/schema.ts';
import type { AssignmentRecord, DriverWithVehicle } from '../drivers/store.ts';
import type { Row } from './rows.ts';

export const ASSIGNMENT_COLUMNS = 'organization_id, id, driver_id, vehicle_id, started_at, ended_at, source';

/**
 * A driver's columns, with its identifiers as a JSON array (in their order) and the vehicle of its
 * ongoing assignment, for a select over `drivers` aliased `d`, in each backend's SQL.
 */
export const DRIVER_READ = {
  sqlite: `d.organization_id, d.id, d.name, d.external_id, d.phone, d.notes, d.created_at, d.updated_at,
    (SELECT json_group_array(json_object('kind', kind, 'value', value)) FROM (SELECT kind, value FROM driver_identifiers i
       WHERE i.organization_id = d.organization_id AND i.driver_id = d.id ORDER BY position)) AS identifiers,
    (SELECT vehicle_id FROM driver_assignments a WHERE a.organization_id = d.organization_id AND a.driver_id = d.id AND a.ended_at IS NULL) AS vehicle_id`,
  postgres: `d.organization_id, d.id, d.name, d.external_id, d.phone, d.notes, d.created_at, d.updated_at,
    (SELECT coalesce(json_agg(json_build_object('kind', kind, 'value', value) ORDER BY position), '[]'::json) FROM driver_identifiers i
       WHERE i.organization_id = d.organization_id AND i.driver_id = d.id) AS identifiers,
    (SELECT vehicle_id FROM driver_assignments a WHERE a.organization_id = d.organization_id AND a.driver_id = d.id AND a.ended_at IS NULL) AS vehicle_id`,
};

/** The vehicle's ongoing driver, for the select list of a statement over vehicle rows named `table`. */
export const vehicleDriver = (table = 'vehicles') => `(SELECT driver_id FROM driver_assignments a
     WHERE a.organization_id = ${table}.organization_id AND a.vehicle_id = ${table}.id AND a.ended_at IS NULL) AS driver_id`;

const orNull = (value: unknown) => (value as string | null | undefined) ?? null;

export function driverOf(row: Row): DriverWithVehicle {
  return {
    organizationId: row.organization_id as string,
    id: row.id as string,
    name: row.name as string,
    externalId: orNull(row.external_id),
    identifiers: (typeof row.identifiers === 'string' ? JSON.parse(row.identifiers) : row.identifiers) as DriverIdentifier[],
    phone: orNull(row.phone),
    notes: orNull(row.notes),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    vehicleId: orNull(row.vehicle_id),
  };
}

export function assignmentOf(row: Row): AssignmentRecord {
  return {
    organizationId: row.organization_id as string,
    id: row.id as string,
    driverId: row.driver_id as string,
    vehicleId: row.vehicle_id as string,
    startedAt: Number(row.started_at),
    endedAt: row.ended_at === null || row.ended_at === undefined ? null : Number(row.ended_at),
    source: row.source as AssignmentRecord['source'],
  };
}

/** `q` as a LIKE pattern that matches it anywhere, its own `%`, `_` and `\` taken literally (ESCAPE '\'). */
export function containsPattern(q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
