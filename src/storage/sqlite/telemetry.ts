// Telemetry in the embedded store. A commit appends a request's few records of a vehicle to
// `telemetry_recent` (arrival order, a few pages per commit whatever the number of vehicles) after
// checking neither table has them; once enough have gathered, one transaction moves them all into
// `telemetry` (clustered by vehicle and time, each vehicle's page written once per move) and folds
// them into `telemetry_latest`. A request's many records of one vehicle (DIRECT_AT) fill that
// vehicle's pages in order, so they go straight into `telemetry` and its latest state at once.
// See migration 0005.
//
// What the recent records say of each vehicle's latest state is also kept in memory as they are
// written, so a move folds one merged state per vehicle instead of reading every record back.
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { EventRecord } from '../../events/types.ts';
import { mergeLatest, mergeStates } from '../../telemetry/latest.ts';
import {
  type BatchOutcome, type CommitBatch, type HistoryRange, type LatestState, type MergeLatest, type ScanOptions, type ScannedRecord, type StoredRecord, type TelemetryStore, type TimeRange, decoderOf, judgeBatch, limitBatchEvents, parseData, scanByPages,
} from '../../telemetry/store.ts';
import { type CommitRules, identifiersOf } from '../../rules/store.ts';
import type { SqliteRuleWrites } from './rules.ts';
import { write as writeOne } from './database.ts';
import { createSqliteAggregate } from './telemetry-aggregate.ts';
import { WRITTEN_TIMES, prepareWrittenPage } from './telemetry-export.ts';
import type { VehicleStatuses } from './vehicle-status.ts';
import type { WalSync } from './wal-sync.ts';
import { vehicleKey } from '../../vehicles/key.ts';

type Row = Record<string, SQLInputValue>;

/** Records gathered in `telemetry_recent` before a commit moves them all. */
export const MOVE_AT = 2000;
/** A request with this many records of one vehicle writes them straight into `telemetry`. */
export const DIRECT_AT = 16;

/**
 * `wal` syncs the group commits (see wal-sync.ts); `statuses` knows each vehicle's status. The
 * stores of one database share both. `reader` (database.ts's `openSqliteReader`, or `db` itself)
 * serves the range scans of history reports and exports.
 */
