// API key management, organizations and quotas (docs/API.md "Authentication and scopes", "Rate limits"), through the HTTP stack.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isWellFormedApiKey } from '../src/auth/keys.ts';
import { SCOPES, createTestApp, manualClock, type TestApp } from './helpers/app.ts';
import { captureLogs } from './helpers/logs.ts';

let ctx: TestApp;
const clock = manualClock();
const logs = captureLogs('trace');

before(async () => {
  ctx = await createTestApp({ clock, logger: logs.logger });
});
after(() => ctx.close());

async function createKey(body: Record<string, unknown>, key?: string) {
  return ctx.request('POST', '/v2/api-keys', { body, key });
}

describe('creating keys', () => {
  test('answers 201 with the secret once, and the key works for its scopes only', async () => {
    const res = await createKey({ name: 'gateway', scopes: ['fleet:read'] });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.ok(isWellFormedApiKey(body.key), body.key);
    assert.match(body.id, /^key_/);
    assert.equal(res.headers.location, `/v2/api-keys/${body.id}`);
    assert.equal(body.prefix, body.key.slice(0, 14));
    assert.deepEqual(body.scopes, ['fleet:read']);
    assert.equal(body.lastUsedAt, null);
    assert.equal(body.expiresAt, null);

    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: body.key })).statusCode, 200);
    const denied = await ctx.request('POST', '/v2/fleet/vehicles', { key: body.key, body: { vehicleId: 'k-1', type: 'van' } });
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().code, 'insufficient-scope');
  });

  test('a key cannot mint a key with more scopes than it has', async () => {
    const limited = await ctx.keyWith(['admin', 'fleet:read']);
    const before = (await ctx.request('GET', '/v2/api-keys?limit=1000')).json().total;
    const res = await createKey({ name: 'escalation', scopes: ['fleet:read', 'fleet:write'] }, limited);
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'insufficient-scope');
    assert.match(res.json().detail, /fleet:write/);
    assert.equal((await ctx.request('GET', '/v2/api-keys?limit=1000')).json().total, before);
    assert.equal((await createKey({ name: 'subset', scopes: ['fleet:read'] }, limited)).statusCode, 201);
  });

  for (const [name, body] of [
    ['no scopes', { name: 'x', scopes: [] }],
    ['an unknown scope', { name: 'x', scopes: ['root'] }],
    ['a repeated scope', { name: 'x', scopes: ['admin', 'admin'] }],
    ['an empty name', { name: '', scopes: ['admin'] }],
    ['an unknown field', { name: 'x', scopes: ['admin'], secret: 'mine' }],
    ['a malformed expiry', { name: 'x', scopes: ['admin'], expiresAt: 'tomorrow' }],
  ] as const) {
    test(`refuses ${name} with 400`, async () => {
      const res = await createKey(body);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'validation-failed');
    });
  }

  test('an expiry in the past is refused; a key stops working when it expires', async () => {
    const past = await createKey({ name: 'late', scopes: ['fleet:read'], expiresAt: new Date(clock.now() - 1000).toISOString() });
    assert.equal(past.statusCode, 400);
    assert.equal(past.json().errors[0].path, '/expiresAt');

    const expiresAt = new Date(clock.now() + 60_000).toISOString();
    const res = await createKey({ name: 'short-lived', scopes: ['fleet:read'], expiresAt });
    assert.equal(res.statusCode, 201);
    assert.equal(res.json().expiresAt, expiresAt);
    const { key } = res.json();
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key })).statusCode, 200);
    clock.advance(60_000);
    const refused = await ctx.request('GET', '/v2/fleet/vehicles', { key });
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.json().code, 'invalid-token');
  });
});

