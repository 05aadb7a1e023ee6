// `npm run backup -- <file>` (src/cli/backup.ts) against a real service process writing its
// embedded store: the copy is taken while records keep coming, and restored as docs/OPERATIONS.md
// "Backups" says (the service stopped, the copy put in the store's place, the service started on
// it). The restored store has every record acknowledged before the backup began, and each
// vehicle's records are a prefix of what it sent (one snapshot: nothing half written, no later
// record without an earlier one). Its failures are clear and leave nothing behind.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { generateApiKey } from '../src/auth/keys.ts';
import { COMPILE_CACHE, type Exit, historyOf, request, startFleet, tempDir, withTimeout } from './helpers/process.ts';

const BACKUP = fileURLToPath(new URL('../src/cli/backup.ts', import.meta.url));
const VEHICLES = ['bk-1', 'bk-2', 'bk-3'];
const T0 = Date.now() - 3_600_000;

/** Runs the backup command in `cwd` (whose ./data/fleet.db is the default store). */
async function runBackup(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Exit & { stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BACKUP, ...args], {
    cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, ...COMPILE_CACHE, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = await withTimeout(new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal }))), 60_000, 'the backup command');
  return { ...exit, stdout, stderr };
}

test('a backup taken while records keep coming restores to a store with every record acknowledged before it, as one snapshot', { timeout: 180_000 }, async (t) => {
  const key = generateApiKey();
  const cwd = tempDir(t, 'fleet-backup-');
  const fleet = await startFleet(t, { cwd, env: { FLEET_ADMIN_KEY: key } });
  for (const vehicleId of VEHICLES) {
    assert.equal((await request(fleet, 'POST', '/v2/fleet/vehicles', { key, body: { vehicleId, type: 'van' } })).status, 201);
  }

  // One writer per vehicle, one record in flight each: what was acknowledged is a prefix of what was sent.
  const acked = new Map(VEHICLES.map((v) => [v, 0]));
  let writing = true;
  const writers = VEHICLES.map(async (vehicleId) => {
    for (let k = 0; writing; k++) {
      const res = await request(fleet, 'POST', `/v2/telemetry/${vehicleId}`, { key, body: { timestamp: new Date(T0 + k * 1000).toISOString(), data: { speed: k % 90, battery: 50 } } });
      assert.equal(res.status, 202, await res.text());
      acked.set(vehicleId, k + 1);
    }
  });
  while ([...acked.values()].some((n) => n < 50)) await new Promise((resolve) => setTimeout(resolve, 20));
  const before = new Map(acked);
  const target = path.join(cwd, 'backups', 'fleet-backup.db');
  mkdirSync(path.dirname(target));
  const done = await runBackup(cwd, [target]);
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, /^fleet backup: .*fleet\.db → .*fleet-backup\.db: \d+ pages, [\d.]+ MiB, checked, in [\d.]+ s\.\n$/);
  assert.ok([...acked.values()].every((n, i) => n >= [...before.values()][i]!));
  // Records go on coming after it; the service never stopped.
  const after = new Map(acked);
  while (VEHICLES.some((v) => acked.get(v)! < after.get(v)! + 20)) await new Promise((resolve) => setTimeout(resolve, 20));
  writing = false;
  await Promise.all(writers);
  assert.deepEqual(await fleet.stop(), { code: 0, signal: null }, fleet.stderr());

  assert.deepEqual(readdirSync(path.dirname(target)), ['fleet-backup.db'], 'one self-contained file, nothing left beside it');
  assert.equal(statSync(target).mode & 0o777, 0o600, 'as private as the store');

  // Restored as documented: the service stopped, the copy in the store's place (its -wal and -shm gone), started again.
  const restored = tempDir(t, 'fleet-restored-');
  mkdirSync(path.join(restored, 'data'));
  copyFileSync(target, path.join(restored, 'data', 'fleet.db'));
  const again = await startFleet(t, { cwd: restored, env: { FLEET_ADMIN_KEY: generateApiKey() } });
  for (const vehicleId of VEHICLES) {
    const stamps = (await historyOf(again, key, vehicleId)).map((r) => Date.parse(r.timestamp as string));
    assert.ok(stamps.length >= before.get(vehicleId)!, `${vehicleId}: ${stamps.length} records restored, ${before.get(vehicleId)} acknowledged before the backup`);
    assert.ok(stamps.length < acked.get(vehicleId)!, `${vehicleId}: the records of after the backup are not in it`);
    assert.deepEqual(stamps, stamps.map((_, k) => T0 + k * 1000), `${vehicleId}: a prefix of what was sent`);
  }
  const list = (await (await request(again, 'GET', '/v2/fleet/vehicles', { key })).json()) as { total: number };
  assert.equal(list.total, VEHICLES.length);
  assert.deepEqual(await again.stop(), { code: 0, signal: null }, again.stderr());
});

test('the backup command refuses what it cannot do, clearly, and leaves nothing behind', { timeout: 60_000 }, async (t) => {
  const cwd = tempDir(t, 'fleet-backup-refusals-');
  const help = await runBackup(cwd, ['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /npm run backup -- <file>/);
  assert.equal((await runBackup(cwd, [])).code, 2, 'no file named');
  assert.equal((await runBackup(cwd, ['a.db', 'b.db'])).code, 2, 'two files named');
  assert.equal((await runBackup(cwd, ['--nope', 'a.db'])).code, 2, 'an unknown option');
  const missing = await runBackup(cwd, ['a.db']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /data\/fleet\.db does not exist/);
  const postgres = await runBackup(cwd, ['a.db'], { FLEET_DATABASE_URL: 'postgres://localhost:5432/test' });
  assert.equal(postgres.code, 2);
  assert.match(postgres.stderr, /pg_dump/);
  const memory = await runBackup(cwd, ['a.db'], { FLEET_DATABASE_URL: 'sqlite::memory:' });
  assert.equal(memory.code, 2);

  // A store that is not a database: the copy fails, and no partial file is left.
  mkdirSync(path.join(cwd, 'data'));
  writeFileSync(path.join(cwd, 'data', 'fleet.db'), 'not a database, just text long enough to be read as a header'.repeat(100));
  const broken = await runBackup(cwd, ['out.db']);
  assert.equal(broken.code, 1);
  assert.match(broken.stderr, /the backup failed/);
  assert.deepEqual(readdirSync(cwd).filter((name) => name.startsWith('out.db')), []);
  writeFileSync(path.join(cwd, 'taken.db'), 'x');
  const taken = await runBackup(cwd, ['taken.db']);
  assert.equal(taken.code, 2);
  assert.match(taken.stderr, /exists; pass --force/);
  assert.equal(existsSync(path.join(cwd, 'taken.db')), true);
});
