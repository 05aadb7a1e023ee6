// OAuth 2.0 (docs/API.md "Authentication and scopes"): clients per organization, the client-credentials grant driven by a
// certified client (oauth4webapi) over real HTTP, the token endpoint's errors, revocation,
// introspection, signing-key rotation, the client quota, and secrets that never show up twice.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oauth from 'oauth4webapi';
import { buildApp } from '../src/app.ts';
import { generateApiKey } from '../src/auth/keys.ts';
import { SCOPES } from '../src/auth/scopes.ts';
import { createTestApp, manualClock, type TestApp } from './helpers/app.ts';
import {
  FORM,
  OAUTH_TEST_ENV,
  type TestClient,
  assertInvalidToken,
  basic,
  createClient,
  decodeParts,
  freePort,
  issueToken,
  postForm,
} from './helpers/oauth.ts';
import { request as fetchFleet, startFleet } from './helpers/process.ts';

const insecure = { [oauth.allowInsecureRequests]: true };

describe('over real HTTP with oauth4webapi: discovery, both client authentications, API calls', () => {
  let ctx: TestApp;
  let publicUrl: string;
  let as: oauth.AuthorizationServer;
  let client: TestClient;

  before(async () => {
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    ctx = await createTestApp({ env: { ...OAUTH_TEST_ENV, FLEET_PORT: String(port), FLEET_PUBLIC_URL: publicUrl } });
    await ctx.app.listen({ host: '127.0.0.1', port });
    client = await createClient(ctx, ['fleet:read', 'fleet:write']);
  });
  after(async () => {
    await ctx.close();
  });

  const api = (method: string, path: string, token: string, body?: unknown) =>
    fetch(publicUrl + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  test('discovery: RFC 8414 metadata whose issuer is the public URL, and a JWKS of public keys', async () => {
    const issuer = new URL(publicUrl);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    assert.equal(as.issuer, publicUrl);
    assert.equal(as.token_endpoint, `${publicUrl}/oauth/token`);
    assert.equal(as.jwks_uri, `${publicUrl}/.well-known/jwks.json`);
    assert.equal(as.revocation_endpoint, `${publicUrl}/oauth/revoke`);
    assert.equal(as.introspection_endpoint, `${publicUrl}/oauth/introspect`);
    assert.deepEqual(as.grant_types_supported, ['client_credentials']);
    assert.deepEqual(as.response_types_supported, []);
    assert.deepEqual(as.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
    assert.deepEqual(as.revocation_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
    assert.deepEqual(as.introspection_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
    assert.deepEqual(as.scopes_supported, [...SCOPES]);

    const jwks = await (await fetch(as.jwks_uri)).json() as { keys: Array<Record<string, unknown>> };
    assert.equal(jwks.keys.length, 1);
    const [key] = jwks.keys;
    assert.deepEqual(Object.keys(key!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.equal(key!.alg, 'ES256');
    assert.equal(key!.use, 'sig');
    assert.equal(key!.d, undefined, 'no private part');
  });

  test('client_secret_basic: a token that calls the API, and that any RFC 9068 verifier accepts', async () => {
    const response = await oauth.clientCredentialsGrantRequest(as, { client_id: client.id }, oauth.ClientSecretBasic(client.secret), {}, insecure);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(response.headers.get('pragma'), 'no-cache');
    const result = await oauth.processClientCredentialsResponse(as, { client_id: client.id }, response);
    assert.equal(result.token_type, 'bearer');
    assert.equal(result.expires_in, 900);
    assert.equal(result.scope, 'fleet:read fleet:write');

    const list = await api('GET', '/v2/fleet/vehicles', result.access_token);
    assert.equal(list.status, 200, await list.clone().text());
    const created = await api('POST', '/v2/fleet/vehicles', result.access_token, { vehicleId: 'oauth-van', type: 'van' });
    assert.equal(created.status, 201, await created.clone().text());

    // The token verifies against the published JWKS like any resource server would check it.
    const { payload, protectedHeader } = await jwtVerify(result.access_token, createRemoteJWKSet(new URL(as.jwks_uri!)), {
      issuer: publicUrl, audience: publicUrl, typ: 'at+jwt', algorithms: ['ES256'],
    });
    assert.equal(protectedHeader.typ, 'at+jwt');
    assert.equal(typeof protectedHeader.kid, 'string');
    assert.equal(payload.sub, client.id);
    assert.equal(payload.client_id, client.id);
    assert.equal(payload.fleet_org, ctx.organizationId);
    assert.equal(payload.scope, 'fleet:read fleet:write');
    assert.equal(payload.exp! - payload.iat!, 900);
    assert.match(String(payload.jti), /^[A-Za-z0-9_-]{16,}$/);

    // The status history records the OAuth client as the credential that acted.
    const history = await (await api('GET', '/v2/fleet/vehicles/oauth-van/status-history', result.access_token)).json() as { history: Array<{ by: string }> };
    assert.equal(history.history[0]!.by, client.id);
  });

  test('client_secret_post with scope=fleet:read: reads, but writing answers 403 insufficient_scope', async () => {
    const response = await oauth.clientCredentialsGrantRequest(
      as, { client_id: client.id }, oauth.ClientSecretPost(client.secret), { scope: 'fleet:read' }, insecure,
    );
    const result = await oauth.processClientCredentialsResponse(as, { client_id: client.id }, response);
    assert.equal(result.scope, 'fleet:read');
    assert.equal(decodeParts(result.access_token).payload.scope, 'fleet:read');

    assert.equal((await api('GET', '/v2/fleet/vehicles', result.access_token)).status, 200);
    const denied = await api('POST', '/v2/fleet/vehicles', result.access_token, { vehicleId: 'not-allowed', type: 'van' });
    assert.equal(denied.status, 403);
    assert.match(String(denied.headers.get('www-authenticate')), /error="insufficient_scope"/);
    assert.equal((await denied.json() as { code: string }).code, 'insufficient-scope');
  });

  test('introspection and revocation through oauth4webapi', async () => {
    const c = { client_id: client.id };
    const auth = oauth.ClientSecretBasic(client.secret);
    const token = (await oauth.processClientCredentialsResponse(as, c, await oauth.clientCredentialsGrantRequest(as, c, auth, {}, insecure))).access_token;

    const active = await oauth.processIntrospectionResponse(as, c, await oauth.introspectionRequest(as, c, auth, token, insecure));
    assert.equal(active.active, true);
    assert.equal(active.client_id, client.id);
    assert.equal(active.token_type, 'Bearer');

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, c, auth, token, insecure));
    const refused = await api('GET', '/v2/fleet/vehicles', token);
    assert.equal(refused.status, 401);
    assert.match(String(refused.headers.get('www-authenticate')), /error="invalid_token"/);
    const inactive = await oauth.processIntrospectionResponse(as, c, await oauth.introspectionRequest(as, c, auth, token, insecure));
    assert.deepEqual(inactive, { active: false });
  });

  test('a wrong secret is refused by the certified client as invalid_client', async () => {
    const response = await oauth.clientCredentialsGrantRequest(as, { client_id: client.id }, oauth.ClientSecretBasic('not-the-secret'), {}, insecure);
    assert.equal(response.status, 401);
    assert.equal((await response.clone().json() as { error: string }).error, 'invalid_client');
    // RFC 6749 §5.2: a client that used Basic gets a Basic challenge, which oauth4webapi reports as such.
    await assert.rejects(
      oauth.processClientCredentialsResponse(as, { client_id: client.id }, response),
      (error: unknown) => error instanceof oauth.WWWAuthenticateChallengeError && error.cause[0]?.scheme === 'basic',
    );
  });
});

describe('the token endpoint and its errors', () => {
  let ctx: TestApp;
  let client: TestClient;

  before(async () => {
    ctx = await createTestApp({ env: OAUTH_TEST_ENV });
    client = await createClient(ctx, ['fleet:read', 'telemetry:read']);
  });
  after(async () => {
    await ctx.close();
  });

  function assertOAuthError(res: Awaited<ReturnType<typeof postForm>>, status: number, error: string, label: string) {
    assert.equal(res.statusCode, status, `${label}: ${res.statusCode} ${res.body}`);
    assert.match(String(res.headers['content-type']), /^application\/json/, `${label}: not problem+json`);
    assert.equal(res.headers['cache-control'], 'no-store', `${label}: Cache-Control`);
    assert.equal(res.headers.pragma, 'no-cache', `${label}: Pragma`);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], `${label}: fields`);
    assert.equal(body.error, error, label);
    assert.equal(typeof body.error_description, 'string');
    if (status === 401) assert.equal(res.headers['www-authenticate'], 'Basic realm="fleet"', `${label}: WWW-Authenticate`);
  }

  test('a good request: Bearer token, expires_in, scope, no-store', async () => {
    const res = await postForm(ctx, '/oauth/token', { grant_type: 'client_credentials' }, { authorization: basic(client.id, client.secret) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers.pragma, 'no-cache');
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, 900);
    assert.equal(body.scope, 'fleet:read telemetry:read');
    const { header } = decodeParts(body.access_token);
    assert.equal(header.typ, 'at+jwt');
    assert.equal(header.alg, 'ES256');

    // A content type with parameters, as many clients send it, is the same form body.
    const charset = await postForm(ctx, '/oauth/token', { grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }, {
      'content-type': `${FORM};charset=UTF-8`,
    });
    assert.equal(charset.statusCode, 200, charset.body);
  });

  test('bad client credentials answer 401 invalid_client', async () => {
    const cases: Array<[string, Record<string, string>, Record<string, string>]> = [
      ['wrong secret by Basic', { grant_type: 'client_credentials' }, { authorization: basic(client.id, `${client.secret}x`) }],
      ['wrong secret in the body', { grant_type: 'client_credentials', client_id: client.id, client_secret: 'nope' }, {}],
      ['unknown client', { grant_type: 'client_credentials' }, { authorization: basic('oc_0000000000000000000000', client.secret) }],
      ['no client authentication', { grant_type: 'client_credentials' }, {}],
      ['client_id without a secret', { grant_type: 'client_credentials', client_id: client.id }, {}],
      ['a Bearer header instead', { grant_type: 'client_credentials' }, { authorization: `Bearer ${ctx.adminKey}` }],
      ['Basic without a colon', { grant_type: 'client_credentials' }, { authorization: `Basic ${Buffer.from(client.id).toString('base64')}` }],
      ['an API key as the secret', { grant_type: 'client_credentials' }, { authorization: basic(client.id, ctx.adminKey) }],
    ];
    for (const [label, params, headers] of cases) {
      assertOAuthError(await postForm(ctx, '/oauth/token', params, headers), 401, 'invalid_client', label);
    }
  });

  test('request errors answer 400 with the RFC 6749 code', async () => {
    const auth = { authorization: basic(client.id, client.secret) };
    const cases: Array<[string, Record<string, string> | string, Record<string, string>, string]> = [
      ['unknown grant', { grant_type: 'password', username: 'u', password: 'p' }, auth, 'unsupported_grant_type'],
      ['authorization_code grant', { grant_type: 'authorization_code', code: 'x' }, auth, 'unsupported_grant_type'],
      ['scope beyond the client', { grant_type: 'client_credentials', scope: 'fleet:read fleet:write' }, auth, 'invalid_scope'],
      ['unknown scope', { grant_type: 'client_credentials', scope: 'root' }, auth, 'invalid_scope'],
      ['missing grant_type', { scope: 'fleet:read' }, auth, 'invalid_request'],
      ['empty body', '', auth, 'invalid_request'],
      ['repeated parameter', 'grant_type=client_credentials&grant_type=client_credentials', auth, 'invalid_request'],
      ['Basic and client_secret at once', { grant_type: 'client_credentials', client_secret: client.secret }, auth, 'invalid_request'],
      ['Basic and another client_id', { grant_type: 'client_credentials', client_id: 'oc_1111111111111111111111' }, auth, 'invalid_request'],
    ];
    for (const [label, params, headers, error] of cases) {
      assertOAuthError(await postForm(ctx, '/oauth/token', params, headers), 400, error, label);
    }
    // The same client_id in the body and in Basic is one client, not two methods.
    const same = await postForm(ctx, '/oauth/token', { grant_type: 'client_credentials', client_id: client.id }, auth);
    assert.equal(same.statusCode, 200, same.body);
  });

  test('a JSON body at the token endpoint is invalid_request; a form body anywhere else is still 415', async () => {
    const json = await ctx.app.inject({
      method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json', authorization: basic(client.id, client.secret) },
      payload: JSON.stringify({ grant_type: 'client_credentials' }),
    });
    assertOAuthError(json, 400, 'invalid_request', 'JSON body');

    for (const url of ['/v2/fleet/vehicles', '/v2/oauth-clients', '/api/v1/fleet']) {
      const res = await ctx.request('POST', url, { body: 'vehicleId=x&type=van&name=x', headers: { 'content-type': FORM } });
      assert.equal(res.statusCode, 415, `${url}: ${res.body}`);
      assert.equal(res.json().code, 'unsupported-media-type');
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
    }
  });

  test('a body over the form limit is 413 problem+json; GET on the endpoint is 405', async () => {
    const big = await postForm(ctx, '/oauth/token', `grant_type=client_credentials&pad=${'a'.repeat(70_000)}`);
    assert.equal(big.statusCode, 413, big.body);
    assert.equal(big.json().code, 'payload-too-large');
    const get = await ctx.request('GET', '/oauth/token', { key: null });
    assert.equal(get.statusCode, 405);
    assert.equal(get.headers.allow, 'POST');
  });

  test('the token endpoints share a per-address rate limit (FLEET_TOKEN_RATE_LIMIT_REQUESTS)', async () => {
    const limited = await createTestApp({ env: { FLEET_TOKEN_RATE_LIMIT_REQUESTS: '3' } });
    try {
      const c = await createClient(limited, ['fleet:read']);
      const auth = { authorization: basic(c.id, 'wrong') };
      for (let i = 0; i < 3; i++) assert.equal((await postForm(limited, '/oauth/token', { grant_type: 'client_credentials' }, auth)).statusCode, 401);
      const refused = await postForm(limited, '/oauth/introspect', { token: 'x' }, auth);
      assert.equal(refused.statusCode, 429, refused.body);
      assert.equal(refused.json().code, 'rate-limited');
    } finally {
      await limited.close();
    }
  });
});

describe('OAuth clients: management, isolation, secrets', () => {
  let ctx: TestApp;

  before(async () => {
    ctx = await createTestApp({ env: OAUTH_TEST_ENV });
  });
  after(async () => {
    await ctx.close();
  });

  test('create → 201 with the secret once; list and read never show it; only its SHA-256 is stored', async () => {
    const res = await ctx.request('POST', '/v2/oauth-clients', { body: { name: 'dispatch', scopes: ['fleet:read', 'telemetry:read'] } });
    assert.equal(res.statusCode, 201, res.body);
    const created = res.json();
    assert.deepEqual(Object.keys(created).sort(), ['clientSecret', 'createdAt', 'groupIds', 'id', 'name', 'scopes']);
    assert.match(created.id, /^oc_[0-9A-Za-z]{22}$/);
    assert.match(created.clientSecret, /^[0-9A-Za-z]{43}$/);
    assert.equal(res.headers.location, `/v2/oauth-clients/${created.id}`);
    assert.deepEqual(created.scopes, ['fleet:read', 'telemetry:read']);

    const later = [
      await ctx.request('GET', '/v2/oauth-clients'),
      await ctx.request('GET', `/v2/oauth-clients/${created.id}`),
      await postForm(ctx, '/oauth/token', { grant_type: 'client_credentials' }, { authorization: basic(created.id, created.clientSecret) }),
    ];
    for (const r of later) {
      assert.ok(r.statusCode < 300, r.body);
      assert.ok(!r.body.includes(created.clientSecret), `the secret reappeared: ${r.body}`);
      assert.ok(!JSON.stringify(r.headers).includes(created.clientSecret));
    }
    const list = later[0]!.json();
    const listed = list.oauthClients.find((c: { id: string }) => c.id === created.id);
    assert.deepEqual(listed, { id: created.id, name: 'dispatch', scopes: ['fleet:read', 'telemetry:read'], groupIds: null, createdAt: created.createdAt });
    assert.equal(list.total, list.oauthClients.length);
    assert.deepEqual(later[1]!.json(), listed);

    const db = new DatabaseSync(ctx.file, { readOnly: true });
    try {
      const row = db.prepare('SELECT * FROM oauth_clients WHERE id = ?').get(created.id)!;
      assert.deepEqual(Buffer.from(row.secret_hash as Uint8Array), createHash('sha256').update(created.clientSecret).digest());
      for (const value of Object.values(row)) assert.ok(!String(value).includes(created.clientSecret), 'the secret is stored in clear');
    } finally {
      db.close();
    }
  });

  test('bad bodies answer 400; scopes the creator lacks answer 403; nothing is created', async () => {
    const before = (await ctx.request('GET', '/v2/oauth-clients')).json().total;
    for (const body of [
      { name: 'x', scopes: [] },
      { name: 'x', scopes: ['root'] },
      { name: '', scopes: ['fleet:read'] },
      { name: 'x', scopes: ['fleet:read'], clientSecret: 'mine' },
      { name: 'x', scopes: ['fleet:read'], organizationId: 'org_x' },
      { scopes: ['fleet:read'] },
    ]) {
      const res = await ctx.request('POST', '/v2/oauth-clients', { body });
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
      assert.equal(res.json().code, 'validation-failed');
    }
    const limitedAdmin = await ctx.keyWith(['admin', 'fleet:read']);
    const res = await ctx.request('POST', '/v2/oauth-clients', { key: limitedAdmin, body: { name: 'escalate', scopes: ['fleet:read', 'fleet:write'] } });
    assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.json().code, 'insufficient-scope');
    assert.match(res.json().detail, /fleet:write/);
    assert.ok(await createClient(ctx, ['fleet:read', 'admin'], limitedAdmin), 'a subset is fine');
    assert.equal((await ctx.request('GET', '/v2/oauth-clients')).json().total, before + 1);
  });

  test('delete → 204; the secret and every token of the client stop working at once', async () => {
    const client = await createClient(ctx, ['fleet:read']);
    const token = await issueToken(ctx, client);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: token })).statusCode, 200);

    const del = await ctx.request('DELETE', `/v2/oauth-clients/${client.id}`);
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    assertInvalidToken(await ctx.request('GET', '/v2/fleet/vehicles', { key: token }), 'token of a deleted client');
    const again = await postForm(ctx, '/oauth/token', { grant_type: 'client_credentials' }, { authorization: basic(client.id, client.secret) });
    assert.equal(again.statusCode, 401);
    assert.equal(again.json().error, 'invalid_client');
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await ctx.request(method, `/v2/oauth-clients/${client.id}`);
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().code, 'oauth-client-not-found');
    }
  });

  test('another organization\'s client answers exactly like a missing one, and is left intact', async () => {
    const mine = await createClient(ctx, ['fleet:read']);
    const other = await ctx.otherOrganization('OAuth outsider');
    const ghost = 'oc_GhostGhostGhostGhost00';
    const theirs = await createClient(ctx, ['fleet:read'], other.key);

    const list = (await ctx.request('GET', '/v2/oauth-clients', { key: other.key })).json();
    assert.deepEqual(list.oauthClients.map((c: { id: string }) => c.id), [theirs.id], 'B sees only its own client');
    assert.equal(list.total, 1);

    for (const method of ['GET', 'DELETE'] as const) {
      const foreign = await ctx.request(method, `/v2/oauth-clients/${mine.id}`, { key: other.key });
      const missing = await ctx.request(method, `/v2/oauth-clients/${ghost}`, { key: other.key });
      assert.equal(foreign.statusCode, 404, foreign.body);
      const f = foreign.json();
      const m = missing.json();
      assert.equal(f.code, m.code);
      assert.equal(String(f.detail).replace(mine.id, '<id>'), String(m.detail).replace(ghost, '<id>'));
      assert.deepEqual(Object.keys(f).sort(), Object.keys(m).sort());
    }
    // Still there, still working.
    assert.equal((await ctx.request('GET', `/v2/oauth-clients/${mine.id}`)).statusCode, 200);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: await issueToken(ctx, mine) })).statusCode, 200);
    // And B's token sees B's organization only.
    await ctx.registerVehicle('only-in-a');
    const bList = (await ctx.request('GET', '/v2/fleet/vehicles', { key: await issueToken(ctx, theirs) })).json();
    assert.equal(bList.total, 0);
  });

  test('rotating the signing key needs admin of the platform organization', async () => {
    const other = await ctx.otherOrganization('Rotation outsider');
    const res = await ctx.request('POST', '/v2/oauth/signing-keys', { key: other.key });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'insufficient-scope');
    const readOnly = await ctx.keyWith(['fleet:read']);
    assert.equal((await ctx.request('POST', '/v2/oauth/signing-keys', { key: readOnly })).statusCode, 403);
  });
});

