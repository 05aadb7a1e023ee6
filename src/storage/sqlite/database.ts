// Opening the embedded store: pragmas set explicitly, numbered migrations applied at start.
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { diskSpaceOf } from './disk-space.ts';
import { assertKnownSchema, migrationFiles } from '../migrations.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

/**
 * The database holds key hashes, the OAuth signing keys (private keys, as JWK) and every
 * organization's data: readable by the service's user only, whatever the umask lets through.
 */
export function prepareFiles(file: string): void {
  // Every directory made on the way is private; one that exists is the operator's to set.
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // Made here, 0600, before SQLite opens it: SQLite creates the -wal and -shm files with the
  // database file's permissions.
  closeSync(openSync(file, 'a', 0o600));
  // Files of an earlier version, created with the umask's permissions, are narrowed too.
  for (const name of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      chmodSync(name, 0o600);
    } catch (error) {
      // Absent, or owned by another user (then the operator chose its permissions).
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'EPERM') throw error;
    }
  }
}

export function openSqlite(file: string): DatabaseSync {
  if (file !== ':memory:') prepareFiles(file);
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: true, timeout: 5000 });
  // WAL lets readers run beside the writer. synchronous=FULL makes every acknowledged commit
  // survive power loss, not only a process crash; batching writes (group commit) pays for it.
  // Telemetry group commits get the same durability from a WAL sync of their own (wal-sync.ts).
  // A checkpoint every 10,000 pages (about 40 MB of WAL) instead of SQLite's 1,000: the pages
  // commits keep rewriting (recent telemetry, latest states, each vehicle's last page) are copied
  // into the database once per checkpoint, so fewer checkpoints copy fewer pages per record. The
  // store runs them on a thread of its own instead of in COMMIT (checkpointer.ts).
  db.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = FULL;
    PRAGMA foreign_keys = ON;
    PRAGMA busy_timeout = 5000;
    PRAGMA temp_store = MEMORY;
    PRAGMA cache_size = -65536;
    PRAGMA wal_autocheckpoint = 10000;
  `);
  migrate(db);
  return db;
}

/**
 * A second connection to `file`, opened by `openSqlite` before, for the long reads of history
 * reports and exports: WAL lets it read beside the writer, it refuses writes, and its page cache is
 * small. A range is read once, in key order, so a large cache gains it nothing, while the pages of
 * a 1,000,000-record export filled the writer's 64 MB cache, which a fresh process then grew by
 * as much (docs/BENCHMARKS.md, "History").
 */
export function openSqliteReader(file: string): DatabaseSync {
  const db = new DatabaseSync(file, { timeout: 5000 });
  db.exec(`
    PRAGMA query_only = ON;
    PRAGMA busy_timeout = 5000;
    PRAGMA temp_store = MEMORY;
    PRAGMA cache_size = -2048;
  `);
  return db;
}

export function migrate(db: DatabaseSync): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
  const applied = new Set(
    db.prepare('SELECT version FROM schema_migrations').all().map((row) => Number(row.version)),
  );
  const files = migrationFiles(MIGRATIONS_DIR);
  assertKnownSchema(applied, files);
  for (const { version, name } of files) {
    if (applied.has(version)) continue;
    const sql = readFileSync(new URL(name, MIGRATIONS_DIR), 'utf8');
    transaction(db, () => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(version, name, Date.now());
    });
  }
}

/**
 * Runs `fn` in one write transaction; rolls back if it throws. A full disk is thrown as
 * `service-unavailable` (see disk-space.ts).
 */
export function transaction<T>(db: DatabaseSync, fn: () => T): T {
  try {
    db.exec('BEGIN IMMEDIATE');
    const hook = commitHooks.get(db);
    const begun = hook?.pending() === true ? hook.begin() : undefined;
    const result = fn();
    const committed = begun?.();
    db.exec('COMMIT');
    committed?.();
    return result;
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw diskSpaceOf(db).failed(error);
  }
}

/**
 * What runs in each transaction of `db` (the audit entry of the request under way,
 * storage/sqlite/audit.ts): `begin` runs after BEGIN and returns what runs just before COMMIT,
 * which returns what to call once COMMIT succeeded. `pending` says whether a single write
 * statement must become a transaction to carry it.
 */
export interface CommitHook {
  pending(): boolean;
  begin(): () => (() => void) | undefined;
}

const commitHooks = new WeakMap<DatabaseSync, CommitHook>();

export function beforeCommit(db: DatabaseSync, hook: CommitHook): void {
  commitHooks.set(db, hook);
}

/** One write statement outside a transaction (`fn` runs it), with a full disk thrown as in `transaction`. */
export function write<T>(db: DatabaseSync, fn: () => T): T {
  if (commitHooks.get(db)?.pending() === true) return transaction(db, fn);
  try {
    return fn();
  } catch (error) {
    throw diskSpaceOf(db).failed(error);
  }
}
