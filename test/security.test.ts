// Authentication, scopes and organization isolation (docs/API.md "Authentication and scopes", "Errors"), driven by the route
// table the server builds as routes are registered: a route added later is checked without
// anyone remembering to add it here.
import assert from 'node:assert/strict';
import { ROLE_SCOPES, type Role } from '../src/people/roles.ts';
import { crc32 } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { RouteEntry } from '../src/app.ts';
import {
  displayPrefixOf,
  generateApiKey,
  hashSecret,
  isWellFormedApiKey,
  lookupIdOf,
} from '../src/auth/keys.ts';
import { randomBase62 } from '../src/base62.ts';
import { newId } from '../src/ids.ts';
import { ORGANIZATION_WIDE, holds, isScope, type Scope } from '../src/auth/scopes.ts';
import { vehicleParamOf } from '../src/http/vehicle-scope.ts';
import { SCOPES, createTestApp, type TestApp } from './helpers/app.ts';

type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(async () => {
  await ctx.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers

/** §6: the only paths reachable without a credential. */
function isPublicByContract(url: string): boolean {
  return (
    url === '/healthz' ||
    url === '/readyz' ||
    url === '/openapi.json' ||
    url === '/oauth/token' ||
    // Client-authenticated (HTTP Basic or form credentials, RFC 7009 / RFC 7662), never by bearer.
    url === '/oauth/revoke' ||
    url === '/oauth/introspect' ||
    url === '/docs' ||
    // OsmAnd devices send no credential: their registered identifier is the credential (docs/API.md).
    url === '/osmand' ||
    // Sign-in, and setting a password with an invitation: how a person gets a session.
    url === '/auth/login' ||
    url === '/auth/invitations/accept' ||
    // Single sign-on: the browser's way to the organization's OpenID provider and back.
    url === '/auth/sso/:organizationId' ||
    url === '/auth/sso/callback' ||
    url.startsWith('/docs/') ||
    // The browser dashboard's page and scripts (it signs in with a key through the API itself).
    url === '/' ||
    url.startsWith('/dashboard/') ||
    url.startsWith('/.well-known/')
  );
}

/** The routes a matrix walks: every served route outside the public list. */
function protectedRoutes(): RouteEntry[] {
  // A person's own /auth routes take only the session cookie (test/people.test.ts).
  return ctx.app.routeTable.filter((route) => !isPublicByContract(route.url) && !route.session);
}

const routeName = (route: Pick<RouteEntry, 'method' | 'url'>) => `${route.method} ${route.url}`;

function concreteUrl(url: string, id: string): string {
  return url.replaceAll(/:[A-Za-z]+/g, encodeURIComponent(id)).replace(/\*$/, 'index.css');
}

let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}`;

/** A valid body for every route that takes one, keyed by route url. */
const BODIES: Record<string, (vehicleId: string) => unknown> = {
  '/v2/fleet/vehicles': () => ({ vehicleId: unique('new'), type: 'van' }),
  '/v2/fleet/vehicles/batch': () => ({ vehicles: [{ vehicleId: unique('new-batch'), type: 'van' }] }),
  '/api/v1/fleet': () => ({ vehicleId: unique('new-v1'), type: 'truck' }),
  '/v2/fleet/vehicles/:id/status': () => ({ status: 'active' }),
  '/api/v1/vehicles/:id/status': () => ({ status: 'active' }),
  '/v2/api-keys': () => ({ name: unique('matrix-key'), scopes: ['admin'] }),
  '/v2/organizations': () => ({ name: unique('matrix-org') }),
  '/v2/oauth-clients': () => ({ name: unique('matrix-client'), scopes: ['admin'] }),
  '/v2/oauth/signing-keys': () => undefined,
  '/v2/telemetry/:vehicleId': () => ({ timestamp: new Date(Date.now() - ++counter).toISOString(), data: { speed: 1 } }),
  '/v2/telemetry': (id) => ({ records: [{ vehicleId: id, timestamp: new Date(Date.now() - ++counter).toISOString(), data: { battery: 50 } }] }),
  '/v2/telemetry/:vehicleId/stream': () => ({ events: ['location'] }),
  '/v2/telemetry/stream': () => ({ events: ['status'], interval: 0 }),
  '/v2/streams/:streamId/tickets': () => undefined,
  '/v2/fleet/vehicles/:id': () => ({ name: unique('name') }),
  '/v2/webhooks': () => ({ url: 'https://hooks.example.com/fleet', eventTypes: ['*'] }),
  '/v2/webhooks/:id': () => ({ enabled: false }),
  '/v2/webhooks/:id/rotate-secret': () => undefined,
  '/v2/webhooks/:id/test': () => undefined,
  '/v2/webhooks/:id/deliveries/:deliveryId/retry': () => undefined,
  '/v2/geofences': () => ({ name: unique('gf'), geometry: { type: 'Circle', coordinates: [13.4, 52.5], radius: 100 } }),
  '/v2/geofences/:id': () => ({ name: unique('gf'), geometry: { type: 'Circle', coordinates: [13.4, 52.5], radius: 100 } }),
  '/v2/alert-rules': () => ({ name: unique('rule'), condition: { kind: 'threshold', field: 'speed', op: '>', value: 100 } }),
  '/v2/alert-rules/:id': () => ({ name: unique('rule'), condition: { kind: 'threshold', field: 'speed', op: '>', value: 100 } }),
  '/v2/alerts/:id/acknowledge': () => ({}),
  '/v2/alerts/:id/resolve': () => ({}),
  '/v2/devices': (id) => ({ protocol: 'osmand', identifier: unique('matrix-device'), vehicleId: id }),
  '/v2/fleet/vehicles/:id/commands': () => ({ type: 'reboot', channel: 'mqtt' }),
  '/v2/users': () => ({ email: `${unique('matrix')}@example.com`, name: 'Matrix', role: 'viewer' }),
  '/v2/users/:id': () => ({ name: unique('name') }),
  '/v2/users/:id/invitation': () => undefined,
  '/v2/groups': () => ({ name: unique('group') }),
  '/v2/groups/:id': () => ({ name: unique('group') }),
  '/v2/groups/:id/vehicles': (id) => ({ vehicleIds: [id] }),
  '/v2/drivers': () => ({ name: unique('driver') }),
  '/v2/drivers/:id': () => ({ name: unique('driver') }),
  // A driver that does not exist: 404 once the route is reached.
  '/v2/driver-assignments': (id) => ({ driverId: 'drv_00000000000000000000', vehicleId: id }),
  '/v2/driver-assignments/:id/end': () => ({}),
  '/v2/fleet/vehicles/:id/meters': () => ({ odometerKm: 1200 }),
  '/v2/maintenance-schedules': () => ({ name: unique('schedule'), every: { km: 10000 } }),
  '/v2/maintenance-schedules/:id': () => ({ name: unique('schedule'), every: { km: 10000 } }),
  '/v2/fleet/vehicles/:id/service-records': () => ({ performedAt: '2026-11-01T08:00:00Z' }),
  '/v2/report-schedules': () => ({ name: unique('report'), groupBy: 'vehicle', period: 'day', timezone: 'Europe/Berlin', format: 'csv' }),
  '/v2/report-schedules/:id': () => ({ name: unique('report'), groupBy: 'day', period: 'week', timezone: 'UTC', format: 'json' }),
  '/v2/report-schedules/:id/run': () => undefined,
  // Refused at the issuer (a loopback address) before any request leaves: the route is reached all the same.
  '/v2/sso': () => ({ issuer: 'https://127.0.0.1/', clientId: 'fleet', clientSecret: 'matrix-secret', roleMap: { matrix: 'viewer' } }),
};

/**
 * docs/API.md "Live streams": a stream reads what the routes of its kind protect, so each of its
 * event types needs a scope besides `streams`.
 */
const STREAM_TYPE_SCOPES: Record<string, Scope> = {
  location: 'telemetry:read',
  battery: 'telemetry:read',
  diagnostics: 'telemetry:read',
  status: 'fleet:read',
  events: 'events:read',
};
const STREAM_CREATION = ['/v2/telemetry/:vehicleId/stream', '/v2/telemetry/stream'];

/**
 * The scopes a request body asks for besides the route's own: a stream's event types, or the
 * scopes of the role a user is invited with, or single sign-on may give (nobody grants what they lack).
 */
function bodyScopes(route: RouteEntry, body: unknown): Scope[] {
  if (route.url === '/v2/users' && route.method === 'POST') return [...ROLE_SCOPES[(body as { role: Role }).role]];
  if (route.url === '/v2/sso' && route.method === 'PUT') return Object.values((body as { roleMap: Record<string, Role> }).roleMap).flatMap((role) => ROLE_SCOPES[role]);
  if (!STREAM_CREATION.includes(route.url)) return [];
  const events = (body as { events: string[] }).events;
  return [...new Set(events.map((type) => {
    const scope = STREAM_TYPE_SCOPES[type];
    assert.ok(scope, `security.test.ts knows no scope for the stream type "${type}": add it to STREAM_TYPE_SCOPES`);
    return scope;
  }))];
}

function bodyFor(route: RouteEntry, vehicleId = unique('no-vehicle')): unknown {
  if (route.method !== 'POST' && route.method !== 'PUT' && route.method !== 'PATCH') return undefined;
  const make = BODIES[route.url];
  assert.ok(make, `security.test.ts has no request body for ${routeName(route)}: add one to BODIES`);
  return make(vehicleId);
}

/** A valid query for every route that requires one, keyed by route url. */
const RANGE = { from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z' };
const QUERIES: Record<string, Record<string, string>> = {
  '/v2/reports/summary': { from: '2026-11-01', to: '2026-11-02' },
  '/v2/fleet/vehicles/:id/trips': RANGE,
  '/v2/fleet/vehicles/:id/stops': RANGE,
  '/v2/telemetry/:vehicleId/aggregates': { ...RANGE, bucket: '3600' },
  '/v2/telemetry/:vehicleId/export': RANGE,
};
const queryFor = (route: RouteEntry) => QUERIES[route.url];

/** The routes known today; the matrix must cover at least these. */
const KNOWN_ROUTES: Record<string, number> = {
  'GET /metrics': 200,
  'GET /v2/fleet/vehicles': 200,
  'POST /v2/fleet/vehicles': 201,
  'POST /v2/fleet/vehicles/batch': 200,
  'GET /v2/fleet/vehicles/:id': 200,
  'DELETE /v2/fleet/vehicles/:id': 204,
  'PUT /v2/fleet/vehicles/:id/status': 200,
  'GET /v2/fleet/vehicles/:id/status-history': 200,
  'GET /api/v1/fleet': 200,
  'POST /api/v1/fleet': 201,
  'GET /api/v1/vehicles/:id': 200,
  'PUT /api/v1/vehicles/:id/status': 200,
  'POST /v2/telemetry/:vehicleId': 202,
  'POST /v2/telemetry': 202,
  'GET /v2/telemetry/:vehicleId/history': 200,
  'POST /v2/telemetry/:vehicleId/stream': 201,
  'POST /v2/telemetry/stream': 201,
  'PATCH /v2/fleet/vehicles/:id': 200,
  'GET /v2/events': 200,
  'GET /v2/webhooks': 200,
  'POST /v2/webhooks': 201,
  'GET /v2/geofences': 200,
  'POST /v2/geofences': 201,
  'GET /v2/alert-rules': 200,
  'POST /v2/alert-rules': 201,
  'GET /v2/alerts': 200,
  'GET /v2/fleet/vehicles/:id/geofences': 200,
  'GET /v2/devices': 200,
  'POST /v2/devices': 201,
  'GET /v2/device-endpoints': 200,
  'GET /v2/fleet/vehicles/:id/trips': 200,
  'GET /v2/fleet/vehicles/:id/stops': 200,
  'GET /v2/telemetry/:vehicleId/aggregates': 200,
  'GET /v2/telemetry/:vehicleId/export': 200,
  'GET /v2/users': 200,
  'POST /v2/users': 201,
  'GET /v2/groups': 200,
  'POST /v2/groups': 201,
  'GET /v2/audit-log': 200,
  'POST /v2/fleet/vehicles/:id/commands': 202,
  'GET /v2/fleet/vehicles/:id/commands': 200,
  'GET /v2/fleet/vehicles/:id/command-types': 200,
  'GET /v2/drivers': 200,
  'POST /v2/drivers': 201,
  'GET /v2/driver-assignments': 200,
  'GET /v2/fleet/vehicles/:id/meters': 200,
  'PUT /v2/fleet/vehicles/:id/meters': 200,
  'GET /v2/maintenance-schedules': 200,
  'POST /v2/maintenance-schedules': 201,
  'POST /v2/fleet/vehicles/:id/service-records': 201,
  'GET /v2/fleet/vehicles/:id/service-records': 200,
  'GET /v2/fleet/vehicles/:id/maintenance': 200,
  'GET /v2/maintenance': 200,
  'GET /v2/reports/summary': 200,
  'GET /v2/report-schedules': 200,
  'POST /v2/report-schedules': 201,
  'GET /v2/reports': 200,
};

function expectedSuccess(route: RouteEntry): number | undefined {
  const method = route.method === 'HEAD' ? 'GET' : route.method;
  return KNOWN_ROUTES[`${method} ${route.url}`];
}

function describeResponse(res: LightMyRequestResponse): string {
  return `${res.statusCode} ${res.body.slice(0, 300)}`;
}

function assertProblem(res: LightMyRequestResponse, method: string, status: number, code: string, label: string) {
  assert.equal(res.statusCode, status, `${label}: expected ${status}, got ${describeResponse(res)}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `${label}: content-type`);
  if (method === 'HEAD') return;
  const body = res.json();
  assert.equal(body.code, code, `${label}: problem code`);
  assert.equal(body.status, status, `${label}: problem status`);
}

