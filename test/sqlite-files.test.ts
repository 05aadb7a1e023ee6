// The embedded store's files on disk (docs/SECURITY.md "What is stored, and how"): the data
// directory Fleet creates is private to its user (0700), and the database with its WAL and
// shared-memory files is readable by that user only (0600), whatever the process umask lets
// through. They hold key hashes, the OAuth signing keys and every organization's telemetry.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';

const modeOf = (file: string) => statSync(file).mode & 0o777;
const octal = (mode: number) => `0${mode.toString(8)}`;

/** Runs `fn` under the usual umask 022, which lets files be created world-readable. */
async function withUmask<T>(fn: () => Promise<T>): Promise<T> {
  const saved = process.umask(0o022);
  try {
    return await fn();
  } finally {
    process.umask(saved);
  }
}

test('a new data directory is 0700 and the database, its -wal and -shm files 0600', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'fleet-files-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, 'data', 'nested');
  const file = path.join(dir, 'fleet.db');
  await withUmask(async () => {
    const stores = createSqliteStores(file);
    try {
      // A write, so the WAL and its index exist.
      await createAuthService({ store: stores.auth, clock: systemClock }).bootstrap(undefined);
      for (const name of [file, `${file}-wal`, `${file}-shm`]) {
        assert.ok(existsSync(name), `${name} exists`);
        assert.equal(octal(modeOf(name)), '0600', `${path.basename(name)} is readable by its owner only`);
      }
      assert.equal(octal(modeOf(dir)), '0700', 'the data directory is private');
      assert.equal(octal(modeOf(path.join(root, 'data'))), '0700', 'so is every directory made on the way');
    } finally {
      await stores.close();
    }
  });
});

test('an existing database file left readable by others is made 0600 when opened', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'fleet-files-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const file = path.join(root, 'fleet.db');
  await withUmask(async () => {
    await createSqliteStores(file).close();
    chmodSync(file, 0o644);
    writeFileSync(`${file}-wal`, '');
    chmodSync(`${file}-wal`, 0o644);
    const stores = createSqliteStores(file);
    try {
      assert.equal(octal(modeOf(file)), '0600');
      assert.equal(octal(modeOf(`${file}-wal`)), '0600');
    } finally {
      await stores.close();
    }
    // A directory the operator made is theirs to set: it is left as it is.
    assert.equal(octal(modeOf(root)), '0700', 'mkdtemp made it 0700');
  });
});
