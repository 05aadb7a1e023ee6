// What both stores share of the summary rollups (reports/rollup.ts): the replay's view of a
// vehicle's assignments, and the query that sums the rollups.
import type { SumsQuery, SumsRow } from '../reports/store.ts';
import { type Tally, addTally, emptyTally } from '../reports/rollup.ts';

/** Adds `tally` into `into`'s entry for `key` and `driver`. */
export function sumInto(into: Map<number, Map<string, Tally>>, key: number, driver: string, tally: Tally): void {
  let drivers = into.get(key);
  if (drivers === undefined) into.set(key, (drivers = new Map<string, Tally>()));
  let sum = drivers.get(driver);
  if (sum === undefined) drivers.set(driver, (sum = emptyTally()));
  addTally(sum, tally);
}

/** Vehicles replayed per call of `repair` (each in a transaction of its own). */
export const staleBatch = 100;

export interface AssignmentTimeline {
  /** The driver assigned at `t`; calls come in time order. */
  at(t: number): string | null;
  /** The driver of the ongoing assignment, if any. */
  ongoing(): string | null;
}

/** `rows`: a vehicle's assignments by `started_at` (they do not overlap). */
export function assignmentTimeline(rows: readonly { driver_id: string; started_at: number | string; ended_at: number | string | null }[]): AssignmentTimeline {
  const list = rows.map((r) => ({ driver: r.driver_id, from: Number(r.started_at), to: r.ended_at === null ? Infinity : Number(r.ended_at) }));
  let i = -1;
  return {
    at(t) {
      while (i + 1 < list.length && list[i + 1]!.from <= t) i++;
      const a = list[i];
      return a !== undefined && t < a.to ? a.driver : null;
    },
    ongoing() {
      return list.find((a) => a.to === Infinity)?.driver ?? null;
    },
  };
}

const SUMS = 'sum(distance_m) AS "distanceM", sum(driving_s) AS "drivingS", sum(idle_s) AS "idleS", sum(engine_s) AS "engineS", sum(trips) AS trips, max(max_speed) AS "maxSpeed"';

/**
 * The statements that sum the rollups, one per table and span, each grouped by the key, in the
 * store's dialect: `mergeSums` adds their rows up. (One statement over all of them grouped the
 * union of every row read, a sort as large as the rows: 2 to 3 times slower for a year.)
 */
export function rollupReadSql(dialect: 'sqlite' | 'postgres') {
  return (organizationId: string, query: SumsQuery): { sql: string; params: unknown[] }[] => {
    const statements: { sql: string; params: unknown[] }[] = [];
    const key = query.by === 'vehicle' ? 'vehicle_id' : query.by === 'driver' ? 'driver_id' : null;
    const add = (table: string, time: string, spans: SumsQuery['hours']) => {
      for (const [from, to] of spans) {
        if (from >= to) continue;
        const params: unknown[] = [organizationId, from, to];
        const p = (value: unknown) => (params.push(value), dialect === 'sqlite' ? '?' : `$${params.length}`);
        const [a, b, c] = dialect === 'sqlite' ? ['?', '?', '?'] : ['$1', '$2', '$3'];
        const vehicles = query.vehicles === null ? ''
          : dialect === 'sqlite' ? ` AND vehicle_id IN (SELECT value FROM json_each(${p(JSON.stringify(query.vehicles))}))` : ` AND vehicle_id = ANY(${p(query.vehicles)}::text[])`;
        const drivers = query.by === 'driver' ? " AND driver_id <> ''" : '';
        const k = key ?? time;
        statements.push({ sql: `SELECT ${k} AS key, ${SUMS} FROM ${table} WHERE organization_id = ${a} AND ${time} >= ${b} AND ${time} < ${c}${vehicles}${drivers} GROUP BY ${k}`, params });
      }
    };
    if (query.by !== 'hour' && query.by !== 'day') add('rollup_months', 'month', query.months);
    if (query.by !== 'hour') add('rollup_days', 'day', query.days);
    if (query.by !== 'day') add('rollup_hours', 'hour', query.hours);
    return statements;
  };
}

/** The rows of several statements added up by key, ordered by key. */
export function mergeSums(parts: readonly (readonly SumsRow[])[]): SumsRow[] {
  if (parts.length === 1) return [...parts[0]!].sort(byKey);
  const merged = new Map<string | number, SumsRow>();
  for (const rows of parts) {
    for (const r of rows) {
      const known = merged.get(r.key);
      if (known === undefined) merged.set(r.key, { ...r });
      else addTally(known, r);
    }
  }
  return [...merged.values()].sort(byKey);
}

const byKey = (a: SumsRow, b: SumsRow) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
