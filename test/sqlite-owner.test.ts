// One process owns an SQLite database file. In one process: a second store on an owned file is
// refused, naming the owner, and the file is free again once the owner closes. Between real
// processes (a second `fleet` on the same file, and one after a SIGKILL): test/process.test.ts.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { DatabaseInUseError } from '../src/storage/sqlite/owner.ts';

test('a second store on an owned file is refused, naming the owner; once the owner closes it opens', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-owner-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'data', 'fleet.db');
  const owner = createSqliteStores(file);
  assert.ok(existsSync(`${file}.lock`));
  assert.throws(() => createSqliteStores(file), (error: unknown) => {
    assert.ok(error instanceof DatabaseInUseError, String(error));
    assert.equal(error.ownerPid, process.pid);
    assert.match(error.message, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is in use by another process \\(pid ${process.pid}\\)`));
    return true;
  });
  // The refusal changed nothing for the owner.
  await owner.ping();
  assert.equal(await owner.auth.countOrganizations(), 0);
  await owner.close();

  const next = createSqliteStores(file);
  await next.ping();
  await next.close();
});

test('an in-memory store owns no file', async () => {
  const a = createSqliteStores(':memory:');
  const b = createSqliteStores(':memory:');
  await Promise.all([a.close(), b.close()]);
});
