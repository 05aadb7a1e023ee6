// Single sign-on against a real OpenID provider (oidc-provider) on 127.0.0.1: the test is the
// browser, following the provider's redirects with a cookie jar, logging in and consenting on its
// own pages, and landing on Fleet's callback (docs/API.md "Single sign-on").
import assert from 'node:assert/strict';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { exportJWK, generateKeyPair } from 'jose';
// @ts-expect-error oidc-provider ships no type declarations
import Provider from 'oidc-provider';
import { fetch } from 'undici';
import { createTestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';

type App = Awaited<ReturnType<typeof createTestApp>>;

const CLIENT_ID = 'fleet';
const CLIENT_SECRET = 'sso-client-secret-that-never-shows-0123456789';
const ROLE_MAP = { 'fleet-admins': 'admin', dispatch: 'operator', drivers: 'viewer' };

/** The provider's people: account id → the claims it asserts. */
const accounts = new Map<string, Record<string, unknown>>();
let issuer: string;
let providerServer: Server;
let app: App;
const clock = manualClock(Date.now());
/** Every answer Fleet gave in this file: none may carry the client secret. */
const answers: LightMyRequestResponse[] = [];

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function fleet(method: 'GET' | 'PUT' | 'PATCH' | 'DELETE', url: string, opts: Parameters<App['request']>[2] = {}) {
  const response = await app.request(method, url, opts);
  answers.push(response);
  return response;
}

before(async () => {
  providerServer = createServer();
  const port = await listen(providerServer);
  issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(issuer, {
    clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: ['http://localhost:8080/auth/sso/callback'] }],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'test', alg: 'RS256', use: 'sig' }] },
    cookies: { keys: ['test-cookie-key'] },
    ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: 600 },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    // The claims go in the ID token itself, as Fleet reads them from there.
    conformIdTokenClaims: false,
    findAccount: (_ctx: unknown, id: string) => (accounts.has(id)
      ? { accountId: id, claims: async () => ({ sub: id, ...accounts.get(id) }) }
      : undefined),
  });
  providerServer.on('request', provider.callback());
  app = await createTestApp({ clock, env: { FLEET_SSO_ALLOW_PRIVATE: 'true' } });
});

after(async () => {
  await app?.close();
  providerServer?.closeAllConnections();
  await new Promise((resolve) => providerServer?.close(resolve));
  // Whatever was asked or answered, the client secret never came back.
  for (const answer of answers) {
    assert.ok(!answer.body.includes(CLIENT_SECRET), `an answer carried the secret: ${answer.body.slice(0, 200)}`);
    assert.ok(!JSON.stringify(answer.headers).includes(CLIENT_SECRET), 'an answer\'s headers carried the secret');
  }
});

async function configure(extra: Record<string, unknown> = {}) {
  const response = await fleet('PUT', '/v2/sso', { body: { issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, roleMap: ROLE_MAP, ...extra } });
  assert.equal(response.statusCode, 200, response.body);
  return response.json();
}

function cookieValue(response: LightMyRequestResponse, name: string): string | undefined {
  const line = [response.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith(`${name}=`));
  return line === undefined ? undefined : line.slice(name.length + 1).split(';')[0];
}

/** Starts a sign-in at Fleet: the provider's URL and the `fleet_sso` cookie. */
async function start(returnTo = '/') {
  const started = await fleet('GET', `/auth/sso/${app.organizationId}`, { key: null, query: { returnTo } });
  assert.equal(started.statusCode, 302, started.body);
  const ssoCookie = cookieValue(started, 'fleet_sso');
  assert.ok(ssoCookie, 'the fleet_sso cookie is set');
  const line = [started.headers['set-cookie']].flat().find((c) => c?.startsWith('fleet_sso='))!;
  assert.match(line, /Path=\/auth\/sso/);
  assert.match(line, /HttpOnly/);
  assert.match(line, /SameSite=Lax/);
  assert.match(line, /Max-Age=600/);
  return { url: String(started.headers.location), ssoCookie };
}

/**
 * The browser at the provider: follows its redirects with a jar, logs in as `account` and
 * consents, and answers the URL the provider sends back to Fleet's callback.
 */