describe('the OAuth client quota', () => {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ env: { ...OAUTH_TEST_ENV, FLEET_QUOTA_OAUTH_CLIENTS: '2' } });
  });
  after(async () => {
    await ctx.close();
  });

  test('FLEET_QUOTA_OAUTH_CLIENTS=2: the third answers 403 quota-exceeded and creates nothing', async () => {
    const first = await createClient(ctx, ['fleet:read']);
    await createClient(ctx, ['fleet:read']);
    const third = await ctx.request('POST', '/v2/oauth-clients', { body: { name: 'one too many', scopes: ['fleet:read'] } });
    assert.equal(third.statusCode, 403, third.body);
    assert.equal(third.json().code, 'quota-exceeded');
    assert.match(third.json().detail, /2 OAuth clients/);
    const list = (await ctx.request('GET', '/v2/oauth-clients')).json();
    assert.equal(list.total, 2);
    assert.ok(!list.oauthClients.some((c: { name: string }) => c.name === 'one too many'));

    // Concurrent creations cannot overshoot: count and insert are one transaction.
    const other = await ctx.otherOrganization('Quota racer');
    const raced = await Promise.all(Array.from({ length: 6 }, (_, i) =>
      ctx.request('POST', '/v2/oauth-clients', { key: other.key, body: { name: `race ${i}`, scopes: ['fleet:read'] } })));
    assert.equal(raced.filter((r) => r.statusCode === 201).length, 2);
    assert.equal(raced.filter((r) => r.statusCode === 403).length, 4);

    // Deleting one frees its place.
    assert.equal((await ctx.request('DELETE', `/v2/oauth-clients/${first.id}`)).statusCode, 204);
    await createClient(ctx, ['fleet:read']);
  });
});