/** CRC-32 in 6 base62 characters, the checksum described in src/auth/keys.ts. */
function checksum(randomPart: string): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let rest = crc32(randomPart);
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = alphabet[rest % 62]! + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

/** Tokens that must all be refused as invalid (none of them is a stored, live credential). */
function invalidTokens(): Array<[string, string]> {
  const real = ctx.adminKey;
  const lastChar = real.at(-1)!;
  const wrongChecksum = real.slice(0, -1) + (lastChar === 'A' ? 'B' : 'A');
  // Same lookup handle as the real admin key, a different secret, a valid checksum: found by
  // lookup, refused by the hash comparison.
  const randomPart = real.slice('fleet_'.length, 'fleet_'.length + 12) + randomBase62(20);
  const sameLookupOtherSecret = `fleet_${randomPart}${checksum(randomPart)}`;
  assert.ok(isWellFormedApiKey(sameLookupOtherSecret), 'the forged key must be well-formed to reach the store');
  assert.notEqual(sameLookupOtherSecret, real);
  return [
    ['fleet_ + garbage', 'fleet_not-a-key!'],
    ['random 40 characters', randomBase62(40)],
    ['real key with a wrong checksum', wrongChecksum],
    ['well-formed unknown key', generateApiKey()],
    ['known lookup id, wrong secret', sameLookupOtherSecret],
    ['real key with a suffix', `${real}x`],
  ];
}

