// Telemetry commits whose WAL sync does not hold up the event loop.
//
// With `synchronous = FULL`, SQLite syncs the WAL inside COMMIT, on the calling thread: with
// group commit that is a fraction of a millisecond per group during which no request is read or
// parsed. A telemetry commit runs with `synchronous = OFF` instead (COMMIT writes the WAL without
// syncing it), and its promise resolves only after an `fdatasync` of the WAL file on libuv's
// thread pool. What is acknowledged is as durable as with FULL: the WAL is written in order, so a
// sync that starts after a COMMIT returned covers it and everything before it. So commits share
// syncs: one in flight, the commits made meanwhile wait for the next, one `fdatasync` for them all
// (commands, status changes and telemetry groups each commit on their own).
//
// OFF rather than NORMAL: under NORMAL, the first commit after the WAL starts over still syncs
// the WAL's new header inside COMMIT, on this thread, about once a second under load, and on a
// busy disk such a sync held every request for hundreds of milliseconds. The header is written
// before that commit's frames and synced with them by the same `fdatasync`, before anything is
// acknowledged; the database file is written only by checkpoints, on the checkpointer's own
// connection (synchronous = FULL), which syncs the WAL before it copies a frame
// (checkpointer.ts). So no frame of a new WAL reaches the database file before that WAL's
// header is on disk, which is what the header's own sync guards against.
//
// Vehicle writes (status changes and their events), commands, drivers, alert changes, audit
// entries written after a response, devices' last-seen times and the webhook worker's writes go
// through it too; every other write of the store (rare ones: registrations, settings, retention)
// keeps FULL.
//
// The one difference: this process's reads (telemetry history) see a commit from COMMIT on, up to
// one sync (well under a millisecond) before it is durable, where FULL shows it after the sync.
// A record read in that window and then lost to a power cut was never acknowledged, so its
// sender sends it again.
//
// A failed sync leaves unknown what reached the disk (Linux may drop the written pages from the
// page cache as if they were saved), so nothing acknowledged afterwards could be trusted: the
// failing commit and every later one fail with 503, and the store's readiness check fails until
// the process is restarted and SQLite recovers from what is on disk.
import { closeSync, fdatasync, fstatSync, openSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { AppError } from '../../errors.ts';
import type { Checkpointer } from './checkpointer.ts';
import { transaction } from './database.ts';

export type SyncFile = (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => void;

export interface WalSync {
  /** `fn` as one write transaction; resolves once the WAL holding it is synced to disk. */
  transaction<T>(fn: () => T): Promise<T>;
  /** `fn` as one write transaction that syncs nothing: durable with the next sync (bookkeeping that may be redone). */
  unsynced<T>(fn: () => T): T;
  /** Throws once a sync has failed (the readiness check). */
  check(): void;
  close(): void;
}

/**
 * `syncFile` is `fs.fdatasync`; a test passes one that fails. `checkpoints` hears the WAL's size
 * after each commit (checkpointer.ts).
 */
export function createWalSync(db: DatabaseSync, syncFile: SyncFile = fdatasync, checkpoints?: Checkpointer): WalSync {
  const file = db.location();
  let fd: number | undefined;
  let failure: AppError | undefined;

  function check(): void {
    if (failure !== undefined) throw failure;
  }

  function sync(): Promise<void> {
    // The WAL exists from the first commit on and stays while the database is open.
    fd ??= openSync(`${file}-wal`, 'r');
    checkpoints?.committed(fstatSync(fd).size);
    return new Promise((resolve, reject) => {
      syncFile(fd!, (error) => {
        // Once one sync has failed, a later one that succeeds vouches for nothing before it.
        if (error === null && failure === undefined) return resolve();
        failure ??= new AppError('service-unavailable', 'The store could not write telemetry to disk; the service needs a restart.', { cause: error });
        reject(failure);
      });
    });
  }

  function unsynced<T>(fn: () => T): T {
    check();
    // Executed each time, not prepared once: SQLite applies this pragma when compiling it.
    db.exec('PRAGMA synchronous = OFF');
    try {
      return transaction(db, fn);
    } finally {
      db.exec('PRAGMA synchronous = FULL');
    }
  }

  /**
   * A sync that starts after this call: the one in flight may have started before the caller's
   * COMMIT, so the caller waits for the next one, which every commit meanwhile shares (one
   * `fdatasync` for all of them, however many transactions a turn of the event loop commits).
   */
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  function begin(): Promise<void> {
    const started = sync();
    running = started;
    const done = () => {
      if (running === started) running = undefined;
    };
    started.then(done, done);
    return started;
  }
  function syncAfterNow(): Promise<void> {
    if (running === undefined) return begin();
    next ??= running.then(() => undefined, () => undefined).then(() => {
      next = undefined;
      return begin();
    });
    return next;
  }

  return {
    async transaction(fn) {
      // An in-memory database has no file to sync: nothing there outlives the process anyway.
      if (file === null || file === '') {
        check();
        return transaction(db, fn);
      }
      const result = unsynced(fn);
      await syncAfterNow();
      return result;
    },
    unsynced,
    check,
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