describe('revocation and introspection', () => {
  let ctx: TestApp;
  let client: TestClient;
  let sibling: TestClient;
  let foreigner: TestClient;

  before(async () => {
    ctx = await createTestApp({ env: OAUTH_TEST_ENV });
    client = await createClient(ctx, ['fleet:read', 'fleet:write']);
    sibling = await createClient(ctx, ['fleet:read']);
    foreigner = await createClient(ctx, ['fleet:read'], (await ctx.otherOrganization('Introspection outsider')).key);
  });
  after(async () => {
    await ctx.close();
  });

  const introspect = async (by: TestClient, token: string) => {
    const res = await postForm(ctx, '/oauth/introspect', { token }, { authorization: basic(by.id, by.secret) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    return res.json();
  };

  test('a live token of the organization is active, with its claims', async () => {
    const token = await issueToken(ctx, client, 'fleet:read');
    const { payload } = decodeParts(token);
    const body = await introspect(client, token);
    assert.deepEqual(body, {
      active: true, scope: 'fleet:read', client_id: client.id, sub: client.id, exp: payload.exp, iat: payload.iat,
      iss: ctx.config.publicUrl, aud: ctx.config.publicUrl, jti: payload.jti, token_type: 'Bearer',
    });
    // Another client of the same organization may ask too (client_secret_post this time).
    const bySibling = await postForm(ctx, '/oauth/introspect', { token, client_id: sibling.id, client_secret: sibling.secret });
    assert.equal(bySibling.json().active, true);
  });

  test('inactive: another organization\'s client asking, garbage, an API key, a deleted client\'s token', async () => {
    const token = await issueToken(ctx, client);
    assert.deepEqual(await introspect(foreigner, token), { active: false });
    assert.deepEqual(await introspect(client, 'not-a-token'), { active: false });
    assert.deepEqual(await introspect(client, ctx.adminKey), { active: false });
    assert.deepEqual(await introspect(client, `${token.slice(0, -4)}AAAA`), { active: false });

    const doomed = await createClient(ctx, ['fleet:read']);
    const doomedToken = await issueToken(ctx, doomed);
    assert.equal((await introspect(client, doomedToken)).active, true);
    assert.equal((await ctx.request('DELETE', `/v2/oauth-clients/${doomed.id}`)).statusCode, 204);
    assert.deepEqual(await introspect(client, doomedToken), { active: false });
  });

  test('introspection and revocation need client authentication', async () => {
    const token = await issueToken(ctx, client);
    for (const url of ['/oauth/introspect', '/oauth/revoke']) {
      const attempts: Array<Record<string, string>> = [{}, { authorization: basic(client.id, 'wrong') }, { authorization: `Bearer ${token}` }];
      for (const headers of attempts) {
        const res = await postForm(ctx, url, { token }, headers);
        assert.equal(res.statusCode, 401, `${url}: ${res.body}`);
        assert.equal(res.json().error, 'invalid_client');
        assert.equal(res.headers['www-authenticate'], 'Basic realm="fleet"');
        assert.equal(res.headers['cache-control'], 'no-store');
      }
      const missing = await postForm(ctx, url, {}, { authorization: basic(client.id, client.secret) });
      assert.equal(missing.statusCode, 400);
      assert.equal(missing.json().error, 'invalid_request');
    }
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: token })).statusCode, 200, 'refused revocations revoked nothing');
  });

  test('revoking: 200 always; only the client\'s own token is revoked, at once', async () => {
    const token = await issueToken(ctx, client);
    const other = await issueToken(ctx, client);

    // Another client, even of the same organization, cannot revoke it (RFC 7009 §2.1); still 200.
    for (const by of [sibling, foreigner]) {
      const res = await postForm(ctx, '/oauth/revoke', { token }, { authorization: basic(by.id, by.secret) });
      assert.equal(res.statusCode, 200);
      assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: token })).statusCode, 200);
    }

    const res = await postForm(ctx, '/oauth/revoke', { token, token_type_hint: 'access_token' }, { authorization: basic(client.id, client.secret) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.body, '');
    assert.equal(res.headers['cache-control'], 'no-store');
    assertInvalidToken(await ctx.request('GET', '/v2/fleet/vehicles', { key: token }), 'revoked token');
    assert.deepEqual(await introspect(client, token), { active: false });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: other })).statusCode, 200, 'only that token');

    for (const junk of ['junk', ctx.adminKey, token, `${other}x`]) {
      const again = await postForm(ctx, '/oauth/revoke', { token: junk }, { authorization: basic(client.id, client.secret) });
      assert.equal(again.statusCode, 200, `revoking ${junk.slice(0, 10)}…: ${again.body}`);
    }
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: ctx.adminKey })).statusCode, 200, 'an API key is not revoked this way');
  });
});

