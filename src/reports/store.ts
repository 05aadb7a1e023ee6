// What summary reports ask of a store (reports/rollup.ts keeps what they read).

import type { Tally, TallyRow } from './rollup.ts';

export type Span = readonly [number, number];

/** Sums of the rollups over a range, by one key. */
export interface SumsQuery {
  /** Only these vehicles; null: every vehicle of the organization. */
  vehicles: readonly string[] | null;
  /**
   * `vehicle`, `driver` (steps with no driver left out): the UTC months, days and hours of the
   * ranges (from, to) together. `day`: the `days` only, by day; `hour`: the `hours` only, by hour.
   */
  by: 'vehicle' | 'driver' | 'day' | 'hour';
  months: readonly Span[];
  days: readonly Span[];
  hours: readonly Span[];
}

/** A key's sums: metres and seconds, unrounded. */
export type SumsRow = Tally & { key: string | number };

export interface RollupStore {
  /**
   * Replays the history of vehicles whose rollups are stale (a late record, a changed assignment),
   * at most `limit` of them, of one organization or of all; how many it took. In cluster mode each
   * vehicle is replayed by one node at a time.
   */
  repair(organizationId?: string, limit?: number): Promise<number>;
  /** The vehicle's rollups are stale from `from` (ms) on. */
  markStale(organizationId: string, vehicleId: string, from: number): Promise<void>;
  sums(organizationId: string, query: SumsQuery): Promise<SumsRow[]>;
  /** The tallies not written to the rollups yet (the last hour of each vehicle: reports/rollup.ts `pend`), of these vehicles or all. */
  pending(organizationId: string, vehicles: readonly string[] | null): Promise<{ vehicleId: string; tallies: TallyRow[] }[]>;
}
