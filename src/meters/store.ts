// Where a vehicle's meters are kept: in its rule state (rules/model.ts), which every telemetry
// commit reads and writes, so setting them by hand takes the same turn (SQLite's one writer;
// PostgreSQL's per-vehicle lock) as a commit, and neither loses what the other wrote.
import type { MeterState } from './state.ts';

/** The meters to write, from the current ones (null when none yet). */
export type MeterChange = (current: MeterState | null) => MeterState;

export interface MeterStore {
  /** The vehicle's meters; null before its first record or setting. */
  meters(organizationId: string, vehicleId: string): Promise<MeterState | null>;
  /** Replaces the meters with `change` of them (the current ones, null when none yet); the meters written. */
  setMeters(organizationId: string, vehicleId: string, change: MeterChange): Promise<MeterState>;
}
