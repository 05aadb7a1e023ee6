// PostgreSQL for cluster mode: one pool per process, numbered migrations applied at start under an
// advisory lock, and the one place pg errors are judged. A database that cannot be reached is a
// 503 with Retry-After (AppError 'service-unavailable'), never a 500 and never a 2xx for data that
// was not stored; any other error propagates as it is.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { AppError } from '../../errors.ts';
import { assertKnownSchema, migrationFiles } from '../migrations.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

export interface PostgresOptions {
  /** postgres://user:password@host:5432/database (anything libpq-style URLs take, incl. ?sslmode=). */
  url: string;
  /** Connections this process may open. */
  poolSize: number;
  /** Tables live in this schema (search_path) instead of the user's default one; tests use their own. */
  schema?: string;
  /** How the connections show in pg_stat_activity (default `fleet`). */
  applicationName?: string;
}

export type Row = Record<string, unknown>;

export interface CommitHook {
  pending(): boolean;
  run(client: Queryable): Promise<(() => void) | undefined>;
}

/** A statement that may write (a CTE may hold a write too): with an audit entry pending, a transaction. */
const WRITE = /^\s*(INSERT|UPDATE|DELETE|WITH)\b/i;

/** What a statement runs on: the pool (one statement, autocommit) or a transaction's client. */
export interface Queryable {
  query<R extends pg.QueryResultRow = Row>(config: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

export interface Database extends Queryable {
  /** Runs `fn` in one transaction on one connection; rolls back if it throws. */
  transaction<T>(fn: (client: Queryable) => Promise<T>): Promise<T>;
  /**
   * What runs just before each COMMIT (the audit entry of the request under way, storage/postgres/
   * audit.ts): it returns what to call once COMMIT succeeded. `pending` says whether a single write
   * statement must become a transaction to carry it.
   */
  beforeCommit(hook: CommitHook): void;
  end(): Promise<void>;
}

// bigint columns hold ms since the epoch and counts: well inside Number's exact range, so they are
// parsed to numbers here rather than left as strings. Per pool, not pg's global type table.
const INT8 = 20;
const builtinParser = pg.types.getTypeParser as (oid: number, format?: 'text' | 'binary') => unknown;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === INT8 && format !== 'binary' ? (value: string) => Number(value) : builtinParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** SQLSTATEs that mean "the database is not there right now", not "this statement is wrong". */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown (server stopping, or pg_terminate_backend)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovering)
  '53300', // too_many_connections
  '25006', // read_only_sql_transaction: connected to a standby, e.g. right after a failover
]);
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE',
]);
// pg reports a dropped connection, a connect timeout and an ended pool as plain Errors.
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|is not queryable|Cannot use a pool after calling end/;

export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    // Class 08: connection exception (08001 cannot connect, 08006 connection failure, ...).
    if (code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_NODE_CODES.has(code)) return true;
  }
  if (error instanceof AggregateError && error.errors.some(isUnavailable)) return true; // one per address tried
  return UNAVAILABLE_MESSAGES.test(error.message);
}

function translate(error: unknown): Error {
  if (!isUnavailable(error)) return error instanceof Error ? error : new Error(String(error));
  return new AppError('service-unavailable', 'The database cannot be reached right now; try again shortly.', {
    headers: { 'retry-after': '5' },
    cause: error,
  });
}

