// The checkpointer's thread (checkpointer.ts). On each request: PASSIVE checkpoints, which never
// hold up the writer or readers, until the writer has started the WAL over (it does so at its
// first commit that begins while every frame is copied), or for at most PASS_MS. Under unbroken
// writes that moment may not come: only then, once the WAL is past `forceAbove` frames, one
// RESTART forces the start over. It is not the rule because new write transactions wait while it
// runs, and it ends with a sync of the database file, which on a busy disk took long enough
// (hundreds of milliseconds) to stall the event loop this thread is here to spare.
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

const { file, restartedBelow, forceAbove } = workerData as { file: string; restartedBelow: number; forceAbove: number };
const PASS_MS = 2000;
// PASSIVE never waits for a lock; RESTART gives up after this long if a writer or reader is in its way.
const db = new DatabaseSync(file, { timeout: 20 });
// A checkpoint syncs the WAL before it copies a frame into the database file, and the database
// file after: the store's telemetry commits sync nothing themselves (wal-sync.ts).
db.exec('PRAGMA synchronous = FULL');
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
    for (;;) {
      const { log, checkpointed } = passive.get() as { log: number; checkpointed: number };
      // Started over (the WAL holds only what came since): done.
      if (log < restartedBelow) break;
      if (Date.now() - started > PASS_MS) {
        if (log > forceAbove) restart.get();
        break;
      }
      // Every frame copied: the writer's next commit starts the WAL over. Else the writer added
      // frames meanwhile, or a reader still needs those after its snapshot: again shortly.
      Atomics.wait(pause, 0, 0, checkpointed === log ? 2 : 20);
    }
  } catch {
    // A checkpoint that failed (a full disk, say) leaves the WAL as it was: the next request
    // tries again, as SQLite's own checkpoint would on a later commit.
  }
  parentPort!.postMessage('done');
});
