// Forged and tampered access tokens: each is answered 401 invalid_token, and no URL a token names
// is ever fetched. Many are signed with Fleet's real private key (read from the store), so the
// only thing wrong with them is the one thing each case changes.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  type CryptoKey,
  type JWK,
  SignJWT,
  calculateJwkThumbprint,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  importJWK,
} from 'jose';
import { createTestApp, type TestApp } from './helpers/app.ts';
import {
  type CountingServer,
  OAUTH_TEST_ENV,
  type TestClient,
  assertInvalidToken,
  basic,
  countingServer,
  createClient,
  decodeParts,
  issueToken,
  postForm,
} from './helpers/oauth.ts';

let ctx: TestApp;
let client: TestClient;
let realToken: string;
let claims: Record<string, unknown>;
let fleetKid: string;
let fleetPrivate: CryptoKey;
let fleetPublicJwk: JWK;
let attacker: { privateKey: CryptoKey; publicJwk: JWK; kid: string };
let keyServer: CountingServer;

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

before(async () => {
  ctx = await createTestApp({ env: OAUTH_TEST_ENV });
  client = await createClient(ctx, ['fleet:read']);
  realToken = await issueToken(ctx, client);
  claims = decodeParts(realToken).payload;
  const [stored] = await ctx.stores.oauth.listSigningKeys();
  assert.ok(stored);
  fleetKid = stored.kid;
  fleetPrivate = (await importJWK(JSON.parse(stored.privateJwk) as JWK, 'ES256')) as CryptoKey;
  fleetPublicJwk = (await ctx.request('GET', '/.well-known/jwks.json', { key: null })).json().keys[0];

  const pair = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = await exportJWK(pair.publicKey);
  attacker = { privateKey: pair.privateKey, publicJwk, kid: await calculateJwkThumbprint(publicJwk) };
  // The attacker's key server: would hand out the attacker's key to anyone who asked.
  keyServer = await countingServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [{ ...attacker.publicJwk, kid: attacker.kid, alg: 'ES256', use: 'sig' }] }));
  });
});
after(async () => {
  await keyServer.close();
  await ctx.close();
});

/** Signs `payload` with `key` under `header` (alg ES256 unless the header says otherwise). */
function sign(payload: Record<string, unknown>, header: Record<string, unknown>, key: CryptoKey): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg: 'ES256', ...header }).sign(key);
}

const fleetHeader = () => ({ alg: 'ES256', typ: 'at+jwt', kid: fleetKid });
const fresh = (extra: Record<string, unknown> = {}) => ({ ...claims, iat: now(), exp: now() + 600, jti: `forged-${Math.random()}`, ...extra });

function hs256(header: Record<string, unknown>, payload: Record<string, unknown>, secret: string | Buffer): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

async function assertRefused(token: string, label: string) {
  for (const url of ['/v2/fleet/vehicles', '/api/v1/fleet']) {
    assertInvalidToken(await ctx.request('GET', url, { key: token }), `${label} on ${url}`);
  }
  const introspected = await postForm(ctx, '/oauth/introspect', { token }, { authorization: basic(client.id, client.secret) });
  assert.deepEqual(introspected.json(), { active: false }, `${label}: introspection`);
}

test('the genuine token is accepted (the attacks below differ from it in one way each)', async () => {
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: realToken })).statusCode, 200);
  // And one re-signed here with Fleet's key and the real claims is accepted too: the harness is sound.
  const resigned = await sign(fresh(), fleetHeader(), fleetPrivate);
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: resigned })).statusCode, 200);
});

test('alg none, and a stripped signature', async () => {
  const [h, p] = realToken.split('.');
  await assertRefused(`${b64({ alg: 'none', typ: 'at+jwt', kid: fleetKid })}.${p}.`, 'alg none');
  await assertRefused(`${b64({ alg: 'none', typ: 'at+jwt' })}.${p}.`, 'alg none without kid');
  await assertRefused(`${b64({ alg: 'None', typ: 'at+jwt', kid: fleetKid })}.${p}.`, 'alg None');
  await assertRefused(`${h}.${p}.`, 'signature stripped');
});

test('HS256 keyed with Fleet\'s public key (JWK and PEM forms)', async () => {
  const publicKey = await importJWK(fleetPublicJwk, 'ES256');
  const pem = await exportSPKI(publicKey as CryptoKey);
  const header = { alg: 'HS256', typ: 'at+jwt', kid: fleetKid };
  for (const [label, secret] of [
    ['JWK JSON', JSON.stringify(fleetPublicJwk)],
    ['JWK x', Buffer.from(String(fleetPublicJwk.x), 'base64url')],
    ['SPKI PEM', pem],
  ] as const) {
    await assertRefused(hs256(header, fresh(), secret), `HS256 with the public key as ${label}`);
  }
});

