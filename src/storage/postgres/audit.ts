// The audit log in PostgreSQL. Each transaction carries the entry of the request under way
// (audit/context.ts) when it wrote anything: the insert runs only if the transaction has an id
// (PostgreSQL assigns one at its first write), so a request that wrote nothing gets its entry at
// the response, with its real status. A single write statement becomes a transaction for it.
import { auditPending, takeAuditEntry } from '../../audit/context.ts';
import type { AuditStore } from '../../audit/store.ts';
import { AUDIT_COLUMNS, auditValues, auditWhere, toAuditEntry } from '../audit-rows.ts';
import type { Database } from './database.ts';

const COUNT = AUDIT_COLUMNS.split(',').length;
const PLACEHOLDERS = Array.from({ length: COUNT }, (_, i) => `$${i + 1}`).join(', ');

export function createPostgresAuditStore(db: Database): AuditStore {
  db.beforeCommit({
    pending: auditPending,
    async run(client) {
      const taken = takeAuditEntry();
      if (taken === undefined) return undefined;
      const { rowCount } = await client.query({
        name: 'audit.insert-if-written',
        text: `INSERT INTO audit_log (${AUDIT_COLUMNS}) SELECT ${PLACEHOLDERS} WHERE txid_current_if_assigned() IS NOT NULL`,
        values: auditValues(taken.entry),
      });
      return rowCount === 1 ? taken.committed : undefined;
    },
  });

  return {
    async insert(entries) {
      if (entries.length === 0) return;
      const values = entries.flatMap(auditValues);
      const rows = entries.map((_, r) => `(${Array.from({ length: COUNT }, (_, c) => `$${r * COUNT + c + 1}`).join(', ')})`);
      await db.query(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES ${rows.join(', ')}`, values);
    },
    async list(query) {
      const { where, values } = auditWhere(query, (n) => `$${n}`);
      const { rows } = await db.query(
        `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE ${where} ORDER BY id DESC LIMIT $${values.length + 1}`,
        [...values, query.limit],
      );
      return rows.map(toAuditEntry);
    },
    async deleteBefore(before, max) {
      const { rowCount } = await db.query(
        'DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)',
        [before, max],
      );
      return rowCount ?? 0;
    },
  };
}
