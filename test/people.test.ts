// Users, invitations, password sign-in, cookie sessions with CSRF, lockout and TOTP, through the
// whole HTTP stack on the embedded store (docs/API.md "Users and sessions").
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { startPeopleCleanup } from '../src/people/cleanup.ts';
import { DEFAULT_PEOPLE_SETTINGS } from '../src/people/service.ts';
import { totpCode, stepAt } from '../src/people/totp.ts';
import { createTestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';

type App = Awaited<ReturnType<typeof createTestApp>>;
const PASSWORD = 'correct horse battery staple';

function cookieOf(response: LightMyRequestResponse): string {
  const header = response.headers['set-cookie'];
  const line = [header ?? []].flat().find((c) => c.startsWith('fleet_session='));
  assert.ok(line, `a session cookie is set (status ${response.statusCode}: ${response.body})`);
  return line.split(';')[0]!;
}

/** A person's browser: the cookie and CSRF token of their session. */
interface Browser { cookie: string; csrf: string }

async function invite(app: App, body: Record<string, unknown>, key = app.adminKey) {
  const response = await app.request('POST', '/v2/users', { body, key });
  assert.equal(response.statusCode, 201, response.body);
  return response.json();
}

async function signUp(app: App, email: string, role = 'operator'): Promise<Browser & { id: string }> {
  const created = await invite(app, { email, name: email.split('@')[0], role });
  const accepted = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: created.invitation.token, password: PASSWORD } });
  assert.equal(accepted.statusCode, 200, accepted.body);
  return { id: created.id, cookie: cookieOf(accepted), csrf: accepted.json().csrfToken };
}

function asBrowser(app: App, browser: Browser, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, opts: { body?: unknown; csrf?: string | null } = {}) {
  const headers: Record<string, string> = { cookie: browser.cookie };
  const csrf = opts.csrf === undefined ? browser.csrf : opts.csrf;
  if (csrf !== null && method !== 'GET') headers['x-csrf-token'] = csrf;
  return app.request(method, url, { key: null, headers, ...(opts.body === undefined ? {} : { body: opts.body }) });
}

async function login(app: App, body: Record<string, unknown>) {
  return app.request('POST', '/auth/login', { key: null, body });
}

