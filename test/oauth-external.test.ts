// Access tokens of an external identity provider (FLEET_OAUTH_ISSUER, _AUDIENCE, _JWKS_URL,
// _ORG_CLAIM): verified only with the JWKS at the configured URL, with the same typ/alg/lifetime
// rules as Fleet's own; the organization comes from the configured claim.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from 'jose';
import { createTestApp, type TestApp } from './helpers/app.ts';
import {
  type CountingServer,
  OAUTH_TEST_ENV,
  assertInvalidToken,
  basic,
  countingServer,
  createClient,
  freePort,
  issueToken,
  postForm,
} from './helpers/oauth.ts';

const ISSUER = 'https://idp.example.test/tenant-1';
const AUDIENCE = 'https://fleet.example.test/api';
const ORG_CLAIM = 'https://fleet.example.test/org';
const IDP_KID = 'idp-key-1';

let ctx: TestApp;
let idp: { privateKey: CryptoKey; publicJwk: JWK };
let idpServer: CountingServer;
let attackerServer: CountingServer;
let otherOrg: { organizationId: string; key: string };

const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

before(async () => {
  const pair = await generateKeyPair('RS256', { extractable: true });
  idp = { privateKey: pair.privateKey, publicJwk: await exportJWK(pair.publicKey) };
  idpServer = await countingServer((req, res) => {
    if (req.url !== '/keys') {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [{ ...idp.publicJwk, kid: IDP_KID, alg: 'RS256', use: 'sig' }] }));
  });
  attackerServer = await countingServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [] }));
  });
  ctx = await createTestApp({
    env: {
      ...OAUTH_TEST_ENV,
      FLEET_OAUTH_ISSUER: ISSUER,
      FLEET_OAUTH_AUDIENCE: AUDIENCE,
      FLEET_OAUTH_JWKS_URL: `${idpServer.url}/keys`,
      FLEET_OAUTH_ORG_CLAIM: ORG_CLAIM,
    },
  });
  otherOrg = await ctx.otherOrganization('External tenant');
});
after(async () => {
  await ctx.close();
  await idpServer.close();
  await attackerServer.close();
});

function idpToken(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key: CryptoKey = idp.privateKey,
): Promise<string> {
  const payload: Record<string, unknown> = {
    iss: ISSUER, aud: AUDIENCE, sub: 'service-account-7', client_id: 'dispatch-app', iat: now(), exp: now() + 300,
    jti: `ext-${Math.random()}`, scope: 'fleet:read', [ORG_CLAIM]: otherOrg.organizationId, ...claims,
  };
  for (const name of Object.keys(payload)) if (payload[name] === undefined) delete payload[name];
  const protectedHeader: Record<string, unknown> = { alg: 'RS256', typ: 'at+jwt', kid: IDP_KID, ...header };
  for (const name of Object.keys(protectedHeader)) if (protectedHeader[name] === undefined) delete protectedHeader[name];
  return new SignJWT(payload).setProtectedHeader(protectedHeader as { alg: string }).sign(key);
}

describe('accepted', () => {
  test('a token of the configured issuer acts in the organization its claim names', async () => {
    await ctx.registerVehicle('a-only');
    await ctx.registerVehicle('b-only', {}, otherOrg.key);
    const token = await idpToken({ scope: 'fleet:read fleet:write made:up' });
    const list = await ctx.request('GET', '/v2/fleet/vehicles', { key: token });
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(list.json().vehicles.map((v: { id: string }) => v.id), ['b-only'], 'organization B\'s vehicles only');

    const changed = await ctx.request('PUT', '/v2/fleet/vehicles/b-only/status', { key: token, body: { status: 'active' } });
    assert.equal(changed.statusCode, 200, changed.body);
    const history = (await ctx.request('GET', '/v2/fleet/vehicles/b-only/status-history', { key: token })).json();
    assert.equal(history.history[0].by, 'ext:dispatch-app', 'recorded as the external client, never as a Fleet credential id');
    assert.ok(idpServer.hits() >= 1, 'the configured JWKS was used');
  });

  test('scopes come from the scope claim; unknown ones are ignored', async () => {
    const readOnly = await idpToken({ scope: 'fleet:read telemetry:admin root' });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: readOnly })).statusCode, 200);
    const denied = await ctx.request('POST', '/v2/fleet/vehicles', { key: readOnly, body: { vehicleId: 'nope', type: 'van' } });
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().code, 'insufficient-scope');
    const none = await idpToken({ scope: undefined });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: none })).statusCode, 403, 'no scope claim: no scopes');
  });

  test('platform rights follow the named organization', async () => {
    const platformAdmin = await idpToken({ scope: 'admin', [ORG_CLAIM]: ctx.organizationId });
    assert.equal((await ctx.request('GET', '/metrics', { key: platformAdmin })).statusCode, 200);
    const tenantAdmin = await idpToken({ scope: 'admin' });
    assert.equal((await ctx.request('GET', '/metrics', { key: tenantAdmin })).statusCode, 403);
  });

  test('Fleet\'s own tokens keep working beside the external issuer\'s; introspection knows only Fleet\'s', async () => {
    const client = await createClient(ctx, ['fleet:read']);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: await issueToken(ctx, client) })).statusCode, 200);
    const external = await idpToken({ [ORG_CLAIM]: ctx.organizationId });
    const res = await postForm(ctx, '/oauth/introspect', { token: external }, { authorization: basic(client.id, client.secret) });
    assert.deepEqual(res.json(), { active: false });
  });
});

