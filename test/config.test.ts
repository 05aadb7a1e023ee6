// loadConfig(env, cwd) in isolation: defaults, each variable's validation, and that every problem
// is reported at once. No process.env is read here: every call gets its env explicitly.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { generateApiKey, isWellFormedApiKey } from '../src/auth/keys.ts';
import { type Config, type Env, loadConfig } from '../src/config.ts';

const CWD = path.resolve('/srv/fleet-test-cwd');

function ok(env: Env, cwd = CWD): Config {
  const result = loadConfig(env, cwd);
  if (!result.ok) assert.fail(`expected a valid configuration, got errors: ${result.errors.join('; ')}`);
  return result.config;
}

function errors(env: Env, cwd = CWD): string[] {
  const result = loadConfig(env, cwd);
  if (result.ok) assert.fail(`expected errors, got a configuration: ${JSON.stringify(result.config)}`);
  assert.ok(result.errors.length > 0, 'a rejected configuration lists at least one error');
  return result.errors;
}

/** The SQLite file a configuration names (failing if it names another backend). */
function sqlitePath(config: Config): string {
  if (config.database.kind !== 'sqlite') assert.fail(`expected SQLite, got ${config.database.kind}`);
  return config.database.path;
}

/** Exactly one error, and it names `variable`. */
function rejectsOnly(env: Env, variable: string): string {
  const list = errors(env);
  assert.equal(list.length, 1, `one error expected, got: ${list.join('; ')}`);
  assert.match(list[0]!, new RegExp(`\\b${variable}\\b`));
  return list[0]!;
}