test('signed with Fleet\'s own key, but wrong typ, iss, aud, lifetime or claims', async () => {
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['typ JWT', { typ: 'JWT' }, fresh()],
    ['no typ', { typ: undefined }, fresh()],
    ['typ id_token', { typ: 'id_token+jwt' }, fresh()],
    ['wrong iss', {}, fresh({ iss: 'https://evil.example' })],
    ['iss with a trailing slash', {}, fresh({ iss: `${String(claims.iss)}/` })],
    ['wrong aud', {}, fresh({ aud: 'https://other-api.example' })],
    ['aud as a list without us', {}, fresh({ aud: ['https://other-api.example'] })],
    ['expired a minute ago', {}, fresh({ iat: now() - 960, exp: now() - 60 })],
    ['expired 10 s ago (beyond the 5 s tolerance)', {}, fresh({ iat: now() - 910, exp: now() - 10 })],
    ['no exp', {}, fresh({ exp: undefined })],
    ['not valid before the future', {}, fresh({ nbf: now() + 3600 })],
    ['no jti', {}, fresh({ jti: undefined })],
    ['no client_id', {}, fresh({ client_id: undefined })],
    ['sub differs from client_id', {}, fresh({ sub: 'oc_SomeoneElse0000000000' })],
    ['an unknown client', {}, fresh({ sub: 'oc_NoSuchClient000000000', client_id: 'oc_NoSuchClient000000000' })],
    ['the org claim names another organization', {}, fresh({ fleet_org: 'org_elsewhere' })],
    ['no org claim', {}, fresh({ fleet_org: undefined })],
    ['scope not a string', {}, fresh({ scope: ['fleet:read'] })],
  ];
  for (const [label, headerChange, payload] of cases) {
    const header: Record<string, unknown> = { ...fleetHeader(), ...headerChange };
    for (const key of Object.keys(header)) if (header[key] === undefined) delete header[key];
    for (const key of Object.keys(payload)) if (payload[key] === undefined) delete payload[key];
    await assertRefused(await sign(payload, header, fleetPrivate), label);
  }
  // Within the 5 s tolerance it is still accepted: the check above is about the tolerance, not luck.
  const justExpired = await sign(fresh({ iat: now() - 902, exp: now() - 2 }), fleetHeader(), fleetPrivate);
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: justExpired })).statusCode, 200);
});

test('signed by a key Fleet does not know', async () => {
  await assertRefused(await sign(fresh(), { typ: 'at+jwt', kid: attacker.kid }, attacker.privateKey), 'unknown kid');
  await assertRefused(await sign(fresh(), { typ: 'at+jwt', kid: fleetKid }, attacker.privateKey), 'Fleet\'s kid, attacker\'s signature');
  await assertRefused(await sign(fresh(), { typ: 'at+jwt' }, attacker.privateKey), 'no kid');
  const rsa = await generateKeyPair('RS256');
  await assertRefused(await sign(fresh(), { alg: 'RS256', typ: 'at+jwt', kid: fleetKid }, rsa.privateKey), 'RS256 under Fleet\'s kid');
});

test('jku / x5u / jwk / x5c headers: refused, and the URLs are never fetched', async () => {
  const jku = `${keyServer.url}/jwks.json`;
  const x5u = `${keyServer.url}/cert.pem`;
  const cases: Array<[string, Record<string, unknown>]> = [
    ['jku to the attacker\'s JWKS', { kid: attacker.kid, jku }],
    ['x5u to the attacker\'s certificate', { kid: attacker.kid, x5u }],
    ['jku and x5u', { kid: attacker.kid, jku, x5u }],
    ['jku with Fleet\'s kid', { kid: fleetKid, jku }],
    ['embedded jwk', { kid: attacker.kid, jwk: attacker.publicJwk }],
    ['embedded jwk without kid', { jwk: attacker.publicJwk }],
    ['embedded jwk with Fleet\'s kid', { kid: fleetKid, jwk: attacker.publicJwk }],
    ['x5c', { kid: attacker.kid, x5c: ['MIIB'] }],
  ];
  for (const [label, header] of cases) {
    await assertRefused(await sign(fresh(), { typ: 'at+jwt', ...header }, attacker.privateKey), label);
  }
  // Even a token signed with Fleet's real key is refused when it carries a key URL.
  await assertRefused(await sign(fresh(), { ...fleetHeader(), jku }, fleetPrivate), 'Fleet-signed with jku');
  assert.equal(keyServer.hits(), 0, `fetched: ${keyServer.paths().join(', ')}`);
});

test('tampered payload under the genuine signature', async () => {
  const [h, , s] = realToken.split('.');
  const tamper = (change: Record<string, unknown>) => `${h}.${b64({ ...claims, ...change })}.${s}`;
  await assertRefused(tamper({ scope: 'fleet:read fleet:write admin' }), 'scope widened');
  await assertRefused(tamper({ exp: Number(claims.exp) + 86_400 }), 'lifetime extended');
  await assertRefused(tamper({ fleet_org: 'org_other' }), 'organization changed');
  const [, p] = realToken.split('.');
  await assertRefused(`${b64({ alg: 'ES384', typ: 'at+jwt', kid: fleetKid })}.${p}.${s}`, 'header alg changed');
});

test('a revoked token, and a token of a deleted client', async () => {
  const token = await issueToken(ctx, client);
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: token })).statusCode, 200);
  const revoked = await postForm(ctx, '/oauth/revoke', { token }, { authorization: basic(client.id, client.secret) });
  assert.equal(revoked.statusCode, 200);
  await assertRefused(token, 'revoked');

  const doomed = await createClient(ctx, ['fleet:read']);
  const doomedToken = await issueToken(ctx, doomed);
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: doomedToken })).statusCode, 200);
  assert.equal((await ctx.request('DELETE', `/v2/oauth-clients/${doomed.id}`)).statusCode, 204);
  await assertRefused(doomedToken, 'deleted client');
});

test('malformed JWT-shaped tokens', async () => {
  for (const [label, token] of [
    ['three empty parts', '..'],
    ['garbage base64', 'abc.def.ghi'],
    ['header not JSON', `${b64('not json')}.${b64({})}.sig`],
    ['payload not JSON', `${b64({ alg: 'ES256', typ: 'at+jwt', kid: fleetKid })}.${b64('[')}.sig`],
    ['payload an array', `${b64({ alg: 'ES256', typ: 'at+jwt', kid: fleetKid })}.${b64([1])}.sig`],
  ] as const) {
    assertInvalidToken(await ctx.request('GET', '/v2/fleet/vehicles', { key: token }), label);
  }
  // Still fine afterwards.
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key: realToken })).statusCode, 200);
});
