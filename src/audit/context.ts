// The audit entry of the request being handled, carried to the store through AsyncLocalStorage:
// the store's transaction helpers (storage/sqlite/database.ts, storage/postgres/database.ts) take
// it and insert it just before COMMIT, so a change that succeeds commits with its entry and a
// change rolled back leaves none. What no transaction took is written when the response is sent
// (plugin.ts): refusals, failures, requests that changed nothing.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuditActor, AuditEntry } from './entry.ts';

/** What a service may tell of the request it handles, which the request alone does not say. */
export interface AuditNote {
  /** Who acted, when the credential does not say (a sign-in: the person signing in). */
  actor?: AuditActor;
  /** Whose entry it is, when no credential says (a failed sign-in of a known account). */
  organizationId?: string;
  resourceId?: string;
  /** Another action than the route's (e.g. `session.login_failed`). */
  action?: string;
}

export interface AuditScope {
  readonly build: (scope: AuditScope, status: number) => AuditEntry;
  /** What a committed change answers (the route's success status). */
  readonly successStatus: number;
  /** A new id of this prefix made during the request is the resource's id (a creation). */
  readonly newIdPrefix: string | undefined;
  /** false: the entry is written at the response only (sign-ins: their writes are bookkeeping). */
  readonly inTransaction: boolean;
  /** Set once a committed transaction holds the entry. */
  written: boolean;
  /** The response is sent: work that outlives the request (timers it set) takes nothing. */
  closed: boolean;
  note: AuditNote;
}

const storage = new AsyncLocalStorage<AuditScope>();

export function runInAuditScope<T>(scope: AuditScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** Runs `fn` outside any request's scope: for work started by a request that is not its change. */
export function outsideAudit<T>(fn: () => T): T {
  return storage.exit(fn);
}

function current(): AuditScope | undefined {
  const scope = storage.getStore();
  return scope === undefined || scope.written || scope.closed || !scope.inTransaction ? undefined : scope;
}

/** Whether a transaction begun now should carry an entry (a single write becomes a transaction then). */
export function auditPending(): boolean {
  return current() !== undefined;
}

/**
 * The entry to insert before COMMIT, and what to call once COMMIT succeeded; undefined when there
 * is none (no request, not a change, already written).
 */
export function takeAuditEntry(): { entry: AuditEntry; committed: () => void } | undefined {
  const scope = current();
  if (scope === undefined) return undefined;
  return { entry: scope.build(scope, scope.successStatus), committed: () => void (scope.written = true) };
}

/** Adds to what the current request's entry says. */
export function noteAudit(note: AuditNote): void {
  const scope = storage.getStore();
  if (scope !== undefined) Object.assign(scope.note, note);
}

/** ids.ts tells each new id: the first of the kind a creation makes is its resource's. */
export function noteNewId(prefix: string, id: string): void {
  const scope = storage.getStore();
  if (scope !== undefined && scope.newIdPrefix === prefix && scope.note.resourceId === undefined) scope.note.resourceId = id;
}