async function atProvider(url: string, account: string): Promise<string> {
  const jar = new Map<string, string>();
  let next = url;
  let method = 'GET';
  let body: string | undefined;
  for (let hop = 0; hop < 20; hop++) {
    if (next.startsWith('http://localhost:8080/')) return next;
    const response = await fetch(next, {
      method, redirect: 'manual', body,
      headers: {
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    method = 'GET';
    body = undefined;
    if (response.status >= 300 && response.status < 400) {
      next = new URL(response.headers.get('location')!, next).href;
      await response.body?.cancel();
      continue;
    }
    const page = await response.text();
    assert.equal(response.status, 200, page.slice(0, 500));
    const prompt = /name="prompt" value="(login|consent)"/.exec(page)?.[1];
    assert.ok(prompt, `an interaction page: ${page.slice(0, 300)}`);
    method = 'POST';
    body = new URLSearchParams(prompt === 'login' ? { prompt, login: account, password: 'any' } : { prompt }).toString();
  }
  throw new Error('too many redirects at the provider');
}

/** Fleet's callback, as the browser reaches it with its fleet_sso cookie. */
function callback(url: string, ssoCookie: string | undefined) {
  const target = new URL(url);
  return fleet('GET', `${target.pathname}${target.search}`, { key: null, headers: ssoCookie === undefined ? {} : { cookie: `fleet_sso=${ssoCookie}` } });
}

async function signIn(account: string, returnTo = '/') {
  const { url, ssoCookie } = await start(returnTo);
  return callback(await atProvider(url, account), ssoCookie);
}

async function sessionOf(response: LightMyRequestResponse) {
  const secret = cookieValue(response, 'fleet_session');
  assert.ok(secret, `a session cookie is set (${response.statusCode} ${response.body})`);
  const session = await fleet('GET', '/auth/session', { key: null, headers: { cookie: `fleet_session=${secret}` } });
  assert.equal(session.statusCode, 200, session.body);
  return session.json();
}

describe('single sign-on', () => {
  test('configuring: discovery read at once, the secret never answered; GET and DELETE', async () => {
    const missing = await fleet('GET', '/v2/sso');
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'sso-not-configured');

    const saved = await configure({ allowedEmailDomains: ['Example.com'] });
    assert.equal(saved.issuer, issuer);
    assert.equal(saved.roleClaim, 'groups');
    assert.deepEqual(saved.roleMap, ROLE_MAP);
    assert.deepEqual(saved.allowedEmailDomains, ['example.com']);
    assert.equal(saved.redirectUri, 'http://localhost:8080/auth/sso/callback');
    assert.equal('clientSecret' in saved, false);
    const read = await fleet('GET', '/v2/sso');
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), saved);

    // Discovery fails: nothing listens there, or the document names another issuer.
    const closed = createServer();
    const closedPort = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = await fleet('PUT', '/v2/sso', { body: { issuer: `http://127.0.0.1:${closedPort}`, clientId: 'x', clientSecret: 'y', roleMap: ROLE_MAP } });
    assert.equal(unreachable.statusCode, 400, unreachable.body);
    assert.equal(unreachable.json().code, 'sso-failed');
    const liar = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: 'https://elsewhere.example', authorization_endpoint: 'https://elsewhere.example/auth', token_endpoint: 'https://elsewhere.example/token', jwks_uri: 'https://elsewhere.example/jwks' }));
    });
    const liarPort = await listen(liar);
    try {
      const wrong = await fleet('PUT', '/v2/sso', { body: { issuer: `http://127.0.0.1:${liarPort}`, clientId: 'x', clientSecret: 'y', roleMap: ROLE_MAP } });
      assert.equal(wrong.statusCode, 400, wrong.body);
      assert.equal(wrong.json().code, 'sso-failed');
    } finally {
      liar.closeAllConnections();
      await new Promise((resolve) => liar.close(resolve));
    }
    // The refused ones left the configuration as it was.
    assert.deepEqual((await fleet('GET', '/v2/sso')).json(), saved);

    // Nobody maps a role above their own.
    const operatorish = await app.keyWith(['users', 'fleet:read', 'telemetry:read', 'streams', 'events:read']);
    const above = await fleet('PUT', '/v2/sso', { key: operatorish, body: { issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, roleMap: { x: 'admin' } } });
    assert.equal(above.statusCode, 403, above.body);

    const deleted = await fleet('DELETE', '/v2/sso');
    assert.equal(deleted.statusCode, 204);
    assert.equal((await fleet('GET', '/v2/sso')).statusCode, 404);
    assert.equal((await fleet('DELETE', '/v2/sso')).statusCode, 404);
    const none = await fleet('GET', `/auth/sso/${app.organizationId}`, { key: null });
    assert.equal(none.statusCode, 404);
    assert.equal(none.json().code, 'sso-not-configured');
  });

  test('a provider on a private address is refused unless FLEET_SSO_ALLOW_PRIVATE=true', async (t) => {
    const strict = await createTestApp();
    t.after(() => strict.close());
    for (const candidate of [issuer, issuer.replace('http:', 'https:'), issuer.replace('http://127.0.0.1', 'https://localhost'), 'https://[::1]:9/']) {
      const refused = await strict.request('PUT', '/v2/sso', { body: { issuer: candidate, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, roleMap: ROLE_MAP } });
      answers.push(refused);
      assert.equal(refused.statusCode, 400, `${candidate}: ${refused.body}`);
      assert.equal(refused.json().code, 'sso-failed');
    }
  });

  test('the first sign-in creates the user with the mapped role; a later one updates it', async () => {
    await configure();
    accounts.set('ana', { email: 'Ana@Example.com', email_verified: true, name: 'Ana Silva', groups: ['drivers', 'dispatch'] });

    const { url, ssoCookie } = await start('/vehicles?view=map#top');
    const authorize = new URL(url);
    assert.equal(authorize.origin, issuer);
    assert.equal(authorize.searchParams.get('response_type'), 'code');
    assert.equal(authorize.searchParams.get('scope'), 'openid email profile');
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authorize.searchParams.get('redirect_uri'), 'http://localhost:8080/auth/sso/callback');
    assert.ok(authorize.searchParams.get('state') && authorize.searchParams.get('nonce') && authorize.searchParams.get('code_challenge'));

    const first = await callback(await atProvider(url, 'ana'), ssoCookie);
    assert.equal(first.statusCode, 302, first.body);
    assert.equal(first.headers.location, '/vehicles?view=map#top');
    assert.match([first.headers['set-cookie']].flat().join('\n'), /fleet_sso=;.*Path=\/auth\/sso/);
    const session = await sessionOf(first);
    assert.equal(session.user.email, 'Ana@Example.com');
    assert.equal(session.user.name, 'Ana Silva');
    assert.equal(session.user.role, 'operator');
    assert.equal(session.user.sso, true);
    assert.equal(session.user.status, 'active');
    assert.ok(session.user.lastLoginAt);
    assert.ok(session.csrfToken);

    accounts.set('ana', { ...accounts.get('ana'), groups: 'fleet-admins' });
    const later = await signIn('ana');
    assert.equal(later.statusCode, 302, later.body);
    assert.equal(later.headers.location, '/');
    const again = await sessionOf(later);
    assert.equal(again.user.id, session.user.id);
    assert.equal(again.user.role, 'admin');
    const listed = (await fleet('GET', '/v2/users')).json().users.filter((u: { email: string }) => u.email.toLowerCase() === 'ana@example.com');
    assert.equal(listed.length, 1);

    // The organization's last active admin: the provider's lesser role is refused, and the role stays.
    accounts.set('ana', { ...accounts.get('ana'), groups: ['drivers'] });
    const kept = await signIn('ana');
    assert.equal(kept.statusCode, 409, kept.body);
    assert.equal(kept.json().code, 'last-admin');
    assert.equal(cookieValue(kept, 'fleet_session'), undefined);
    assert.equal((await fleet('GET', `/v2/users/${session.user.id}`)).json().role, 'admin');
    // With another active admin, the provider's role applies.
    await app.person('second-admin@example.com', 'Second admin', 'admin', 'correct horse battery staple');
    const demoted = await sessionOf(await signIn('ana'));
    assert.equal(demoted.user.role, 'viewer');

    // Disabled by an admin: the provider's word no longer signs them in.
    const disabled = await fleet('PATCH', `/v2/users/${session.user.id}`, { body: { status: 'disabled' } });
    assert.equal(disabled.statusCode, 200, disabled.body);
    const refused = await signIn('ana');
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(cookieValue(refused, 'fleet_session'), undefined);

    // Each sign-in through the provider is in the organization's audit log, the refused one too.
    await app.app.auditFlush();
    const signIns = (await fleet('GET', '/v2/audit-log?resourceType=session')).json().entries
      .map((e: { action: string; status: number; actor: { type: string; id: string | null } }) => `${e.action} ${e.status} ${e.actor.type}:${e.actor.id}`);
    const ana = `user:${session.user.id}`;
    assert.deepEqual(signIns, [
      'session.sso_login_failed 403 anonymous:null', `session.sso_login 302 ${ana}`, 'session.sso_login_failed 409 anonymous:null',
      `session.sso_login 302 ${ana}`, `session.sso_login 302 ${ana}`,
    ]);
  });

  test('no mapped group, an email domain not allowed, an unverified email, another organization\'s email: refused', async () => {
    await configure({ allowedEmailDomains: ['example.com'] });
    accounts.set('bo', { email: 'bo@example.com', email_verified: true, groups: ['visitors'] });
    const noRole = await signIn('bo');
    assert.equal(noRole.statusCode, 403, noRole.body);
    assert.equal(noRole.json().code, 'sso-no-role');
    assert.equal(cookieValue(noRole, 'fleet_session'), undefined);

    accounts.set('cy', { email: 'cy@elsewhere.example', email_verified: true, groups: ['dispatch'] });
    const domain = await signIn('cy');
    assert.equal(domain.statusCode, 403, domain.body);
    assert.equal(cookieValue(domain, 'fleet_session'), undefined);

    accounts.set('di', { email: 'di@example.com', email_verified: false, groups: ['dispatch'] });
    const unverified = await signIn('di');
    assert.equal(unverified.statusCode, 400, unverified.body);
    assert.equal(unverified.json().code, 'sso-failed');

    const other = await app.otherOrganization('SSO outsider');
    const created = await app.request('POST', '/v2/users', { key: other.key, body: { email: 'eve@example.com', name: 'Eve', role: 'viewer' } });
    assert.equal(created.statusCode, 201, created.body);
    accounts.set('eve', { email: 'EVE@example.com', email_verified: true, groups: ['fleet-admins'] });
    const taken = await signIn('eve');
    assert.equal(taken.statusCode, 409, taken.body);
    assert.equal(taken.json().code, 'email-taken');
    assert.equal(cookieValue(taken, 'fleet_session'), undefined);
    // Nobody in this organization was made for any of them.
    const emails = (await fleet('GET', '/v2/users')).json().users.map((u: { email: string }) => u.email.toLowerCase());
    for (const email of ['bo@example.com', 'cy@elsewhere.example', 'di@example.com', 'eve@example.com']) assert.ok(!emails.includes(email), email);
  });

  test('a replayed, tampered, foreign or expired state signs nobody in', async () => {
    await configure();
    accounts.set('fay', { email: 'fay@example.com', email_verified: true, groups: ['drivers'] });

    const { url, ssoCookie } = await start();
    const back = await atProvider(url, 'fay');
    const ok = await callback(back, ssoCookie);
    assert.equal(ok.statusCode, 302, ok.body);
    const replayed = await callback(back, ssoCookie);
    assert.equal(replayed.statusCode, 400, replayed.body);
    assert.equal(replayed.json().code, 'sso-failed');
    assert.equal(cookieValue(replayed, 'fleet_session'), undefined);

    const second = await start();
    const tampered = new URL(await atProvider(second.url, 'fay'));
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
    const bad = await callback(tampered.href, second.ssoCookie);
    assert.equal(bad.statusCode, 400, bad.body);
    assert.equal(cookieValue(bad, 'fleet_session'), undefined);

    // Another browser's answer: its cookie is not this one's.
    const mine = await start();
    const theirs = await start();
    const crossed = await callback(await atProvider(theirs.url, 'fay'), mine.ssoCookie);
    assert.equal(crossed.statusCode, 400, crossed.body);
    const noCookie = await callback(await atProvider(mine.url, 'fay'), undefined);
    assert.equal(noCookie.statusCode, 400, noCookie.body);

    const slow = await start();
    const answer = await atProvider(slow.url, 'fay');
    clock.advance(10 * 60_000 + 1);
    const expired = await callback(answer, slow.ssoCookie);
    assert.equal(expired.statusCode, 400, expired.body);
    assert.equal(cookieValue(expired, 'fleet_session'), undefined);
  });

  test('returnTo: a path on this origin only; anything else lands on /', async () => {
    await configure();
    accounts.set('gil', { email: 'gil@example.com', email_verified: true, groups: ['drivers'] });
    for (const [given, landing] of [
      ['/history?vehicle=van-1', '/history?vehicle=van-1'],
      ['https://evil.example/', '/'],
      ['//evil.example/x', '/'],
      ['/\\evil.example', '/'],
      ['javascript:alert(1)', '/'],
    ] as const) {
      const landed = await signIn('gil', given);
      assert.equal(landed.statusCode, 302, landed.body);
      assert.equal(landed.headers.location, landing, given);
    }
  });
});
