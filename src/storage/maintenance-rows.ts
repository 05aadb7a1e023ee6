// Maintenance rows to records, for both backends (JSON arrives as text from SQLite, decoded from
// PostgreSQL; bigints as strings from PostgreSQL; SQLite's meters in the form of state-blobs.ts).
import type { MeterState } from '../meters/state.ts';
import type { Interval, ItemRecord, ItemState, ScheduleRecord, ServiceRecord } from '../maintenance/model.ts';
import type { Row } from './rows.ts';
import { decodeMeters } from './state-blobs.ts';

export const SCHEDULE_COLUMNS = 'organization_id, id, name, vehicle_ids, group_id, every, due_soon, created_at, updated_at';
export const SERVICE_COLUMNS = 'organization_id, id, vehicle_id, schedule_id, performed_at, odometer_km, engine_hours, notes, cost_amount, cost_currency, created_at';
export const ITEM_COLUMNS = 'organization_id, schedule_id, vehicle_id, base_km, base_hours, base_at, cycle, notified, last_service_id';

const json = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;
const orNull = <T>(value: unknown): T | null => (value as T | null | undefined) ?? null;

export function scheduleOf(row: Row): ScheduleRecord {
  return {
    organizationId: row.organization_id as string,
    id: row.id as string,
    name: row.name as string,
    vehicleIds: row.vehicle_ids === null || row.vehicle_ids === undefined ? null : json<string[]>(row.vehicle_ids),
    groupId: orNull(row.group_id),
    every: json<Interval>(row.every),
    dueSoon: json<Interval>(row.due_soon),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export function serviceOf(row: Row): ServiceRecord {
  return {
    organizationId: row.organization_id as string,
    id: row.id as string,
    vehicleId: row.vehicle_id as string,
    scheduleId: orNull(row.schedule_id),
    performedAt: Number(row.performed_at),
    odometerKm: Number(row.odometer_km),
    engineHours: Number(row.engine_hours),
    notes: orNull(row.notes),
    cost: row.cost_amount === null || row.cost_amount === undefined ? null : { amount: Number(row.cost_amount), currency: row.cost_currency as string },
    createdAt: Number(row.created_at),
  };
}

export function itemOf(row: Row): ItemRecord {
  return {
    organizationId: row.organization_id as string,
    scheduleId: row.schedule_id as string,
    vehicleId: row.vehicle_id as string,
    baseKm: Number(row.base_km),
    baseHours: Number(row.base_hours),
    baseAt: Number(row.base_at),
    cycle: Number(row.cycle),
    notified: row.notified as ItemState,
    lastServiceId: orNull(row.last_service_id),
  };
}

/** Each vehicle's meters from rows of (vehicle_id, meters). */
export function metersOf(rows: readonly Row[]): Map<string, MeterState> {
  return new Map(rows.flatMap((row) => (row.meters === null || row.meters === undefined ? [] : [[row.vehicle_id as string, row.meters instanceof Uint8Array ? decodeMeters(row.meters) : json<MeterState>(row.meters)]])));
}

/** A service record's values in SERVICE_COLUMNS order. */
export const serviceValues = (r: ServiceRecord) => [
  r.organizationId, r.id, r.vehicleId, r.scheduleId, r.performedAt, r.odometerKm, r.engineHours, r.notes, r.cost?.amount ?? null, r.cost?.currency ?? null, r.createdAt,
];
/** An item's values in ITEM_COLUMNS order. */
export const itemValues = (i: ItemRecord) => [i.organizationId, i.scheduleId, i.vehicleId, i.baseKm, i.baseHours, i.baseAt, i.cycle, i.notified, i.lastServiceId];
