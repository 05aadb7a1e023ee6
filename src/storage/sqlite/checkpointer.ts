// Checkpoints off the event loop. SQLite copies the WAL back into the database file (a
// checkpoint) inside the COMMIT that takes the WAL past `wal_autocheckpoint` pages, on the calling
// thread: about 13 ms per 1,000 pages on this project's test machine, so a 10,000-page checkpoint
// held every request for over a tenth of a second, once a second or so under batched ingest.
//
// The store's connection never checkpoints (`wal_autocheckpoint = 0`). When a commit leaves the
// WAL past the threshold, a worker thread with a connection of its own copies it back with
// PASSIVE checkpoints, which hold up neither the writer nor readers, until the writer has started
// the WAL over (at its first commit that begins while every frame is copied; should unbroken
// writes never leave such a moment, a RESTART forces it once the WAL is four times the threshold);
// `journal_size_limit` then shrinks the file, which is how a later commit sees the WAL small again
// (checkpoint-worker.ts). A reader in a long read (an export) keeps the frames after its snapshot
// from being copied: the WAL grows until it ends, as before. A checkpoint that fails (a full disk)
// is tried again after a later commit.
//
// If the worker cannot start or dies, checkpoints go back to the store's thread (as SQLite's own
// would run), so the WAL never grows without bound.
import { once } from 'node:events';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';

/** WAL pages that start a checkpoint, as SQLite's `wal_autocheckpoint` did (about 40 MB). */
export const CHECKPOINT_PAGES = 10_000;
/** The WAL file left after it starts over: a tenth of the threshold. */
const KEEP_FRACTION = 0.1;
/** WAL pages, as a multiple of the threshold, past which a checkpoint that cannot catch up is forced (RESTART). */
const FORCE_MULTIPLE = 4;
/** A WAL frame: its header and one page. */
const FRAME_HEADER = 24;

export interface Checkpointer {
  /** A commit left the WAL file this large (bytes). */
  committed(walBytes: number): void;
  /** Stops the worker (its connection closed) before the store's connection closes. */
  close(): Promise<void>;
  /** Whether checkpoints went back to the store's thread (the worker failed). */
  readonly failed: boolean;
}

/**
 * Sets `db` (the store's connection to `file`) to leave checkpoints to the worker, and returns
 * what its commits report to. `workerFile` is the database the worker opens (`file`; a test names
 * one it cannot open).
 */
export function createCheckpointer(db: DatabaseSync, file: string, options: { pages?: number; workerFile?: string } = {}): Checkpointer {
  const pages = options.pages ?? CHECKPOINT_PAGES;
  const pageSize = Number((db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size);
  const threshold = pages * (pageSize + FRAME_HEADER);
  db.exec(`PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = ${Math.floor(threshold * KEEP_FRACTION)}`);
  let worker: Worker | undefined;
  let busy = false;
  let failed = false;
  let closed = false;
  /** The checkpoint this thread runs once the worker has failed. */
  let inline: StatementSync | undefined;

  function start(): Worker {
    const started = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), { workerData: { file: options.workerFile ?? file, restartedBelow: Math.floor(pages * KEEP_FRACTION), forceAbove: FORCE_MULTIPLE * pages } });
    // Never what keeps the process alive: closing the store ends it.
    started.unref();
    started.on('message', () => {
      busy = false;
    });
    started.on('error', () => {
      failed = true;
      busy = false;
      worker = undefined;
    });
    return started;
  }

  return {
    committed(walBytes) {
      if (busy || closed || walBytes < threshold) return;
      if (failed) {
        // As SQLite's automatic checkpoint would: on this thread, between commits.
        (inline ??= db.prepare('PRAGMA wal_checkpoint(PASSIVE)')).get();
        return;
      }
      worker ??= start();
      busy = true;
      worker.postMessage('checkpoint');
    },
    get failed() {
      return failed;
    },
    async close() {
      closed = true;
      const running = worker;
      worker = undefined;
      if (running === undefined) return;
      const exited = once(running, 'exit');
      // Until it has exited, the process waits for it: with nothing else left on the event loop
      // (the last step of a shutdown), an unref'd worker would let the process end before the
      // store's own connection is closed.
      running.ref();
      running.postMessage('close');
      await exited;
    },
  };
}