describe('users and invitations', () => {
  test('an admin invites; the invitation sets a password once and signs the person in', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    const created = await invite(app, { email: 'Dana@Example.com', name: 'Dana', role: 'operator' });
    assert.match(created.id, /^usr_/);
    assert.equal(created.status, 'invited');
    assert.equal(created.groupIds, null);
    assert.equal(created.totpEnabled, false);
    assert.match(created.invitation.url, /\/#\/invitation\?token=/);
    assert.ok(Date.parse(created.invitation.expiresAt) - Date.now() > 71 * 3600_000);

    const short = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: created.invitation.token, password: 'short' } });
    assert.equal(short.statusCode, 400);
    const accepted = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: created.invitation.token, password: PASSWORD } });
    assert.equal(accepted.statusCode, 200, accepted.body);
    const session = accepted.json();
    assert.equal(session.user.status, 'active');
    assert.deepEqual(session.scopes.sort(), ['alerts:write', 'commands', 'dispatch', 'events:read', 'fleet:read', 'streams', 'telemetry:read']);
    const cookie = [accepted.headers['set-cookie']].flat().join('\n');
    assert.match(cookie, /fleet_session=[^;]+; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax/);
    assert.doesNotMatch(cookie, /Secure/, 'http public URL: no Secure flag');
    assert.equal(accepted.headers['cache-control'], 'no-store');

    const again = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: created.invitation.token, password: PASSWORD } });
    assert.equal(again.statusCode, 400);
    assert.equal(again.json().code === 'invitation-invalid', true);

    // The email is unique across the service, whatever its case, in any organization.
    const other = await app.otherOrganization();
    const taken = await app.request('POST', '/v2/users', { key: other.key, body: { email: 'dana@EXAMPLE.com', name: 'D', role: 'viewer' } });
    assert.equal(taken.statusCode, 409);

    // Listing and reading need `users`; another organization sees none of them.
    const list = await app.request('GET', '/v2/users');
    assert.equal(list.statusCode, 200);
    assert.deepEqual(list.json().users.map((u: { email: string }) => u.email), ['Dana@Example.com']);
    assert.equal((await app.request('GET', `/v2/users/${created.id}`, { key: other.key })).statusCode, 404);
    const viewerKey = await app.keyWith(['fleet:read']);
    assert.equal((await app.request('GET', '/v2/users', { key: viewerKey })).statusCode, 403);
  });

  test('a key cannot invite or promote above its own scopes; nobody changes their own role or status', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    const manager = await app.keyWith(['users', 'fleet:read', 'fleet:write', 'telemetry:read', 'streams', 'events:read', 'rules', 'alerts:write', 'commands', 'dispatch']);
    assert.equal((await app.request('POST', '/v2/users', { key: manager, body: { email: 'a@x.io', name: 'A', role: 'admin' } })).statusCode, 403);
    const op = await invite(app, { email: 'op@x.io', name: 'Op', role: 'operator' }, manager);
    assert.equal((await app.request('PATCH', `/v2/users/${op.id}`, { key: manager, body: { role: 'admin' } })).statusCode, 403);
    assert.equal((await app.request('PATCH', `/v2/users/${op.id}`, { key: manager, body: { role: 'manager' } })).json().role, 'manager');

    const admin = await signUp(app, 'admin@x.io', 'admin');
    const self = await asBrowser(app, admin, 'PATCH', `/v2/users/${admin.id}`, { body: { role: 'viewer' } });
    assert.equal(self.statusCode, 409);
    assert.equal((await asBrowser(app, admin, 'DELETE', `/v2/users/${admin.id}`)).statusCode, 409);
    assert.equal((await asBrowser(app, admin, 'PATCH', `/v2/users/${admin.id}`, { body: { name: 'Me' } })).json().name, 'Me', 'the name is one\'s own to change');
  });

  test('the last active admin cannot be demoted, disabled or deleted', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    const admin = await signUp(app, 'only@x.io', 'admin');
    for (const body of [{ role: 'manager' }, { status: 'disabled' }]) {
      const response = await app.request('PATCH', `/v2/users/${admin.id}`, { body });
      assert.equal(response.statusCode, 409, JSON.stringify(body));
      assert.ok(response.json().code === 'last-admin');
    }
    assert.equal((await app.request('DELETE', `/v2/users/${admin.id}`)).statusCode, 409);
    await signUp(app, 'second@x.io', 'admin');
    assert.equal((await app.request('PATCH', `/v2/users/${admin.id}`, { body: { role: 'manager' } })).statusCode, 200);
  });

  test('bad input is a problem response and stores nothing', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    const bad = [
      { email: 'x'.repeat(250) + '@x.io', name: 'Long', role: 'viewer' },
      { email: 'no-at-sign', name: 'N', role: 'viewer' },
      { email: 'a@b.c', name: 'N', role: 'superuser' },
      { email: 'a@b.c', name: 'line\nbreak', role: 'viewer' },
      { email: 'a@b.c', name: 'N', role: 'viewer', groupIds: 'all' },
    ];
    for (const body of bad) assert.equal((await app.request('POST', '/v2/users', { body })).statusCode, 400, JSON.stringify(body).slice(0, 80));
    assert.equal((await app.request('GET', '/v2/users')).json().total, 0);
    assert.equal((await app.request('GET', '/v2/users/not-an-id')).statusCode, 400);
    assert.equal((await app.request('GET', '/v2/users/usr_00000000000000000000')).statusCode, 404);
    for (const body of [{ email: 'a@b.c', password: 'x'.repeat(257) }, { email: 'a@b.c' }, 'not json', { email: 'a@b.c', password: 'p', extra: 1 }]) {
      const response = await app.request('POST', '/auth/login', { key: null, body });
      assert.equal(response.statusCode, 400, JSON.stringify(body));
      assert.equal(response.headers['content-type'], 'application/problem+json');
    }
    for (const cookie of ['fleet_session=forged', 'fleet_session=' + 'A'.repeat(5000), 'fleet_session=%E0%A4%A', 'fleet_session=']) {
      const response = await app.request('GET', '/v2/fleet/vehicles', { key: null, headers: { cookie } });
      assert.equal(response.statusCode, 401, cookie.slice(0, 40));
      assert.equal((await app.request('GET', '/auth/session', { key: null, headers: { cookie } })).statusCode, 401);
    }
  });
});

