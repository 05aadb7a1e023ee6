// What both stores share of the summary rollups (reports/rollup.ts): the replay's view of a
// vehicle's assignments, and the query that sums the rollups.
import type { SumsQuery } from '../reports/store.ts';

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

const SUMS = 'sum(distance_m) AS distance_m, sum(driving_s) AS driving_s, sum(idle_s) AS idle_s, sum(engine_s) AS engine_s, sum(trips) AS trips, max(max_speed) AS max_speed';
const PARTS = 'vehicle_id, driver_id, distance_m, driving_s, idle_s, engine_s, trips, max_speed';

/** The query that sums the rollups, in the store's dialect, and its parameters. */
export function rollupReadSql(dialect: 'sqlite' | 'postgres') {
  return (organizationId: string, query: SumsQuery): { sql: string; params: unknown[] } => {
    const params: unknown[] = [];
    const p = (value: unknown) => {
      params.push(value);
      return dialect === 'sqlite' ? '?' : `$${params.length}`;
    };
    // A function: each part binds its own parameters (SQLite's are positional).
    const vehicles = () => (query.vehicles === null ? ''
      : dialect === 'sqlite' ? ` AND vehicle_id IN (SELECT value FROM json_each(${p(JSON.stringify(query.vehicles))}))` : ` AND vehicle_id = ANY(${p(query.vehicles)}::text[])`);
    const drivers = query.by === 'driver' ? " AND driver_id <> ''" : '';
    const parts: string[] = [];
    if (query.days !== null && query.by !== 'hour') {
      parts.push(`SELECT day AS b, ${PARTS} FROM rollup_days WHERE organization_id = ${p(organizationId)} AND day >= ${p(query.days[0])} AND day < ${p(query.days[1])}${vehicles()}${drivers}`);
    }
    if (query.by !== 'day') {
      for (const [from, to] of query.hours) {
        if (from >= to) continue;
        parts.push(`SELECT hour AS b, ${PARTS} FROM rollup_hours WHERE organization_id = ${p(organizationId)} AND hour >= ${p(from)} AND hour < ${p(to)}${vehicles()}${drivers}`);
      }
    }
    if (parts.length === 0) return { sql: 'SELECT NULL AS key WHERE false', params: [] };
    const key = query.by === 'vehicle' ? 'vehicle_id' : query.by === 'driver' ? 'driver_id' : 'b';
    return { sql: `SELECT ${key} AS key, ${SUMS} FROM (${parts.join(' UNION ALL ')}) AS r GROUP BY ${key} ORDER BY ${key}`, params };
  };
}
