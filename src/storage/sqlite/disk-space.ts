// A full disk under the embedded store. SQLite answers a write that needs space it cannot get with
// SQLITE_FULL and rolls the transaction back: nothing of it is stored, and nothing was
// acknowledged (202 comes after the commit), so the right answer is 503 with Retry-After, for the
// client to send again. Reads need no space and go on being served.
//
// Readiness fails from the first full write on, so a load balancer stops sending writes here. It
// comes back by itself once the filesystem has room for the WAL to grow to its checkpoint size
// again (statfs; a write would not tell: the WAL reuses its file after a checkpoint, so a small
// write can succeed on a full disk while a telemetry group needs new pages). Writes are not held
// back meanwhile: each is tried, and the first that fits is stored.
import { statfsSync } from 'node:fs';
import path from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { AppError } from '../../errors.ts';
import { CHECKPOINT_PAGES } from './checkpointer.ts';

const SQLITE_FULL = 13;
/** Seconds a client is asked to wait: freeing a disk takes someone, not a moment. */
export const DISK_FULL_RETRY_AFTER_S = 30;

export interface DiskSpace {
  /** `error` from a write, as the store throws it: a full disk becomes `service-unavailable`. */
  failed(error: unknown): unknown;
  /** Readiness: throws while the disk has been found full and has not got room again. */
  check(): void;
}

export function isDiskFull(error: unknown): boolean {
  // node:sqlite's errors carry SQLite's extended result code; its low byte is the primary code.
  const code = error instanceof Error ? (error as Error & { errcode?: unknown }).errcode : undefined;
  return typeof code === 'number' && (code & 0xff) === SQLITE_FULL;
}

const registry = new WeakMap<DatabaseSync, DiskSpace>();

/** The disk-space state of `db`, made on first use; an in-memory database is never full. */
export function diskSpaceOf(db: DatabaseSync): DiskSpace {
  let space = registry.get(db);
  if (space === undefined) registry.set(db, (space = createDiskSpace(db)));
  return space;
}

function createDiskSpace(db: DatabaseSync): DiskSpace {
  const file = db.location();
  let fullSince: number | undefined;
  let headroom: number | undefined;

  /**
   * Bytes the WAL may grow by before its next checkpoint: what a store that writes needs free.
   * The store's connection leaves checkpoints to its checkpointer (`wal_autocheckpoint` 0).
   */
  function neededBytes(): number {
    headroom ??= Number(db.prepare('PRAGMA page_size').get()!.page_size) *
      (Number(db.prepare('PRAGMA wal_autocheckpoint').get()!.wal_autocheckpoint) || CHECKPOINT_PAGES);
    return headroom;
  }

  return {
    failed(error) {
      if (!isDiskFull(error)) return error;
      fullSince ??= Date.now();
      return new AppError('service-unavailable', 'The store\'s disk is full; nothing of this request was stored. Try again later.', {
        headers: { 'retry-after': String(DISK_FULL_RETRY_AFTER_S) },
        cause: error,
      });
    },
    check() {
      if (fullSince === undefined || file === null || file === '') return;
      const stats = statfsSync(path.dirname(file));
      const free = Number(stats.bavail) * Number(stats.bsize);
      if (free >= neededBytes()) {
        fullSince = undefined;
        return;
      }
      throw new AppError('service-unavailable', `The disk holding ${file} is full (${free} bytes free, ${neededBytes()} needed) since ` +
        `${new Date(fullSince).toISOString()}.`, { headers: { 'retry-after': String(DISK_FULL_RETRY_AFTER_S) } });
    },
  };
}
