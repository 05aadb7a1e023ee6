// Scoped credentials in the dashboard end to end, in headless Chromium against a real service on a
// real port (docs/API.md "Scoped credentials"): an admin signed in with a password invites a user
// limited to a group and changes their groups on the Users page, creates an API key limited to a
// group (the organization-wide scopes then cannot be chosen), sees on the Groups page who is
// limited to each group, and is told why a group in use cannot be deleted (409 group-in-use);
// then the limited person signs in and is offered only what they may do: their groups without
// controls that change them, and vehicle registration into at least one of their groups. One
// service and one browser for the file; the subtests run in order on the same page. Screenshots go
// to test-results/dashboard-scoped/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ORGANIZATION_WIDE } from '../src/auth/scopes.ts';
import { ORGANIZATION_WIDE_SCOPES } from '../web/lists.ts';
import { openBrowser, servedTestApp, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-scoped/', import.meta.url));
const PASSWORD = 'correct horse battery staple';

test('the organization-wide scopes the key form disables are the server\'s', () => {
  assert.deepEqual([...ORGANIZATION_WIDE_SCOPES].sort(), [...ORGANIZATION_WIDE].sort());
});

interface User {
  id: string;
  email: string;
  groupIds: string[] | null;
}

interface Key {
  id: string;
  name: string;
  scopes: string[];
  groupIds: string[] | null;
}

const skip = skipUnlessChromium('the dashboard scoped-credentials browser tests');

test('the dashboard\'s scoped credentials: users and keys limited to groups, who holds a group, a group in use, a limited person', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);

  const users = async () => (await ctx.request('GET', '/v2/users')).json<{ users: User[] }>().users;
  const userByEmail = async (email: string) => (await users()).find((u) => u.email === email);
  const keys = async () => (await ctx.request('GET', '/v2/api-keys')).json<{ apiKeys: Key[] }>().apiKeys;
  const newGroup = async (name: string) => {
    const res = await ctx.request('POST', '/v2/groups', { body: { name } });
    assert.equal(res.statusCode, 201, res.body);
    return res.json<{ id: string }>().id;
  };

  await ctx.person('dana@example.com', 'Dana Ortiz', 'admin', PASSWORD);
  const berlin = await newGroup('Berlin vans');
  const depot = await newGroup('Depot');
  await ctx.registerVehicle('van-1', { groupIds: [berlin] });
  await ctx.registerVehicle('bus-1', { type: 'bus', groupIds: [depot] });

  mkdirSync(SHOTS, { recursive: true });
  const { page, pageErrors, cspViolations, consoleErrors, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  /** Every API request the page made: method and path. */
  const sent: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/v2/') || url.pathname.startsWith('/auth/')) sent.push(`${request.method()} ${url.pathname}`);
  });
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const navLinks = () => nav.getByRole('link').allInnerTexts();
  const open = async (label: string, heading: string) => {
    await nav.getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  };
  const userRow = (email: string) => page.getByRole('table', { name: 'Users', exact: true }).getByRole('row').filter({ hasText: email });
  const groupRow = (name: string) => page.getByRole('table', { name: 'Vehicle groups', exact: true }).getByRole('row').filter({ hasText: name });
  let consoleFrom = 0;
  let invitationUrl = '';

  await t.test('Users: an admin invites a person limited to a group, then changes their groups (none chosen: the whole organization)', async () => {
    await page.goto(`${origin}/`);
    await signInWithPassword(page, 'dana@example.com', PASSWORD, 'Dana Ortiz');
    consoleFrom = consoleErrors.length;
    await open('Users', 'Users');
    const form = page.getByRole('form', { name: 'Invite a user' });
    const choice = form.getByRole('group', { name: 'Groups' });
    await choice.waitFor();
    assert.deepEqual(await choice.getByRole('checkbox').evaluateAll((boxes) => boxes.map((b) => (b as unknown as { value: string }).value)), [berlin, depot]);
    assert.match(await choice.innerText(), /None chosen: the whole organization/);
    // Dana's own row: the whole organization, and nothing offered to limit herself.
    await userRow('dana@example.com').locator('.cell-groups .limit', { hasText: 'Whole organization' }).waitFor();
    assert.equal(await userRow('dana@example.com').getByRole('button', { name: /Change the groups/ }).count(), 0);

    await form.getByLabel('Email').fill('lena@example.com');
    await form.getByLabel('Name', { exact: true }).fill('Lena Vogt');
    await form.getByLabel('Role').selectOption('manager');
    await choice.getByLabel('Berlin vans').check();
    await form.getByRole('button', { name: 'Invite' }).click();
    const box = page.getByRole('region', { name: 'Invitation for lena@example.com' });
    await box.getByLabel('Invitation link').waitFor();
    invitationUrl = await box.getByLabel('Invitation link').inputValue();
    assert.deepEqual((await userByEmail('lena@example.com'))?.groupIds, [berlin], 'the API shows her groups');
    assert.equal(await choice.getByLabel('Berlin vans').isChecked(), false, 'the form is cleared after inviting');
    const lena = userRow('lena@example.com');
    await lena.locator('.cell-groups .limit', { hasText: /^Berlin vans/ }).waitFor();
    await shot('01-invited');

    // Her groups changed from her row: Depot added; then none, which is the whole organization (null); then Berlin vans again.
    const edit = async (check: string[], uncheck: string[], said: string) => {
      await lena.getByRole('button', { name: 'Change the groups of lena@example.com' }).click();
      const editor = page.getByRole('form', { name: 'Groups of Lena Vogt' });
      for (const name of check) await editor.getByLabel(name).check();
      for (const name of uncheck) await editor.getByLabel(name).uncheck();
      await editor.getByRole('button', { name: 'Save groups' }).click();
      await editor.getByRole('status').getByText(said, { exact: true }).waitFor();
    };
    await edit(['Depot'], [], 'Lena Vogt is now limited to Berlin vans, Depot.');
    assert.deepEqual((await userByEmail('lena@example.com'))?.groupIds?.sort(), [berlin, depot].sort());
    await lena.locator('.cell-groups .limit', { hasText: /^Berlin vans, Depot/ }).waitFor();
    await edit([], ['Berlin vans', 'Depot'], 'Lena Vogt now has the whole organization.');
    assert.equal((await userByEmail('lena@example.com'))?.groupIds, null, 'an empty choice is sent as null');
    await lena.locator('.cell-groups .limit', { hasText: /^Whole organization/ }).waitFor();
    await edit(['Berlin vans'], [], 'Lena Vogt is now limited to Berlin vans.');
    assert.deepEqual((await userByEmail('lena@example.com'))?.groupIds, [berlin]);
    const patches = sent.filter((s) => s.startsWith('PATCH /v2/users/'));
    assert.equal(patches.length, 3);
    await shot('02-user-groups');
  });

  await t.test('API keys: limited to a group, the organization-wide scopes are off and cannot be chosen; the list names its groups', async () => {
    await open('API keys', 'API keys');
    const form = page.getByRole('form', { name: 'Create an API key' });
    const choice = form.getByRole('group', { name: 'Groups' });
    await choice.waitFor();
    const admin = form.getByRole('checkbox', { name: /^admin/ });
    const note = form.getByText(/A key limited to groups cannot hold admin, users, webhooks, audit:read, rules, metrics:read/);
    assert.equal(await note.isVisible(), false);
    await admin.check();
    await form.getByRole('checkbox', { name: /^users/ }).check();
    await choice.getByLabel('Berlin vans').check();
    await note.waitFor();
    assert.equal(await admin.isDisabled(), true, 'admin cannot be chosen');
    assert.equal(await admin.isChecked(), false, 'admin is unchecked');
    assert.equal(await form.getByRole('checkbox', { name: /^users/ }).isChecked(), false);
    for (const scope of ['users', 'webhooks', 'audit:read', 'rules', 'metrics:read']) {
      assert.equal(await form.getByRole('checkbox', { name: new RegExp(`^${scope} `) }).isDisabled(), true, scope);
    }
    assert.equal(await form.getByRole('checkbox', { name: /^fleet:read/ }).isDisabled(), false);
    await shot('03-key-limited');
    // No group: every scope can be chosen again (none checked back by itself).
    await choice.getByLabel('Berlin vans').uncheck();
    await note.waitFor({ state: 'hidden' });
    assert.equal(await admin.isDisabled(), false);
    assert.equal(await admin.isChecked(), false);

    await form.getByLabel('Name', { exact: true }).fill('Berlin board');
    await choice.getByLabel('Berlin vans').check();
    await form.getByRole('checkbox', { name: /^fleet:read/ }).check();
    await form.getByRole('checkbox', { name: /^telemetry:read/ }).check();
    await form.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('region', { name: 'New key "Berlin board"' }).waitFor();
    const stored = (await keys()).find((k) => k.name === 'Berlin board');
    assert.ok(stored !== undefined);
    assert.deepEqual([stored.scopes, stored.groupIds], [['fleet:read', 'telemetry:read'], [berlin]], 'the API shows the key\'s groups');
    const row = page.getByRole('table', { name: 'API keys', exact: true }).getByRole('row').filter({ hasText: 'Berlin board' });
    await row.locator('.cell-groups .limit', { hasText: /^Berlin vans$/ }).waitFor();
    // The first admin key: the whole organization.
    await page.getByRole('table', { name: 'API keys', exact: true }).getByRole('row').filter({ hasText: 'First admin key' })
      .locator('.cell-groups .limit', { hasText: /^Whole organization$/ }).waitFor();
    assert.equal(await choice.getByLabel('Berlin vans').isChecked(), false, 'the form is cleared after creating');
    assert.equal(await admin.isDisabled(), false, 'and every scope can be chosen again');
  });

  await t.test('Groups: who is limited to each group; a delete refused with 409 group-in-use says why and who', async () => {
    await open('Groups', 'Groups');
    const table = page.getByRole('table', { name: 'Vehicle groups', exact: true });
    await table.locator('thead th', { hasText: 'Scoped access' }).waitFor();
    const access = groupRow('Berlin vans').locator('td.cell-access');
    await access.getByText('Lena Vogt').waitFor();
    assert.deepEqual(await access.locator('p').allInnerTexts(), ['Users: Lena Vogt', 'API keys: Berlin board']);
    assert.equal(await groupRow('Depot').locator('td.cell-access').innerText(), '—');

    await groupRow('Berlin vans').getByRole('button', { name: 'Delete' }).click();
    await groupRow('Berlin vans').getByRole('button', { name: 'Confirm delete' }).click();
    const problem = page.getByRole('alert').filter({ hasText: 'Group is in use' });
    await problem.waitFor();
    const detail = (await ctx.request('DELETE', `/v2/groups/${berlin}`)).json<{ detail: string }>().detail;
    assert.match(detail, /limited to group/);
    assert.ok((await problem.innerText()).includes(detail), `the problem's detail is shown: ${await problem.innerText()}`);
    await page.getByText('Limited to Berlin vans: the user Lena Vogt (lena@example.com) and the API key "Berlin board".').waitFor();
    await groupRow('Berlin vans').getByRole('button', { name: 'Delete' }).waitFor();
    assert.equal((await ctx.request('GET', `/v2/groups/${berlin}`)).statusCode, 200, 'the group stays');
    await shot('04-group-in-use');

    // Nobody holds Depot: it goes.
    await groupRow('Depot').getByRole('button', { name: 'Delete' }).click();
    await groupRow('Depot').getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByText('Deleted Depot; its vehicles stay.').waitFor();
  });

  await t.test('no error in the console but the refused delete', () => {
    const errors = consoleErrors.slice(consoleFrom);
    const refused = errors.filter((e) => /status of 409 .*\/v2\/groups\/grp_\w+$/.test(e));
    assert.equal(refused.length, 1, errors.join('\n'));
    assert.deepEqual(errors.filter((e) => !refused.includes(e)), []);
  });

  await t.test('a person limited to a group: only what they may do is offered, their groups without controls, registration into one of them', async () => {
    const token = new URLSearchParams(new URL(invitationUrl).hash.split('?')[1]).get('token');
    assert.ok(token !== null);
    const accepted = await ctx.request('POST', '/auth/invitations/accept', { key: null, body: { token, password: PASSWORD } });
    assert.equal(accepted.statusCode, 200, accepted.body);
    const other = await newGroup('Hamburg');
    await ctx.registerVehicle('van-9', { groupIds: [other] });

    await page.getByRole('button', { name: 'Sign out' }).click();
    await signInWithPassword(page, 'lena@example.com', PASSWORD, 'Lena Vogt');
    const before = consoleErrors.length;
    const sentFrom = sent.length;
    // A manager, less the organization-wide pages.
    assert.deepEqual(await navLinks(), ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports', 'Vehicles', 'Devices']);

    await open('Groups', 'Groups');
    await groupRow('Berlin vans').waitFor();
    await page.getByText('Your account is limited to these groups').waitFor();
    assert.deepEqual(await page.getByRole('table', { name: 'Vehicle groups', exact: true }).locator('tbody th').allInnerTexts(), ['Berlin vans']);
    assert.deepEqual(await page.getByRole('table', { name: 'Vehicle groups', exact: true }).locator('thead th').allInnerTexts(), ['Name', 'Description', 'Vehicles', 'Actions']);
    assert.equal(await page.getByRole('form', { name: 'Create a group' }).count(), 0);
    assert.equal(await groupRow('Berlin vans').getByRole('button', { name: 'Delete' }).count(), 0);
    await groupRow('Berlin vans').getByRole('button', { name: 'Open' }).click();
    const members = page.getByRole('table', { name: 'Vehicles in the group', exact: true });
    await members.locator('tbody tr[data-vehicle-id="van-1"]').waitFor();
    assert.equal(await page.getByRole('form').count(), 0, 'no rename, no adding');
    assert.equal(await members.getByRole('button').count(), 0, 'no removing');
    await shot('05-limited-groups');

    await open('Vehicles', 'Vehicles');
    const register = page.getByRole('form', { name: 'Register a vehicle' });
    const choice = register.getByRole('group', { name: 'Groups' });
    await choice.waitFor();
    assert.deepEqual(await choice.getByRole('checkbox').evaluateAll((boxes) => boxes.map((b) => (b as unknown as { value: string }).value)), [berlin]);
    await register.getByLabel('Vehicle id').fill('van-7');
    await register.getByRole('button', { name: 'Register' }).click();
    await register.getByRole('alert').getByText('Choose a group').waitFor();
    assert.equal(await choice.getAttribute('aria-invalid'), 'true');
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-7')).statusCode, 404, 'nothing was sent');
    await choice.getByLabel('Berlin vans').check();
    await register.getByRole('button', { name: 'Register' }).click();
    await register.getByRole('status').getByText('Registered van-7.').waitFor();
    assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/van-7')).json<{ groupIds: string[] }>().groupIds, [berlin]);
    const listed = page.getByRole('table', { name: 'Registered vehicles', exact: true });
    await listed.locator('tr[data-vehicle-id="van-7"]').waitFor();
    assert.equal(await listed.locator('tr[data-vehicle-id="van-9"]').count(), 0, 'a vehicle outside her groups is not listed');
    await shot('06-limited-vehicles');

    assert.deepEqual(sent.slice(sentFrom).filter((s) => /\/v2\/(users|api-keys)/.test(s)), [], 'nothing asked that her scopes do not allow');
    assert.deepEqual(consoleErrors.slice(before), []);
  });

  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(cspViolations, [], 'Content-Security-Policy violations');
});