export function openPostgres(options: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    // A request waits at most this long for a connection, then answers 503 instead of hanging.
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: options.applicationName ?? 'fleet',
    // A node that stalls inside a transaction must not hold row locks for the whole cluster.
    idle_in_transaction_session_timeout: 60_000,
    types,
    ...(options.schema === undefined ? {} : { options: `-c search_path=${options.schema}` }),
  });
  // An idle connection that dies (server restart, pg_terminate_backend) is dropped by the pool and
  // the next statement opens another; without a listener the error would crash the process.
  pool.on('error', () => {});
  let ended = false;

  /** A connection with `onError` listening, attached in pg-pool's callback: see below. */
  function checkout(onError: (error: Error) => void): Promise<pg.PoolClient> {
    return new Promise((resolve, reject) => {
      pool.connect((error, client) => {
        if (error !== undefined && error !== null) {
          reject(translate(error));
          return;
        }
        // Synchronously, in the callback: pg-pool detaches its own listener before calling it, and
        // an error arriving in the same network read as a new connection's ReadyForQuery (a
        // backend terminated right after login) would find no listener and crash the process.
        client!.on('error', onError);
        resolve(client!);
      });
    });
  }

  let commitHook: CommitHook | undefined;

  const database: Database = {
    async query<R extends pg.QueryResultRow = Row>(config: string | pg.QueryConfig, values?: unknown[]) {
      if (commitHook?.pending() === true && WRITE.test(typeof config === 'string' ? config : config.text)) {
        return database.transaction((client) => client.query<R>(config, values));
      }
      try {
        return await pool.query<R>(config, values);
      } catch (error) {
        throw translate(error);
      }
    },

    async transaction<T>(fn: (client: Queryable) => Promise<T>): Promise<T> {
      // The connection may die between statements, when no query is there to receive the error.
      let lost: Error | undefined;
      const onError = (error: Error) => {
        lost = error;
      };
      let client: pg.PoolClient;
      for (let attempt = 1; ; attempt++) {
        client = await checkout(onError);
        try {
          await client.query('BEGIN');
          break;
        } catch (error) {
          client.off('error', onError);
          client.release(error instanceof Error ? error : true);
          lost = undefined;
          // A pooled connection that died while idle (server restart, failover) fails here, before
          // anything ran: then, once, the transaction starts over on another connection.
          if (attempt === 2 || !isUnavailable(error)) throw translate(error);
        }
      }
      let broken: Error | undefined;
      try {
        const result = await fn(client);
        const committed = commitHook?.pending() === true ? await commitHook.run(client) : undefined;
        await client.query('COMMIT');
        committed?.();
        return result;
      } catch (error) {
        if (lost !== undefined || isUnavailable(error)) {
          broken = error instanceof Error ? error : new Error(String(error));
        } else {
          await client.query('ROLLBACK').catch((rollbackError: unknown) => {
            broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
          });
        }
        throw translate(lost ?? error);
      } finally {
        client.off('error', onError);
        // A broken connection is destroyed rather than handed to the next caller.
        client.release(lost ?? broken);
      }
    },

    beforeCommit(hook) {
      commitHook = hook;
    },

    async end() {
      if (ended) return;
      ended = true;
      await pool.end();
    },
  };
  return database;
}

/** A lock that lives until the transaction ends; `key` names what it guards (two nodes, one key). */
export async function advisoryLock(client: Queryable, key: string): Promise<void> {
  await client.query({ name: 'advisory-lock', text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', values: [key] });
}

/**
 * Applies every migration not yet recorded in schema_migrations, in order, all in one transaction
 * (PostgreSQL's DDL is transactional: all or none). Two nodes starting together serialize on an
 * advisory lock per schema; the second finds everything applied.
 */
export async function migrate(db: Database): Promise<void> {
  const files = migrationFiles(MIGRATIONS_DIR);
  await db.transaction(async (client) => {
    const schema = (await client.query<{ schema: string | null }>('SELECT current_schema() AS schema')).rows[0]?.schema;
    if (schema === null || schema === undefined) throw new Error('PostgreSQL: no schema to create tables in (check search_path)');
    await advisoryLock(client, `fleet:migrations:${schema}`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
    );
    const applied = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((row) => row.version),
    );
    assertKnownSchema(applied, files);
    for (const { version, name } of files) {
      if (applied.has(version)) continue;
      await client.query(readFileSync(new URL(name, MIGRATIONS_DIR), 'utf8'));
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [version, name, Date.now()]);
    }
  });
}
