// What alert rules and alerts are, as the service keeps them (geofences: geofences/model.ts). Times
// are ms since the epoch. See docs/API.md "Alert rules and alerts".
import type { TripState } from '../history/trips.ts';
import type { MeterState } from '../meters/state.ts';
import type { RollupState } from '../reports/rollup.ts';

export const THRESHOLD_FIELDS = ['speed', 'battery', 'temperature', 'odometer', 'heading'] as const;
export type ComparisonOp = '>' | '>=' | '<' | '<=' | '==' | '!=';

export type Condition =
  | { kind: 'threshold'; field: string; op: ComparisonOp; value: number | string | boolean; forSeconds: number }
  | { kind: 'offline'; afterSeconds: number }
  | { kind: 'geofence'; geofenceId: string; when: 'inside' | 'outside'; forSeconds: number };

export interface AlertRuleRecord {
  id: string;
  organizationId: string;
  name: string;
  condition: Condition;
  vehicleIds: string[] | null;
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
}

export type AlertStatus = 'open' | 'acknowledged' | 'resolved';

export interface AlertRecord {
  id: string;
  organizationId: string;
  ruleId: string;
  ruleName: string;
  vehicleId: string;
  status: AlertStatus;
  openedAt: number;
  acknowledgedAt: number | null;
  acknowledgedBy: string | null;
  resolvedAt: number | null;
  resolvedBy: string | null;
  /** The record (or, for `offline`, the check) that opened it, and the value that met the condition. */
  triggerTimestamp: number;
  triggerValue: TriggerValue;
}

/** What met a condition: a field's value (a threshold), a location (a geofence), a time (offline). */
export type TriggerValue = number | string | boolean | { lat: number; lng: number } | null;

/**
 * What a vehicle's records have told the rules so far: the time of the newest record judged (an
 * older one changes nothing), the geofences it is inside, since when (record time) each rule's
 * condition has held, for rules that must hold a while before an alert opens, and the live trip
 * detection's state (null before its first record), and the vehicle's meters (meters/state.ts;
 * null before its first record or setting), and what the summary reports' rollups know of its last
 * record (reports/rollup.ts; null before its first record).
 */
export interface RuleState {
  ts: number;
  inside: string[];
  held: Record<string, number>;
  trip: TripState | null;
  meters: MeterState | null;
  roll: RollupState | null;
}

/** The state of a vehicle nothing has been judged of yet. */
export const emptyRuleState = (): RuleState => ({ ts: -Infinity, inside: [], held: {}, trip: null, meters: null, roll: null });

/** Whether a geofence or rule applies to a vehicle. */
export function appliesTo(vehicleIds: readonly string[] | null, vehicleId: string): boolean {
  return vehicleIds === null || vehicleIds.includes(vehicleId);
}
