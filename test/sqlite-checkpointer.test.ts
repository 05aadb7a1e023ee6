// Checkpoints on a thread of their own: the store's commits never copy the WAL back themselves,
// yet the WAL starts over and shrinks once it passes the threshold; if the thread fails, the
// store's own thread checkpoints instead. Against real files and a real worker thread.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DatabaseSync } from 'node:sqlite';
import { createCheckpointer } from '../src/storage/sqlite/checkpointer.ts';
import { openSqlite } from '../src/storage/sqlite/database.ts';
import { createWalSync } from '../src/storage/sqlite/wal-sync.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function freshFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-checkpoint-'));
  dirs.push(dir);
  return path.join(dir, 'fleet.db');
}

const PAGES = 200;
const walBytes = (file: string) => statSync(`${file}-wal`).size;

/** A store connection with a checkpointer of PAGES, and a way to commit rows through its WAL sync. */
function open(file: string, workerFile?: string) {
  const db = openSqlite(file);
  const checkpoints = createCheckpointer(db, file, { pages: PAGES, workerFile });
  const wal = createWalSync(db, undefined, checkpoints);
  db.exec('CREATE TABLE IF NOT EXISTS filler (k INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO filler (v) VALUES (?)');
  const text = 'x'.repeat(1500);
  return {
    db, checkpoints,
    commit: (rows: number) => wal.transaction(() => {
      for (let i = 0; i < rows; i++) insert.run(text);
    }),
    async close() {
      await checkpoints.close();
      wal.close();
      db.close();
    },
  };
}

/** Commits small transactions until the WAL file is back under `bytes`; how many it took. */
async function commitUntilSmall(store: ReturnType<typeof open>, file: string, bytes: number): Promise<number> {
  for (let n = 1; n <= 500; n++) {
    await store.commit(1);
    if (walBytes(file) < bytes) return n;
    await sleep(10);
  }
  assert.fail(`the WAL stayed at ${walBytes(file)} bytes`);
}

test('past the threshold, the worker copies the WAL back and it starts over small; nothing is lost', async () => {
  const file = freshFile();
  const store = open(file);
  assert.equal(Number((store.db.prepare('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint), 0,
    'the store\'s commits never checkpoint');
  const threshold = PAGES * 4120;
  for (let i = 0; i < 3; i++) {
    while (walBytes(file) < threshold) await store.commit(20);
    await commitUntilSmall(store, file, threshold * 0.2);
  }
  const rows = Number((store.db.prepare('SELECT count(*) AS n FROM filler').get() as { n: number }).n);
  assert.equal(store.checkpoints.failed, false);
  // Closing waits for the worker's thread to end (a worker left running would hang here).
  await store.close();
  // Another connection after close: every row is in the database.
  const reopened = new DatabaseSync(file);
  assert.equal(Number((reopened.prepare('SELECT count(*) AS n FROM filler').get() as { n: number }).n), rows);
  reopened.close();
});

test('a worker that fails: the store\'s own thread checkpoints, and the WAL still starts over', async () => {
  const file = freshFile();
  // The worker is told to open a file that cannot be opened, so it fails at once.
  const store = open(file, path.join(path.dirname(file), 'missing', 'nowhere.db'));
  const threshold = PAGES * 4120;
  while (walBytes(file) < threshold) await store.commit(20);
  // The worker's failure arrives as an event; later commits past the threshold checkpoint here.
  await commitUntilSmall(store, file, threshold * 0.2);
  assert.equal(store.checkpoints.failed, true);
  await store.close();
});
