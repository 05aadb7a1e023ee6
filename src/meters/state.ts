// A vehicle's meters (docs/API.md "Meters"): the odometer and engine hours, kept as records are
// committed, beside the rule state (rules/model.ts) that the same commit reads and writes, so
// keeping them costs no read or write of its own. Only records newer than every record judged
// before advance them (as for rules): a record that arrives late leaves the meters as they are.
// Its state is plain JSON, so it is stored as it is.
import { iso } from '../clock.ts';
import { haversineMeters } from '../history/trips.ts';

/** Engine time counts between two records at most this far apart (ms). */
export const ENGINE_GAP_MS = 3_600_000;

export interface MeterState {
  /** The latest reported `odometer`, km; null before any. */
  odo: number | null;
  /** Added to the reported odometer: the difference a hand-set value made. */
  off: number;
  /** The sum of the steps between consecutive located records, km (the odometer of a vehicle that never reported one). */
  gps: number;
  /** Engine time, seconds. */
  eng: number;
  /** The last located record's position. */
  lat: number | null;
  lng: number | null;
  /** Whether the newest record judged carried `ignition: true`. */
  ign: boolean;
  /** The last driver identifier a record carried. */
  ident: string | null;
  /** When the meters last changed (ms): a record's time, or the time they were set. */
  up: number | null;
}

export const initialMeters = (): MeterState => ({ odo: null, off: 0, gps: 0, eng: 0, lat: null, lng: null, ign: false, ident: null, up: null });

/** The odometer as the API gives it: the reported one plus its offset, else the GPS sum. */
export const odometerKm = (m: MeterState): number => (m.odo === null ? m.gps : m.odo + m.off);

/**
 * Advances `m` in place over one record newer than `previous` (the newest judged before it,
 * -Infinity when none): the GPS step from the last located record, the reported odometer, and
 * the engine time from `previous` when that record had the ignition on.
 */
export function advanceMeters(m: MeterState, previous: number, record: { timestamp: number; data: Record<string, unknown> }): void {
  const { data } = record;
  const location = data.location as { lat: number; lng: number } | undefined;
  if (location !== undefined) {
    if (m.lat !== null && m.lng !== null) m.gps += haversineMeters({ lat: m.lat, lng: m.lng }, location) / 1000;
    m.lat = location.lat;
    m.lng = location.lng;
  }
  if (typeof data.odometer === 'number') m.odo = data.odometer;
  if (m.ign && record.timestamp - previous <= ENGINE_GAP_MS) m.eng += (record.timestamp - previous) / 1000;
  m.ign = data.ignition === true;
  m.up = record.timestamp;
}

/** Sets the current values by hand (`PUT .../meters`); later records add to them. */
export function setMeters(m: MeterState, values: { odometerKm?: number | undefined; engineHours?: number | undefined }, at: number): MeterState {
  const next = { ...m, up: at };
  if (values.odometerKm !== undefined) {
    if (next.odo === null) next.gps = values.odometerKm;
    else next.off = values.odometerKm - next.odo;
  }
  if (values.engineHours !== undefined) next.eng = values.engineHours * 3600;
  return next;
}

/** The two values, rounded to the metre and the thousandth of an hour, as the API answers them (none yet: zero). */
export function meterValues(m: MeterState | null | undefined): { odometerKm: number; engineHours: number } {
  const state = m ?? initialMeters();
  return { odometerKm: Math.round(odometerKm(state) * 1000) / 1000, engineHours: Math.round((state.eng / 3600) * 1000) / 1000 };
}

export function metersView(vehicleId: string, m: MeterState | null) {
  return { vehicleId, ...meterValues(m), updatedAt: m === null || m.up === null ? null : iso(m.up) };
}