describe('sign-in and sessions', () => {
  test('a session cookie works on the API within its role; writes need the CSRF token', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    await app.registerVehicle('van-1');
    const viewer = await signUp(app, 'viewer@x.io', 'viewer');
    const read = await asBrowser(app, viewer, 'GET', '/v2/fleet/vehicles');
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().vehicles.length, 1);
    assert.equal((await asBrowser(app, viewer, 'GET', '/api/v1/vehicles/van-1')).statusCode, 200, 'the v1 family too');
    assert.equal((await asBrowser(app, viewer, 'POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-2', type: 'van' } })).statusCode, 403, 'viewer lacks fleet:write');

    const manager = await signUp(app, 'manager@x.io', 'manager');
    const noToken = await asBrowser(app, manager, 'POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-2', type: 'van' }, csrf: null });
    assert.equal(noToken.statusCode, 403);
    assert.ok(noToken.json().code === 'csrf-failed');
    assert.equal((await asBrowser(app, manager, 'POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-2', type: 'van' }, csrf: 'wrong' })).statusCode, 403);
    assert.equal((await app.request('GET', '/v2/fleet/vehicles/van-2')).statusCode, 404, 'the refused write changed nothing');
    assert.equal((await asBrowser(app, manager, 'POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-2', type: 'van' } })).statusCode, 201);

    // A request with Authorization ignores the cookie.
    const withBoth = await app.request('GET', '/v2/users', { headers: { cookie: viewer.cookie } });
    assert.equal(withBoth.statusCode, 200, 'the admin key decides, not the viewer\'s cookie');
    const badKeyGoodCookie = await app.request('GET', '/v2/fleet/vehicles', { key: 'fleet_not-a-key', headers: { cookie: viewer.cookie } });
    assert.equal(badKeyGoodCookie.statusCode, 401);

    const session = await asBrowser(app, viewer, 'GET', '/auth/session');
    assert.equal(session.statusCode, 200);
    assert.equal(session.json().csrfToken, viewer.csrf);
    assert.equal((await asBrowser(app, viewer, 'POST', '/auth/logout', { csrf: null })).statusCode, 403, 'sign-out needs the token too');
    const out = await asBrowser(app, viewer, 'POST', '/auth/logout');
    assert.equal(out.statusCode, 204);
    assert.match([out.headers['set-cookie']].flat().join(), /fleet_session=;/);
    assert.equal((await asBrowser(app, viewer, 'GET', '/v2/fleet/vehicles')).statusCode, 401);
    assert.equal((await asBrowser(app, viewer, 'GET', '/auth/session')).statusCode, 401);
  });

  test('unknown email, wrong password and a disabled user answer alike; sign-in gives a new session each time', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    const user = await signUp(app, 'kim@x.io', 'viewer');
    const unknown = await login(app, { email: 'nobody@x.io', password: PASSWORD });
    const wrong = await login(app, { email: 'kim@x.io', password: 'not the password' });
    assert.equal(unknown.statusCode, 401);
    assert.equal(wrong.statusCode, 401);
    const withoutId = (body: Record<string, unknown>) => ({ ...body, requestId: undefined });
    const u = withoutId(unknown.json());
    const w = withoutId(wrong.json());
    assert.deepEqual(u, w);

    const first = await login(app, { email: 'KIM@x.io', password: PASSWORD });
    assert.equal(first.statusCode, 200);
    const second = await login(app, { email: 'kim@x.io', password: PASSWORD });
    assert.notEqual(cookieOf(first), cookieOf(second), 'a new session id at every sign-in');
    assert.ok(first.json().user.lastLoginAt !== null);

    const disabled = await app.request('PATCH', `/v2/users/${user.id}`, { body: { status: 'disabled' } });
    assert.equal(disabled.json().status, 'disabled');
    const refused = await login(app, { email: 'kim@x.io', password: PASSWORD });
    assert.equal(refused.statusCode, 401);
    const d = withoutId(refused.json());
    assert.deepEqual(d, w);
    assert.equal((await app.request('GET', '/v2/fleet/vehicles', { key: null, headers: { cookie: cookieOf(first) } })).statusCode, 401, 'disabling ended the session');
  });

  test('ten failures within 15 minutes lock the email until the window passes, even with the right password', async (t) => {
    const clock = manualClock(Date.now());
    const app = await createTestApp({ clock });
    t.after(() => app.close());
    await signUp(app, 'lee@x.io', 'viewer');
    for (let i = 0; i < 10; i++) {
      assert.equal((await login(app, { email: 'lee@x.io', password: `wrong ${i}` })).statusCode, 401);
      clock.advance(30_000);
    }
    const locked = await login(app, { email: 'lee@x.io', password: PASSWORD });
    assert.equal(locked.statusCode, 429);
    // The first failure was 300 s ago: it leaves the window in 600 s.
    assert.equal(locked.headers['retry-after'], '600');
    assert.equal((await login(app, { email: 'other@x.io', password: PASSWORD })).statusCode, 401, 'another email is not locked');
    clock.advance(599_000);
    assert.equal((await login(app, { email: 'lee@x.io', password: PASSWORD })).statusCode, 429);
    clock.advance(1_000);
    assert.equal((await login(app, { email: 'lee@x.io', password: PASSWORD })).statusCode, 200);
  });

  test('sign-in and invitations are limited per client address as well, whatever the email', async (t) => {
    const app = await createTestApp({ env: { FLEET_TOKEN_RATE_LIMIT_REQUESTS: '3' } });
    t.after(() => app.close());
    for (let i = 0; i < 3; i++) assert.equal((await login(app, { email: `guess${i}@x.io`, password: PASSWORD })).statusCode, 401);
    const limited = await login(app, { email: 'guess9@x.io', password: PASSWORD });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json().code, 'rate-limited');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    const accept = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: 'guessed', password: PASSWORD } });
    assert.equal(accept.statusCode, 429, 'one budget per address across both');
  });

  test('a session ends after the idle limit, and 7 days after sign-in however busy', async (t) => {
    const clock = manualClock(Date.now());
    const app = await createTestApp({ clock, env: { FLEET_SESSION_IDLE_MINUTES: '60' } });
    t.after(() => app.close());
    const user = await signUp(app, 'sam@x.io', 'viewer');
    clock.advance(59 * 60_000);
    assert.equal((await asBrowser(app, user, 'GET', '/v2/fleet/vehicles')).statusCode, 200);
    clock.advance(59 * 60_000);
    assert.equal((await asBrowser(app, user, 'GET', '/v2/fleet/vehicles')).statusCode, 200, 'the last request renewed it');
    clock.advance(61 * 60_000);
    assert.equal((await asBrowser(app, user, 'GET', '/v2/fleet/vehicles')).statusCode, 401, 'idle too long');

    const busy = cookieOf(await login(app, { email: 'sam@x.io', password: PASSWORD }));
    for (let hours = 0; hours < 7 * 24 - 1; hours += 0.5) {
      clock.advance(30 * 60_000);
      assert.equal((await app.request('GET', '/v2/fleet/vehicles', { key: null, headers: { cookie: busy } })).statusCode, 200);
    }
    clock.advance(60 * 60_000);
    assert.equal((await app.request('GET', '/v2/fleet/vehicles', { key: null, headers: { cookie: busy } })).statusCode, 401, '7 days after sign-in');
  });

  test('sessions that ended or went idle are deleted in the background, live ones kept', async (t) => {
    const clock = manualClock(Date.now());
    const app = await createTestApp({ clock, env: { FLEET_SESSION_IDLE_MINUTES: '60' } });
    t.after(() => app.close());
    const idle = await signUp(app, 'idle@x.io', 'viewer');
    clock.advance(30 * 60_000);
    const busy = await signUp(app, 'busy@x.io', 'viewer');
    const cleanup = startPeopleCleanup({ store: app.stores.people, clock, settings: { ...DEFAULT_PEOPLE_SETTINGS, idleMs: 60 * 60_000 }, log: console });
    t.after(() => cleanup.stop());
    assert.equal(await cleanup.runOnce(), 0, 'nothing has ended yet');
    clock.advance(31 * 60_000);
    assert.equal(await cleanup.runOnce(), 1, 'the first session has been idle over an hour');
    assert.equal((await asBrowser(app, busy, 'GET', '/auth/session')).statusCode, 200);
    assert.equal((await asBrowser(app, idle, 'GET', '/auth/session')).statusCode, 401);
  });

  test('changing the password ends the other sessions; a role change applies at the next request', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    const here = await signUp(app, 'max@x.io', 'viewer');
    const there = cookieOf(await login(app, { email: 'max@x.io', password: PASSWORD }));
    const wrong = await asBrowser(app, here, 'POST', '/auth/password', { body: { currentPassword: 'nope', newPassword: 'another long passphrase' } });
    assert.equal(wrong.statusCode, 401);
    const changed = await asBrowser(app, here, 'POST', '/auth/password', { body: { currentPassword: PASSWORD, newPassword: 'another long passphrase' } });
    assert.equal(changed.statusCode, 204);
    assert.equal((await app.request('GET', '/auth/session', { key: null, headers: { cookie: there } })).statusCode, 401);
    assert.equal((await asBrowser(app, here, 'GET', '/auth/session')).statusCode, 200);
    assert.equal((await login(app, { email: 'max@x.io', password: PASSWORD })).statusCode, 401);

    assert.equal((await asBrowser(app, here, 'POST', '/v2/fleet/vehicles', { body: { vehicleId: 'v', type: 'van' } })).statusCode, 403);
    await app.request('PATCH', `/v2/users/${here.id}`, { body: { role: 'manager' } });
    assert.equal((await asBrowser(app, here, 'POST', '/v2/fleet/vehicles', { body: { vehicleId: 'v', type: 'van' } })).statusCode, 201);

    // An admin's new invitation: the current password works until the new one is set.
    const reinvited = await app.request('POST', `/v2/users/${here.id}/invitation`);
    assert.equal(reinvited.statusCode, 201);
    assert.equal((await login(app, { email: 'max@x.io', password: 'another long passphrase' })).statusCode, 200);
    const reset = await app.request('POST', '/auth/invitations/accept', { key: null, body: { token: reinvited.json().invitation.token, password: 'a third long passphrase' } });
    assert.equal(reset.statusCode, 200);
    assert.equal((await login(app, { email: 'max@x.io', password: 'a third long passphrase' })).statusCode, 200);
  });

  test('deleting a user ends their sessions', async (t) => {
    const app = await createTestApp();
    t.after(() => app.close());
    const user = await signUp(app, 'del@x.io', 'viewer');
    assert.equal((await app.request('DELETE', `/v2/users/${user.id}`)).statusCode, 204);
    assert.equal((await asBrowser(app, user, 'GET', '/v2/fleet/vehicles')).statusCode, 401);
    assert.equal((await app.request('GET', `/v2/users/${user.id}`)).statusCode, 404);
  });
});