describe('signing-key rotation', () => {
  const clock = manualClock();
  let ctx: TestApp;
  let client: TestClient;

  before(async () => {
    ctx = await createTestApp({ clock, env: OAUTH_TEST_ENV });
    client = await createClient(ctx, ['fleet:read']);
  });
  after(async () => {
    await ctx.close();
  });

  const kids = async () => (await ctx.request('GET', '/.well-known/jwks.json', { key: null })).json().keys.map((k: { kid: string }) => k.kid);
  const status = async (token: string) => (await ctx.request('GET', '/v2/fleet/vehicles', { key: token })).statusCode;

  test('new tokens carry the new kid; old ones verify until they expire; then the old key leaves the JWKS', async () => {
    const oldToken = await issueToken(ctx, client);
    const oldKid = decodeParts(oldToken).header.kid;
    assert.deepEqual(await kids(), [oldKid]);

    const rotated = await ctx.request('POST', '/v2/oauth/signing-keys');
    assert.equal(rotated.statusCode, 201, rotated.body);
    const { kid: newKid, createdAt } = rotated.json();
    assert.notEqual(newKid, oldKid);
    assert.equal(createdAt, new Date(clock.now()).toISOString());

    const newToken = await issueToken(ctx, client);
    assert.equal(decodeParts(newToken).header.kid, newKid);
    assert.deepEqual(await kids(), [newKid, oldKid], 'both published, newest first');
    assert.equal(await status(oldToken), 200, 'a token of the retired key still verifies');
    assert.equal(await status(newToken), 200);

    clock.advance(600_000);
    const laterToken = await issueToken(ctx, client);
    assert.equal(await status(oldToken), 200, 'still within its 900 s');
    assert.deepEqual(await kids(), [newKid, oldKid]);

    clock.advance(400_000); // 1000 s after rotation: past the TTL and the grace minute
    assert.equal(await status(oldToken), 401, 'expired');
    assert.deepEqual(await kids(), [newKid], 'the retired key is no longer published');
    assert.equal(await status(laterToken), 200);

    // The next rotation deletes the long-retired key from the store.
    const again = await ctx.request('POST', '/v2/oauth/signing-keys');
    assert.equal(again.statusCode, 201);
    const stored = (await ctx.stores.oauth.listSigningKeys()).map((k) => k.kid);
    assert.ok(!stored.includes(oldKid as string), 'dropped from the store');
    assert.deepEqual(stored.sort(), [newKid, again.json().kid].sort());
    assert.equal(await status(laterToken), 200);
  });

  test('a second app on the same store signs and verifies with the same keys', async () => {
    const twin = await buildApp({ config: ctx.config, stores: ctx.stores, clock });
    try {
      const token = await issueToken(ctx, client);
      const res = await twin.inject({ method: 'GET', url: '/v2/fleet/vehicles', headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.statusCode, 200, res.body);
      const jwks = (await twin.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
      assert.deepEqual(jwks.keys.map((k: { kid: string }) => k.kid), await kids());
    } finally {
      await twin.close();
    }
  });
});

describe('secrets never reach the logs (a real process at log level trace)', () => {
  test('the client secret and the access token appear nowhere in stdout or stderr', async (t) => {
    const adminKey = generateApiKey();
    const fleet = await startFleet(t, { env: { FLEET_LOG_LEVEL: 'trace', FLEET_ADMIN_KEY: adminKey, FLEET_DATABASE_URL: 'sqlite:./fleet.db' } });
    const created = await fetchFleet(fleet, 'POST', '/v2/oauth-clients', { key: adminKey, body: { name: 'logged?', scopes: ['fleet:read'] } });
    assert.equal(created.status, 201);
    const { id, clientSecret } = await created.json() as { id: string; clientSecret: string };

    const form = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${fleet.url}/oauth/token`, {
        method: 'POST', headers: { 'content-type': FORM, ...headers }, body: new URLSearchParams(body), signal: AbortSignal.timeout(5_000),
      });
    const byBasic = await form({ grant_type: 'client_credentials' }, { authorization: basic(id, clientSecret) });
    assert.equal(byBasic.status, 200);
    const { access_token: token } = await byBasic.json() as { access_token: string };
    const byPost = await form({ grant_type: 'client_credentials', client_id: id, client_secret: clientSecret });
    assert.equal(byPost.status, 200);
    const { access_token: token2 } = await byPost.json() as { access_token: string };
    assert.equal((await form({ grant_type: 'client_credentials', client_id: id, client_secret: `${clientSecret}x` })).status, 401);
    assert.equal((await fetchFleet(fleet, 'GET', '/v2/fleet/vehicles', { key: token })).status, 200);
    assert.equal((await fetchFleet(fleet, 'GET', '/v2/oauth-clients', { key: token })).status, 403);
    const introspected = await fetch(`${fleet.url}/oauth/introspect`, {
      method: 'POST', headers: { 'content-type': FORM, authorization: basic(id, clientSecret) }, body: new URLSearchParams({ token: token2 }),
    });
    assert.equal(introspected.status, 200);
    const revoked = await fetch(`${fleet.url}/oauth/revoke`, {
      method: 'POST', headers: { 'content-type': FORM, authorization: basic(id, clientSecret) }, body: new URLSearchParams({ token }),
    });
    assert.equal(revoked.status, 200);
    assert.equal((await fetchFleet(fleet, 'GET', '/v2/fleet/vehicles', { key: token })).status, 401);

    await fleet.stop();
    const output = fleet.stdout() + fleet.stderr();
    assert.ok(fleet.logs().length > 10, 'trace logging produced output');
    assert.ok(output.includes('/oauth/token'), 'the requests were logged');
    for (const [what, secret] of [['client secret', clientSecret], ['access token', token], ['second access token', token2], ['admin key', adminKey]] as const) {
      assert.ok(!output.includes(secret), `the ${what} is in the logs`);
      // Nor any recognisable part of it (a JWT's signature, say).
      assert.ok(!output.includes(secret.slice(-20)), `the end of the ${what} is in the logs`);
    }
  });
});

describe('a store that cannot answer', () => {
  test('is a 500 on the token endpoint and for a bearer JWT, never a 401 that blames the token', async () => {
    const broken = await createTestApp({ env: OAUTH_TEST_ENV });
    try {
      const client = await createClient(broken, ['fleet:read']);
      const token = await issueToken(broken, client);
      await broken.stores.close();
      const api = await broken.request('GET', '/v2/fleet/vehicles', { key: token });
      assert.equal(api.statusCode, 500, api.body);
      assert.equal(api.json().code, 'internal-error');
      const issue = await postForm(broken, '/oauth/token', { grant_type: 'client_credentials' }, { authorization: basic(client.id, client.secret) });
      assert.equal(issue.statusCode, 500, issue.body);
      assert.match(String(issue.headers['content-type']), /^application\/problem\+json/);
      assert.ok(!issue.body.includes(client.secret));
    } finally {
      await broken.close();
    }
  });
});
