// `npm run backup -- <file>`: a consistent copy of the embedded store (FLEET_DATABASE_URL, default
// sqlite:./data/fleet.db) taken while the service runs, with SQLite's online backup API. The copy
// is made in one step, under one read transaction of a connection of this process: it is the
// store as of one commit (everything acknowledged before the command started, and nothing half
// written), and the service goes on reading and writing meanwhile (the WAL lets a reader and the
// writer work at once). The service's ownership lock is not taken: this process never writes the
// store. The copy is written beside the target and renamed into place once complete and checked.
// Restoring is copying it back while the service is stopped: docs/OPERATIONS.md "Backups".
import { closeSync, existsSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, backup } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { type Fail, configOrFail, failureOf } from './organization-store.ts';

const USAGE = `Usage:
  npm run backup -- <file>            a consistent copy of the embedded store, taken while the service runs
      [--force]                       replace <file> if it exists
  npm run backup -- --help            this text

The store is the one the service uses, FLEET_DATABASE_URL (default sqlite:./data/fleet.db). To
restore, stop the service, remove the store's file and its -wal and -shm files, put the copy in
its place, and start the service (docs/OPERATIONS.md "Backups"). In cluster mode, back up
PostgreSQL with its own tools (pg_dump, or pg_basebackup for a point-in-time recovery).
`;

/** Pages copied per step: all of them at once, so that the copy is one snapshot (a step of part of them restarts when the service writes). */
const ONE_STEP = 2_147_483_647;

const fail: Fail = failureOf('backup');

let parsed;
try {
  parsed = parseArgs({ options: { force: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true });
} catch (error) {
  fail(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`, 2);
}
const { values, positionals } = parsed;

if (values.help === true) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (positionals.length !== 1) fail(`name one file to write the backup to.\n\n${USAGE}`, 2);

const { database } = configOrFail(fail);
if (database.kind !== 'sqlite') fail('the store is PostgreSQL (cluster mode): back it up with pg_dump or pg_basebackup.', 2);
if (database.path === ':memory:') fail('the store is in memory (sqlite::memory:): there is nothing on disk to back up.', 2);
if (!existsSync(database.path)) fail(`${database.path} does not exist: the service has not made its store yet (FLEET_DATABASE_URL names it).`);

const target = path.resolve(positionals[0]!);
if (target === database.path) fail('the backup cannot be the store itself.', 2);
if (existsSync(target) && values.force !== true) fail(`${target} exists; pass --force to replace it.`, 2);
const partial = `${target}.partial-${process.pid}`;

const started = performance.now();
let source: DatabaseSync | undefined;
try {
  // As private as the store (it holds credentials' hashes): made empty with that mode, then filled.
  closeSync(openSync(partial, 'wx', 0o600));
  // Read-write only as SQLite needs it to share the WAL index with the service; nothing is written.
  source = new DatabaseSync(database.path, { timeout: 10_000 });
  const pages = await backup(source, partial, { rate: ONE_STEP });
  source.close();
  source = undefined;
  const copy = new DatabaseSync(partial);
  try {
    // One self-contained file: the service turns WAL on again when it opens a restored copy.
    copy.exec('PRAGMA journal_mode = DELETE');
    const check = (copy.prepare('PRAGMA quick_check').all() as { quick_check: string }[]).map((r) => r.quick_check);
    if (check.length !== 1 || check[0] !== 'ok') throw new Error(`the copy failed SQLite's check: ${check.slice(0, 5).join('; ')}`);
  } finally {
    copy.close();
  }
  renameSync(partial, target);
  const bytes = statSync(target).size;
  process.stdout.write(`fleet backup: ${database.path} → ${target}: ${pages} pages, ${(bytes / 1_048_576).toFixed(1)} MiB, checked, in ${((performance.now() - started) / 1000).toFixed(1)} s.\n`);
} catch (error) {
  source?.close();
  for (const leftover of [partial, `${partial}-wal`, `${partial}-shm`, `${partial}-journal`]) rmSync(leftover, { force: true });
  fail(`the backup failed: ${error instanceof Error ? error.message : String(error)}`);
}
