// A fresh world per test: each call builds the app on its own SQLite file in its own temp folder,
// or with `backend: 'postgres'` on its own PostgreSQL schema, dropped by close().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { type AppDeps, buildApp } from '../../src/app.ts';
import { SCOPES, type Scope } from '../../src/auth/scopes.ts';
import { createAuthService } from '../../src/auth/service.ts';
import { type Clock, systemClock } from '../../src/clock.ts';
import { type Config, type Env, loadConfig } from '../../src/config.ts';
import { createSqliteStores } from '../../src/storage/sqlite/index.ts';
import type { SyncFile } from '../../src/storage/sqlite/wal-sync.ts';
import type { Stores } from '../../src/storage/stores.ts';
import { openAnotherNode, openPostgresTestStores } from './postgres.ts';

export interface RequestOptions {
  key?: string | null;
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string>;
}

/**
 * A complete configuration as loadConfig makes it, with the test's own variables on top. No MQTT,
 * OsmAnd or Teltonika listener unless the test asks for one: their ports may be taken, and test
 * files run in parallel. No overload refusals unless the test asks for them: a test that blocks
 * the event loop on purpose (building 100,000 geofences) must not see its next request refused.
 */
export function testConfig(env: Env = {}, cwd = tmpdir()): Config {
  const loaded = loadConfig({
    FLEET_LOG_LEVEL: 'silent', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0', FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0', ...env,
  }, cwd);
  if (!loaded.ok) throw new Error(`bad test configuration: ${loaded.errors.join('; ')}`);
  return loaded.config;
}

export async function createTestApp(options: {
  clock?: Clock;
  /** Variables on top of the defaults; a function gets the bootstrapped organization's id first. */
  env?: Env | ((organizationId: string) => Env);
  logger?: AppDeps['logger'];
  /** Default SQLite; PostgreSQL uses FLEET_TEST_DATABASE_URL (see helpers/postgres.ts). */
  backend?: 'sqlite' | 'postgres';
  /** PostgreSQL: the app connects this way (e.g. through a proxy the test can cut). */
  databaseUrl?: string;
  /** Live-stream time limits, shortened by the stream suites. */
  streams?: AppDeps['streams'];
  /** Webhook delivery timing, shortened by the webhook suites. */
  webhooks?: AppDeps['webhooks'];
  /** How often the offline alert check runs. */
  offlineCheckMs?: number;
  /** Cluster mode: the bus to the other nodes (and the state /readyz reports for it). */
  cluster?: AppDeps['cluster'];
  rateLimitStore?: AppDeps['rateLimitStore'];
  /** The app's dispatcher, held by a test that says what a part would (events recorded, say). */
  dispatcher?: AppDeps['dispatcher'];
  /** SQLite: how the WAL file is synced (`fs.fdatasync`; a test holds or fails the syncs). */
  syncFile?: SyncFile;
  /** Traces (src/tracing/). */
  tracing?: AppDeps['tracing'];
  /** Another node of `join`'s cluster: the same PostgreSQL schema and first organization. */
  join?: { stores: Stores; adminKey: string; organizationId: string };
} = {}) {
  const clock = options.clock ?? systemClock;
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-test-'));
  const file = path.join(dir, 'fleet.db');
  const databaseUrl = options.databaseUrl === undefined ? {} : { url: options.databaseUrl };
  const stores: Stores = options.join !== undefined
    ? await openAnotherNode((options.join.stores as Stores & { schema: string }).schema, databaseUrl)
    : options.backend === 'postgres'
      ? await openPostgresTestStores({ label: 'app', ...databaseUrl })
      : createSqliteStores(file, options.syncFile === undefined ? {} : { syncFile: options.syncFile });
  const auth = createAuthService({ store: stores.auth, clock });
  const first = options.join !== undefined
    ? { secret: options.join.adminKey, organization: { id: options.join.organizationId } }
    : await auth.bootstrap(undefined);
  if (first === undefined) throw new Error('a fresh store must bootstrap');
  const config = testConfig(typeof options.env === 'function' ? options.env(first.organization.id) : options.env);
  const app = await buildApp({
    config, stores, clock,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.streams === undefined ? {} : { streams: options.streams }),
    ...(options.webhooks === undefined ? {} : { webhooks: options.webhooks }),
    ...(options.offlineCheckMs === undefined ? {} : { offlineCheckMs: options.offlineCheckMs }),
    ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
    ...(options.rateLimitStore === undefined ? {} : { rateLimitStore: options.rateLimitStore }),
    ...(options.dispatcher === undefined ? {} : { dispatcher: options.dispatcher }),
    ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
  });
  await app.ready();

  /** Sends a request through the whole HTTP stack. `key: null` sends no credential. */
  function request(method: InjectOptions['method'], url: string, opts: RequestOptions = {}): Promise<LightMyRequestResponse> {
    const key = opts.key === undefined ? first!.secret : opts.key;
    const headers: Record<string, string> = { ...opts.headers };
    if (key !== null) headers.authorization = `Bearer ${key}`;
    const inject: InjectOptions = { method, url, headers };
    if (opts.query !== undefined) inject.query = opts.query;
    if (opts.body !== undefined) {
      inject.payload = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      if (headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    }
    return app.inject(inject);
  }

  return {
    app,
    config,
    stores,
    auth,
    file,
    dir,
    adminKey: first.secret,
    organizationId: first.organization.id,
    request,
    /** A key in the first organization with exactly these scopes. */
    async keyWith(scopes: readonly Scope[], organizationId = first.organization.id): Promise<string> {
      return (await auth.createKey(organizationId, { name: 'test key', scopes })).secret;
    },
    /** Another organization, and its admin key (every scope). */
    async otherOrganization(name = 'Other organization'): Promise<{ organizationId: string; key: string }> {
      const created = await auth.createOrganization({ name });
      return { organizationId: created.organization.id, key: created.secret };
    },
    /** A person of the first organization, invited with `role` who has set `password`: their user id. */
    async person(email: string, name: string, role: string, password: string): Promise<string> {
      const invited = await request('POST', '/v2/users', { body: { email, name, role } });
      if (invited.statusCode !== 201) throw new Error(`invite ${email}: ${invited.statusCode} ${invited.body}`);
      const { id, invitation } = invited.json<{ id: string; invitation: { token: string } }>();
      const accepted = await request('POST', '/auth/invitations/accept', { key: null, body: { token: invitation.token, password } });
      if (accepted.statusCode !== 200) throw new Error(`accept ${email}: ${accepted.statusCode} ${accepted.body}`);
      return id;
    },
    async registerVehicle(vehicleId: string, body: Record<string, unknown> = {}, key?: string) {
      const res = await request('POST', '/v2/fleet/vehicles', { body: { vehicleId, type: 'van', ...body }, key });
      if (res.statusCode !== 201) throw new Error(`register ${vehicleId}: ${res.statusCode} ${res.body}`);
      return res.json<Record<string, any>>();
    },
    async close() {
      await app.close();
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type TestApp = Awaited<ReturnType<typeof createTestApp>>;
export { SCOPES };

export { manualClock } from './clock.ts';
