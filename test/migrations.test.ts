// Migrations are recorded by number: two files of one number would leave one unapplied wherever
// the other had run, so such a pair is refused, and each store's own migrations are numbered apart.
// A store with a migration this build does not know was written by a newer Fleet: refused at start.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { generateApiKey } from '../src/auth/keys.ts';
import { SchemaTooNewError, migrationFiles } from '../src/storage/migrations.ts';
import { adminQuery, freshSchema, openAnotherNode, skipUnlessPostgres } from './helpers/postgres.ts';
import { spawnFleet, startFleet, tempDir, withTimeout } from './helpers/process.ts';

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

// Upgrades (docs/OPERATIONS.md "Upgrades"): a store whose schema a newer Fleet wrote is refused at
// start, with what to do, and left as it was.
test('a process refuses, exit 2, a store whose schema a newer Fleet wrote, and changes nothing', { timeout: 120_000 }, async (t) => {
  const cwd = tempDir(t, 'fleet-newer-schema-');
  const first = await startFleet(t, { cwd, env: { FLEET_ADMIN_KEY: generateApiKey() } });
  assert.deepEqual(await first.stop(), { code: 0, signal: null }, first.stderr());
  const known = migrationFiles(new URL('../src/storage/sqlite/migrations/', import.meta.url)).at(-1)!.version;
  const file = path.join(cwd, 'data', 'fleet.db');
  const db = new DatabaseSync(file);
  db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(known + 1, `${known + 1}_from_the_future.sql`, Date.now());
  const tables = db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get()!.n;
  db.close();

  const refused = spawnFleet(t, { cwd, env: { FLEET_PORT: '0', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0' } });
  assert.deepEqual(await withTimeout(refused.closed, 60_000, 'the refusal'), { code: 2, signal: null });
  assert.equal(refused.stderr(),
    `fleet: cannot open the store: the store's schema is version ${known + 1}, written by a newer Fleet; this one knows up to version ${known}. ` +
    'Run that version or a later one, or restore a backup taken before the upgrade (docs/OPERATIONS.md "Upgrades").\n');
  const after = new DatabaseSync(file, { readOnly: true });
  assert.equal(after.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get()!.n, tables);
  after.close();
});

test('PostgreSQL: stores opened on a schema a newer Fleet wrote are refused', { skip: await skipUnlessPostgres() }, async () => {
  const schema = await freshSchema('newer');
  try {
    await (await openAnotherNode(schema.name)).close();
    const known = migrationFiles(new URL('../src/storage/postgres/migrations/', import.meta.url)).at(-1)!.version;
    await adminQuery(`INSERT INTO ${schema.name}.schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`, [known + 1, 'future', Date.now()]);
    await assert.rejects(openAnotherNode(schema.name), (error: unknown) =>
      error instanceof SchemaTooNewError && error.storeVersion === known + 1 && error.knownVersion === known);
  } finally {
    await schema.drop();
  }
});
