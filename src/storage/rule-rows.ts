// Rows of geofences, alert rules, alerts and rule states to records, for both backends (they
// differ in how JSON and lists arrive: text in SQLite, decoded in PostgreSQL; SQLite keeps the
// meters and the rollups' state in the form of state-blobs.ts).
import type { TripState } from '../history/trips.ts';
import type { MeterState } from '../meters/state.ts';
import type { RollupState } from '../reports/rollup.ts';
import type { GeofenceRecord, Geometry } from '../geofences/model.ts';
import type { AlertRecord, AlertRuleRecord, AlertStatus, Condition, RuleState, TriggerValue } from '../rules/model.ts';
import type { Row } from './rows.ts';
import { decodeMeters, decodeRoll } from './state-blobs.ts';

export interface RuleDecoders {
  json<T>(value: unknown): T;
  list(value: unknown): string[];
  bool(value: unknown): boolean;
  meters(value: unknown): MeterState;
  roll(value: unknown): RollupState;
}

/**
 * SQL of one row, `stamp`: the count and sum of `updated_at` of an organization's geofences and of
 * its alert rules, `$org` standing for the organization's parameter (each backend writes its own).
 * A change to the definitions changes it (RulesStore's `definitionsStamp`).
 */
export const definitionsStampSql = (org: string) =>
  `SELECT (SELECT count(*) || ':' || coalesce(sum(updated_at), 0) FROM geofences WHERE organization_id = ${org}) || '/' ||
          (SELECT count(*) || ':' || coalesce(sum(updated_at), 0) FROM alert_rules WHERE organization_id = ${org}) AS stamp`;

/**
 * The ids of a page of geofences (id and vertices, in order) that fit in `maxVertices` positions;
 * the first always does, so a page is never empty while geofences remain.
 */
export function pageWithin(sizes: readonly Row[], maxVertices: number): string[] {
  const ids: string[] = [];
  let used = 0;
  for (const row of sizes) {
    used += Number(row.vertices);
    if (ids.length > 0 && used > maxVertices) break;
    ids.push(row.id as string);
  }
  return ids;
}

const orNull = <T>(value: unknown): T | null => (value as T | null | undefined) ?? null;

export function ruleRows(d: RuleDecoders) {
  const ids = (value: unknown) => (value === null || value === undefined ? null : d.list(value));
  return {
    geofence: (row: Row): GeofenceRecord => ({
      id: row.id as string,
      organizationId: row.organization_id as string,
      name: row.name as string,
      geometry: d.json<Geometry>(row.geometry),
      vehicleIds: ids(row.vehicle_ids),
      createdAt: row.created_at as number,
      updatedAt: row.updated_at as number,
    }),
    rule: (row: Row): AlertRuleRecord => ({
      id: row.id as string,
      organizationId: row.organization_id as string,
      name: row.name as string,
      condition: d.json<Condition>(row.condition),
      vehicleIds: ids(row.vehicle_ids),
      enabled: d.bool(row.enabled),
      createdAt: row.created_at as number,
      updatedAt: row.updated_at as number,
    }),
    alert: (row: Row): AlertRecord & { seq: number } => ({
      seq: row.seq as number,
      id: row.id as string,
      organizationId: row.organization_id as string,
      ruleId: row.rule_id as string,
      ruleName: row.rule_name as string,
      vehicleId: row.vehicle_id as string,
      status: row.status as AlertStatus,
      openedAt: row.opened_at as number,
      acknowledgedAt: orNull<number>(row.acknowledged_at),
      acknowledgedBy: orNull<string>(row.acknowledged_by),
      resolvedAt: orNull<number>(row.resolved_at),
      resolvedBy: orNull<string>(row.resolved_by),
      triggerTimestamp: row.trigger_ts as number,
      triggerValue: row.trigger_value === null || row.trigger_value === undefined ? null : d.json<TriggerValue>(row.trigger_value),
    }),
    state: (row: Row): RuleState => ({
      ts: row.ts as number,
      inside: d.list(row.inside),
      held: d.json<Record<string, number>>(row.held),
      trip: row.trip === null || row.trip === undefined ? null : d.json<TripState>(row.trip),
      meters: row.meters === null || row.meters === undefined ? null : d.meters(row.meters),
      roll: row.rollup === null || row.rollup === undefined ? null : d.roll(row.rollup),
    }),
  };
}

export const sqliteRuleRows = ruleRows({
  json: <T>(value: unknown) => JSON.parse(value as string) as T,
  list: (value) => JSON.parse(value as string) as string[],
  bool: (value) => value === 1,
  meters: decodeMeters,
  roll: decodeRoll,
});

export const postgresRuleRows = ruleRows({
  json: <T>(value: unknown) => value as T,
  list: (value) => value as string[],
  bool: (value) => value as boolean,
  meters: (value) => value as MeterState,
  roll: (value) => value as RollupState,
});

export const ALERT_COLUMNS = `seq, id, organization_id, rule_id, rule_name, vehicle_id, status, opened_at, acknowledged_at,
  acknowledged_by, resolved_at, resolved_by, trigger_ts, trigger_value`;
export const GEOFENCE_COLUMNS = 'id, organization_id, name, geometry, vehicle_ids, created_at, updated_at';
export const RULE_COLUMNS = 'id, organization_id, name, condition, vehicle_ids, enabled, created_at, updated_at';

/** A state's `ts` as stored: a state written before any record (meters set by hand) has none, and records are never before 1970. */
export const storedTs = (ts: number) => Math.max(ts, -1);
