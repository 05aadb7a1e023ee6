// Migrations are recorded by number: two files of one number would leave one unapplied wherever
// the other had run, so such a pair is refused, and each store's own migrations are numbered apart.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { migrationFiles } from '../src/storage/migrations.ts';

test('each store\'s migrations have numbers of their own, in order', () => {
  for (const store of ['sqlite', 'postgres']) {
    const migrations = migrationFiles(new URL(`../src/storage/${store}/migrations/`, import.meta.url));
    assert.ok(migrations.length > 0);
    assert.deepEqual(migrations.map((m) => m.version), migrations.map((_, i) => i + 1), `${store}: 1, 2, 3, … with no gap or repeat`);
  }
});

test('two migrations of one number are refused, naming both', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-migrations-'));
  try {
    for (const name of ['0001_initial.sql', '0002_attempts.sql', '0002_vertices.sql', 'README.md']) writeFileSync(path.join(dir, name), '');
    assert.throws(() => migrationFiles(pathToFileURL(`${dir}/`)), /0002_attempts\.sql and 0002_vertices\.sql have the same number/);
    rmSync(path.join(dir, '0002_vertices.sql'));
    assert.deepEqual(migrationFiles(pathToFileURL(`${dir}/`)), [{ version: 1, name: '0001_initial.sql' }, { version: 2, name: '0002_attempts.sql' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