describe('listing and reading keys', () => {
  test('never shows a secret; lastUsedAt follows use', async () => {
    const created = (await createKey({ name: 'listed', scopes: ['fleet:read'] })).json();
    const list = await ctx.request('GET', '/v2/api-keys?limit=1000');
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(created.key), 'the secret is in the listing');
    const listed = list.json().apiKeys.find((k: { id: string }) => k.id === created.id);
    assert.deepEqual(Object.keys(listed).sort(), ['createdAt', 'expiresAt', 'groupIds', 'id', 'lastUsedAt', 'name', 'prefix', 'scopes']);
    assert.equal(listed.lastUsedAt, null);

    await ctx.request('GET', '/v2/fleet/vehicles', { key: created.key });
    const one = await ctx.request('GET', `/v2/api-keys/${created.id}`);
    assert.equal(one.statusCode, 200);
    assert.ok(!one.body.includes(created.key));
    assert.equal(one.json().lastUsedAt, new Date(clock.now()).toISOString());
  });

  test('pages, oldest first, with total', async () => {
    const all = (await ctx.request('GET', '/v2/api-keys?limit=1000')).json();
    const page = (await ctx.request('GET', '/v2/api-keys?limit=2&offset=1')).json();
    assert.equal(page.total, all.total);
    assert.deepEqual(page.apiKeys, all.apiKeys.slice(1, 3));
    assert.equal((await ctx.request('GET', '/v2/api-keys?limit=0')).statusCode, 400);
  });

  test('another organization\'s keys are invisible', async () => {
    const other = await ctx.otherOrganization('Key neighbours');
    const mine = (await createKey({ name: 'private', scopes: ['fleet:read'] })).json();
    const theirList = (await ctx.request('GET', '/v2/api-keys?limit=1000', { key: other.key })).json();
    assert.equal(theirList.total, 1);
    assert.ok(!theirList.apiKeys.some((k: { id: string }) => k.id === mine.id));
    assert.equal((await ctx.request('GET', `/v2/api-keys/${mine.id}`, { key: other.key })).json().code, 'api-key-not-found');
    const revoke = await ctx.request('DELETE', `/v2/api-keys/${mine.id}`, { key: other.key });
    assert.equal(revoke.statusCode, 404);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: mine.key })).statusCode, 200);
  });
});

describe('revoking keys', () => {
  test('the very next request with a revoked key is refused', async () => {
    const created = (await createKey({ name: 'doomed', scopes: ['fleet:read'] })).json();
    // Use it first, so the resolved key is cached: revocation must still take effect at once.
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: created.key })).statusCode, 200);
    const res = await ctx.request('DELETE', `/v2/api-keys/${created.id}`);
    assert.equal(res.statusCode, 204);
    const refused = await ctx.request('GET', '/v2/fleet/vehicles', { key: created.key });
    assert.equal(refused.statusCode, 401);
    assert.match(String(refused.headers['www-authenticate']), /error="invalid_token"/);
    assert.equal((await ctx.request('DELETE', `/v2/api-keys/${created.id}`)).statusCode, 404);
    assert.equal((await ctx.request('GET', `/v2/api-keys/${created.id}`)).statusCode, 404);
    const list = (await ctx.request('GET', '/v2/api-keys?limit=1000')).json();
    assert.ok(!list.apiKeys.some((k: { id: string }) => k.id === created.id));
  });

  test('a key can revoke itself', async () => {
    const created = (await createKey({ name: 'self', scopes: ['admin'] })).json();
    assert.equal((await ctx.request('DELETE', `/v2/api-keys/${created.id}`, { key: created.key })).statusCode, 204);
    assert.equal((await ctx.request('GET', '/v2/api-keys', { key: created.key })).statusCode, 401);
  });
});

