// One process owns an SQLite database file: the store keeps part of its state in memory (vehicle
// statuses, each vehicle's newest time, the recent records' latest states), so a second process
// writing the same file would make both serve stale or wrong answers. SQLite's own locks only keep
// single transactions apart, so ownership is a lock of its own, taken before the database is opened.
//
// The lock is an SQLite write lock (a POSIX record lock, taken by SQLite) on `<file>.lock`, a tiny
// database beside the store, held by a transaction left open for as long as the store is. The
// kernel drops such a lock when its process ends however it ends, SIGKILL and power loss
// included, so a dead owner never leaves the file locked; a PID in a lock file alone would have to
// be judged stale (and PIDs are reused). The owner's PID is committed in it before the lock is
// taken for good, so the process refused can say which one holds the file.
//
// POSIX locks belong to the process, not to a connection: closing any other descriptor of
// `<file>.lock` in this process would drop the lock, so nothing else opens that file.
import { DatabaseSync } from 'node:sqlite';
import { prepareFiles } from './database.ts';

export interface DatabaseOwnership {
  release(): void;
}

/** Thrown when another process owns the database file. */
export class DatabaseInUseError extends Error {
  readonly file: string;
  readonly ownerPid: number | undefined;
  constructor(file: string, ownerPid: number | undefined) {
    super(
      `${file} is in use by another process${ownerPid === undefined ? '' : ` (pid ${ownerPid})`}: one Fleet process owns an ` +
        'SQLite database. Stop that process first, or run several nodes in cluster mode (PostgreSQL).',
    );
    this.name = 'DatabaseInUseError';
    this.file = file;
    this.ownerPid = ownerPid;
  }
}

function isBusy(error: unknown): boolean {
  return error instanceof Error && /database is locked|SQLITE_BUSY/i.test(`${error.message} ${(error as { errstr?: string }).errstr ?? ''}`);
}

/** Makes this process the owner of `file`, or throws DatabaseInUseError. */
export function ownDatabaseFile(file: string): DatabaseOwnership {
  const lockFile = `${file}.lock`;
  // Made as private as the database itself (its directory 0700 when made here, the file 0600).
  prepareFiles(lockFile);
  // timeout 0: a lock held by a running owner is not waited for; it would be held for good.
  const lock = new DatabaseSync(lockFile, { timeout: 0 });

  function refuse(): never {
    let pid: number | undefined;
    try {
      // The owner holds a write lock, which lets readers in; it may be committing its PID just now.
      lock.exec('PRAGMA busy_timeout = 1000');
      const row = lock.prepare('SELECT pid FROM owner').get();
      pid = row === undefined ? undefined : Number(row.pid);
    } catch {
      // No PID to name (a lock file from before it had one, or unreadable): the refusal stands.
    }
    lock.close();
    throw new DatabaseInUseError(file, pid);
  }

  try {
    lock.exec('BEGIN IMMEDIATE');
  } catch (error) {
    if (isBusy(error)) refuse();
    lock.close();
    throw error;
  }
  try {
    lock.exec('CREATE TABLE IF NOT EXISTS owner (pid INTEGER NOT NULL, since INTEGER NOT NULL) STRICT');
    lock.exec('DELETE FROM owner');
    lock.prepare('INSERT INTO owner (pid, since) VALUES (?, ?)').run(process.pid, Date.now());
    // Committing needs readers out of the way; a refused process reads only for a moment.
    lock.exec('PRAGMA busy_timeout = 1000');
    lock.exec('COMMIT');
    lock.exec('PRAGMA busy_timeout = 0');
    // Taken again at once. A process that got in between owns the file now; this one is refused.
    lock.exec('BEGIN IMMEDIATE');
  } catch (error) {
    if (lock.isTransaction) lock.exec('ROLLBACK');
    if (isBusy(error)) refuse();
    lock.close();
    throw error;
  }
  return {
    release() {
      if (!lock.isOpen) return;
      // The file stays: deleting it would let a process that opened it just before hold a lock on
      // a file nobody else sees, beside a new one.
      lock.exec('ROLLBACK');
      lock.close();
    },
  };
}
