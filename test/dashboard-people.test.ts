// People in the dashboard end to end, in headless Chromium against a real service on a real port
// (docs/API.md "Users and sessions"): an invitation's link sets a password and signs in, the
// session cookie survives a reload, sign-out and password sign-in, the Users page, the navigation a
// role allows, two-factor sign-in turned on from the Account page, the problems of a wrong
// password and of a locked sign-in, and the API key as the developers' way in. One service and
// one browser for the file; the subtests run in order on the same page. Screenshots go to
// test-results/dashboard-people/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stepAt, totpCode } from '../src/people/totp.ts';
import { openBrowser, servedTestApp, skipUnlessChromium } from './helpers/browser.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-people/', import.meta.url));
const PASSWORD = 'correct horse battery staple';

const skip = skipUnlessChromium('the dashboard people browser tests');

test('the dashboard for people: invitation, sessions, users, roles, two-factor sign-in', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);
  await ctx.registerVehicle('van-1');

  const invite = async (email: string, name: string, role: string) => {
    const res = await ctx.request('POST', '/v2/users', { body: { email, name, role } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: string; invitation: { token: string; url: string } }>();
  };
  const userOf = async (id: string) => (await ctx.request('GET', `/v2/users/${id}`)).json<{ role: string; status: string; totpEnabled: boolean }>();

  mkdirSync(SHOTS, { recursive: true });
  const { browser, page, pageErrors, cspViolations, close } = await openBrowser({ width: 1280, height: 860 });
  t.after(close);
  await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  /** Every API request the page made, with the headers that matter here. */
  const sent: Array<{ method: string; path: string; authorization: string | undefined; csrf: string | undefined }> = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (!url.pathname.startsWith('/v2/') && !url.pathname.startsWith('/auth/')) return;
    const headers = request.headers();
    sent.push({ method: request.method(), path: url.pathname, authorization: headers.authorization, csrf: headers['x-csrf-token'] });
  });
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const header = page.locator('#session');
  const signInForm = page.getByRole('form', { name: 'Sign in', exact: true });
  const signedInAs = (name: string) => header.locator('.who-name', { hasText: name }).waitFor();
  const navLinks = () => nav.getByRole('link').allInnerTexts();
  const signOut = async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: /^Sign in/ }).waitFor();
  };
  const signIn = async (email: string, password: string) => {
    await signInForm.getByLabel('Email').fill(email);
    await signInForm.getByLabel('Password').fill(password);
    await signInForm.getByRole('button', { name: 'Sign in' }).click();
  };

  const dana = await invite('dana@example.com', 'Dana Ortiz', 'admin');

  await t.test('an invitation\'s link sets a password and signs in; a reload keeps the session; sign out; sign in again', async () => {
    assert.equal(dana.invitation.url, `${origin}/#/invitation?token=${dana.invitation.token}`);
    await page.goto(dana.invitation.url);
    const form = page.getByRole('form', { name: 'Set your password' });
    await form.waitFor();
    assert.equal(new URL(page.url()).hash, '#/invitation', 'the token is gone from the address bar');
    assert.match(await form.innerText(), /12 to 256 characters/);
    await form.getByLabel('New password').fill('too short');
    await form.getByLabel('Confirm the password').fill('too short');
    await form.getByRole('button', { name: 'Set password and sign in' }).click();
    await form.getByRole('alert').getByText('The password is too short').waitFor();
    await form.getByLabel('New password').fill(PASSWORD);
    await form.getByLabel('Confirm the password').fill(PASSWORD);
    await shot('01-invitation');
    await form.getByRole('button', { name: 'Set password and sign in' }).click();

    await signedInAs('Dana Ortiz');
    await nav.getByRole('link', { name: 'Fleet', exact: true }).waitFor();
    assert.equal(await nav.getByRole('link', { name: 'Fleet', exact: true }).getAttribute('aria-current'), 'page');
    assert.equal(new URL(page.url()).hash, '#/');
    await page.locator('table.vehicles tbody tr', { hasText: 'van-1' }).waitFor();
    // The live stream: created with the cookie and the CSRF token, attached with its ticket.
    await page.locator('#live-state', { hasText: 'Live' }).waitFor();
    const created = sent.find((r) => r.method === 'POST' && r.path === '/v2/telemetry/stream');
    assert.ok(created !== undefined && created.csrf !== undefined && created.authorization === undefined, JSON.stringify(created));
    assert.ok(sent.every((r) => r.authorization === undefined), 'no Authorization header with a session');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('fleet.apiKey')), null);
    assert.equal((await userOf(dana.id)).status, 'active');

    await page.reload();
    await signedInAs('Dana Ortiz');
    await page.locator('table.vehicles tbody tr', { hasText: 'van-1' }).waitFor();

    await signOut();
    await page.reload();
    await signInForm.waitFor();
    assert.equal(await nav.isVisible(), false, 'no navigation while signed out');

    await signIn('DANA@example.com', PASSWORD);
    await signedInAs('Dana Ortiz');
    assert.equal(await page.getByRole('form', { name: 'Sign in', exact: true }).count(), 0);
  });

  await t.test('the Users page: invite with the link shown once, change a role, disable; the server\'s refusals beside the action', async () => {
    assert.deepEqual(await navLinks(), ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports', 'Vehicles', 'Devices', 'Webhooks', 'API keys', 'Users', 'Audit log']);
    await nav.getByRole('link', { name: 'Users', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    const form = page.getByRole('form', { name: 'Invite a user' });
    await form.getByLabel('Email').fill('erin@example.com');
    await form.getByLabel('Name').fill('Erin Vale');
    await form.getByLabel('Role').selectOption('operator');
    await form.getByRole('button', { name: 'Invite' }).click();
    const box = page.getByRole('region', { name: 'Invitation for erin@example.com' });
    const link = box.getByLabel('Invitation link');
    await link.waitFor();
    const url = await link.inputValue();
    assert.match(url, new RegExp(`^${origin}/#/invitation\\?token=`));
    assert.equal(await link.evaluate((el) => el === el.ownerDocument.activeElement), true, 'the focus goes to the link, shown once');
    await box.getByRole('button', { name: 'Copy' }).click();
    await box.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), url);
    const row = page.getByRole('table', { name: 'Users' }).getByRole('row').filter({ hasText: 'erin@example.com' });
    await row.getByText('invited').waitFor();
    await shot('02-users-invited');

    // The same email again: 409, beside the form, what was typed kept.
    await form.getByLabel('Email').fill('Erin@Example.com');
    await form.getByLabel('Name').fill('Erin again');
    await form.getByRole('button', { name: 'Invite' }).click();
    await form.getByRole('alert').getByText('Email already in use').waitFor();
    assert.equal(await form.getByLabel('Name').inputValue(), 'Erin again');

    const listed = (await ctx.request('GET', '/v2/users')).json<{ users: Array<{ id: string; email: string }> }>().users;
    const erinId = listed.find((u) => u.email === 'erin@example.com')!.id;
    await row.getByLabel('Role of erin@example.com').selectOption('manager');
    await row.getByRole('status').getByText('Now manager.').waitFor();
    assert.equal((await userOf(erinId)).role, 'manager');

    // Erin sets a password with the link shown, so there is an active user (with a session) to disable.
    const token = new URLSearchParams(new URL(url).hash.split('?')[1]).get('token')!;
    const accepted = await ctx.request('POST', '/auth/invitations/accept', { key: null, body: { token, password: PASSWORD } });
    assert.equal(accepted.statusCode, 200, accepted.body);
    const erinCookie = [accepted.headers['set-cookie'] ?? []].flat().find((c) => c.startsWith('fleet_session='))!.split(';')[0]!;
    await page.reload();
    await row.getByText('active').waitFor();
    await row.getByRole('button', { name: 'Disable' }).click();
    await row.getByRole('status').getByText('Disabled erin@example.com').waitFor();
    await row.getByText('disabled', { exact: true }).waitFor();
    assert.equal((await userOf(erinId)).status, 'disabled');
    const erinNow = await ctx.request('GET', '/auth/session', { key: null, headers: { cookie: erinCookie } });
    assert.equal(erinNow.statusCode, 401, 'disabling ended her session');

    // One's own role: the server's 409 next to the select, which goes back to what is stored.
    const own = page.getByRole('table', { name: 'Users' }).getByRole('row').filter({ hasText: 'dana@example.com' });
    await own.getByLabel('Role of dana@example.com').selectOption('viewer');
    await own.getByRole('alert').getByText('Cannot change your own account this way').waitFor();
    assert.equal(await own.getByLabel('Role of dana@example.com').inputValue(), 'admin');
    assert.equal((await userOf(dana.id)).role, 'admin');

    // A new invitation for Erin: a new link, shown once above the list.
    await row.getByRole('button', { name: 'New invitation' }).click();
    const again = page.getByRole('region', { name: 'New invitation for erin@example.com' });
    assert.notEqual(await again.getByLabel('Invitation link').inputValue(), url);
    assert.equal(await again.evaluate((el) => el.contains(el.ownerDocument.activeElement)), true, 'the focus goes to the new link');
    await shot('03-users');
    const writes = sent.filter((r) => r.method !== 'GET' && r.path !== '/auth/login' && r.path !== '/auth/invitations/accept');
    assert.deepEqual(writes.filter((r) => r.csrf === undefined), [], 'every write with the session carried the CSRF token');
  });

  await t.test('a viewer is offered only what the role allows', async () => {
    const viewer = await invite('vic@example.com', 'Vic Viewer', 'viewer');
    const accepted = await ctx.request('POST', '/auth/invitations/accept', { key: null, body: { token: viewer.invitation.token, password: PASSWORD } });
    assert.equal(accepted.statusCode, 200, accepted.body);
    await signOut();
    await signIn('vic@example.com', PASSWORD);
    await signedInAs('Vic Viewer');
    await page.locator('table.vehicles tbody tr', { hasText: 'van-1' }).waitFor();
    const links = await navLinks();
    assert.deepEqual(links, ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports']);
    for (const hidden of ['Users', 'API keys', 'Webhooks']) assert.ok(!links.includes(hidden), hidden);
    await signOut();
  });

  await t.test('two-factor sign-in: turned on from the Account page, then asked for at sign-in', async () => {
    await signIn('dana@example.com', PASSWORD);
    await signedInAs('Dana Ortiz');
    await header.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await page.getByRole('button', { name: 'Turn on two-factor sign-in' }).click();
    const setup = page.getByRole('region', { name: 'Set up your authenticator app' });
    const shown = await setup.getByLabel('Secret').innerText();
    assert.match(shown, /^([A-Z2-7]{4} )+[A-Z2-7]{1,4}$/, 'the secret in groups of four');
    const secret = shown.replaceAll(' ', '');
    assert.match(await setup.locator('a.otpauth').getAttribute('href') ?? '', /^otpauth:\/\/totp\//);
    await shot('04-totp-setup');
    const step = stepAt(Date.now());
    await setup.getByLabel('Code from the app').fill(totpCode(secret, step));
    await setup.getByRole('button', { name: 'Turn on' }).click();
    const codes = page.getByRole('region', { name: 'Recovery codes' });
    await codes.waitFor();
    assert.equal(await codes.getByRole('listitem').count(), 10);
    // The form that had the focus is gone: the focus is on the codes, read from their start.
    assert.equal(await codes.evaluate((el) => el === el.ownerDocument.activeElement), true, 'the focus on the recovery codes');
    assert.match(await codes.innerText(), /not shown again/);
    assert.equal((await userOf(dana.id)).totpEnabled, true);
    await shot('05-recovery-codes');
    await codes.getByRole('button', { name: 'I have stored them' }).click();
    await page.getByText('Sign-in asks for a code').waitFor();

    await signOut();
    await signIn('dana@example.com', PASSWORD);
    const code = signInForm.getByLabel('Two-factor code');
    await code.waitFor();
    await signInForm.getByRole('status').getByText('enter the code from your authenticator app').waitFor();
    // A code of no step near now.
    await code.fill(totpCode(secret, step + 7));
    await signInForm.getByRole('button', { name: 'Sign in' }).click();
    await signInForm.getByRole('alert').getByText('Sign-in failed').waitFor();
    // The step after the one used to confirm: each step's code is accepted once.
    await code.fill(totpCode(secret, step + 1));
    await signInForm.getByRole('button', { name: 'Sign in' }).click();
    await signedInAs('Dana Ortiz');
    await signOut();
  });

  await t.test('a wrong password and a locked sign-in are explained; the API key still signs in', async () => {
    await signIn('dana@example.com', 'not the password at all');
    const problem = signInForm.getByRole('alert');
    await problem.getByText('Sign-in failed').waitFor();
    assert.equal(await signInForm.getByLabel('Email').inputValue(), 'dana@example.com');
    await shot('06-wrong-password');

    for (let i = 0; i < 10; i++) {
      const res = await ctx.request('POST', '/auth/login', { key: null, body: { email: 'locked@example.com', password: 'wrong wrong wrong' } });
      assert.equal(res.statusCode, 401);
    }
    await signIn('locked@example.com', 'wrong wrong wrong');
    await problem.getByText('Too many failed sign-ins').waitFor();
    assert.match(await problem.innerText(), /Try again in 15 minutes\./);

    await page.getByRole('button', { name: 'Use an API key instead' }).click();
    await page.getByLabel('API key').fill(ctx.adminKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await nav.getByRole('link', { name: 'API keys' }).waitFor();
    assert.deepEqual(await navLinks(), ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports', 'Vehicles', 'Devices', 'Webhooks', 'API keys', 'Users', 'Audit log']);
    assert.equal(await header.locator('.who').count(), 0, 'a key is nobody');
    await page.locator('table.vehicles tbody tr', { hasText: 'van-1' }).waitFor();
    // The key is what is sent now, and only in the Authorization header.
    const last = sent.at(-1)!;
    assert.equal(last.authorization, `Bearer ${ctx.adminKey}`);
    await signOut();
    await page.getByLabel('API key').waitFor();
  });

  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(cspViolations, [], 'Content-Security-Policy violations');
});
