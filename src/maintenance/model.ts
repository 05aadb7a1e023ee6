// Maintenance as the service keeps it (docs/API.md "Maintenance"): schedules, each vehicle's item
// of a schedule (the baseline its intervals run from), service records, and the pure rules that
// say when an item is due. Times are ms since the epoch; meters as meters/state.ts gives them.

export interface Interval {
  km?: number;
  engineHours?: number;
  days?: number;
}

export interface ScheduleRecord {
  organizationId: string;
  id: string;
  name: string;
  /** The vehicles it applies to; with `groupId` null too, every vehicle. */
  vehicleIds: string[] | null;
  groupId: string | null;
  every: Interval;
  dueSoon: Interval;
  createdAt: number;
  updatedAt: number;
}

export const ITEM_STATES = ['ok', 'due_soon', 'overdue'] as const;
export type ItemState = (typeof ITEM_STATES)[number];

/** A vehicle's item of a schedule: its intervals run from the baseline; `cycle` counts the services that restarted them. */
export interface ItemRecord {
  organizationId: string;
  scheduleId: string;
  vehicleId: string;
  baseKm: number;
  baseHours: number;
  baseAt: number;
  cycle: number;
  /** The highest state this cycle has announced (`maintenance.due_soon`, `maintenance.overdue`). */
  notified: ItemState;
  lastServiceId: string | null;
}

export interface ServiceRecord {
  organizationId: string;
  id: string;
  vehicleId: string;
  scheduleId: string | null;
  performedAt: number;
  odometerKm: number;
  engineHours: number;
  notes: string | null;
  cost: { amount: number; currency: string } | null;
  createdAt: number;
}

export interface MeterValues {
  odometerKm: number;
  engineHours: number;
}

export interface NextDue {
  odometerKm?: number;
  engineHours?: number;
  /** ms */
  at?: number;
}

const DAY_MS = 86_400_000;

/** Whether a schedule applies to a vehicle, `groups` the groups it is a member of. */
export function applies(schedule: ScheduleRecord, vehicleId: string, groups: readonly string[]): boolean {
  if (schedule.vehicleIds !== null) return schedule.vehicleIds.includes(vehicleId);
  if (schedule.groupId !== null) return groups.includes(schedule.groupId);
  return true;
}

/** The baseline plus `every`: only the intervals the schedule has. */
export function nextDue(schedule: ScheduleRecord, item: ItemRecord): NextDue {
  const due: NextDue = {};
  if (schedule.every.km !== undefined) due.odometerKm = item.baseKm + schedule.every.km;
  if (schedule.every.engineHours !== undefined) due.engineHours = item.baseHours + schedule.every.engineHours;
  if (schedule.every.days !== undefined) due.at = item.baseAt + schedule.every.days * DAY_MS;
  return due;
}

/** `overdue` once any meter or the date reached its next due value; `due_soon` within `dueSoon` of one; else `ok`. */
export function itemState(schedule: ScheduleRecord, due: NextDue, meters: MeterValues, now: number): ItemState {
  const checks: [number | undefined, number, number | undefined][] = [
    [due.odometerKm, meters.odometerKm, schedule.dueSoon.km],
    [due.engineHours, meters.engineHours, schedule.dueSoon.engineHours],
    [due.at, now, schedule.dueSoon.days === undefined ? undefined : schedule.dueSoon.days * DAY_MS],
  ];
  let soon = false;
  for (const [line, value, margin] of checks) {
    if (line === undefined) continue;
    if (value >= line) return 'overdue';
    if (margin !== undefined && value >= line - margin) soon = true;
  }
  return soon ? 'due_soon' : 'ok';
}

const RANK: Record<ItemState, number> = { ok: 0, due_soon: 1, overdue: 2 };

/** The state to announce now: one higher than any this cycle announced (jumping straight to overdue announces only that). */
export function toAnnounce(state: ItemState, notified: ItemState): ItemState | undefined {
  return RANK[state] > RANK[notified] ? state : undefined;
}

/** A new item, its intervals running from the vehicle's meters now. */
export function newItem(schedule: ScheduleRecord, vehicleId: string, meters: MeterValues, now: number): ItemRecord {
  return {
    organizationId: schedule.organizationId, scheduleId: schedule.id, vehicleId,
    baseKm: meters.odometerKm, baseHours: meters.engineHours, baseAt: now, cycle: 0, notified: 'ok', lastServiceId: null,
  };
}
