// Where audit entries are kept. Entries of committed changes are inserted by the stores' own
// transactions (audit/context.ts); this port adds the others, reads them and deletes old ones.
import type { AuditEntry, AuditFilter } from './entry.ts';

export interface AuditStore {
  /** Entries written at the response (refusals, failures, requests that changed nothing). */
  insert(entries: readonly AuditEntry[]): Promise<void>;
  /**
   * Newest first: `organizationId`'s entries, and with `withUnowned` those of no organization too;
   * only those older than the entry `before` (an id) when given.
   */
  list(query: { organizationId: string; withUnowned: boolean; filter: AuditFilter; before?: string; limit: number }): Promise<AuditEntry[]>;
  /** Deletes up to `max` entries older than `before` (ms); how many it deleted. */
  deleteBefore(before: number, max: number): Promise<number>;
}