export function createSqliteTelemetryStore(
  db: DatabaseSync, wal: WalSync, statuses: VehicleStatuses, ruleWrites: SqliteRuleWrites, reader: DatabaseSync = db,
): TelemetryStore {
  const stored = db.prepare('SELECT 1 FROM telemetry WHERE organization_id = ? AND vehicle_id = ? AND ts = ?');
  const newestStored = db.prepare('SELECT max(ts) AS ts FROM telemetry WHERE organization_id = ? AND vehicle_id = ?');
  const inRecent = db.prepare('SELECT 1 FROM telemetry_recent WHERE organization_id = ? AND vehicle_id = ? AND ts = ?');
  const insert = db.prepare('INSERT INTO telemetry (organization_id, vehicle_id, ts, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
  const insertRecent = db.prepare('INSERT INTO telemetry_recent (organization_id, vehicle_id, ts, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
  const countRecent = db.prepare('SELECT count(*) AS n FROM telemetry_recent');
  const moveRecent = db.prepare(
    `INSERT INTO telemetry (organization_id, vehicle_id, ts, data)
     SELECT organization_id, vehicle_id, ts, data FROM telemetry_recent ORDER BY organization_id, vehicle_id, ts
     ON CONFLICT DO NOTHING`,
  );
  const allRecent = db.prepare('SELECT organization_id, vehicle_id, ts, data FROM telemetry_recent ORDER BY organization_id, vehicle_id, ts');
  const recentPerVehicle = db.prepare(
    'SELECT organization_id, vehicle_id, count(*) AS n, max(ts) AS ts FROM telemetry_recent GROUP BY organization_id, vehicle_id',
  );
  const clearRecent = db.prepare('DELETE FROM telemetry_recent');
  const selectLatest = db.prepare('SELECT ts, fields FROM telemetry_latest WHERE organization_id = ? AND vehicle_id = ?');
  const upsertLatest = db.prepare(
    `INSERT INTO telemetry_latest (organization_id, vehicle_id, ts, fields) VALUES (?, ?, ?, ?)
     ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET ts = excluded.ts, fields = excluded.fields`,
  );
  // Each part reads at most `limit` rows (the recent part scans its few thousand by time); the merge is then small.
  // One lower bound (`from`, or just after the cursor): given two, SQLite seeks the key to one of
  // them and filters by the other row by row, so each page read the range again from `from`.
  const page = `SELECT * FROM (SELECT ts, data FROM telemetry
                                WHERE organization_id = ?1 AND vehicle_id = ?2 AND ts >= ?3 AND ts < ?4 ORDER BY ts LIMIT ?5)
                 UNION ALL
                 SELECT * FROM (SELECT ts, data FROM telemetry_recent
                                WHERE organization_id = ?1 AND vehicle_id = ?2 AND ts >= ?3 AND ts < ?4 ORDER BY ts LIMIT ?5)
                 ORDER BY ts LIMIT ?5`;
  const historyPage = db.prepare(page);
  const scanPage = reader.prepare(page);
  // Rows as [ts, data] arrays: an object per row with named columns cost as much as reading it.
  historyPage.setReturnArrays(true);
  scanPage.setReturnArrays(true);
  // The same page written in an export format by SQLite (telemetry-export.ts).
  const writtenPage = { csv: prepareWrittenPage(reader, page, 'csv'), geojson: prepareWrittenPage(reader, page, 'geojson') };
  const allLatest = db.prepare('SELECT organization_id, vehicle_id, ts, fields FROM telemetry_latest');
  const pruneOldest = db.prepare(
    `DELETE FROM telemetry WHERE (organization_id, vehicle_id, ts) IN
       (SELECT organization_id, vehicle_id, ts FROM telemetry WHERE ts < ? ORDER BY ts LIMIT ?)`,
  );

  /**
   * The newest time each vehicle has in `telemetry`, read once and then kept up to date by the
   * writes, which all go through this store: a record newer than that cannot be a duplicate there,
   * and the per-record lookup is skipped. It may only be too high (a deletion it did not see, a
   * transaction rolled back), which costs a lookup, never a missed duplicate.
   */
  const newest = new Map<string, number>();
  function mayBeStored(organizationId: string, vehicleId: string, timestamp: number): boolean {
    const key = vehicleKey(organizationId, vehicleId);
    let known = newest.get(key);
    if (known === undefined) {
      known = (newestStored.get(organizationId, vehicleId)?.ts as number | null) ?? -Infinity;
      newest.set(key, known);
    }
    return timestamp <= known && stored.get(organizationId, vehicleId, timestamp) !== undefined;
  }
  function storedUpTo(organizationId: string, vehicleId: string, timestamp: number): void {
    const key = vehicleKey(organizationId, vehicleId);
    const known = newest.get(key);
    if (known !== undefined && timestamp > known) newest.set(key, timestamp);
  }

  /** Rows in `telemetry_recent` (an upper bound: a vehicle's deletion takes its rows unseen). */
  let recent = Number(countRecent.get()!.n);

  /**
   * Each vehicle's records in `telemetry_recent` as one merged state, and how many they are,
   * kept as they are written: a move folds this state instead of reading and parsing them all.
   * A vehicle's entry is used only while it covers exactly that vehicle's rows there:
   * - `pendingComplete` is false while the table may hold rows no entry counted (rows left from
   *   before a restart, or entries changed in a transaction that then failed); the next move
   *   that commits empties the table and makes it true again;
   * - while it is true every row there was counted, so a vehicle with fewer rows than its count
   *   lost some unseen (its deletion took them) and its entry is not used.
   * A vehicle whose entry is not used has its rows read back, as after a restart.
   */
  const pending = new Map<string, { state: LatestState; count: number }>();
  let pendingComplete = recent === 0;
  function remember(state: LatestState, count: number): void {
    const key = vehicleKey(state.organizationId, state.vehicleId);
    const known = pending.get(key);
    pending.set(key, known === undefined ? { state, count } : { state: mergeStates(known.state, state), count: known.count + count });
  }

  /**
   * A write transaction, durable once the promise resolves (see wal-sync.ts). One that fails
   * leaves `pending` not to be trusted until the next move, and `recent` is counted again.
   */
  async function write<T>(fn: () => T): Promise<T> {
    try {
      return await wal.transaction(fn);
    } catch (error) {
      pendingComplete = false;
      statuses.clear(); // the commit's activations did not happen
      ruleWrites.forgetAll(); // nor its rule states
      if (db.isOpen) recent = Number(countRecent.get()!.n);
      throw error;
    }
  }

  /** A page of the history through `statement` (`historyPage`, or `scanPage` for the range scans). */
  function readPage<D>(statement: StatementSync, organizationId: string, vehicleId: string, range: HistoryRange, decode: (text: string) => D): ScannedRecord<D>[] {
    return statement
      // Times are whole milliseconds: after the cursor is from the next one on.
      .all(organizationId, vehicleId, range.after === undefined ? range.from : Math.max(range.from, range.after + 1), range.to, range.limit)
      .map((row) => {
        const [ts, data] = row as unknown as [number, string];
        return { vehicleId, timestamp: ts, data: decode(data) };
      });
  }

  const toLatest = (organizationId: string, vehicleId: string, row: Row): LatestState => ({
    organizationId,
    vehicleId,
    timestamp: row.ts as number,
    fields: JSON.parse(row.fields as string) as LatestState['fields'],
  });

  /**
   * Each vehicle's records in `telemetry_recent`, in (organization, vehicle, time) order; only the
   * vehicles whose keys are in `only`, when given (the others' records are not parsed).
   */
  function* recentByVehicle(only?: ReadonlySet<string>): Generator<{ organizationId: string; vehicleId: string; records: StoredRecord[] }> {
    let current: { organizationId: string; vehicleId: string; records: StoredRecord[] } | undefined;
    for (const row of allRecent.iterate()) {
      const organizationId = row.organization_id as string;
      const vehicleId = row.vehicle_id as string;
      if (only !== undefined && !only.has(vehicleKey(organizationId, vehicleId))) continue;
      if (current === undefined || current.organizationId !== organizationId || current.vehicleId !== vehicleId) {
        if (current !== undefined) yield current;
        current = { organizationId, vehicleId, records: [] };
      }
      current.records.push({ vehicleId, timestamp: row.ts as number, data: parseData(row.data as string) });
    }
    if (current !== undefined) yield current;
  }

  /**
   * Folds what stored records say of a vehicle (their merged state) into its row of
   * `telemetry_latest`; the state written.
   */
  function foldIntoLatest(incoming: LatestState): LatestState {
    const { organizationId, vehicleId } = incoming;
    const row = selectLatest.get(organizationId, vehicleId);
    const state = row === undefined ? incoming : mergeStates(toLatest(organizationId, vehicleId, row), incoming);
    upsertLatest.run(organizationId, vehicleId, state.timestamp, JSON.stringify(state.fields));
    return state;
  }

  /** Moves every recent record into `telemetry` and `telemetry_latest`; inside a transaction. */
  function moveAll(): void {
    moveRecent.run();
    const unknown = new Set<string>();
    for (const row of recentPerVehicle.iterate()) {
      const organizationId = row.organization_id as string;
      const vehicleId = row.vehicle_id as string;
      const key = vehicleKey(organizationId, vehicleId);
      storedUpTo(organizationId, vehicleId, row.ts as number);
      const known = pendingComplete ? pending.get(key) : undefined;
      if (known !== undefined && known.count === Number(row.n)) foldIntoLatest(known.state);
      else unknown.add(key);
    }
    if (unknown.size > 0) {
      for (const { organizationId, vehicleId, records } of recentByVehicle(unknown)) {
        foldIntoLatest(mergeLatest(undefined, organizationId, vehicleId, records));
      }
    }
    clearRecent.run();
    recent = 0;
    pending.clear();
    pendingComplete = true; // made false again by `write` if this transaction fails
  }

  /**
   * One request's records, inside the group's transaction: its outcome, and how many of its
   * records went to `telemetry_recent`. Refusals are decided before any write, so a refused batch
   * leaves nothing behind; a store error fails the whole transaction and every batch in it.
   */
  function writeBatch(batch: CommitBatch, merge: MergeLatest, rules: CommitRules | undefined): { outcome: BatchOutcome; added: number } {
    const org = batch.organizationId;
    const judged = judgeBatch(batch, (vehicleId) => statuses.get(org, vehicleId));
    if (judged.refused !== undefined) return { outcome: judged.refused, added: 0 };
    const { byVehicle, registered } = judged;

    let accepted = 0;
    let added = 0;
    const latest: LatestState[] = [];
    const judging = rules?.judges(org) === true;
    const freshOf = new Map<string, StoredRecord[]>();
    for (const [vehicleId, records] of byVehicle) {
      // Only the records stored count for the latest state: a duplicate sent with other values
      // does not change it, as its record in the history does not change.
      const fresh: StoredRecord[] = [];
      if (records.length >= DIRECT_AT) {
        // Many records of one vehicle fill its pages in `telemetry` in order: written there at
        // once, with its latest state. Those already in `telemetry_recent` are duplicates; while
        // `pending` counts every row there, a vehicle with no entry has none to look up.
        const mayBeRecent = !pendingComplete || pending.has(vehicleKey(org, vehicleId));
        let newestFresh = -Infinity;
        for (const r of records) {
          if (mayBeRecent && inRecent.get(org, vehicleId, r.timestamp) !== undefined) continue;
          if (insert.run(org, vehicleId, r.timestamp, JSON.stringify(r.data)).changes > 0) {
            fresh.push(r);
            if (r.timestamp > newestFresh) newestFresh = r.timestamp;
          }
        }
        if (fresh.length > 0) {
          storedUpTo(org, vehicleId, newestFresh);
          latest.push(foldIntoLatest(mergeLatest(undefined, org, vehicleId, fresh)));
        }
      } else {
        for (const r of records) {
          if (mayBeStored(org, vehicleId, r.timestamp)) continue;
          if (insertRecent.run(org, vehicleId, r.timestamp, JSON.stringify(r.data)).changes > 0) fresh.push(r);
        }
        added += fresh.length;
        if (fresh.length > 0) {
          const state = merge(undefined, org, vehicleId, fresh);
          remember(state, fresh.length);
          latest.push(state);
        }
      }
      accepted += fresh.length;
      if (judging && fresh.length > 0) freshOf.set(vehicleId, fresh);
    }
    const activated: string[] = [];
    const events: EventRecord[] = [];
    for (const vehicleId of registered) {
      const event = statuses.activate(org, vehicleId, batch.at);
      if (event !== undefined) {
        activated.push(vehicleId);
        events.push(event);
      }
    }
    let judgedEvents = 0;
    for (const [vehicleId, fresh] of freshOf) {
      const { state, unresolved, drivers } = ruleWrites.load(org, vehicleId, rules!.alerts(org), identifiersOf(fresh), rules!.rollups);
      const judged = rules!.judge(org, vehicleId, fresh, state, unresolved, batch.at, drivers);
      if (judged === undefined) continue;
      judgedEvents += judged.events.length;
      limitBatchEvents(batch.records.length, judgedEvents);
      // Pushed one by one: a spread of this many arguments overflows the stack.
      for (const event of ruleWrites.write(judged, batch.at)) events.push(event);
    }
    return { outcome: { ok: true, accepted, duplicates: batch.records.length - accepted, activated, events, latest }, added };
  }

  const aggregate = createSqliteAggregate(db);

  const store: TelemetryStore = {
    /**
     * The latest state an outcome carries for a vehicle whose records went to `telemetry_recent`
     * is what those records say (merged with nothing): the stored state takes them in when they
     * move. The caller merges it into what it knows.
     */
    async commit(batches, merge, rules) {
      return write(() => {
        const outcomes = batches.map((batch) => {
          const written = writeBatch(batch, merge, rules);
          recent += written.added;
          return written.outcome;
        });
        if (recent >= MOVE_AT) moveAll();
        return outcomes;
      });
    },

    async history(organizationId, vehicleId, range) {
      return readPage(historyPage, organizationId, vehicleId, range, parseData);
    },

    // A query costs nothing before its first row here: a read is a page (`readSize` is not needed).
    scan<D>(organizationId: string, vehicleId: string, range: TimeRange, options: ScanOptions<D>) {
      const decode = decoderOf(options);
      return scanByPages(async (org, vehicle, page) => readPage(scanPage, org, vehicle, page, decode), organizationId, vehicleId, range, options.pageSize);
    },

    scanWritten(format, organizationId, vehicleId, range, pageSize) {
      if (range.from < WRITTEN_TIMES.from || range.to > WRITTEN_TIMES.to) return undefined;
      const statement = writtenPage[format];
      return (async function* written() {
        // Read as `scan` reads: keyset pages, each its own short query, the next from just after the last time read.
        let from = range.from;
        for (;;) {
          const [read, last, text] = statement.get(organizationId, vehicleId, from, range.to, pageSize) as unknown as [number, number | null, string | null];
          if (read === 0) return;
          if (text !== null) yield text; // null: no record of the page has a location (GeoJSON)
          if (read < pageSize) return;
          from = last! + 1;
        }
      })();
    },

    async aggregate(organizationId, vehicleId, query) {
      return aggregate(organizationId, vehicleId, query);
    },

    async loadLatest() {
      const states = new Map<string, LatestState>();
      for (const row of allLatest.all()) {
        const state = toLatest(row.organization_id as string, row.vehicle_id as string, row);
        states.set(vehicleKey(state.organizationId, state.vehicleId), state);
      }
      for (const { organizationId, vehicleId, records } of recentByVehicle()) {
        const key = vehicleKey(organizationId, vehicleId);
        states.set(key, mergeLatest(states.get(key), organizationId, vehicleId, records));
      }
      return [...states.values()];
    },

    /** Moves the recent records first, so that old ones among them are pruned too. */
    async prune(before, max) {
      if (recent > 0) await write(moveAll);
      return Number(writeOne(db, () => pruneOldest.run(before, max)).changes);
    },

    async maintain() {
      // One table, no partitions: nothing to prepare.
    },
  };
  return store;
}
