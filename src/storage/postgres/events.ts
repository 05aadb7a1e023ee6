// The event log on PostgreSQL. Positions are (transaction id, seq), read only below the oldest
// transaction still running (migration 0005 says why): nodes commit concurrently, and a reader
// following `next` must never step over an event whose commit became visible late.
import type { EventStore, LoggedEvent, Position } from '../../events/store.ts';
import { type EventRecord, type EventType, envelopeJson } from '../../events/types.ts';
import type { Database, Queryable, Row } from './database.ts';
import { eventOfRow } from '../rows.ts';

/** Events whose transaction is older than every transaction still running. */
export const SETTLED = 'tx < pg_snapshot_xmin(pg_current_snapshot())';
const COLUMNS = 'tx::text::bigint AS tx, seq, id, organization_id, type, vehicle_id, occurred_at, recorded_at, data::text AS data';

/** Appends events inside the caller's transaction: one statement whatever their number. */
export async function appendEvents(client: Queryable, events: readonly EventRecord[], recordedAt: number): Promise<void> {
  if (events.length === 0) return;
  await client.query({
    name: 'events.append',
    text: `INSERT INTO events (id, organization_id, type, vehicle_id, occurred_at, recorded_at, data)
           SELECT id, org, type, vehicle, at, $6, data::json
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $7::text[]) AS e(id, org, type, vehicle, at, data)`,
    values: [
      events.map((e) => e.id), events.map((e) => e.organizationId), events.map((e) => e.type),
      events.map((e) => e.vehicleId), events.map((e) => e.occurredAt), recordedAt, events.map((e) => JSON.stringify(e.data)),
    ],
  });
}

export function toLoggedEvent(row: Row): LoggedEvent {
  const envelope = envelopeJson({
    id: row.id as string, type: row.type as EventType, occurredAt: row.occurred_at as number,
    vehicleId: (row.vehicle_id as string | null) ?? null, dataJson: row.data as string,
  });
  return eventOfRow(row, [row.tx as number, row.seq as number], envelope);
}

export function createPostgresEventStore(db: Database): EventStore {
  return {
    async feed(organizationId, query) {
      const [tx, seq] = query.after;
      const params: unknown[] = [organizationId, tx, seq, query.limit];
      let filter = '';
      if (query.vehicleId !== undefined) filter += ` AND vehicle_id = $${params.push(query.vehicleId)}`;
      if (query.types !== undefined && query.types.length > 0) filter += ` AND type = ANY($${params.push(query.types)}::text[])`;
      if (query.anyOfGroups !== undefined) {
        filter += ` AND vehicle_id IN (SELECT vehicle_id FROM vehicle_group_members WHERE organization_id = $1 AND group_id = ANY($${params.push(query.anyOfGroups)}::text[]))`;
      }
      // One statement, one snapshot: the page, the newest settled position of the organization
      // (where the next read starts when the page is not full), and whether `after` was pruned.
      const { rows } = await db.query({
        name: `events.feed.${query.vehicleId === undefined ? '' : 'v'}${filter.includes('type') ? 't' : ''}${query.anyOfGroups === undefined ? '' : 'g'}`,
        text: `WITH page AS (
                 SELECT ${COLUMNS} FROM events
                 WHERE organization_id = $1 AND (tx, seq) > ($2::text::xid8, $3) AND ${SETTLED}${filter}
                 ORDER BY tx, seq LIMIT $4
               ), head AS (
                 SELECT tx::text::bigint AS tx, seq FROM events
                 WHERE organization_id = $1 AND (tx, seq) > ($2::text::xid8, $3) AND ${SETTLED}
                 ORDER BY tx DESC, seq DESC LIMIT 1
               )
               SELECT 'page' AS part, page.* FROM page
               UNION ALL SELECT 'head', head.tx, head.seq, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM head
               UNION ALL SELECT 'pruned', pruned_tx, pruned_seq, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM event_log_state`,
        values: params,
      });
      const pruned = rows.find((row) => row.part === 'pruned')!;
      if (before([tx, seq], [pruned.tx as number, pruned.seq as number])) return { gone: true };
      const events = rows.filter((row) => row.part === 'page').map(toLoggedEvent);
      const envelopes = events.map((e) => e.envelope).join(',');
      if (events.length === query.limit) return { gone: false, envelopes, count: events.length, next: events.at(-1)!.position };
      const head = rows.find((row) => row.part === 'head');
      return { gone: false, envelopes, count: events.length, next: head === undefined ? query.after : [head.tx as number, head.seq as number] };
    },

    async since(after, limit) {
      const { rows } = await db.query({
        name: 'events.since',
        text: `SELECT ${COLUMNS} FROM events WHERE (tx, seq) > ($1::text::xid8, $2) AND ${SETTLED} ORDER BY tx, seq LIMIT $3`,
        values: [after[0], after[1], limit],
      });
      return rows.map(toLoggedEvent);
    },

    async prune(beforeTime, max) {
      return db.transaction(async (client) => {
        const { rows } = await client.query({
          name: 'events.prune',
          text: `WITH old AS (
                   SELECT seq FROM events WHERE recorded_at < $1 AND ${SETTLED} ORDER BY recorded_at LIMIT $2
                 ), gone AS (
                   DELETE FROM events WHERE seq IN (SELECT seq FROM old) RETURNING tx::text::bigint AS tx, seq
                 )
                 SELECT tx, seq FROM gone ORDER BY tx DESC, seq DESC`,
          values: [beforeTime, max],
        });
        if (rows.length === 0) return 0;
        const newest = rows[0]!;
        await client.query({
          name: 'events.mark-pruned',
          text: `UPDATE event_log_state SET pruned_tx = $1, pruned_seq = $2
                 WHERE id = 1 AND (pruned_tx, pruned_seq) < ($1, $2)`,
          values: [newest.tx, newest.seq],
        });
        return rows.length;
      });
    },
  };
}

function before(a: Position, b: Position): boolean {
  return a[0] !== b[0] ? a[0] < b[0] : a[1] < b[1];
}
