// PostgreSQL for tests: FLEET_TEST_DATABASE_URL (default: the local server), a fresh schema per
// store, dropped afterwards. When the server cannot be reached the PostgreSQL suites are skipped
// with a loud message, except under CI=true, where that is a failure.
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import { createPostgresStores } from '../../src/storage/postgres/index.ts';
import type { Stores } from '../../src/storage/stores.ts';
import { urlProxy } from './proxy.ts';
import { skipUnless } from './skip.ts';

export const TEST_DATABASE_URL = process.env.FLEET_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let reachable: Promise<string | undefined> | undefined;

/** Undefined when PostgreSQL answers; otherwise why not. Asked once per process. */
function unreachable(): Promise<string | undefined> {
  reachable ??= (async () => {
    // A server that is not there refuses at once; one on a busy machine may take seconds to answer.
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 10_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message || (error as { code?: string }).code || error.name : String(error);
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return reachable;
}

/**
 * For `describe(name, { skip }, ...)`: false when PostgreSQL is there; otherwise the reason, after
 * a loud warning. Under CI=true an unreachable server is a failing test instead.
 */
export async function skipUnlessPostgres(): Promise<string | false> {
  const why = await unreachable();
  return skipUnless(why === undefined ? undefined : `unreachable (${why})`, `PostgreSQL at ${redacted(TEST_DATABASE_URL)}`, 'the PostgreSQL suites',
    'Set FLEET_TEST_DATABASE_URL or start PostgreSQL');
}

function redacted(url: string): string {
  return url.replace(/\/\/([^:/@]*):.*@/, '//$1:***@');
}

/** Runs `sql` on its own short-lived connection (schema creation and drops, inspection). */
export function adminQuery<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<R[]> {
  return queryAt<R>(TEST_DATABASE_URL, sql, values);
}

/** One statement on a connection of its own to `url`. */
export async function queryAt<R extends pg.QueryResultRow = Record<string, unknown>>(url: string, sql: string, values?: unknown[]): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** A new, empty schema with a unique name; `drop` removes it with everything in it. */
export async function freshSchema(label = 'test'): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `fleet_${label.replace(/[^a-z0-9_]/g, '_')}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(`CREATE SCHEMA ${name}`);
  return {
    name,
    async drop() {
      await adminQuery(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    },
  };
}

/**
 * The PostgreSQL stores on a fresh schema; closing them also drops the schema. `url` connects the
 * stores another way (a proxy) to the same server; the schema is always made directly.
 */
export async function openPostgresTestStores(options: { label?: string; url?: string; keepDays?: number; poolSize?: number } = {}): Promise<
  Stores & { schema: string }
> {
  const { stores, schema } = await storesOnFreshSchema(options);
  return {
    ...stores,
    schema: schema.name,
    async close() {
      await stores.close();
      await schema.drop();
    },
  };
}

async function storesOnFreshSchema(options: { label?: string; url?: string; keepDays?: number; poolSize?: number }) {
  const schema = await freshSchema(options.label);
  try {
    const stores = await createPostgresStores({
      url: options.url ?? TEST_DATABASE_URL,
      poolSize: options.poolSize ?? 5,
      schema: schema.name,
      applicationName: schema.name,
      // Few partitions make a fresh schema quick; the partition tests ask for what they need.
      keepDays: options.keepDays ?? 2,
    });
    return { stores, schema };
  } catch (error) {
    await schema.drop();
    throw error;
  }
}

/**
 * openPostgresTestStores for a suite whose tests each open stores in turn (the store contracts):
 * the next test's schema is made and migrated while the current test runs, and a closed test's
 * schema is dropped while the next one runs, so a test waits for neither. Each test still gets a
 * schema of its own, fresh and migrated. Call it at the top level of a test file: the schema
 * made for a test that never came, and the drops still under way, are finished after the file.
 */
export function postgresStoresAhead(options: { label?: string; keepDays?: number; poolSize?: number } = {}): () => Promise<Stores & { schema: string }> {
  let next: Promise<Stores & { schema: string }> | undefined;
  const drops: Promise<void>[] = [];
  const open = () => {
    const opening = storesOnFreshSchema(options).then(({ stores, schema }) => ({
      ...stores,
      schema: schema.name,
      async close() {
        await stores.close();
        const drop = schema.drop();
        drop.catch(() => {});
        drops.push(drop);
      },
    }));
    // Awaited by the test that takes it; until then a failure must not go unhandled.
    opening.catch(() => {});
    return opening;
  };
  after(async () => {
    const spare = await next?.catch(() => undefined);
    await spare?.close();
    await Promise.all(drops);
  });
  return () => {
    const current = next ?? open();
    next = open();
    return current;
  };
}

/** Another node: more stores on an existing schema (its close leaves the schema). */
export function openAnotherNode(schema: string, options: { url?: string; keepDays?: number; poolSize?: number } = {}): Promise<Stores> {
  return createPostgresStores({
    url: options.url ?? TEST_DATABASE_URL, poolSize: options.poolSize ?? 5, schema, applicationName: schema, keepDays: options.keepDays ?? 2,
  });
}

/** Ends every connection the stores on `schema` hold (they carry its name as application_name). */
export async function terminateConnections(schema: string): Promise<number> {
  const rows = await adminQuery('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [schema]);
  return rows.length;
}

/**
 * A TCP proxy in front of PostgreSQL that the test can cut and restore (see tcpProxy), without
 * touching the server that other test files share.
 */
export function databaseProxy(target = TEST_DATABASE_URL) {
  return urlProxy(target, 5432);
}