describe('organizations', () => {
  test('the platform admin creates an organization whose admin key works there only', async () => {
    await ctx.registerVehicle('platform-van');
    const res = await ctx.request('POST', '/v2/organizations', { body: { name: 'Northside Deliveries' } });
    assert.equal(res.statusCode, 201, res.body);
    const org = res.json();
    assert.match(org.id, /^org_/);
    assert.equal(org.platform, false);
    assert.equal(res.headers.location, `/v2/organizations/${org.id}`);
    assert.ok(isWellFormedApiKey(org.adminKey.key));
    assert.deepEqual([...org.adminKey.scopes].sort(), [...SCOPES].sort());

    const theirs = await ctx.request('GET', '/v2/fleet/vehicles', { key: org.adminKey.key });
    assert.equal(theirs.statusCode, 200);
    assert.equal(theirs.json().total, 0);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/platform-van', { key: org.adminKey.key })).statusCode, 404);

    const read = await ctx.request('GET', `/v2/organizations/${org.id}`);
    assert.deepEqual(read.json(), { id: org.id, name: 'Northside Deliveries', platform: false, createdAt: org.createdAt });
    const list = (await ctx.request('GET', '/v2/organizations?limit=1000')).json();
    assert.ok(list.organizations.some((o: { id: string }) => o.id === org.id));
    assert.equal(list.organizations[0].platform, true);
    assert.equal((await ctx.request('GET', '/v2/organizations/org_nope')).json().code, 'organization-not-found');
  });

  test('nobody else can see or create organizations', async () => {
    const other = await ctx.otherOrganization('Curious tenant');
    for (const [method, url, body] of [
      ['POST', '/v2/organizations', { name: 'Mine now' }],
      ['GET', '/v2/organizations', undefined],
      ['GET', `/v2/organizations/${ctx.organizationId}`, undefined],
    ] as const) {
      const res = await ctx.request(method, url, { key: other.key, ...(body === undefined ? {} : { body }) });
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.equal(res.json().code, 'insufficient-scope');
    }
  });
});

describe('quotas', () => {
  let small: TestApp;
  before(async () => {
    small = await createTestApp({ env: { FLEET_QUOTA_API_KEYS: '3', FLEET_QUOTA_VEHICLES: '2' } });
  });
  after(() => small.close());

  test('API keys: past the quota 403 quota-exceeded and nothing created; revoking frees a place', async () => {
    const make = () => small.request('POST', '/v2/api-keys', { body: { name: 'q', scopes: ['fleet:read'] } });
    const first = await make();
    assert.equal(first.statusCode, 201);
    assert.equal((await make()).statusCode, 201);
    const over = await make();
    assert.equal(over.statusCode, 403);
    assert.equal(over.json().code, 'quota-exceeded');
    assert.equal((await small.request('GET', '/v2/api-keys')).json().total, 3);
    await small.request('DELETE', `/v2/api-keys/${first.json().id}`);
    assert.equal((await make()).statusCode, 201);
  });

  test('vehicles: past the quota 403 quota-exceeded and nothing stored; a duplicate is still 409', async () => {
    await small.registerVehicle('q-1');
    await small.registerVehicle('q-2');
    const over = await small.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'q-3', type: 'van' } });
    assert.equal(over.statusCode, 403);
    assert.equal(over.json().code, 'quota-exceeded');
    assert.equal((await small.request('GET', '/v2/fleet/vehicles/q-3')).statusCode, 404);
    assert.equal((await small.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'q-1', type: 'van' } })).statusCode, 409);
    await small.request('DELETE', '/v2/fleet/vehicles/q-1');
    assert.equal((await small.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'q-3', type: 'van' } })).statusCode, 201);
  });

  test('quotas are per organization', async () => {
    const other = await small.otherOrganization('Quota neighbour');
    const res = await small.request('POST', '/v2/fleet/vehicles', { key: other.key, body: { vehicleId: 'q-9', type: 'van' } });
    assert.equal(res.statusCode, 201);
  });
});

describe('secrets', () => {
  test('no key secret appears in the logs, even at trace level', async () => {
    const created = (await createKey({ name: 'quiet', scopes: ['fleet:read'] })).json();
    await ctx.request('GET', '/v2/fleet/vehicles', { key: created.key });
    await ctx.request('GET', '/v2/fleet/vehicles', { key: `${created.key}x` });
    assert.ok(logs.text().length > 0, 'the capturing logger received nothing');
    assert.ok(!logs.text().includes(created.key), 'a key secret was logged');
    assert.ok(!logs.text().includes(ctx.adminKey), 'the admin key was logged');
  });
});
