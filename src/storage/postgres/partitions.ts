// The telemetry table's daily partitions: created ahead of time, dropped whole by retention.
//
// Creating or dropping a partition takes an ACCESS EXCLUSIVE lock on the parent table for a
// moment, which waits for commits in flight and makes the ones behind it wait in turn. Each such
// step therefore runs alone in its own short transaction with a lock_timeout: if the table is
// busy it gives up and the next maintenance run tries again, instead of stalling ingestion.
import { type Database, type Queryable, advisoryLock } from './database.ts';

export const DAY_MS = 86_400_000;
/** Partitions exist this many days ahead of now, so a maintenance run missed for days is harmless. */
export const AHEAD_DAYS = 7;
const LOCK_TIMEOUT = "SET LOCAL lock_timeout = '2s'";

export interface Partition {
  name: string;
  /** Inclusive lower bound, ms. */
  from: number;
  /** Exclusive upper bound, ms. */
  to: number;
}

export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

/** telemetry_pYYYYMMDD for the UTC day starting at `from`. */
export function partitionName(from: number): string {
  return `telemetry_p${new Date(from).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** The daily partitions (oldest first) and the default one, as the catalog has them now. */
export async function listPartitions(q: Queryable): Promise<{ ranges: Partition[]; fallback: string | undefined }> {
  const { rows } = await q.query<{ name: string; bound: string }>({
    name: 'partitions.list',
    text: `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = 'telemetry'::regclass`,
  });
  const ranges: Partition[] = [];
  let fallback: string | undefined;
  for (const row of rows) {
    if (row.bound === 'DEFAULT') {
      fallback = row.name;
      continue;
    }
    const match = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(row.bound);
    if (match !== null) ranges.push({ name: row.name, from: Number(match[1]), to: Number(match[2]) });
  }
  ranges.sort((a, b) => a.from - b.from);
  return { ranges, fallback };
}

/**
 * Makes sure a daily partition exists for every day from `from`'s to `to`'s; the names of those it
 * created. Two nodes doing this at once serialize on an advisory lock and skip what exists.
 */
export async function ensurePartitions(db: Database, from: number, to: number): Promise<string[]> {
  const { ranges, fallback } = await listPartitions(db);
  const created: string[] = [];
  for (let day = dayOf(from); day <= dayOf(to); day += DAY_MS) {
    if (ranges.some((p) => p.from <= day && day < p.to)) continue;
    const name = partitionName(day);
    try {
      await db.transaction(async (client) => {
        await client.query(LOCK_TIMEOUT);
        await advisoryLock(client, 'fleet:telemetry-partitions');
        await client.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF telemetry FOR VALUES FROM (${day}) TO (${day + DAY_MS})`);
      });
    } catch (error) {
      // 23514: the default partition already holds records of that day (the partition was not made
      // in time). Move them into the new partition, then attach it.
      if ((error as { code?: unknown }).code !== '23514' || fallback === undefined) throw error;
      await db.transaction(async (client) => {
        await client.query(LOCK_TIMEOUT);
        await advisoryLock(client, 'fleet:telemetry-partitions');
        await client.query(`LOCK TABLE ${fallback} IN ACCESS EXCLUSIVE MODE`);
        await client.query(`CREATE TABLE ${name} (LIKE telemetry INCLUDING DEFAULTS)`);
        await client.query(
          `WITH moved AS (DELETE FROM ${fallback} WHERE ts >= $1 AND ts < $2 RETURNING organization_id, vehicle_id, ts, data)
           INSERT INTO ${name} (organization_id, vehicle_id, ts, data) SELECT * FROM moved`,
          [day, day + DAY_MS],
        );
        await client.query(`ALTER TABLE telemetry ATTACH PARTITION ${name} FOR VALUES FROM (${day}) TO (${day + DAY_MS})`);
      });
    }
    created.push(name);
  }
  return created;
}

/**
 * Retention: drops every partition wholly older than `before` (counting its rows first, for the
 * caller's log), then deletes up to `max` rows older than `before` from what remains (the
 * partition `before` falls in, and the default one), oldest first. How many records went.
 */
export async function prunePartitions(db: Database, before: number, max: number): Promise<number> {
  const { ranges, fallback } = await listPartitions(db);
  let deleted = 0;
  for (const partition of ranges) {
    if (partition.to > before) break;
    try {
      deleted += await db.transaction(async (client) => {
        await client.query(LOCK_TIMEOUT);
        // Every node runs retention: the first to get here drops it, the others find it gone.
        await advisoryLock(client, 'fleet:telemetry-partitions');
        const exists = await client.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [partition.name]);
        if (exists.rows[0]?.found === null) return 0;
        const counted = await client.query<{ n: number }>(`SELECT count(*) AS n FROM ${partition.name}`);
        await client.query(`DROP TABLE ${partition.name}`);
        return counted.rows[0]?.n ?? 0;
      });
    } catch (error) {
      // 55P03 lock_not_available: the table is busy; the next run drops it.
      if ((error as { code?: unknown }).code === '55P03') break;
      throw error;
    }
  }
  const partial = ranges.filter((p) => p.from < before && p.to > before).map((p) => p.name);
  if (fallback !== undefined) partial.push(fallback);
  let budget = max;
  for (const table of partial) {
    if (budget <= 0) break;
    // By ctid within one partition: a TID scan, no join back through the primary key.
    const result = await db.query(
      `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ts < $1 ORDER BY ts LIMIT $2))`,
      [before, budget],
    );
    deleted += result.rowCount ?? 0;
    budget -= result.rowCount ?? 0;
  }
  return deleted;
}
