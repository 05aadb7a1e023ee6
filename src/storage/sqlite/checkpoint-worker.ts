// The checkpointer's thread (checkpointer.ts). On each request: PASSIVE checkpoints copy the WAL
// back without blocking anyone, again while the writer added more than SETTLED frames during the
// last one; then a RESTART checkpoint copies the rest and makes the writer's next commit start
// the WAL over. RESTART holds new write transactions back while it runs (by then a few pages and
// a sync), and gives up after BUSY_MS if a writer or a reader is in its way; it is tried again
// shortly, for at most PASS_MS.
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const { file } = workerData as { file: string };
const BUSY_MS = 20;
const SETTLED = 100;
const PASS_MS = 2000;
const db = new DatabaseSync(file, { timeout: BUSY_MS });
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');
const pause = new Int32Array(new SharedArrayBuffer(4));

parentPort!.on('message', (message: 'checkpoint' | 'close') => {
  if (message === 'close') {
    db.close();
    parentPort!.close();
    return;
  }
  try {
    const started = Date.now();
    let { log } = passive.get() as { log: number };
    for (let i = 0; i < 5; i++) {
      const next = (passive.get() as { log: number }).log;
      const added = next - log;
      log = next;
      if (added < SETTLED) break;
    }
    for (;;) {
      const { busy } = restart.get() as { busy: number };
      if (busy === 0 || Date.now() - started > PASS_MS) break;
      Atomics.wait(pause, 0, 0, 20);
    }
  } catch {
    // A checkpoint that failed (a full disk, say) leaves the WAL as it was: the next request
    // tries again, as SQLite's own checkpoint would on a later commit.
  }
  parentPort!.postMessage('done');
});
