// Device commands in the embedded store (commands/store.ts).
import type { DatabaseSync } from 'node:sqlite';
import type { CommandStore } from '../../commands/store.ts';
import type { CommandRecord } from '../../commands/model.ts';
import { COMMAND_COLUMNS as COLUMNS, commandOf } from '../command-rows.ts';
import type { AppendEvents } from './events.ts';
import type { WalSync } from './wal-sync.ts';

/**
 * Changes commit through `wal` (wal-sync.ts): durable when they answer, their WAL sync off the
 * event loop, so a stream of commands and answers does not stall the requests and packets beside it.
 */
export function createSqliteCommandStore(db: DatabaseSync, wal: WalSync, appendEvents: AppendEvents): CommandStore {
  const vehicleExists = db.prepare('SELECT 1 FROM vehicles WHERE organization_id = ? AND id = ?');
  const unfinished = db.prepare(`SELECT count(*) AS n FROM commands WHERE organization_id = ? AND vehicle_id = ? AND status IN ('queued', 'sent')`);
  const insert = db.prepare(`INSERT INTO commands (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const selectOne = db.prepare(`SELECT ${COLUMNS} FROM commands WHERE organization_id = ? AND id = ?`);
  const page = db.prepare(
    `SELECT ${COLUMNS} FROM commands WHERE organization_id = ? AND vehicle_id = ? AND id < ?
     AND (? IS NULL OR status IN (SELECT value FROM json_each(?))) ORDER BY id DESC LIMIT ?`,
  );
  const update = db.prepare(
    'UPDATE commands SET status = ?, sent_at = ?, completed_at = ?, result = ?, error = ? WHERE organization_id = ? AND id = ?',
  );
  // Named: left to itself SQLite reads every queued command of the database by `commands_due`.
  const queued = db.prepare(
    `SELECT ${COLUMNS} FROM commands INDEXED BY commands_unfinished WHERE organization_id = ? AND vehicle_id = ? AND channel = ?
     AND status IN ('queued', 'sent') AND status = 'queued' AND expires_at > ? ORDER BY id LIMIT ?`,
  );
  const queuedAll = db.prepare(
    `SELECT ${COLUMNS} FROM commands WHERE status = 'queued' AND organization_id = ? AND channel = ? AND expires_at > ? ORDER BY id LIMIT ?`,
  );
  const due = db.prepare(
    `SELECT ${COLUMNS} FROM commands WHERE status = 'queued' AND expires_at <= ?
     UNION ALL SELECT ${COLUMNS} FROM commands WHERE status = 'sent' AND sent_at <= ? LIMIT ?`,
  );

  return {
    async insert(c, event, maxUnfinished) {
      return wal.transaction(() => {
        if (vehicleExists.get(c.organizationId, c.vehicleId) === undefined) return 'no-vehicle';
        if (Number(unfinished.get(c.organizationId, c.vehicleId)!.n) >= maxUnfinished) return 'full';
        insert.run(
          c.id, c.organizationId, c.vehicleId, c.type, JSON.stringify(c.params), c.channel, c.status, c.createdAt,
          c.createdBy.type, c.createdBy.id, c.expiresAt, c.sentAt, c.completedAt, c.result, c.error,
        );
        appendEvents([event], c.createdAt);
        return 'created';
      });
    },

    async get(organizationId, id) {
      const row = selectOne.get(organizationId, id);
      return row === undefined ? undefined : commandOf(row);
    },

    async list(organizationId, vehicleId, filter) {
      const statuses = filter.statuses === undefined ? null : JSON.stringify(filter.statuses);
      // '~' sorts after every id character: no `before` reads from the newest.
      return page.all(organizationId, vehicleId, filter.before ?? '~', statuses, statuses, filter.limit).map(commandOf);
    },

    async change(organizationId, id, from, change, eventOf) {
      return wal.transaction(() => {
        const row = selectOne.get(organizationId, id);
        if (row === undefined) return undefined;
        const current = commandOf(row);
        if (!from.includes(current.status)) return undefined;
        const changed: CommandRecord = {
          ...current,
          status: change.status,
          sentAt: change.status === 'sent' ? change.at : current.sentAt,
          completedAt: change.status === 'sent' ? null : change.at,
          result: change.result === undefined ? current.result : change.result,
          error: change.error === undefined ? current.error : change.error,
        };
        update.run(changed.status, changed.sentAt, changed.completedAt, changed.result, changed.error, organizationId, id);
        const event = eventOf(changed);
        appendEvents([event], change.at);
        return { command: changed, event };
      });
    },

    async queued(organizationId, vehicleId, channel, now, limit) {
      const rows = vehicleId === undefined ? queuedAll.all(organizationId, channel, now, limit) : queued.all(organizationId, vehicleId, channel, now, limit);
      return rows.map(commandOf);
    },

    async due(now, sentBefore, limit) {
      return due.all(now, sentBefore, limit).map(commandOf);
    },
  };
}
