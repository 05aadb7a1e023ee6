// The event log in the embedded store. One writer at a time commits, so sequence order is commit
// order and the feed can read by `seq` alone.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { EventStore, LoggedEvent } from '../../events/store.ts';
import type { EventRecord } from '../../events/types.ts';
import { iso } from '../../clock.ts';
import { type Row, eventOfRow } from '../rows.ts';
import { transaction } from './database.ts';

/** Appends events inside the caller's transaction. */
export type AppendEvents = (events: readonly EventRecord[], recordedAt: number) => void;

export function createSqliteEventAppender(db: DatabaseSync): AppendEvents {
  const insert = db.prepare(
    'INSERT INTO events (id, organization_id, type, vehicle_id, occurred_at, recorded_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  return (events, recordedAt) => {
    for (const e of events) insert.run(e.id, e.organizationId, e.type, e.vehicleId, e.occurredAt, recordedAt, JSON.stringify(e.data));
  };
}

export function toLoggedEvent(row: Row): LoggedEvent {
  return eventOfRow(row, [0, row.seq as number]);
}

const COLUMNS = 'seq, id, organization_id, type, vehicle_id, occurred_at, recorded_at, data';

/**
 * An event's public envelope built by SQLite from the stored columns: the same text as
 * `envelopeJson` (types.ts), so that a page of the feed is one row of text, with no object per
 * event. Times from 1970 to 9999 are written by `strftime`; any other goes to `fleet_iso`, the
 * service's own formatting (a function the store registers).
 */
const ENVELOPE = `'{"id":' || json_quote(id) || ',"type":"' || type || '","occurredAt":"' ||
  CASE WHEN occurred_at >= 0 AND occurred_at < 253402300800000
    THEN strftime('%Y-%m-%dT%H:%M:%S', occurred_at / 1000, 'unixepoch') || printf('.%03dZ', occurred_at % 1000)
    ELSE fleet_iso(occurred_at) END || '"' ||
  CASE WHEN vehicle_id IS NULL THEN '' ELSE ',"vehicleId":' || json_quote(vehicle_id) END || ',"data":' || data || '}'`;

export function createSqliteEventStore(db: DatabaseSync): EventStore {
  db.function('fleet_iso', { deterministic: true }, (ms) => iso(Number(ms)));
  const pruned = db.prepare('SELECT pruned_seq FROM event_log_state WHERE id = 1');
  const since = db.prepare(`SELECT ${COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?`);
  const newest = db.prepare('SELECT max(seq) AS seq FROM events WHERE organization_id = ? AND seq > ?');
  const oldestBefore = db.prepare('SELECT seq FROM events WHERE recorded_at < ? ORDER BY seq LIMIT ?');
  const deleteUpTo = db.prepare('DELETE FROM events WHERE seq <= ? AND recorded_at < ?');
  const markPruned = db.prepare('UPDATE event_log_state SET pruned_seq = max(pruned_seq, ?) WHERE id = 1');
  const feeds = new Map<string, StatementSync>();

  function feedStatement(types: number, vehicle: boolean): StatementSync {
    const shape = `${types}:${vehicle}`;
    let statement = feeds.get(shape);
    if (statement === undefined) {
      let where = 'organization_id = ? AND seq > ?';
      if (vehicle) where += ' AND vehicle_id = ?';
      if (types > 0) where += ` AND type IN (${Array(types).fill('?').join(',')})`;
      // group_concat keeps the order of the rows it is given (SQLite's aggregate reads the
      // subquery's rows as they come); `ORDER BY seq` inside it says so explicitly.
      statement = db.prepare(
        `SELECT coalesce(group_concat(envelope, ',' ORDER BY seq), '') AS envelopes, count(*) AS count, max(seq) AS last
         FROM (SELECT seq, ${ENVELOPE} AS envelope FROM events WHERE ${where} ORDER BY seq LIMIT ?)`,
      );
      feeds.set(shape, statement);
    }
    return statement;
  }

  return {
    async feed(organizationId, query) {
      const after = query.after[1];
      if (after < Number(pruned.get()!.pruned_seq)) return { gone: true };
      const types = query.types ?? [];
      const params = [organizationId, after, ...(query.vehicleId === undefined ? [] : [query.vehicleId]), ...types, query.limit];
      const page = feedStatement(types.length, query.vehicleId !== undefined).get(...params)!;
      const envelopes = page.envelopes as string;
      const count = Number(page.count);
      if (count === query.limit) return { gone: false, envelopes, count, next: [0, page.last as number] };
      // Not a full page: nothing matches up to the newest event, so the next read starts there.
      const head = newest.get(organizationId, after)?.seq as number | null;
      return { gone: false, envelopes, count, next: [0, head ?? after] };
    },

    async since(after, limit) {
      return since.all(after[1], limit).map(toLoggedEvent);
    },

    async prune(before, max) {
      const seqs = oldestBefore.all(before, max).map((row) => row.seq as number);
      if (seqs.length === 0) return 0;
      const upTo = seqs.at(-1)!;
      return transaction(db, () => {
        markPruned.run(upTo);
        return Number(deleteUpTo.run(upTo, before).changes);
      });
    },
  };
}
