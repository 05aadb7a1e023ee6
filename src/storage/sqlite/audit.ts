// The audit log in the embedded store. Each transaction of the database carries the entry of the
// request under way (audit/context.ts) when it changed anything: SQLite's total_changes() counted
// at BEGIN and again at COMMIT tells, so a request that wrote nothing (a PATCH of a missing
// vehicle) gets its entry at the response, with its real status.
import type { DatabaseSync } from 'node:sqlite';
import { auditPending, takeAuditEntry } from '../../audit/context.ts';
import type { AuditStore } from '../../audit/store.ts';
import { AUDIT_COLUMNS, auditValues, auditWhere, toAuditEntry } from '../audit-rows.ts';
import { beforeCommit, write } from './database.ts';
import type { WalSync } from './wal-sync.ts';

const PLACEHOLDERS = AUDIT_COLUMNS.split(',').map(() => '?').join(', ');

export function createSqliteAuditStore(db: DatabaseSync, wal: WalSync): AuditStore {
  const insert = db.prepare(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (${PLACEHOLDERS})`);
  const changes = db.prepare('SELECT total_changes() AS n');
  const prune = db.prepare('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)');

  beforeCommit(db, {
    pending: auditPending,
    begin() {
      const before = changes.get()!.n as number;
      return () => {
        if ((changes.get()!.n as number) === before) return undefined;
        const taken = takeAuditEntry();
        if (taken === undefined) return undefined;
        insert.run(...auditValues(taken.entry));
        return taken.committed;
      };
    },
  });

  return {
    async insert(entries) {
      if (entries.length === 0) return;
      // Synced off the event loop (wal-sync.ts): refusals come in bursts when the node is busy,
      // and a sync on this thread for each batch of their entries made it busier still.
      await wal.transaction(() => {
        for (const e of entries) insert.run(...auditValues(e));
      });
    },
    async list(query) {
      const { where, values } = auditWhere(query, () => '?');
      return db.prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT ?`)
        .all(...values, query.limit).map(toAuditEntry);
    },
    async deleteBefore(before, max) {
      return Number(write(db, () => prune.run(before, max).changes));
    },
  };
}
