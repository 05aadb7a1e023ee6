// Telemetry in PostgreSQL (cluster mode). A commit is one transaction for a group of requests'
// batches: it key-share locks the vehicle rows of the whole group in one sorted statement (a
// deletion waits for it; other commits do not), inserts the records with one
// `INSERT … SELECT FROM unnest(…) ON CONFLICT DO NOTHING` whose rows are exactly what was new,
// merges the latest states into this node's own rows under `FOR UPDATE` (`writer`, migration
// 0004: two nodes committing for the same vehicles never wait on each other's latest-state rows),
// and judges the new records against the rules under an advisory lock per vehicle, taken in one
// sorted order (rules.ts). History is partitioned by day (partitions.ts).
import type { EventRecord } from '../../events/types.ts';
import { activation } from '../../vehicles/events.ts';
import { ACTIVATION } from '../../vehicles/transitions.ts';
import { appendEvents } from './events.ts';
import { judgeInCommit } from './rules.ts';
import type { CommitRules } from '../../rules/store.ts';
import { randomBytes } from 'node:crypto';
import { mergeStates } from '../../telemetry/latest.ts';
import type { TelemetryData } from '../../telemetry/schema.ts';
import {
  type BatchOutcome, type CommitBatch, type LatestState, type MergeLatest, type ScanOptions, type ScannedRecord, type StoredRecord, type TelemetryStore, type TimeRange, decoderOf, groupByVehicle, judgeBatch,
} from '../../telemetry/store.ts';
import type pg from 'pg';
import type { Database, Queryable } from './database.ts';
import { aggregatePostgres } from './telemetry-aggregate.ts';
import { AHEAD_DAYS, DAY_MS, dayOf, ensurePartitions, prunePartitions } from './partitions.ts';
import { type VehicleKey, vehicleKey } from '../../vehicles/key.ts';