describe('two-factor sign-in', () => {
  test('enrol, sign in with a code once, recovery codes once, turn off with the password', async (t) => {
    const clock = manualClock(Date.now());
    const app = await createTestApp({ clock });
    t.after(() => app.close());
    const user = await signUp(app, 'ada@x.io', 'viewer');
    assert.equal((await asBrowser(app, user, 'POST', '/auth/totp/confirm', { body: { code: '123456' } })).statusCode, 409, 'nothing to confirm yet');
    const begun = await asBrowser(app, user, 'POST', '/auth/totp');
    assert.equal(begun.statusCode, 200);
    const { secret, otpauthUrl } = begun.json();
    assert.match(otpauthUrl, /^otpauth:\/\/totp\/.*secret=/);
    const wrongCode = (totpCode(secret, stepAt(clock.now()) + 5));
    assert.equal((await asBrowser(app, user, 'POST', '/auth/totp/confirm', { body: { code: wrongCode } })).statusCode, 401);
    const confirmed = await asBrowser(app, user, 'POST', '/auth/totp/confirm', { body: { code: totpCode(secret, stepAt(clock.now())) } });
    assert.equal(confirmed.statusCode, 200);
    const { recoveryCodes } = confirmed.json();
    assert.equal(recoveryCodes.length, 10);
    assert.equal((await asBrowser(app, user, 'POST', '/auth/totp')).statusCode, 409, 'on already');

    const required = await login(app, { email: 'ada@x.io', password: PASSWORD });
    assert.equal(required.statusCode, 401);
    assert.ok(required.json().code === 'totp-required');
    const bad = await login(app, { email: 'ada@x.io', password: PASSWORD, totpCode: wrongCode });
    assert.ok(bad.json().code === 'invalid-credentials');
    clock.advance(30_000);
    const code = totpCode(secret, stepAt(clock.now()));
    assert.equal((await login(app, { email: 'ada@x.io', password: PASSWORD, totpCode: code })).statusCode, 200);
    const replay = await login(app, { email: 'ada@x.io', password: PASSWORD, totpCode: code });
    assert.equal(replay.statusCode, 401, 'a code is accepted once');
    assert.ok(replay.json().code === 'invalid-credentials');
    clock.advance(30_000);
    const previous = totpCode(secret, stepAt(clock.now()) - 1);
    assert.equal((await login(app, { email: 'ada@x.io', password: PASSWORD, totpCode: previous })).statusCode, 401, 'an older step than one used is refused');

    const recovery = recoveryCodes[0];
    assert.equal((await login(app, { email: 'ada@x.io', password: PASSWORD, totpCode: recovery.toUpperCase() })).statusCode, 200);
    assert.equal((await login(app, { email: 'ada@x.io', password: PASSWORD, totpCode: recovery })).statusCode, 401, 'a recovery code works once');

    assert.equal((await asBrowser(app, user, 'DELETE', '/auth/totp', { body: { password: 'wrong' } })).statusCode, 401);
    assert.equal((await asBrowser(app, user, 'DELETE', '/auth/totp', { body: { password: PASSWORD } })).statusCode, 204);
    assert.equal((await login(app, { email: 'ada@x.io', password: PASSWORD })).statusCode, 200);
    assert.equal((await app.request('GET', `/v2/users/${user.id}`)).json().totpEnabled, false);
  });
});