describe('defaults', () => {
  test('an empty environment gives the documented defaults', () => {
    const config = ok({});
    assert.deepEqual(config, {
      host: '0.0.0.0',
      port: 8080,
      database: { kind: 'sqlite', path: path.join(CWD, 'data', 'fleet.db') },
      logLevel: 'info',
      adminKey: undefined,
      publicUrl: 'http://localhost:8080',
      http: { timeouts: { headersMs: 10_000, requestMs: 30_000, idleMs: 120_000 } },
      rateLimit: { requests: 1200, windowSeconds: 60, tokenRequests: 30 },
      quotas: { vehicles: 10000, apiKeys: 100, oauthClients: 20, streams: 100, webhooks: 20, geofences: 10000, alertRules: 1000, devices: 10000, groups: 1000, drivers: 10000, geofenceVertices: 1_000_000,
        maintenanceSchedules: 1000, reportSchedules: 100 },
      oauth: { tokenTtlSeconds: 900, external: undefined },
      telemetry: { retentionDays: 30 },
      events: { retentionDays: 30 },
      audit: { retentionDays: 365 },
      commands: { timeoutSeconds: 60 },
      rules: { offlineCheckSeconds: 15, tripEvents: true },
      maintenance: { checkSeconds: 60 },
      reports: { checkSeconds: 60 },
      webhooks: { allowPrivate: false, endpointConcurrency: 32 },
      sessions: { idleMinutes: 720 },
      sso: { allowPrivate: false },
      mqtt: { mode: 'listener', host: '0.0.0.0', port: 1883 },
      protocols: { host: '0.0.0.0', osmandPort: 5055, teltonikaPort: 5027, teltonikaIdleMs: 600_000 },
      devicePorts: { loginTimeoutMs: 30_000, packetTimeoutMs: 60_000, connections: 10_000, connectionsPerAddress: 1000, unknownIdentifiers: 10, backoffMaxMs: 600_000 },
      streams: { allowedOrigins: ['http://localhost:8080'] },
      cors: { origins: [] },
      overload: { maxEventLoopDelayMs: 500, maxEventLoopUtilization: 0, sampleIntervalMs: 250, retryAfterSeconds: 2 },
      redis: undefined,
      dashboard: { tileUrl: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png' },
      tracing: undefined,
    });
  });

  test('webhooks may reach private addresses only when allowed; event retention and the new quotas in range', () => {
    assert.equal(ok({ FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' }).webhooks.allowPrivate, true);
    rejectsOnly({ FLEET_WEBHOOK_ALLOW_PRIVATE: 'yes' }, 'FLEET_WEBHOOK_ALLOW_PRIVATE');
    assert.equal(ok({ FLEET_SSO_ALLOW_PRIVATE: 'true' }).sso.allowPrivate, true);
    rejectsOnly({ FLEET_SSO_ALLOW_PRIVATE: 'yes' }, 'FLEET_SSO_ALLOW_PRIVATE');
    assert.equal(ok({ FLEET_TRIP_EVENTS: 'false' }).rules.tripEvents, false);
    rejectsOnly({ FLEET_TRIP_EVENTS: 'no' }, 'FLEET_TRIP_EVENTS');
    assert.equal(ok({ FLEET_EVENT_RETENTION_DAYS: '7' }).events.retentionDays, 7);
    rejectsOnly({ FLEET_EVENT_RETENTION_DAYS: '0' }, 'FLEET_EVENT_RETENTION_DAYS');
    assert.equal(ok({ FLEET_QUOTA_GEOFENCES: '5' }).quotas.geofences, 5);
    assert.equal(ok({}).quotas.geofenceVertices, 1_000_000);
    rejectsOnly({ FLEET_QUOTA_GEOFENCE_VERTICES: '-1' }, 'FLEET_QUOTA_GEOFENCE_VERTICES');
    rejectsOnly({ FLEET_QUOTA_WEBHOOKS: '-1' }, 'FLEET_QUOTA_WEBHOOKS');
    assert.equal(ok({ FLEET_QUOTA_ALERT_RULES: '5' }).quotas.alertRules, 5);
    assert.equal(ok({ FLEET_QUOTA_DEVICES: '0' }).quotas.devices, 0);
    rejectsOnly({ FLEET_QUOTA_ALERT_RULES: '1.5' }, 'FLEET_QUOTA_ALERT_RULES');
    assert.equal(ok({ FLEET_WEBHOOK_ENDPOINT_CONCURRENCY: '64' }).webhooks.endpointConcurrency, 64);
    rejectsOnly({ FLEET_WEBHOOK_ENDPOINT_CONCURRENCY: '0' }, 'FLEET_WEBHOOK_ENDPOINT_CONCURRENCY');
  });

  test('the offline check interval: whole seconds from 1 to 3600', () => {
    assert.equal(ok({ FLEET_OFFLINE_CHECK_SECONDS: '1' }).rules.offlineCheckSeconds, 1);
    assert.equal(ok({ FLEET_OFFLINE_CHECK_SECONDS: '3600' }).rules.offlineCheckSeconds, 3600);
    for (const bad of ['0', '3601', '1.5', '-2', 'often']) {
      assert.match(rejectsOnly({ FLEET_OFFLINE_CHECK_SECONDS: bad }, 'FLEET_OFFLINE_CHECK_SECONDS'), /whole number from 1 to 3600/);
    }
  });

  test('the maintenance check interval: whole seconds from 1 to 3600, 60 by default', () => {
    assert.equal(ok({}).maintenance.checkSeconds, 60);
    assert.equal(ok({ FLEET_MAINTENANCE_CHECK_SECONDS: '3600' }).maintenance.checkSeconds, 3600);
    for (const bad of ['0', '3601', '1.5']) {
      assert.match(rejectsOnly({ FLEET_MAINTENANCE_CHECK_SECONDS: bad }, 'FLEET_MAINTENANCE_CHECK_SECONDS'), /whole number from 1 to 3600/);
    }
  });

  test('the report check interval: whole seconds from 1 to 3600, 60 by default', () => {
    assert.equal(ok({}).reports.checkSeconds, 60);
    assert.equal(ok({ FLEET_REPORT_CHECK_SECONDS: '1' }).reports.checkSeconds, 1);
    assert.equal(ok({ FLEET_REPORT_CHECK_SECONDS: '3600' }).reports.checkSeconds, 3600);
    for (const bad of ['0', '3601', '1.5', 'soon']) {
      assert.match(rejectsOnly({ FLEET_REPORT_CHECK_SECONDS: bad }, 'FLEET_REPORT_CHECK_SECONDS'), /whole number from 1 to 3600/);
    }
  });

  test('the dashboard map tile URL: a {z}/{x}/{y} template, or empty for no tiles', () => {
    assert.equal(ok({ FLEET_MAP_TILE_URL: 'https://tiles.example.com/{z}/{x}/{y}.png' }).dashboard.tileUrl, 'https://tiles.example.com/{z}/{x}/{y}.png');
    assert.equal(ok({ FLEET_MAP_TILE_URL: '' }).dashboard.tileUrl, '');
    rejectsOnly({ FLEET_MAP_TILE_URL: 'https://tiles.example.com/tile.png' }, 'FLEET_MAP_TILE_URL');
    rejectsOnly({ FLEET_MAP_TILE_URL: 'javascript:alert(1)//{z}{x}{y}' }, 'FLEET_MAP_TILE_URL');
  });

  test('the public URL follows the port unless given, and loses a trailing slash', () => {
    assert.equal(ok({ FLEET_PORT: '9000' }).publicUrl, 'http://localhost:9000');
    assert.equal(ok({ FLEET_PUBLIC_URL: 'https://fleet.example.com/' }).publicUrl, 'https://fleet.example.com');
    rejectsOnly({ FLEET_PUBLIC_URL: 'ftp://x' }, 'FLEET_PUBLIC_URL');
    rejectsOnly({ FLEET_PUBLIC_URL: 'not a url' }, 'FLEET_PUBLIC_URL');
  });

  test('the default SQLite file lives under <cwd>/data, for whatever cwd is given', () => {
    const other = path.resolve('/tmp/another-dir');
    const config = ok({}, other);
    assert.equal(sqlitePath(config), path.join(other, 'data', 'fleet.db'));
  });

  test('a variable set to the empty string falls back to its default', () => {
    const config = ok({ FLEET_HOST: '', FLEET_PORT: '', FLEET_DATABASE_URL: '', FLEET_LOG_LEVEL: '', FLEET_ADMIN_KEY: '' });
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.port, 8080);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.adminKey, undefined);
  });

  test('unrelated variables are ignored', () => {
    assert.equal(ok({ PORT: '1234', DATABASE_URL: 'mysql://x', HOST: 'bad host' }).port, 8080);
  });
});

describe('FLEET_PORT', () => {
  for (const value of ['abc', '70000', '-1', '65536', '80.5', '1e3', ' 80', '0x50']) {
    test(`"${value}" is rejected, naming FLEET_PORT`, () => {
      rejectsOnly({ FLEET_PORT: value }, 'FLEET_PORT');
    });
  }

  test('"0" is accepted (the system picks a free port)', () => {
    assert.equal(ok({ FLEET_PORT: '0' }).port, 0);
  });

  test('"65535" and "1" are accepted', () => {
    assert.equal(ok({ FLEET_PORT: '65535' }).port, 65535);
    assert.equal(ok({ FLEET_PORT: '1' }).port, 1);
  });
});

describe('FLEET_HOST', () => {
  test('an address or name is accepted', () => {
    assert.equal(ok({ FLEET_HOST: '127.0.0.1' }).host, '127.0.0.1');
    assert.equal(ok({ FLEET_HOST: '::1' }).host, '::1');
    assert.equal(ok({ FLEET_HOST: 'fleet.internal' }).host, 'fleet.internal');
  });

  test('garbage is rejected, naming FLEET_HOST', () => {
    rejectsOnly({ FLEET_HOST: 'not a host' }, 'FLEET_HOST');
  });
});

describe('FLEET_DATABASE_URL', () => {
  test('"mysql://x" is rejected, naming FLEET_DATABASE_URL', () => {
    rejectsOnly({ FLEET_DATABASE_URL: 'mysql://x' }, 'FLEET_DATABASE_URL');
  });

  test('a postgres:// or postgresql:// URL selects PostgreSQL, kept as given, with a pool of 10 by default', () => {
    assert.deepEqual(ok({ FLEET_DATABASE_URL: 'postgres://u:secret@db.internal:5432/fleet' }).database, {
      kind: 'postgres', url: 'postgres://u:secret@db.internal:5432/fleet', poolSize: 10,
    });
    assert.deepEqual(ok({ FLEET_DATABASE_URL: 'postgresql://db/fleet?sslmode=require', FLEET_DATABASE_POOL_SIZE: '25' }).database, {
      kind: 'postgres', url: 'postgresql://db/fleet?sslmode=require', poolSize: 25,
    });
    const socket = ok({ FLEET_DATABASE_URL: 'postgres:///fleet?host=/var/run/postgresql' }).database;
    assert.equal(socket.kind, 'postgres', 'a Unix socket directory as ?host= is a host');
  });

  test('a malformed postgres URL is rejected with a message that does not echo the password', () => {
    for (const url of ['postgres://u:secret@[::1/db', 'postgres://u:secret@/db', 'postgresql://u:sec@ret@/db']) {
      const message = rejectsOnly({ FLEET_DATABASE_URL: url }, 'FLEET_DATABASE_URL');
      assert.doesNotMatch(message, /sec/, message);
      assert.match(message, /postgres:\/\/user:password@host/, 'the message shows the expected form');
    }
  });

  test('FLEET_DATABASE_POOL_SIZE is a whole number from 1 to 1000', () => {
    for (const value of ['0', '1001', '-1', 'ten', '2.5']) rejectsOnly({ FLEET_DATABASE_POOL_SIZE: value }, 'FLEET_DATABASE_POOL_SIZE');
    assert.equal(sqlitePath(ok({ FLEET_DATABASE_POOL_SIZE: '50' })), path.join(CWD, 'data', 'fleet.db'), 'ignored by SQLite');
  });

  test('an unsupported scheme with credentials does not echo the password either', () => {
    const message = rejectsOnly({ FLEET_DATABASE_URL: 'mysql://u:secret@h/db' }, 'FLEET_DATABASE_URL');
    assert.doesNotMatch(message, /secret/);
  });

  test('a value without any scheme is rejected', () => {
    rejectsOnly({ FLEET_DATABASE_URL: './data/fleet.db' }, 'FLEET_DATABASE_URL');
  });

  test('"sqlite:" with an empty path is rejected', () => {
    rejectsOnly({ FLEET_DATABASE_URL: 'sqlite:' }, 'FLEET_DATABASE_URL');
    rejectsOnly({ FLEET_DATABASE_URL: 'sqlite://' }, 'FLEET_DATABASE_URL');
  });

  test('"sqlite::memory:" is accepted as an in-memory store', () => {
    assert.deepEqual(ok({ FLEET_DATABASE_URL: 'sqlite::memory:' }).database, { kind: 'sqlite', path: ':memory:' });
  });

  test('a relative sqlite path is resolved against cwd', () => {
    assert.equal(sqlitePath(ok({ FLEET_DATABASE_URL: 'sqlite:./db/fleet.db' })), path.join(CWD, 'db', 'fleet.db'));
    assert.equal(sqlitePath(ok({ FLEET_DATABASE_URL: 'sqlite:fleet.db' })), path.join(CWD, 'fleet.db'));
    assert.equal(sqlitePath(ok({ FLEET_DATABASE_URL: 'sqlite:../up.db' })), path.resolve(CWD, '..', 'up.db'));
  });

  test('an absolute sqlite path is kept', () => {
    const file = path.resolve('/var/lib/fleet/fleet.db');
    assert.equal(sqlitePath(ok({ FLEET_DATABASE_URL: `sqlite:${file}` })), file);
  });
});

describe('FLEET_DATABASE_READ_URL', () => {
  const pg = { FLEET_DATABASE_URL: 'postgres://db/fleet' };

  test('absent: every read on the primary', () => {
    assert.deepEqual(ok(pg).database, { kind: 'postgres', url: 'postgres://db/fleet', poolSize: 10 });
  });

  test('a PostgreSQL URL with a PostgreSQL primary: the replica, with a lag bound of 5 s unless given', () => {
    assert.deepEqual(ok({ ...pg, FLEET_DATABASE_READ_URL: 'postgres://u:pw@replica/fleet' }).database, {
      kind: 'postgres', url: 'postgres://db/fleet', poolSize: 10, read: { url: 'postgres://u:pw@replica/fleet', maxLagMs: 5_000 },
    });
    const database = ok({ ...pg, FLEET_DATABASE_READ_URL: 'postgresql://replica/fleet', FLEET_DATABASE_READ_MAX_LAG_SECONDS: '30' }).database;
    assert.deepEqual(database.kind === 'postgres' ? database.read : undefined, { url: 'postgresql://replica/fleet', maxLagMs: 30_000 });
  });

  test('with SQLite, another scheme or garbage it is refused without echoing a password; the bound is 1 to 3600 s', () => {
    assert.match(rejectsOnly({ FLEET_DATABASE_READ_URL: 'postgres://replica/fleet' }, 'FLEET_DATABASE_READ_URL'), /PostgreSQL FLEET_DATABASE_URL/);
    const message = rejectsOnly({ ...pg, FLEET_DATABASE_READ_URL: 'mysql://u:hunter2@replica/fleet' }, 'FLEET_DATABASE_READ_URL');
    assert.doesNotMatch(message, /hunter2/);
    rejectsOnly({ ...pg, FLEET_DATABASE_READ_URL: 'not a url' }, 'FLEET_DATABASE_READ_URL');
    for (const value of ['0', '3601', 'soon']) rejectsOnly({ ...pg, FLEET_DATABASE_READ_MAX_LAG_SECONDS: value }, 'FLEET_DATABASE_READ_MAX_LAG_SECONDS');
  });
});

describe('FLEET_REDIS_URL', () => {
  const pg = { FLEET_DATABASE_URL: 'postgres://db/fleet' };

  test('absent: one node, no Redis', () => {
    assert.equal(ok(pg).redis, undefined);
    assert.equal(ok({}).redis, undefined);
  });

  test('redis:// or rediss:// with PostgreSQL turns cluster mode on, with the default prefix unless given', () => {
    assert.deepEqual(ok({ ...pg, FLEET_REDIS_URL: 'redis://cache:6379' }).redis, { url: 'redis://cache:6379', prefix: 'fleet:' });
    assert.deepEqual(ok({ ...pg, FLEET_REDIS_URL: 'rediss://u:pw@cache:6380/2', FLEET_REDIS_PREFIX: 'eu-1:' }).redis, {
      url: 'rediss://u:pw@cache:6380/2', prefix: 'eu-1:',
    });
  });

  test('with SQLite it is refused: the nodes of a cluster share one database', () => {
    assert.match(rejectsOnly({ FLEET_REDIS_URL: 'redis://cache:6379' }, 'FLEET_REDIS_URL'), /PostgreSQL/);
  });

  test('another scheme or garbage is refused without echoing a password', () => {
    const message = rejectsOnly({ ...pg, FLEET_REDIS_URL: 'http://u:hunter2@cache:6379' }, 'FLEET_REDIS_URL');
    assert.doesNotMatch(message, /hunter2/);
    rejectsOnly({ ...pg, FLEET_REDIS_URL: 'not a url' }, 'FLEET_REDIS_URL');
  });

  test('a prefix with spaces, or too long, is refused', () => {
    rejectsOnly({ ...pg, FLEET_REDIS_PREFIX: 'my prefix' }, 'FLEET_REDIS_PREFIX');
    rejectsOnly({ ...pg, FLEET_REDIS_PREFIX: 'x'.repeat(65) }, 'FLEET_REDIS_PREFIX');
  });
});

describe('FLEET_LOG_LEVEL', () => {
  test('"loud" is rejected, naming FLEET_LOG_LEVEL', () => {
    rejectsOnly({ FLEET_LOG_LEVEL: 'loud' }, 'FLEET_LOG_LEVEL');
  });

  for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const) {
    test(`"${level}" is accepted`, () => {
      assert.equal(ok({ FLEET_LOG_LEVEL: level }).logLevel, level);
    });
  }
});

describe('HTTP timeouts', () => {
  test('each is read in whole seconds', () => {
    const config = ok({
      FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: '2', FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: '5', FLEET_HTTP_IDLE_TIMEOUT_SECONDS: '600',
    });
    assert.deepEqual(config.http.timeouts, { headersMs: 2_000, requestMs: 5_000, idleMs: 600_000 });
  });

  test('zero, fractions, text and values past the range are rejected', () => {
    for (const value of ['0', '1.5', 'ten', '-1', '3601']) {
      rejectsOnly({ FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: value, FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: '3600' }, 'FLEET_HTTP_HEADERS_TIMEOUT_SECONDS');
      rejectsOnly({ FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: value, FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: '1' }, 'FLEET_HTTP_REQUEST_TIMEOUT_SECONDS');
    }
    rejectsOnly({ FLEET_HTTP_IDLE_TIMEOUT_SECONDS: '0' }, 'FLEET_HTTP_IDLE_TIMEOUT_SECONDS');
    rejectsOnly({ FLEET_HTTP_IDLE_TIMEOUT_SECONDS: '86401' }, 'FLEET_HTTP_IDLE_TIMEOUT_SECONDS');
  });

  test('a request timeout shorter than the headers timeout is rejected', () => {
    const message = rejectsOnly({ FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: '20', FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: '10' }, 'FLEET_HTTP_REQUEST_TIMEOUT_SECONDS');
    assert.match(message, /FLEET_HTTP_HEADERS_TIMEOUT_SECONDS/);
    assert.equal(ok({ FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: '10', FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: '10' }).http.timeouts.requestMs, 10_000);
  });
});

describe('FLEET_ADMIN_KEY', () => {
  /** The error must name the variable and must never echo the (secret) value. */
  function rejectsKey(value: string) {
    const message = rejectsOnly({ FLEET_ADMIN_KEY: value }, 'FLEET_ADMIN_KEY');
    assert.ok(!message.includes(value), 'the error message does not echo the key');
  }

  test('shorter than a Fleet key is rejected', () => {
    rejectsKey('a'.repeat(31));
    rejectsKey('short-key');
  });

  test('a key with a space is rejected', () => {
    rejectsKey(`${'a'.repeat(20)} ${'b'.repeat(20)}`);
  });

  test('a key with a non-ASCII or control character is rejected', () => {
    rejectsKey(`${'a'.repeat(40)}é`);
    rejectsKey(`${'a'.repeat(40)}\t`);
  });

  test('longer than 512 characters is rejected', () => {
    rejectsKey('k'.repeat(513));
  });

  test('"fleet_" + 38 characters with a bad checksum is rejected', () => {
    const good = generateApiKey();
    const last = good.at(-1)!;
    const bad = good.slice(0, -1) + (last === 'A' ? 'B' : 'A');
    assert.equal(bad.length, 'fleet_'.length + 38);
    assert.equal(isWellFormedApiKey(bad), false);
    rejectsKey(bad);
  });

  test('a generated key is accepted, as is', () => {
    const key = generateApiKey();
    assert.equal(ok({ FLEET_ADMIN_KEY: key }).adminKey, key);
  });

  test('a key of another shape is rejected, however long: only the generator\'s output is random enough to be stored by a fast hash', () => {
    rejectsKey('Op3rator-Chosen_Key.0123456789!#');
    rejectsKey('x'.repeat(512));
    rejectsKey(`op_${'0123456789abcdef'.repeat(3)}`);
    // The right length and alphabet, but no valid checksum: typed by hand.
    rejectsKey(`fleet_${'a'.repeat(38)}`);
    const message = errors({ FLEET_ADMIN_KEY: 'x'.repeat(40) })[0]!;
    assert.match(message, /npm run --silent key/, 'the error says how to make one');
  });

  test('npm run key prints a new well-formed key each time', () => {
    const run = () => execFileSync(process.execPath, [path.resolve('src/cli/new-key.ts')], { encoding: 'utf8' });
    const first = run();
    const second = run();
    assert.match(first, /^fleet_[0-9A-Za-z]{38}\n$/);
    assert.ok(isWellFormedApiKey(first.trim()));
    assert.notEqual(first, second);
    assert.equal(ok({ FLEET_ADMIN_KEY: first.trim() }).adminKey, first.trim());
  });
});

describe('all problems at once', () => {
  test('every bad variable is named in the errors', () => {
    const list = errors({
      FLEET_HOST: 'not a host',
      FLEET_PORT: 'abc',
      FLEET_DATABASE_URL: 'mysql://x',
      FLEET_LOG_LEVEL: 'loud',
      FLEET_ADMIN_KEY: 'short',
    });
    for (const name of ['FLEET_HOST', 'FLEET_PORT', 'FLEET_DATABASE_URL', 'FLEET_LOG_LEVEL', 'FLEET_ADMIN_KEY']) {
      assert.ok(
        list.some((message) => new RegExp(`\\b${name}\\b`).test(message)),
        `${name} is named in: ${list.join('; ')}`,
      );
    }
    assert.equal(list.length, 5, 'one error per bad variable');
  });

  test('a bad database URL does not hide the other problems', () => {
    const list = errors({ FLEET_DATABASE_URL: 'sqlite:', FLEET_PORT: '-1' });
    assert.equal(list.length, 2);
    assert.ok(list.some((m) => m.includes('FLEET_DATABASE_URL')));
    assert.ok(list.some((m) => m.includes('FLEET_PORT')));
  });
});

describe('limits, quotas and OAuth', () => {
  for (const [name, bad] of [
    ['FLEET_RATE_LIMIT_REQUESTS', '-5'],
    ['FLEET_RATE_LIMIT_WINDOW_SECONDS', '0'],
    ['FLEET_TOKEN_RATE_LIMIT_REQUESTS', 'many'],
    ['FLEET_QUOTA_VEHICLES', '1.5'],
    ['FLEET_QUOTA_API_KEYS', '0'],
    ['FLEET_OAUTH_TOKEN_TTL_SECONDS', '30'],
  ] as const) {
    test(`${name}="${bad}" is rejected, naming it`, () => {
      rejectsOnly({ [name]: bad }, name);
    });
  }

  test('numbers are read', () => {
    const config = ok({ FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_QUOTA_VEHICLES: '3', FLEET_OAUTH_TOKEN_TTL_SECONDS: '120' });
    assert.equal(config.rateLimit.requests, 0);
    assert.equal(config.quotas.vehicles, 3);
    assert.equal(config.oauth.tokenTtlSeconds, 120);
  });

  test('an external issuer needs issuer, audience and JWKS URL together', () => {
    const list = errors({ FLEET_OAUTH_ISSUER: 'https://idp.example.com' });
    assert.equal(list.length, 1);
    assert.match(list[0]!, /FLEET_OAUTH_ISSUER, FLEET_OAUTH_AUDIENCE and FLEET_OAUTH_JWKS_URL/);
    const config = ok({
      FLEET_OAUTH_ISSUER: 'https://idp.example.com',
      FLEET_OAUTH_AUDIENCE: 'fleet-api',
      FLEET_OAUTH_JWKS_URL: 'https://idp.example.com/jwks',
    });
    assert.deepEqual(config.oauth.external, {
      issuer: 'https://idp.example.com', audience: 'fleet-api', jwksUrl: 'https://idp.example.com/jwks', organizationClaim: 'fleet_org',
    });
    rejectsOnly({
      FLEET_OAUTH_ISSUER: 'https://idp.example.com', FLEET_OAUTH_AUDIENCE: 'a', FLEET_OAUTH_JWKS_URL: 'file:///etc/passwd',
    }, 'FLEET_OAUTH_JWKS_URL');
  });
});

describe('device protocols', () => {
  test('ports, host (FLEET_HOST unless given) and the Teltonika idle timeout are read; 0 turns a listener off', () => {
    assert.deepEqual(ok({ FLEET_HOST: '127.0.0.1', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '15027', FLEET_TELTONIKA_IDLE_SECONDS: '1' }).protocols, {
      host: '127.0.0.1', osmandPort: 0, teltonikaPort: 15027, teltonikaIdleMs: 1000,
    });
    assert.equal(ok({ FLEET_HOST: '127.0.0.1', FLEET_PROTOCOLS_HOST: '::1' }).protocols.host, '::1');
  });

  for (const [name, bad] of [
    ['FLEET_OSMAND_PORT', '65536'],
    ['FLEET_OSMAND_PORT', '-1'],
    ['FLEET_TELTONIKA_PORT', 'tcp'],
    ['FLEET_TELTONIKA_IDLE_SECONDS', '0'],
    ['FLEET_TELTONIKA_IDLE_SECONDS', '86401'],
    ['FLEET_TELTONIKA_LOGIN_TIMEOUT_SECONDS', '0'],
    ['FLEET_TELTONIKA_PACKET_TIMEOUT_SECONDS', '3601'],
    ['FLEET_TELTONIKA_CONNECTIONS', '0'],
    ['FLEET_TELTONIKA_CONNECTIONS_PER_ADDRESS', 'many'],
    ['FLEET_DEVICE_UNKNOWN_IDENTIFIERS', '0'],
    ['FLEET_DEVICE_BACKOFF_MAX_SECONDS', '86401'],
    ['FLEET_PROTOCOLS_HOST', 'not a host'],
  ] as const) {
    test(`${name}="${bad}" is rejected, naming it`, () => {
      rejectsOnly({ [name]: bad }, name);
    });
  }
});

describe('MQTT', () => {
  const broker = { FLEET_MQTT_URL: 'mqtt://broker.internal:1883', FLEET_MQTT_ORGANIZATION: 'org_Qm2k9XrB7tLw0aZc' };

  test('the listener follows FLEET_HOST unless FLEET_MQTT_HOST is given; port 0 turns it off', () => {
    assert.deepEqual(ok({ FLEET_HOST: '127.0.0.1', FLEET_MQTT_PORT: '11883' }).mqtt, { mode: 'listener', host: '127.0.0.1', port: 11883 });
    assert.deepEqual(ok({ FLEET_HOST: '127.0.0.1', FLEET_MQTT_HOST: '::1' }).mqtt, { mode: 'listener', host: '::1', port: 1883 });
    assert.deepEqual(ok({ FLEET_MQTT_PORT: '0' }).mqtt, { mode: 'off' });
    rejectsOnly({ FLEET_MQTT_PORT: '70000' }, 'FLEET_MQTT_PORT');
    rejectsOnly({ FLEET_MQTT_HOST: 'not a host' }, 'FLEET_MQTT_HOST');
  });

  test('an existing broker: URL, organization, credentials, share group and client id', () => {
    assert.deepEqual(ok({ ...broker, FLEET_MQTT_USERNAME: 'fleet', FLEET_MQTT_PASSWORD: 's3cret', FLEET_MQTT_CLIENT_ID: 'fleet-1' }).mqtt, {
      mode: 'broker', url: 'mqtt://broker.internal:1883', username: 'fleet', password: 's3cret',
      shareGroup: 'fleet', organizationId: 'org_Qm2k9XrB7tLw0aZc', clientId: 'fleet-1', session: 'keep',
    });
    const defaults = ok({ ...broker, FLEET_MQTT_URL: 'mqtts://broker.internal/' }).mqtt;
    assert.equal(defaults.mode, 'broker');
    if (defaults.mode !== 'broker') return;
    assert.equal(defaults.url, 'mqtts://broker.internal');
    assert.match(defaults.clientId, /^fleet-[A-Za-z0-9_.-]+$/, 'the client id defaults to fleet-<hostname>');
    assert.equal(defaults.username, undefined);
  });

  test('a broker needs an organization; broker settings need a broker', () => {
    rejectsOnly({ FLEET_MQTT_URL: 'mqtt://broker.internal:1883' }, 'FLEET_MQTT_ORGANIZATION');
    rejectsOnly({ ...broker, FLEET_MQTT_ORGANIZATION: 'acme' }, 'FLEET_MQTT_ORGANIZATION');
    rejectsOnly({ FLEET_MQTT_ORGANIZATION: 'org_Qm2k9XrB7tLw0aZc' }, 'FLEET_MQTT_ORGANIZATION');
    rejectsOnly({ FLEET_MQTT_PASSWORD: 'secret' }, 'FLEET_MQTT_PASSWORD');
  });

  test('bad URLs, share groups and client ids are rejected; a password in the URL is never echoed', () => {
    for (const url of ['http://broker:1883', 'mqtt://', 'not a url', 'mqtt://broker:1883/path']) {
      rejectsOnly({ ...broker, FLEET_MQTT_URL: url }, 'FLEET_MQTT_URL');
    }
    const message = rejectsOnly({ ...broker, FLEET_MQTT_URL: 'mqtt://fleet:hunter2@broker:1883' }, 'FLEET_MQTT_URL');
    assert.doesNotMatch(message, /hunter2/);
    rejectsOnly({ ...broker, FLEET_MQTT_SHARE_GROUP: 'a/b' }, 'FLEET_MQTT_SHARE_GROUP');
    rejectsOnly({ ...broker, FLEET_MQTT_CLIENT_ID: 'has space' }, 'FLEET_MQTT_CLIENT_ID');
  });

  test('FLEET_MQTT_SESSION: the session is kept unless the node is to leave', () => {
    assert.equal((ok({ ...broker }).mqtt as { session?: string }).session, 'keep');
    assert.equal((ok({ ...broker, FLEET_MQTT_SESSION: 'leave' }).mqtt as { session?: string }).session, 'leave');
    rejectsOnly({ ...broker, FLEET_MQTT_SESSION: 'drop' }, 'FLEET_MQTT_SESSION');
  });
});

describe('FLEET_CORS_ORIGINS', () => {
  test('none by default: CORS is off, and the stream origins keep their own default', () => {
    const config = ok({ FLEET_PUBLIC_URL: 'https://fleet.example.com' });
    assert.deepEqual(config.cors.origins, []);
    assert.deepEqual(config.streams.allowedOrigins, ['https://fleet.example.com']);
  });

  test('a comma-separated list of origins, normalized as browsers send them; or * alone', () => {
    assert.deepEqual(
      ok({ FLEET_CORS_ORIGINS: 'https://App.example.com, http://localhost:3000/' }).cors.origins,
      ['https://app.example.com', 'http://localhost:3000'],
    );
    assert.deepEqual(ok({ FLEET_CORS_ORIGINS: ' * ' }).cors.origins, ['*']);
  });

  test('anything that is not an origin is rejected, naming the variable', () => {
    for (const value of ['app.example.com', 'https://app.example.com/path', 'ftp://x', '*,https://x', 'https://a,']) {
      rejectsOnly({ FLEET_CORS_ORIGINS: value }, 'FLEET_CORS_ORIGINS');
    }
  });
});

describe('overload thresholds', () => {
  test('each is read, and 0 turns the event-loop checks off', () => {
    const config = ok({
      FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '75', FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION: '0.95',
      FLEET_OVERLOAD_SAMPLE_MS: '100', FLEET_OVERLOAD_RETRY_AFTER_SECONDS: '7',
    });
    assert.deepEqual(config.overload, { maxEventLoopDelayMs: 75, maxEventLoopUtilization: 0.95, sampleIntervalMs: 100, retryAfterSeconds: 7 });
    assert.equal(ok({ FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '0' }).overload.maxEventLoopDelayMs, 0);
    assert.equal(ok({ FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION: '.9' }).overload.maxEventLoopUtilization, 0.9);
  });

  test('values out of range or not numbers are rejected, naming the variable', () => {
    for (const value of ['-1', '60001', '1.5', 'fast']) rejectsOnly({ FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: value }, 'FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS');
    for (const value of ['1', '1.0', '2', '-0.5', '95%', 'high', '0.9.1']) {
      rejectsOnly({ FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION: value }, 'FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION');
    }
    for (const value of ['0', '9', '10001']) rejectsOnly({ FLEET_OVERLOAD_SAMPLE_MS: value }, 'FLEET_OVERLOAD_SAMPLE_MS');
    for (const value of ['0', '3601']) rejectsOnly({ FLEET_OVERLOAD_RETRY_AFTER_SECONDS: value }, 'FLEET_OVERLOAD_RETRY_AFTER_SECONDS');
  });
});

describe('FLEET_STREAM_ALLOWED_ORIGINS', () => {
  test('defaults to the origin of the public URL', () => {
    assert.deepEqual(ok({ FLEET_PUBLIC_URL: 'https://fleet.example.com/api/' }).streams.allowedOrigins, ['https://fleet.example.com']);
    assert.deepEqual(ok({ FLEET_PUBLIC_URL: 'http://127.0.0.1:9000' }).streams.allowedOrigins, ['http://127.0.0.1:9000']);
  });

  test('a comma-separated list of origins, normalized as browsers send them; or * alone', () => {
    assert.deepEqual(
      ok({ FLEET_STREAM_ALLOWED_ORIGINS: 'https://App.example.com, http://localhost:3000/ ,https://x.example:443' }).streams.allowedOrigins,
      ['https://app.example.com', 'http://localhost:3000', 'https://x.example'],
    );
    assert.deepEqual(ok({ FLEET_STREAM_ALLOWED_ORIGINS: '*' }).streams.allowedOrigins, ['*']);
  });

  test('anything that is not an origin is rejected, naming the variable', () => {
    for (const value of ['app.example.com', 'https://app.example.com/path', 'ftp://x', 'https://x?y', '*,https://x', 'https://a,', 'https://u:p@x']) {
      rejectsOnly({ FLEET_STREAM_ALLOWED_ORIGINS: value }, 'FLEET_STREAM_ALLOWED_ORIGINS');
    }
  });
});