const keyCache = new Map<string, string>();
async function keyFor(scopes: readonly Scope[]): Promise<string> {
  const name = [...scopes].sort().join(' ');
  let key = keyCache.get(name);
  if (key === undefined) {
    key = await ctx.keyWith(scopes);
    keyCache.set(name, key);
  }
  return key;
}

// ---------------------------------------------------------------------------------------------

describe('route table', () => {
  test('every route is either public by contract or needs a scope, never both or neither', () => {
    const wrong = ctx.app.routeTable
      .filter((route) => isPublicByContract(route.url) ? !route.public || route.scope !== undefined
        : route.session ? route.public || route.scope !== undefined || !route.url.startsWith('/auth/')
          : route.public || route.scope === undefined)
      .map((route) => `${routeName(route)} public=${route.public} scope=${String(route.scope)}`);
    assert.deepEqual(wrong, [], `route table disagrees with docs/API.md "Authentication and scopes":\n${wrong.join('\n')}`);
  });

  test('every scope a route needs is a known scope', () => {
    for (const route of ctx.app.routeTable) {
      if (route.scope !== undefined) {
        assert.ok((SCOPES as readonly string[]).includes(route.scope), `${routeName(route)}: unknown scope ${route.scope}`);
      }
    }
  });
});

describe('scope matrix', () => {
  test('every protected route: 401 without or with a bad credential, 403 without its scope, allowed with it', async (t) => {
    const routes = protectedRoutes();
    const covered = new Set(routes.map(routeName));
    const missing = Object.keys(KNOWN_ROUTES).filter((name) => !covered.has(name));
    assert.deepEqual(missing, [], `routes missing from the route table: ${missing.join(', ')}`);
    assert.ok(routes.filter((r) => r.method !== 'HEAD').length >= 11, `only ${routes.length} protected routes`);

    let checked = 0;
    for (const route of routes) {
      await t.test(routeName(route), async () => {
        const method = route.method as Method;
        assert.ok(route.scope !== undefined && isScope(route.scope), `${routeName(route)} declares no known scope`);
        const scope: Scope = route.scope;
        const vehicleId = unique('matrix');
        await ctx.registerVehicle(vehicleId);
        const url = concreteUrl(route.url, vehicleId);
        const body = bodyFor(route, vehicleId);

        // No credential, or an Authorization header that carries no bearer token.
        const noCredential: Array<[string, Record<string, string>]> = [
          ['no Authorization header', {}],
          ['empty bearer', { authorization: 'Bearer ' }],
          ['Basic scheme', { authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` }],
        ];
        for (const [label, headers] of noCredential) {
          const res = await ctx.request(method, url, { key: null, headers, body });
          assertProblem(res, method, 401, 'unauthorized', `${routeName(route)} ${label}`);
          assert.match(String(res.headers['www-authenticate']), /^Bearer\b/, `${routeName(route)} ${label}: WWW-Authenticate`);
        }

        for (const [label, token] of invalidTokens()) {
          const res = await ctx.request(method, url, { key: token, body });
          assertProblem(res, method, 401, 'invalid-token', `${routeName(route)} ${label}`);
          const challenge = String(res.headers['www-authenticate']);
          assert.match(challenge, /^Bearer\b/, `${routeName(route)} ${label}: WWW-Authenticate`);
          assert.ok(challenge.includes('error="invalid_token"'), `${routeName(route)} ${label}: ${challenge}`);
        }

        // Every scope that does not include this one (`admin` includes `metrics:read`).
        const allButScope = SCOPES.filter((s) => !holds(new Set([s]), scope));
        const denied = await ctx.request(method, url, { key: await keyFor(allButScope), body });
        assertProblem(denied, method, 403, 'insufficient-scope', `${routeName(route)} with every scope but ${scope}`);
        assert.ok(
          String(denied.headers['www-authenticate']).includes('error="insufficient_scope"'),
          `${routeName(route)}: WWW-Authenticate ${String(denied.headers['www-authenticate'])}`,
        );

        // Nothing a refused request asked for happened.
        const afterRefusal = await ctx.request('GET', `/v2/fleet/vehicles/${vehicleId}`);
        assert.equal(afterRefusal.statusCode, 200, `${routeName(route)}: a refused request removed the vehicle`);
        assert.equal(afterRefusal.json().status, 'registered', `${routeName(route)}: a refused request changed the status`);
        if (body !== undefined && typeof body === 'object' && body !== null && 'vehicleId' in body && 'type' in body) {
          const created = await ctx.request('GET', `/v2/fleet/vehicles/${String(body.vehicleId)}`);
          assert.equal(created.statusCode, 404, `${routeName(route)}: a refused request registered a vehicle`);
        }
        const devices = await ctx.request('GET', '/v2/devices', { query: { vehicleId } });
        assert.equal(devices.json().total, 0, `${routeName(route)}: a refused request registered a device`);

        // The body may need more: a stream's event types each need their own scope.
        const extra = bodyScopes(route, body);
        if (extra.length > 0) {
          const short = await ctx.request(method, url, { key: await keyFor([scope]), body });
          assertProblem(short, method, 403, 'insufficient-scope', `${routeName(route)} with ${scope} but not ${extra.join(', ')}`);
        }
        const only = [scope, ...extra].join(', ');
        const allowed = await ctx.request(method, url, { key: await keyFor([scope, ...extra]), body, query: queryFor(route) });
        assert.ok(allowed.statusCode !== 401 && allowed.statusCode !== 403, `${routeName(route)} with only ${only}: ${describeResponse(allowed)}`);
        assert.ok(allowed.statusCode < 500, `${routeName(route)} with only ${only}: ${describeResponse(allowed)}`);
        const expected = expectedSuccess(route);
        if (expected !== undefined) {
          assert.equal(allowed.statusCode, expected, `${routeName(route)} with only ${only}: ${describeResponse(allowed)}`);
        }
        checked++;
      });
    }
    assert.equal(checked, routes.length, 'every protected route passed its checks');
  });

  test('streams: every event type needs its scope besides `streams`, on both creation routes', async () => {
    const doc = (await ctx.request('GET', '/openapi.json', { key: null })).json();
    for (const url of STREAM_CREATION) {
      const path = url.replace(':vehicleId', '{vehicleId}');
      // The body is a named schema: follow its reference into components.schemas.
      const ref: string = doc.paths[path].post.requestBody.content['application/json'].schema.$ref;
      const schema = doc.components.schemas[ref.replace('#/components/schemas/', '')];
      const types: string[] = schema.properties.events.items.enum;
      assert.deepEqual([...types].sort(), Object.keys(STREAM_TYPE_SCOPES).sort(), `${path}: the event types the contract lists`);
      const route = { method: 'POST', url, public: false, scope: 'streams' } as RouteEntry;
      for (const type of types) {
        const vehicleId = unique('stream-scope');
        await ctx.registerVehicle(vehicleId);
        const target = concreteUrl(url, vehicleId);
        const body = { events: [type] };
        const [needed] = bodyScopes(route, body) as [Scope];
        const denied = await ctx.request('POST', target, { key: await keyFor(SCOPES.filter((s) => s !== needed)), body });
        assertProblem(denied, 'POST', 403, 'insufficient-scope', `${routeName(route)} ${type} with every scope but ${needed}`);
        const allowed = await ctx.request('POST', target, { key: await keyFor(['streams', needed]), body });
        assert.equal(allowed.statusCode, 201, `${routeName(route)} ${type} with streams and ${needed}: ${describeResponse(allowed)}`);
      }
    }
  });

  test('/metrics needs admin of the platform organization', async () => {
    const platform = await ctx.request('GET', '/metrics', { key: await keyFor(['admin']) });
    assert.equal(platform.statusCode, 200, describeResponse(platform));

    const other = await ctx.otherOrganization('Metrics outsider');
    const res = await ctx.request('GET', '/metrics', { key: other.key });
    assertProblem(res, 'GET', 403, 'insufficient-scope', 'another organization\'s admin key on /metrics');
    assert.ok(String(res.headers['www-authenticate']).includes('error="insufficient_scope"'));
    assert.doesNotMatch(res.body, /fleet_http_requests_total/);
  });
});

describe('credential lifetime', () => {
  test('an expired key is refused; the same key unexpired is accepted', async () => {
    const expired = await ctx.auth.createKey(ctx.organizationId, {
      name: 'expired', scopes: ['fleet:read'], expiresAt: Date.now() - 60_000,
    });
    const live = await ctx.auth.createKey(ctx.organizationId, {
      name: 'live', scopes: ['fleet:read'], expiresAt: Date.now() + 3_600_000,
    });
    const ok = await ctx.request('GET', '/v2/fleet/vehicles', { key: live.secret });
    assert.equal(ok.statusCode, 200, describeResponse(ok));
    for (const url of ['/v2/fleet/vehicles', '/api/v1/fleet']) {
      const res = await ctx.request('GET', url, { key: expired.secret });
      assertProblem(res, 'GET', 401, 'invalid-token', `expired key on ${url}`);
      assert.ok(String(res.headers['www-authenticate']).includes('error="invalid_token"'));
    }
  });

  test('a revoked key is refused', async () => {
    const secret = generateApiKey();
    const now = Date.now();
    await ctx.stores.auth.insertKey({
      id: newId('key'),
      organizationId: ctx.organizationId,
      name: 'revoked',
      lookupId: lookupIdOf(secret),
      displayPrefix: displayPrefixOf(secret),
      hash: hashSecret(secret),
      scopes: [...SCOPES],
      groupIds: null,
      createdAt: now - 120_000,
      expiresAt: null,
      revokedAt: now - 60_000,
      lastUsedAt: null,
    });
    const res = await ctx.request('GET', '/v2/fleet/vehicles', { key: secret });
    assertProblem(res, 'GET', 401, 'invalid-token', 'revoked key');
  });
});

describe('public routes', () => {
  test('/healthz, /readyz, /openapi.json and /docs answer without a credential', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json', '/docs']) {
      const res = await ctx.request('GET', url, { key: null });
      assert.equal(res.statusCode, 200, `GET ${url}: ${describeResponse(res)}`);
      assert.equal(res.headers['www-authenticate'], undefined, `GET ${url} asked for a credential`);
    }
  });

  test('every public GET route of the table answers without a credential', async () => {
    const routes = ctx.app.routeTable.filter((r) => r.method === 'GET' && isPublicByContract(r.url));
    assert.ok(routes.length >= 4);
    for (const route of routes) {
      const res = await ctx.request('GET', concreteUrl(route.url, 'x'), { key: null });
      assert.ok(res.statusCode !== 401 && res.statusCode !== 403 && res.statusCode < 500, `${routeName(route)}: ${describeResponse(res)}`);
    }
  });
});

describe('organizations are isolated', () => {
  const shared = 'iso-shared';
  const aOnly = 'iso-a-only';
  const aOnly2 = 'iso-a-only-2';
  const bOnly = 'iso-b-only';
  const ghost = 'iso-nowhere';
  let bKey: string;

  before(async () => {
    bKey = (await ctx.otherOrganization('Organization B')).key;
    await ctx.registerVehicle(shared);
    await ctx.registerVehicle(aOnly);
    await ctx.registerVehicle(aOnly2);
    // The same id in another organization is not a duplicate.
    await ctx.registerVehicle(shared, { type: 'bus' }, bKey);
    await ctx.registerVehicle(bOnly, {}, bKey);
  });

  async function assertAIntact(label: string) {
    const res = await ctx.request('GET', `/v2/fleet/vehicles/${aOnly}`);
    assert.equal(res.statusCode, 200, `${label}: A can no longer read ${aOnly}: ${describeResponse(res)}`);
    assert.equal(res.json().status, 'registered', `${label}: A's vehicle status changed`);
    const history = await ctx.request('GET', `/v2/fleet/vehicles/${aOnly}/status-history`);
    assert.equal(history.statusCode, 200);
    assert.equal(history.json().total, 1, `${label}: A's status history grew`);
  }

  test('another organization\'s vehicle answers exactly like a missing one, on every :id route', async () => {
    // Vehicle routes; other resources' isolation is tested beside them (api-keys, oauth).
    const routes = ctx.app.routeTable.filter((r) => r.url.includes('/vehicles/:id') && !isPublicByContract(r.url));
    assert.ok(routes.filter((r) => r.method !== 'HEAD').length >= 6, `only ${routes.length} :id routes`);
    const cases: Array<[string, string, string]> = [
      ['B on A\'s vehicle', bKey, aOnly],
      ['A on B\'s vehicle', ctx.adminKey, bOnly],
    ];
    // DELETE last, so a leaking delete cannot hide a leak in the other routes.
    const ordered = [...routes].sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE'));
    for (const route of ordered) {
      const method = route.method as Method;
      for (const [label, key, target] of cases) {
        const name = `${routeName(route)} ${label}`;
        const missing = await ctx.request(method, concreteUrl(route.url, ghost), { key, body: bodyFor(route), query: queryFor(route) });
        const foreign = await ctx.request(method, concreteUrl(route.url, target), { key, body: bodyFor(route), query: queryFor(route) });
        assertProblem(missing, method, 404, 'vehicle-not-found', `${routeName(route)} on a vehicle that exists nowhere`);
        assertProblem(foreign, method, 404, 'vehicle-not-found', name);
        assert.equal(foreign.headers['content-type'], missing.headers['content-type'], `${name}: content-type`);
        if (method !== 'HEAD') {
          const f = foreign.json<Record<string, unknown>>();
          const m = missing.json<Record<string, unknown>>();
          assert.deepEqual(Object.keys(f).sort(), Object.keys(m).sort(), `${name}: problem fields`);
          for (const field of ['type', 'code', 'title', 'status'] as const) {
            assert.equal(f[field], m[field], `${name}: ${field}`);
          }
          assert.equal(
            String(f.detail).replaceAll(target, '<id>'),
            String(m.detail).replaceAll(ghost, '<id>'),
            `${name}: detail reveals more than for a missing vehicle`,
          );
        }
        await assertAIntact(name);
        const bStill = await ctx.request('GET', `/v2/fleet/vehicles/${bOnly}`, { key: bKey });
        assert.equal(bStill.statusCode, 200, `${name}: B's vehicle was touched`);
        assert.equal(bStill.json().status, 'registered', `${name}: B's vehicle status changed`);
      }
    }
  });

  test('B\'s lists never show A\'s vehicles and count only B\'s', async () => {
    for (const url of ['/v2/fleet/vehicles', '/api/v1/fleet']) {
      const res = await ctx.request('GET', url, { key: bKey });
      assert.equal(res.statusCode, 200, describeResponse(res));
      const list = res.json();
      assert.deepEqual(list.vehicles.map((v: { id: string }) => v.id), [bOnly, shared], `${url}: B's vehicles`);
      assert.equal(list.total, 2, `${url}: total`);
      const bus = list.vehicles.find((v: { id: string }) => v.id === shared);
      assert.equal(bus.type, 'bus', `${url}: B's ${shared} is B's own record, not A's`);

      const page = await ctx.request('GET', url, { key: bKey, query: { limit: '1', offset: '1' } });
      assert.equal(page.json().total, 2, `${url}: paged total`);
      assert.deepEqual(page.json().vehicles.map((v: { id: string }) => v.id), [shared]);

      const filtered = await ctx.request('GET', url, { key: bKey, query: { status: 'registered', type: 'van' } });
      assert.deepEqual(filtered.json().vehicles.map((v: { id: string }) => v.id), [bOnly], `${url}: filtered`);
      assert.equal(filtered.json().total, 1);
    }
    // A's list, by contrast, has A's vehicles and none of B's own.
    const a = await ctx.request('GET', '/v2/fleet/vehicles', { query: { limit: '1000' } });
    const aIds: string[] = a.json().vehicles.map((v: { id: string }) => v.id);
    assert.ok(aIds.includes(aOnly) && aIds.includes(shared));
    assert.ok(!aIds.includes(bOnly));
    assert.equal(a.json().vehicles.find((v: { id: string }) => v.id === shared).type, 'van');
  });

  test('B cannot change, delete or read the history of A\'s vehicle', async () => {
    for (const url of [`/v2/fleet/vehicles/${aOnly2}/status`, `/api/v1/vehicles/${aOnly2}/status`]) {
      const res = await ctx.request('PUT', url, { key: bKey, body: { status: 'retired', reason: 'not yours' } });
      assertProblem(res, 'PUT', 404, 'vehicle-not-found', `B PUT ${url}`);
    }
    const del = await ctx.request('DELETE', `/v2/fleet/vehicles/${aOnly2}`, { key: bKey });
    assertProblem(del, 'DELETE', 404, 'vehicle-not-found', 'B DELETE');
    const history = await ctx.request('GET', `/v2/fleet/vehicles/${aOnly2}/status-history`, { key: bKey });
    assertProblem(history, 'GET', 404, 'vehicle-not-found', 'B status-history');

    const a = await ctx.request('GET', `/v2/fleet/vehicles/${aOnly2}`);
    assert.equal(a.statusCode, 200, 'A still reads its vehicle');
    assert.equal(a.json().status, 'registered', 'A\'s status unchanged');
    const v1 = await ctx.request('GET', `/api/v1/vehicles/${aOnly2}`);
    assert.equal(v1.json().status, 'registered');
    const aHistory = await ctx.request('GET', `/v2/fleet/vehicles/${aOnly2}/status-history`);
    assert.equal(aHistory.json().total, 1);
    assert.deepEqual(aHistory.json().history.map((h: { to: string }) => h.to), ['registered']);
  });

  test('vehicles with the same id in two organizations are independent', async () => {
    const bActive = await ctx.request('PUT', `/v2/fleet/vehicles/${shared}/status`, { key: bKey, body: { status: 'active' } });
    assert.equal(bActive.statusCode, 200, describeResponse(bActive));
    assert.equal(bActive.json().status, 'active');
    assert.equal(bActive.json().type, 'bus');
    assert.equal((await ctx.request('GET', `/v2/fleet/vehicles/${shared}`)).json().status, 'registered', 'A unchanged by B');

    const aMaint = await ctx.request('PUT', `/api/v1/vehicles/${shared}/status`, { body: { status: 'maintenance' } });
    assert.equal(aMaint.statusCode, 200, describeResponse(aMaint));
    assert.equal((await ctx.request('GET', `/v2/fleet/vehicles/${shared}`, { key: bKey })).json().status, 'active', 'B unchanged by A');

    const bHistory = (await ctx.request('GET', `/v2/fleet/vehicles/${shared}/status-history`, { key: bKey })).json();
    assert.deepEqual(bHistory.history.map((h: { to: string }) => h.to), ['active', 'registered']);
    const aHistory = (await ctx.request('GET', `/v2/fleet/vehicles/${shared}/status-history`)).json();
    assert.deepEqual(aHistory.history.map((h: { to: string }) => h.to), ['maintenance', 'registered']);

    // A transition valid for B's record but not for A's is judged on each organization's own record.
    const aRetire = await ctx.request('PUT', `/v2/fleet/vehicles/${shared}/status`, { body: { status: 'retired' } });
    assert.equal(aRetire.statusCode, 200);
    const bInactive = await ctx.request('PUT', `/v2/fleet/vehicles/${shared}/status`, { key: bKey, body: { status: 'inactive' } });
    assert.equal(bInactive.statusCode, 200, `B's vehicle is not retired: ${describeResponse(bInactive)}`);

    const bDelete = await ctx.request('DELETE', `/v2/fleet/vehicles/${shared}`, { key: bKey });
    assert.equal(bDelete.statusCode, 204);
    const aStill = await ctx.request('GET', `/v2/fleet/vehicles/${shared}`);
    assert.equal(aStill.statusCode, 200, 'deleting B\'s vehicle left A\'s');
    assert.equal(aStill.json().status, 'retired');
    const bGone = await ctx.request('GET', `/v2/fleet/vehicles/${shared}`, { key: bKey });
    assertProblem(bGone, 'GET', 404, 'vehicle-not-found', 'B\'s deleted vehicle');
  });
});

describe('credentials limited to groups', () => {
  const inside = 'scope-in';
  const outside = 'scope-out';
  const loose = 'scope-loose';
  const ghost = 'scope-nowhere';
  let scopedKey: string;
  let own: string;
  let other: string;

  before(async () => {
    const group = async (name: string) => (await ctx.request('POST', '/v2/groups', { body: { name } })).json<{ id: string }>().id;
    own = await group('scope own');
    other = await group('scope other');
    await ctx.registerVehicle(inside, { groupIds: [own] });
    await ctx.registerVehicle(outside, { groupIds: [other] });
    await ctx.registerVehicle(loose);
    for (const id of [inside, outside, loose]) {
      const sent = await ctx.request('POST', `/v2/telemetry/${id}`, { body: { data: { speed: 10, location: { lat: 52.5, lng: 13.4 } } } });
      assert.equal(sent.statusCode, 202, describeResponse(sent));
    }
    const created = await ctx.request('POST', '/v2/api-keys', {
      body: { name: 'scoped', scopes: SCOPES.filter((scope) => !ORGANIZATION_WIDE.includes(scope)), groupIds: [own] },
    });
    assert.equal(created.statusCode, 201, describeResponse(created));
    assert.deepEqual(created.json().groupIds, [own]);
    scopedKey = created.json().key;
  });

  test('a vehicle outside its groups answers exactly like a missing one, on every route that names a vehicle', async () => {
    const routes = ctx.app.routeTable.filter((r) => vehicleParamOf(r.url) !== undefined && r.method !== 'HEAD');
    assert.ok(routes.length >= 17, `only ${routes.length} vehicle routes`);
    // DELETE last, so a leaking delete cannot hide a leak in the other routes.
    const ordered = [...routes].sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE'));
    const was = (await ctx.request('GET', `/v2/fleet/vehicles/${outside}`)).json();
    for (const route of ordered) {
      const method = route.method as Method;
      const url = (id: string) => concreteUrl(route.url, id).replace(/\/v2\/groups\/[^/]+\//, `/v2/groups/${own}/`);
      const missing = await ctx.request(method, url(ghost), { key: scopedKey, body: bodyFor(route, ghost), query: queryFor(route) });
      assertProblem(missing, method, 404, 'vehicle-not-found', `${routeName(route)} on a vehicle that exists nowhere`);
      for (const target of [outside, loose]) {
        const name = `${routeName(route)} on ${target}`;
        const hidden = await ctx.request(method, url(target), { key: scopedKey, body: bodyFor(route, target), query: queryFor(route) });
        assertProblem(hidden, method, 404, 'vehicle-not-found', name);
        const [h, m] = [hidden.json<Record<string, unknown>>(), missing.json<Record<string, unknown>>()];
        assert.deepEqual(Object.keys(h).sort(), Object.keys(m).sort(), `${name}: problem fields`);
        assert.equal(String(h.detail).replaceAll(target, '<id>'), String(m.detail).replaceAll(ghost, '<id>'), `${name}: detail reveals more than for a missing vehicle`);
      }
      const still = await ctx.request('GET', `/v2/fleet/vehicles/${outside}`);
      assert.equal(still.statusCode, 200, `${routeName(route)}: the hidden vehicle is gone`);
      assert.deepEqual(still.json(), was, `${routeName(route)}: the hidden vehicle changed`);
    }
    // The vehicle inside is there for it.
    assert.equal((await ctx.request('GET', `/v2/fleet/vehicles/${inside}`, { key: scopedKey })).statusCode, 200);
    assert.equal((await ctx.request('GET', `/v2/telemetry/${inside}`, { key: scopedKey })).statusCode, 200);
  });

  test('lists, counts, the feed, devices and groups leave out what it may not see', async () => {
    for (const url of ['/v2/fleet/vehicles', '/api/v1/fleet']) {
      const list = (await ctx.request('GET', url, { key: scopedKey, query: { limit: '1000' } })).json();
      assert.deepEqual(list.vehicles.map((v: { id: string }) => v.id), [inside], url);
      assert.equal(list.total, 1, `${url}: total`);
    }
    const otherGroup = (await ctx.request('GET', '/v2/fleet/vehicles', { key: scopedKey, query: { groupId: other } })).json();
    assert.deepEqual([otherGroup.vehicles, otherGroup.total], [[], 0], 'another group is empty to it');
    const groups = (await ctx.request('GET', '/v2/groups', { key: scopedKey })).json();
    assert.deepEqual([groups.groups.map((g: { id: string }) => g.id), groups.total], [[own], 1]);
    assertProblem(await ctx.request('GET', `/v2/groups/${other}`, { key: scopedKey }), 'GET', 404, 'group-not-found', 'another group');
    const feed = (await ctx.request('GET', '/v2/events', { key: scopedKey, query: { limit: '1000' } })).json();
    assert.ok(feed.events.length > 0);
    assert.deepEqual([...new Set(feed.events.map((e: { vehicleId: string | null }) => e.vehicleId))], [inside], 'the feed: its vehicle\'s events only');
    const all = (await ctx.request('GET', '/v2/events', { query: { limit: '1000' } })).json();
    assert.ok(all.events.some((e: { vehicleId: string | null }) => e.vehicleId === outside), 'the whole organization\'s feed has the others');
    // Many vehicles at once: all or nothing, as for a missing one.
    const batch = await ctx.request('POST', '/v2/telemetry', {
      key: scopedKey, body: { records: [{ vehicleId: inside, data: { speed: 1 } }, { vehicleId: outside, data: { speed: 1 } }] },
    });
    assertProblem(batch, 'POST', 404, 'vehicle-not-found', 'a batch naming a hidden vehicle');
    const stream = await ctx.request('POST', '/v2/telemetry/stream', { key: scopedKey, body: { events: ['location'], vehicleIds: [inside, outside] } });
    assertProblem(stream, 'POST', 404, 'vehicle-not-found', 'a stream naming a hidden vehicle');
    // Devices: its vehicles' only.
    for (const [id, identifier] of [[inside, 'scope-dev-in'], [outside, 'scope-dev-out']] as const) {
      assert.equal((await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier, vehicleId: id } })).statusCode, 201);
    }
    const devices = (await ctx.request('GET', '/v2/devices', { key: scopedKey, query: { limit: '1000' } })).json();
    assert.deepEqual(devices.devices.map((d: { vehicleId: string }) => [...new Set([d.vehicleId])]).flat().filter((v: string) => v !== inside), []);
    assert.ok(devices.devices.some((d: { identifier: string }) => d.identifier === 'scope-dev-in'));
    const outDevice = (await ctx.request('GET', '/v2/devices', { query: { vehicleId: outside } })).json().devices[0];
    assertProblem(await ctx.request('GET', `/v2/devices/${outDevice.id}`, { key: scopedKey }), 'GET', 404, 'device-not-found', 'a hidden vehicle\'s device');
    assertProblem(await ctx.request('DELETE', `/v2/devices/${outDevice.id}`, { key: scopedKey }), 'DELETE', 404, 'device-not-found', 'deleting a hidden vehicle\'s device');
    assert.equal((await ctx.request('GET', `/v2/devices/${outDevice.id}`)).statusCode, 200, 'still there');
  });

  test('organization-wide scopes, groups and registration stay within its groups', async () => {
    const wide = await ctx.request('POST', '/v2/api-keys', { body: { name: 'wide', scopes: ['fleet:read', 'webhooks'], groupIds: [own] } });
    assertProblem(wide, 'POST', 400, 'validation-failed', 'a scoped key with an organization-wide scope');
    assertProblem(await ctx.request('POST', '/v2/api-keys', { body: { name: 'nowhere', scopes: ['fleet:read'], groupIds: ['grp_00000000000000000000'] } }),
      'POST', 404, 'group-not-found', 'a key limited to a group that does not exist');
    for (const url of ['/v2/webhooks', '/v2/api-keys', '/v2/users', '/v2/audit-log', '/v2/alert-rules']) {
      const res = await ctx.request(url === '/v2/alert-rules' ? 'POST' : 'GET', url, { key: scopedKey, body: url === '/v2/alert-rules' ? BODIES[url]!('x') : undefined });
      assertProblem(res, url === '/v2/alert-rules' ? 'POST' : 'GET', 403, 'insufficient-scope', `${url} with a scoped key`);
    }
    assertProblem(await ctx.request('POST', '/v2/groups', { key: scopedKey, body: { name: 'mine' } }), 'POST', 403, 'outside-groups', 'creating a group');
    assertProblem(await ctx.request('POST', `/v2/groups/${own}/vehicles`, { key: scopedKey, body: { vehicleIds: [outside] } }), 'POST', 403, 'outside-groups', 'adding a vehicle');
    // Registration: into its groups (all of them by default), never another.
    assertProblem(await ctx.request('POST', '/v2/fleet/vehicles', { key: scopedKey, body: { vehicleId: 'scope-new-1', type: 'van', groupIds: [other] } }),
      'POST', 403, 'outside-groups', 'registering into another group');
    assertProblem(await ctx.request('POST', '/v2/fleet/vehicles', { key: scopedKey, body: { vehicleId: 'scope-new-1', type: 'van', groupIds: [] } }),
      'POST', 403, 'outside-groups', 'registering into no group');
    const registered = await ctx.request('POST', '/v2/fleet/vehicles', { key: scopedKey, body: { vehicleId: 'scope-new-1', type: 'van' } });
    assert.equal(registered.statusCode, 201, describeResponse(registered));
    assert.deepEqual(registered.json().groupIds, [own]);
    // Its change of a vehicle's groups keeps the groups it cannot see.
    await ctx.request('POST', `/v2/groups/${other}/vehicles`, { body: { vehicleIds: ['scope-new-1'] } });
    const seen = (await ctx.request('GET', '/v2/fleet/vehicles/scope-new-1', { key: scopedKey })).json();
    assert.deepEqual(seen.groupIds, [own], 'only its own groups are shown');
    const patched = await ctx.request('PATCH', '/v2/fleet/vehicles/scope-new-1', { key: scopedKey, body: { name: 'renamed', groupIds: [own] } });
    assert.equal(patched.statusCode, 200, describeResponse(patched));
    assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/scope-new-1')).json().groupIds, [own, other].sort());
    assertProblem(await ctx.request('PATCH', '/v2/fleet/vehicles/scope-new-1', { key: scopedKey, body: { groupIds: [other] } }),
      'PATCH', 403, 'outside-groups', 'moving a vehicle into another group');
    assertProblem(await ctx.request('PATCH', '/v2/fleet/vehicles/scope-new-1', { key: scopedKey, body: { groupIds: [] } }),
      'PATCH', 403, 'outside-groups', 'leaving a vehicle in none of its groups');
  });

  test('a group a credential is limited to cannot be deleted until none is', async () => {
    const group = (await ctx.request('POST', '/v2/groups', { body: { name: 'held' } })).json<{ id: string }>().id;
    const key = (await ctx.request('POST', '/v2/api-keys', { body: { name: 'held', scopes: ['fleet:read'], groupIds: [group] } })).json();
    const invited = await ctx.request('POST', '/v2/users', { body: { email: 'held@example.com', name: 'Held', role: 'viewer', groupIds: [group] } });
    assert.equal(invited.statusCode, 201, describeResponse(invited));
    assert.deepEqual(invited.json().groupIds, [group]);
    assertProblem(await ctx.request('DELETE', `/v2/groups/${group}`), 'DELETE', 409, 'group-in-use', 'a group in use');
    assert.equal((await ctx.request('DELETE', `/v2/api-keys/${key.id}`)).statusCode, 204);
    assertProblem(await ctx.request('DELETE', `/v2/groups/${group}`), 'DELETE', 409, 'group-in-use', 'a group a user is limited to');
    assert.equal((await ctx.request('PATCH', `/v2/users/${invited.json().id}`, { body: { groupIds: null } })).statusCode, 200);
    assert.equal((await ctx.request('DELETE', `/v2/groups/${group}`)).statusCode, 204);
  });
});