describe('refused', () => {
  test('wrong audience, wrong issuer, bad organization claim, wrong typ, expired', async () => {
    const cases: Array<[string, Promise<string>]> = [
      ['wrong aud', idpToken({ aud: 'https://someone-else.example' })],
      ['Fleet\'s own URL as aud', idpToken({ aud: ctx.config.publicUrl })],
      ['wrong iss, same key', idpToken({ iss: 'https://idp.example.test/tenant-2' })],
      ['Fleet as iss, IdP\'s key', idpToken({ iss: ctx.config.publicUrl })],
      ['org claim naming no organization', idpToken({ [ORG_CLAIM]: 'org_doesNotExist' })],
      ['no org claim', idpToken({ [ORG_CLAIM]: undefined })],
      ['org claim not a string', idpToken({ [ORG_CLAIM]: [otherOrg.organizationId] })],
      ['org in fleet_org instead of the configured claim', idpToken({ [ORG_CLAIM]: undefined, fleet_org: otherOrg.organizationId })],
      ['typ JWT', idpToken({}, { typ: 'JWT' })],
      ['no typ', idpToken({}, { typ: undefined })],
      ['expired', idpToken({ iat: now() - 700, exp: now() - 60 })],
      ['no exp', idpToken({ exp: undefined })],
      ['no sub nor client_id', idpToken({ sub: undefined, client_id: undefined })],
    ];
    for (const [label, token] of cases) {
      assertInvalidToken(await ctx.request('GET', '/v2/fleet/vehicles', { key: await token }), label);
    }
  });

  test('forged signatures, and key URLs in the header that are never fetched', async () => {
    const attacker = await generateKeyPair('RS256');
    const [h, p] = (await idpToken()).split('.');
    const hmac = (secret: string) => {
      const input = `${b64({ alg: 'HS256', typ: 'at+jwt', kid: IDP_KID })}.${p}`;
      return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
    };
    const cases: Array<[string, string]> = [
      ['attacker key under the IdP kid', await idpToken({}, {}, attacker.privateKey)],
      ['attacker key, unknown kid', await idpToken({}, { kid: 'attacker' }, attacker.privateKey)],
      ['alg none', `${b64({ alg: 'none', typ: 'at+jwt', kid: IDP_KID })}.${p}.`],
      ['HS256 with the IdP public key', hmac(JSON.stringify(idp.publicJwk))],
      ['signature stripped', `${h}.${p}.`],
      ['jku to the attacker', await idpToken({}, { jku: `${attackerServer.url}/jwks.json` }, attacker.privateKey)],
      ['x5u to the attacker', await idpToken({}, { x5u: `${attackerServer.url}/cert.pem` }, attacker.privateKey)],
      ['jku on an IdP-signed token', await idpToken({}, { jku: `${attackerServer.url}/jwks.json` })],
      ['embedded jwk', await idpToken({}, { jwk: await exportJWK(attacker.publicKey) }, attacker.privateKey)],
    ];
    for (const [label, token] of cases) {
      assertInvalidToken(await ctx.request('GET', '/v2/fleet/vehicles', { key: token }), label);
    }
    assert.equal(attackerServer.hits(), 0, `fetched: ${attackerServer.paths().join(', ')}`);
    assert.deepEqual([...new Set(idpServer.paths())], ['/keys'], 'only the configured JWKS URL was ever fetched');
  });

  test('an unreachable JWKS makes external tokens invalid (401), never a 500', async () => {
    const port = await freePort();
    const offline = await createTestApp({
      env: { ...OAUTH_TEST_ENV, FLEET_OAUTH_ISSUER: ISSUER, FLEET_OAUTH_AUDIENCE: AUDIENCE, FLEET_OAUTH_JWKS_URL: `http://127.0.0.1:${port}/keys`, FLEET_OAUTH_ORG_CLAIM: ORG_CLAIM },
    });
    try {
      assertInvalidToken(await offline.request('GET', '/v2/fleet/vehicles', { key: await idpToken() }), 'JWKS unreachable');
    } finally {
      await offline.close();
    }
  });

  test('without external configuration, such tokens are simply unknown', async () => {
    const plain = await createTestApp({ env: OAUTH_TEST_ENV });
    try {
      assertInvalidToken(await plain.request('GET', '/v2/fleet/vehicles', { key: await idpToken() }), 'no external issuer configured');
    } finally {
      await plain.close();
    }
  });
});