/** (organization, vehicle) pairs as two parallel arrays, in byte order (COLLATE "C", as the SQL sorts). */
function pairs(keys: Iterable<VehicleKey>): [string[], string[]] {
  const organizations: string[] = [];
  const vehicles: string[] = [];
  for (const key of [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const split = key.indexOf('\n');
    organizations.push(key.slice(0, split));
    vehicles.push(key.slice(split + 1));
  }
  return [organizations, vehicles];
}

/** A latest-state row not written for this long is folded into its vehicle's shared row. */
export const FOLD_AFTER_MS = 3_600_000;
/** How often a node looks for rows to fold (at most; it runs with the retention timer). */
const FOLD_EVERY_MS = 600_000;
/** Vehicles folded per transaction. */
const FOLD_STEP = 1000;

type LatestRow = { organization_id: string; vehicle_id: string; writer?: string; ts: number; fields: LatestState['fields'] };
const stateOf = (row: LatestRow): LatestState => ({
  organizationId: row.organization_id, vehicleId: row.vehicle_id, timestamp: row.ts, fields: row.fields,
});

/** The rows of each vehicle merged into its one latest state. */
function mergeRows(rows: readonly LatestRow[], skip?: (row: LatestRow) => boolean): Map<VehicleKey, LatestState> {
  const states = new Map<VehicleKey, LatestState>();
  for (const row of rows) {
    if (skip?.(row) === true) continue;
    const key = vehicleKey(row.organization_id, row.vehicle_id);
    states.set(key, mergeStates(states.get(key), stateOf(row)));
  }
  return states;
}

/**
 * `writer` names this store's latest-state rows (see migration 0004): a fresh random id per
 * process unless given, so that no two nodes share one.
 */
/** `readDb` takes history, scans and aggregates, which may be a little behind (a replica's, see replica.ts). */
export function createPostgresTelemetryStore(db: Database, writer = randomBytes(6).toString('base64url'), readDb: Queryable = db): TelemetryStore {
  /** Partitions are known to exist up to this day (per process; the catalog is asked again past it). */
  let coveredUntil = -Infinity;
  let coveredFrom = Infinity;
  let foldedAt = -Infinity;

  async function commitOnce(
    batches: CommitBatch[], merge: MergeLatest, rules: CommitRules | undefined, organizationIds: string[], vehicleIds: string[],
  ): Promise<BatchOutcome[]> {
    return db.transaction(async (client) => {
      const status = new Map<VehicleKey, string>();
      const vehicles = await client.query<{ organization_id: string; id: string; status: string }>({
        name: 'telemetry.lock-vehicles',
        text: `SELECT organization_id, id, status FROM vehicles
               WHERE (organization_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
               ORDER BY organization_id, id FOR KEY SHARE`,
        values: [organizationIds, vehicleIds],
      });
      for (const row of vehicles.rows) status.set(vehicleKey(row.organization_id, row.id), row.status);

      const accepted: { batch: CommitBatch; byVehicle: Map<string, StoredRecord[]>; outcome: BatchOutcome & { ok: true } }[] = [];
      const outcomes: BatchOutcome[] = [];
      for (const batch of batches) {
        const org = batch.organizationId;
        const judged = judgeBatch(batch, (vehicleId) => status.get(vehicleKey(org, vehicleId)));
        if (judged.refused !== undefined) {
          outcomes.push(judged.refused);
          continue;
        }
        const { byVehicle, registered } = judged;

        let activated: string[] = [];
        const events: EventRecord[] = [];
        if (registered.length > 0) {
          const { rows } = await client.query<{ vehicle_id: string }>({
            name: 'telemetry.activate',
            text: `WITH activated AS (
                     UPDATE vehicles SET status = $5, status_changed_at = $3, updated_at = $3
                     WHERE organization_id = $1 AND id = ANY($2::text[]) AND status = $4
                     RETURNING organization_id, id
                   )
                   INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by)
                   SELECT organization_id, id, $4, $5, $6, $3, $7 FROM activated
                   RETURNING vehicle_id`,
            values: [org, registered, batch.at, ACTIVATION.from, ACTIVATION.to, ACTIVATION.reason, ACTIVATION.by],
          });
          activated = registered.filter((id) => rows.some((row) => row.vehicle_id === id));
          for (const vehicleId of activated) {
            status.set(vehicleKey(org, vehicleId), ACTIVATION.to);
            events.push(activation(org, vehicleId, batch.at).event);
          }
          await appendEvents(client, events, batch.at);
        }
        const outcome = { ok: true as const, accepted: batch.records.length, duplicates: 0, activated, events, latest: [] as LatestState[] };
        outcomes.push(outcome);
        accepted.push({ batch, byVehicle, outcome });
      }
      if (accepted.length === 0) return outcomes;

      // Every accepted batch's records in one statement. A record already stored (same vehicle and
      // time), or earlier in this group, is a duplicate: the first one stays, as in SQLite.
      let total = 0;
      for (const { batch } of accepted) total += batch.records.length;
      const organizations = new Array<string>(total);
      const ids = new Array<string>(total);
      const times = new Array<number>(total);
      const data = new Array<string>(total);
      let i = 0;
      for (const { batch } of accepted) {
        for (const record of batch.records) {
          organizations[i] = batch.organizationId;
          ids[i] = record.vehicleId;
          times[i] = record.timestamp;
          data[i++] = JSON.stringify(record.data);
        }
      }
      const inserted = await client.query({
        name: 'telemetry.insert',
        text: `INSERT INTO telemetry (organization_id, vehicle_id, ts, data)
               SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::json[]) ON CONFLICT DO NOTHING`,
        values: [organizations, ids, times, data],
      });
      if ((inserted.rowCount ?? 0) < total) {
        // Duplicates (rare: a device's retry): which records this transaction stored tells each
        // request its own count, the first of equal records in the group being the stored one.
        const { rows } = await client.query<{ organization_id: string; vehicle_id: string; ts: number }>({
          name: 'telemetry.inserted',
          text: `SELECT organization_id, vehicle_id, ts FROM telemetry
                 WHERE (organization_id, vehicle_id, ts) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[]))
                   AND xmin = pg_current_xact_id()::xid`,
          values: [organizations, ids, times],
        });
        // Only the stored ones count for the latest state: a duplicate sent with other values does
        // not change it, as its record in the history does not change.
        const fresh = new Set(rows.map((row) => `${vehicleKey(row.organization_id, row.vehicle_id)}\n${row.ts}`));
        for (const entry of accepted) {
          const { batch, outcome } = entry;
          const stored = batch.records.filter((record) => fresh.delete(`${vehicleKey(batch.organizationId, record.vehicleId)}\n${record.timestamp}`));
          outcome.accepted = stored.length;
          outcome.duplicates = batch.records.length - stored.length;
          entry.byVehicle = groupByVehicle(stored);
        }
      }

      // Then the latest states of the accepted batches' vehicles: this node's own rows of them, so
      // other nodes' commits never wait for these locks (the vehicle's state is all its rows merged).
      const touched = new Set<VehicleKey>();
      for (const { batch, byVehicle } of accepted) for (const vehicleId of byVehicle.keys()) touched.add(vehicleKey(batch.organizationId, vehicleId));
      if (touched.size === 0) return outcomes; // nothing new
      const [touchedOrganizations, touchedVehicles] = pairs(touched);
      let at = -Infinity;
      for (const batch of batches) if (batch.at > at) at = batch.at;
      // A first latest state has no row to lock: an empty one is made first, so that two commits of
      // this writer (or one racing a fold that deleted its row) merge in turn instead of overwriting.
      await client.query({
        name: 'telemetry.latest-rows',
        text: `INSERT INTO telemetry_latest (organization_id, vehicle_id, writer, ts, fields, updated_at)
               SELECT o, v, $3, 0, '{}', $4 FROM unnest($1::text[], $2::text[]) AS r (o, v) ON CONFLICT DO NOTHING`,
        values: [touchedOrganizations, touchedVehicles, writer, at],
      });
      const previous = await client.query<LatestRow>({
        name: 'telemetry.lock-latest',
        text: `SELECT organization_id, vehicle_id, ts, fields FROM telemetry_latest
               WHERE (organization_id, vehicle_id) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND writer = $3
               ORDER BY organization_id, vehicle_id FOR UPDATE`,
        values: [touchedOrganizations, touchedVehicles, writer],
      });
      const latest = mergeRows(previous.rows, (row) => Object.keys(row.fields).length === 0); // not the empty rows made above
      for (const { batch, byVehicle, outcome } of accepted) {
        const org = batch.organizationId;
        for (const [vehicleId, records] of byVehicle) {
          const key = vehicleKey(org, vehicleId);
          const state = merge(latest.get(key), org, vehicleId, records);
          latest.set(key, state);
          outcome.latest.push(state);
        }
      }

      await upsertLatest(client, [...touched].map((key) => latest.get(key)!), writer, at);
      // Last, the rules judge what was stored, vehicle by vehicle, under per-vehicle locks that
      // other nodes' commits of the same vehicles wait for: taken last, they are held only for
      // the judging and the commit (one lock order for every commit: vehicles, this node's latest
      // states, rule states).
      if (rules !== undefined) {
        const fresh = accepted.flatMap(({ batch, byVehicle, outcome }) =>
          [...byVehicle].map(([vehicleId, records]) => ({ organizationId: batch.organizationId, vehicleId, records, at: batch.at, batch, outcome })));
        const written = await judgeInCommit(client, rules, fresh);
        // Pushed one by one: a spread of this many arguments overflows the stack.
        fresh.forEach((f, i) => {
          for (const event of written[i]!) f.outcome.events.push(event);
        });
      }
      return outcomes;
    });
  }

  const store: TelemetryStore = {
    /**
     * The whole group in one transaction, in a fixed number of round trips: read the status of
     * every vehicle named; activations, if any (one statement per batch that has some); one
     * multi-row insert of every accepted batch's records, and only if its row count says some
     * were duplicates, one read of which ones it stored; then lock and read this node's latest
     * states, merge, and write them in one upsert; then, with rules or trip detection, lock the
     * vehicles' rule states and judge; commit. Refusals are decided before any write.
     *
     * Locks are what let several nodes commit at once. The vehicles are only key-share locked (a
     * concurrent deletion waits for this commit; status changes and other commits do not), and the
     * latest states written are this node's own rows, locked last in one sorted order: another
     * node's commit for the same vehicles waits for none of this one's locks. A status change
     * racing a commit may land just after it (telemetry accepted for a vehicle being retired that
     * moment).
     */
    async commit(batches, merge, rules) {
      const named = new Set<VehicleKey>();
      for (const batch of batches) for (const r of batch.records) named.add(vehicleKey(batch.organizationId, r.vehicleId));
      const [organizationIds, vehicleIds] = pairs(named);

      // Two commits inserting the same records (one device's retry reaching two nodes at once) can
      // wait on each other's inserts and latest states: PostgreSQL ends one with a deadlock error,
      // and that one starts over.
      for (let attempt = 1; ; attempt++) {
        try {
          return await commitOnce(batches, merge, rules, organizationIds, vehicleIds);
        } catch (error) {
          if (attempt === 3 || (error as { code?: unknown }).code !== '40P01') throw error;
        }
      }
    },

    async history(organizationId, vehicleId, range) {
      // Without the vehicle id the caller knows: a scan reads many rows. Not a named statement:
      // its generic plan (estimating a handful of rows) appends the partitions and sorts all the
      // rest of the range for each page, where a plan for the actual values reads the key in order
      // and stops at the limit; planning costs a millisecond or two.
      const { rows } = await readDb.query<{ ts: number; data: TelemetryData }>({
        text: `SELECT ts, data FROM telemetry
               WHERE organization_id = $1 AND vehicle_id = $2 AND ts >= $3 AND ts < $4 AND ts > $5
               ORDER BY ts LIMIT $6`,
        values: [organizationId, vehicleId, range.from, range.to, range.after ?? Number.MIN_SAFE_INTEGER, range.limit],
      });
      return rows.map((row) => ({ vehicleId, timestamp: row.ts, data: row.data }));
    },

    async *scan<D>(organizationId: string, vehicleId: string, range: TimeRange, options: ScanOptions<D>) {
      const { pageSize, readSize: asked } = options;
      const parse = decoderOf(options);
      // A query on the partitioned table costs about a millisecond before its first row (a round
      // trip, partition pruning): the caller says how many to read at once. Not a named statement,
      // as `history` says. Each read is sent as soon as the one before has come back, so that
      // PostgreSQL reads the next rows while these are decoded and taken: one read ahead at most.
      // Rows as arrays: `pg` makes no object per row. The records' JSON comes as text, decoded a
      // page at a time as the page is taken.
      const readSize = Math.max(pageSize, asked ?? pageSize);
      type Row = [ts: number, data: string];
      const read = (after: number) => {
        const rows = readDb.query<Row>({
          text: `SELECT ts, data::text AS data FROM telemetry
                 WHERE organization_id = $1 AND vehicle_id = $2 AND ts >= $3 AND ts < $4 AND ts > $5
                 ORDER BY ts LIMIT $6`,
          values: [organizationId, vehicleId, range.from, range.to, after, readSize],
          rowMode: 'array', // passed on to `pg` as it is; its QueryConfig type leaves it out
        } as pg.QueryConfig).then((result) => result.rows);
        // Handled when awaited; until then (the consumer busy with a page) a failure must not count as unhandled.
        rows.catch(() => undefined);
        return rows;
      };
      let next: Promise<Row[]> | undefined = read(Number.MIN_SAFE_INTEGER);
      try {
        while (next !== undefined) {
          const rows: Row[] = await next;
          next = rows.length < readSize ? undefined : read(rows.at(-1)![0]);
          for (let i = 0; i < rows.length; i += pageSize) {
            const page = new Array<ScannedRecord<D>>(Math.min(pageSize, rows.length - i));
            for (let j = 0; j < page.length; j++) {
              const [ts, data] = rows[i + j]!;
              page[j] = { vehicleId, timestamp: ts, data: parse(data) };
            }
            yield page;
          }
        }
      } finally {
        // A consumer that stopped early: the read ahead, if any, is over when the scan is.
        await next?.catch(() => undefined);
      }
    },

    aggregate(organizationId, vehicleId, query) {
      return aggregatePostgres(readDb, organizationId, vehicleId, query);
    },

    async loadLatest() {
      const { rows } = await db.query<LatestRow>('SELECT organization_id, vehicle_id, ts, fields FROM telemetry_latest');
      return [...mergeRows(rows).values()];
    },

    async prune(before, max) {
      return prunePartitions(db, before, max);
    },

    async maintain(now, keepDays) {
      if (now - foldedAt >= FOLD_EVERY_MS) {
        while ((await db.transaction((client) => foldStale(client, now - FOLD_AFTER_MS))) === FOLD_STEP);
        foldedAt = now;
      }
      const from = dayOf(now - keepDays * DAY_MS);
      // Asking the catalog once a day per node is enough: partitions exist a week ahead.
      if (from >= coveredFrom && now + (AHEAD_DAYS - 1) * DAY_MS < coveredUntil) return;
      const until = dayOf(now + AHEAD_DAYS * DAY_MS);
      await ensurePartitions(db, from, until);
      coveredFrom = from;
      coveredUntil = until + DAY_MS;
    },
  };
  return store;
}

/** Writes `states` as the latest-state rows of `writer`, written at `at`. */
async function upsertLatest(client: Queryable, states: readonly LatestState[], writer: string, at: number): Promise<void> {
  await client.query({
    name: 'telemetry.upsert-latest',
    text: `INSERT INTO telemetry_latest (organization_id, vehicle_id, ts, fields, writer, updated_at)
           SELECT o, v, t, f, $5, $6 FROM unnest($1::text[], $2::text[], $3::bigint[], $4::json[]) AS r (o, v, t, f)
           ON CONFLICT (organization_id, vehicle_id, writer)
           DO UPDATE SET ts = excluded.ts, fields = excluded.fields, updated_at = excluded.updated_at`,
    values: [
      states.map((s) => s.organizationId),
      states.map((s) => s.vehicleId),
      states.map((s) => s.timestamp),
      states.map((s) => JSON.stringify(s.fields)),
      writer,
      at,
    ],
  });
}

/**
 * Folds latest-state rows not written since `before` into their vehicle's row of writer '', for up
 * to FOLD_STEP vehicles; how many vehicles it folded. One node folds at a time (the others skip).
 * A writer whose row is folded while it commits finds the row gone and starts a new one: its
 * content is in the shared row by then.
 */
async function foldStale(client: Queryable, before: number): Promise<number> {
  const { rows: [lock] } = await client.query<{ ok: boolean }>({
    name: 'telemetry.fold-lock',
    text: `SELECT pg_try_advisory_xact_lock(hashtextextended('fleet:latest-fold:' || current_schema(), 0)) AS ok`,
  });
  if (lock?.ok !== true) return 0;
  // The stale test is checked again on each row once locked: a row its writer updated meanwhile stays.
  const { rows } = await client.query<LatestRow & { writer: string }>({
    name: 'telemetry.fold-read',
    text: `SELECT organization_id, vehicle_id, writer, ts, fields FROM telemetry_latest
           WHERE (organization_id, vehicle_id) IN (
                   SELECT DISTINCT organization_id, vehicle_id FROM telemetry_latest WHERE writer <> '' AND updated_at < $1 LIMIT $2)
             AND (writer = '' OR updated_at < $1)
           ORDER BY organization_id, vehicle_id, writer FOR UPDATE`,
    values: [before, FOLD_STEP],
  });
  const stale = rows.filter((row) => row.writer !== '');
  if (stale.length === 0) return 0;
  const folded = [...mergeRows(rows).values()];
  await upsertLatest(client, folded, '', before);
  await client.query({
    name: 'telemetry.fold-delete',
    text: `DELETE FROM telemetry_latest WHERE (organization_id, vehicle_id, writer) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`,
    values: [stale.map((row) => row.organization_id), stale.map((row) => row.vehicle_id), stale.map((row) => row.writer)],
  });
  return new Set(stale.map((row) => vehicleKey(row.organization_id, row.vehicle_id))).size;
}
