// The embedded store's telemetry commits: SQLite writes them without syncing, and each is
// acknowledged only once an fdatasync of the WAL file begun after its COMMIT has returned (commits
// made during a sync share the next one). A failed sync stops telemetry writes and fails readiness
// until a restart; every other write keeps synchronous = FULL.
import assert from 'node:assert/strict';
import { fdatasync, fstatSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, test } from 'node:test';
import { isAppError } from '../src/errors.ts';
import { openSqlite } from '../src/storage/sqlite/database.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { type SyncFile, createWalSync } from '../src/storage/sqlite/wal-sync.ts';
import type { Stores } from '../src/storage/stores.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import { T0, addOrganization, addVehicle } from './contract/fixtures.ts';

const dirs: string[] = [];
const open: Stores[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function setUp(syncFile: SyncFile, file?: string) {
  if (file === undefined) {
    const dir = mkdtempSync(path.join(tmpdir(), 'fleet-wal-'));
    dirs.push(dir);
    file = path.join(dir, 'fleet.db');
  }
  // The set-up's own writes (a vehicle's registration is synced the same way) sync for real; the
  // test's `syncFile` sees only the syncs after it.
  let armed = false;
  const stores = createSqliteStores(file, { syncFile: (fd, done) => (armed ? syncFile(fd, done) : fdatasync(fd, done)) });
  open.push(stores);
  const org = await addOrganization(stores);
  await addVehicle(stores, org, 'van-1');
  armed = true;
  const commit = (timestamp: number) =>
    stores.telemetry.commit([{ organizationId: org, at: T0, records: [{ vehicleId: 'van-1', timestamp, data: { speed: 1 } }] }], mergeLatest);
  return { file, stores, org, commit };
}

/** Whether a promise has settled after the pending callbacks and I/O of this turn have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(() => (done = true), () => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

test('a telemetry commit resolves only after the WAL file itself is synced', async () => {
  const held: Array<{ fd: number; done: (error: NodeJS.ErrnoException | null) => void }> = [];
  const { file, stores, org, commit } = await setUp((fd, done) => held.push({ fd, done }));
  const pending = commit(T0);
  assert.equal(await settled(pending), false, 'not acknowledged before the sync');
  assert.equal(held.length, 1);
  assert.equal(fstatSync(held[0]!.fd).ino, statSync(`${file}-wal`).ino, 'the synced file is the WAL');
  // The real sync, then the acknowledgement.
  await new Promise<void>((resolve, reject) => fdatasync(held[0]!.fd, (error) => (error ? reject(error) : resolve())));
  held[0]!.done(null);
  const [outcome] = await pending;
  assert.equal(outcome?.ok && outcome.accepted, 1);
  const stored = await stores.telemetry.history(org, 'van-1', { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 10 });
  assert.deepEqual(stored.map((r) => r.timestamp), [T0]);
});

test('commits made while a sync is in flight wait for the next one, which they share', async () => {
  const held: Array<(error: NodeJS.ErrnoException | null) => void> = [];
  const { stores, org, commit } = await setUp((fd, done) => held.push((error) => fdatasync(fd, () => done(error))));
  const first = commit(T0);
  assert.equal(await settled(first), false);
  assert.equal(held.length, 1);
  // Committed after that sync began: it cannot vouch for them.
  const second = commit(T0 + 1);
  const third = commit(T0 + 2);
  assert.equal(await settled(second), false);
  assert.equal(held.length, 1, 'no second sync while one is in flight');
  held[0]!(null);
  await first;
  assert.equal(await settled(second), false, 'not acknowledged by the sync that began before its commit');
  assert.equal(held.length, 2, 'one sync for both');
  held[1]!(null);
  await Promise.all([second, third]);
  assert.equal(held.length, 2);
  const stored = await stores.telemetry.history(org, 'van-1', { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 10 });
  assert.deepEqual(stored.map((r) => r.timestamp), [T0, T0 + 1, T0 + 2]);
});

test('a sync that fails while commits wait for the next: they fail too, though that next sync succeeds', async () => {
  const held: Array<(error: NodeJS.ErrnoException | null) => void> = [];
  const { commit } = await setUp((fd, done) => held.push((error) => fdatasync(fd, () => done(error))));
  const first = commit(T0);
  await settled(first);
  const second = commit(T0 + 1);
  await settled(second);
  const unavailable = (error: unknown) => isAppError(error) && error.code === 'service-unavailable';
  held[0]!(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await assert.rejects(first, unavailable);
  await settled(second);
  held[1]?.(null);
  await assert.rejects(second, unavailable);
});

test('only the transactions run through it skip SQLite\'s own sync: the connection is back at FULL after each, also after one that failed', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-wal-'));
  dirs.push(dir);
  const db = openSqlite(path.join(dir, 'fleet.db'));
  const wal = createWalSync(db);
  const synchronous = () => Number(db.prepare('PRAGMA synchronous').get()!.synchronous);
  try {
    assert.equal(synchronous(), 2, 'FULL');
    assert.equal(await wal.transaction(synchronous), 0, 'OFF inside');
    assert.equal(synchronous(), 2);
    await assert.rejects(wal.transaction(() => {
      throw new Error('refused');
    }), /refused/);
    assert.equal(db.isTransaction, false);
    assert.equal(synchronous(), 2);
  } finally {
    wal.close();
    db.close();
  }
});

test('a failed sync refuses that commit and every later one with 503, and readiness fails', async () => {
  let fail = false;
  const { stores, commit } = await setUp((fd, done) => (fail ? done(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })) : fdatasync(fd, done)));
  await commit(T0);
  await stores.ping();
  fail = true;
  const unavailable = (error: unknown) => isAppError(error) && error.code === 'service-unavailable' && error.status === 503;
  await assert.rejects(commit(T0 + 1), unavailable);
  fail = false; // a sync that would succeed again changes nothing: what reached the disk is unknown
  await assert.rejects(commit(T0 + 2), unavailable);
  await assert.rejects(stores.ping(), unavailable);
});

test('an in-memory store commits without syncing anything', async () => {
  let syncs = 0;
  const { commit } = await setUp((fd, done) => {
    syncs++;
    fdatasync(fd, done);
  }, ':memory:');
  const [outcome] = await commit(T0);
  assert.equal(outcome?.ok && outcome.accepted, 1);
  assert.equal(syncs, 0);
});
