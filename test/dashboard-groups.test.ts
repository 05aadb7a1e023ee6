// Vehicle groups in the dashboard end to end, in headless Chromium against a real service on a real
// port (docs/API.md "Vehicle groups"): an admin signed in with a password creates a group, puts
// vehicles in it by id (all or none: a missing id is refused and adds nothing), takes one out,
// renames it, filters the fleet list by it, chooses groups when registering and editing a
// vehicle, and deletes it; names with markup stay text everywhere; a viewer reads the page
// without any control that changes it. One service and one browser for the file; the subtests
// run in order on the same page. Screenshots go to test-results/dashboard-groups/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openBrowser, servedTestApp, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-groups/', import.meta.url));
const PASSWORD = 'correct horse battery staple';

/** A name (within the 100 characters a group's may have) that, read as HTML, adds elements marked `data-injected` and runs a handler, if allowed. */
const markup = (what: string) => `${what} <img src="/none.png" data-injected onerror="window.ran=1"><b data-injected>bold</b>`;
const NIGHT = markup('Night shift');
const DEPOT = markup('Depot');

interface Group {
  id: string;
  name: string;
  description: string | null;
  vehicleCount: number;
}

const skip = skipUnlessChromium('the dashboard groups browser tests');

test('the dashboard\'s groups: create, fill by id, take out, rename, filter by, choose for a vehicle, delete; a viewer only reads', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);

  const person = (email: string, name: string, role: string) => ctx.person(email, name, role, PASSWORD);
  const groups = async () => (await ctx.request('GET', '/v2/groups')).json<{ groups: Group[] }>().groups;
  const groupIdsOf = async (vehicleId: string) => (await ctx.request('GET', `/v2/fleet/vehicles/${vehicleId}`)).json<{ groupIds: string[] }>().groupIds;
  const membersOf = async (groupId: string) =>
    (await ctx.request('GET', '/v2/fleet/vehicles', { query: { groupId } })).json<{ vehicles: Array<{ id: string }> }>().vehicles.map((v) => v.id);

  await person('dana@example.com', 'Dana Ortiz', 'admin');
  await person('vic@example.com', 'Vic Viewer', 'viewer');
  for (const id of ['van-1', 'van-2', 'van-3']) await ctx.registerVehicle(id);
  await ctx.registerVehicle('bus-1', { type: 'bus' });
  // A group made through the API, named with markup, with bus-1 in it.
  const depot = await ctx.request('POST', '/v2/groups', { body: { name: DEPOT, description: 'The <i>north</i> yard' } });
  assert.equal(depot.statusCode, 201, depot.body);
  const depotId = depot.json<Group>().id;
  assert.equal((await ctx.request('POST', `/v2/groups/${depotId}/vehicles`, { body: { vehicleIds: ['bus-1'] } })).statusCode, 204);

  mkdirSync(SHOTS, { recursive: true });
  const { page, pageErrors, cspViolations, consoleErrors, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  /** The query of every vehicle list the page read. */
  const listQueries: URLSearchParams[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname === '/v2/fleet/vehicles' && request.method() === 'GET') listQueries.push(url.searchParams);
  });
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const navLinks = () => nav.getByRole('link').allInnerTexts();
  const signIn = (email: string, name: string) => signInWithPassword(page, email, PASSWORD, name);
  const open = async (label: string, heading: string) => {
    await nav.getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  };
  const groupTable = page.getByRole('table', { name: 'Vehicle groups', exact: true });
  const groupRow = (text: string) => groupTable.getByRole('row').filter({ hasText: text });
  const members = page.getByRole('table', { name: 'Vehicles in the group', exact: true });
  const memberIds = () => members.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-vehicle-id')));
  const injected = async () => ({
    elements: await page.locator('[data-injected]').evaluateAll((found) => found.map((el) => el.outerHTML)),
    ran: await page.evaluate('typeof window.ran'),
  });
  let consoleFrom = 0;
  let groupId = '';

  await t.test('an admin is offered the page; a group is created, its name shown as the text it is', async () => {
    await page.goto(`${origin}/`);
    await signIn('dana@example.com', 'Dana Ortiz');
    // (Before signing in, the page asked for a session there was not: that 401 is the sign-in page's.)
    consoleFrom = consoleErrors.length;
    assert.deepEqual(await navLinks(), ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports', 'Vehicles', 'Devices', 'Webhooks', 'API keys', 'Users', 'Audit log']);
    await open('Groups', 'Groups');
    assert.equal(new URL(page.url()).hash, '#/groups');
    assert.equal(await nav.getByRole('link', { name: 'Groups', exact: true }).getAttribute('aria-current'), 'page');
    assert.equal(await page.title(), 'Groups · Fleet');
    await groupRow('Depot').waitFor();
    assert.equal(await groupRow('Depot').getByRole('rowheader').innerText(), DEPOT);

    const create = page.getByRole('form', { name: 'Create a group' });
    // Without a name: the service's problem beside the form and beside the field.
    await create.getByRole('button', { name: 'Create' }).click();
    await create.getByRole('alert').getByText('Request validation failed').waitFor();
    assert.equal(await create.getByLabel('Name', { exact: true }).getAttribute('aria-invalid'), 'true');

    await create.getByLabel('Name', { exact: true }).fill(NIGHT);
    await create.getByLabel('Description (optional)').fill('Vans out after 22:00');
    await create.getByRole('button', { name: 'Create' }).click();
    await create.getByRole('status').getByText(`Created ${NIGHT}.`, { exact: true }).waitFor();
    const row = groupRow('Night shift');
    await row.waitFor();
    // Nobody is limited to it: "—" under Scoped access.
    assert.deepEqual(await row.locator('th, td').allInnerTexts(), [NIGHT, 'Vans out after 22:00', '0', '—', await row.locator('td.actions').innerText()]);
    const stored = (await groups()).find((g) => g.name === NIGHT);
    assert.ok(stored !== undefined, 'the group is stored under the name as typed');
    assert.equal(stored.description, 'Vans out after 22:00');
    groupId = stored.id;
    assert.equal(await create.getByLabel('Name', { exact: true }).inputValue(), '', 'the form is cleared after creating');
    assert.deepEqual(await injected(), { elements: [], ran: 'undefined' });
    await shot('01-created');
  });

  await t.test('vehicles go in by id, all or none: a missing id is shown and adds nothing; one is taken out', async () => {
    await groupRow('Night shift').getByRole('button', { name: 'Open' }).click();
    const editor = page.getByRole('region', { name: NIGHT, exact: true });
    await editor.waitFor();
    await page.getByText('No vehicles in this group.').waitFor();
    const add = page.getByRole('form', { name: 'Add vehicles to the group' });
    const ids = add.getByLabel('Vehicle ids');

    await ids.fill('van-1, van-2 nope-9');
    await add.getByRole('button', { name: 'Add' }).click();
    const problem = add.getByRole('alert');
    await problem.getByText('Vehicle not found').waitFor();
    assert.match(await problem.innerText(), /"nope-9".*none was added/);
    assert.equal(await ids.inputValue(), 'van-1, van-2 nope-9', 'what was typed stays to be corrected');
    assert.deepEqual(await membersOf(groupId), [], 'nothing was added');
    assert.equal(await groupRow('Night shift').locator('td.num').innerText(), '0');
    await shot('02-missing-vehicle');

    await ids.fill('van-1, van-2\tvan-3 van-1');
    await add.getByRole('button', { name: 'Add' }).click();
    await add.getByRole('status').getByText('Added 3 vehicles.').waitFor();
    await groupRow('Night shift').locator('td.num', { hasText: /^3$/ }).waitFor();
    await editor.getByText(/^3 vehicles · created/).waitFor();
    await members.locator('tbody tr[data-vehicle-id="van-3"]').waitFor();
    assert.deepEqual(await memberIds(), ['van-1', 'van-2', 'van-3']);
    assert.deepEqual(await membersOf(groupId), ['van-1', 'van-2', 'van-3']);
    assert.equal(await ids.inputValue(), '');
    assert.ok(listQueries.some((q) => q.get('groupId') === groupId), 'the members are the vehicle list of the group');

    await members.getByRole('row').filter({ hasText: 'van-3' }).getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('status').getByText(`Removed van-3 from ${NIGHT}.`, { exact: true }).waitFor();
    await groupRow('Night shift').locator('td.num', { hasText: /^2$/ }).waitFor();
    await editor.getByText(/^2 vehicles · created/).waitFor();
    await members.locator('tbody tr[data-vehicle-id="van-3"]').waitFor({ state: 'detached' });
    assert.deepEqual(await membersOf(groupId), ['van-1', 'van-2']);
    assert.deepEqual(await injected(), { elements: [], ran: 'undefined' });
    await shot('03-members');
  });

  await t.test('rename and describe: only what changed is sent, an emptied description removed', async () => {
    const edit = page.getByRole('form', { name: 'Rename or describe the group' });
    await edit.getByLabel('Name', { exact: true }).fill('Berlin vans');
    await edit.getByLabel('Description', { exact: true }).fill('');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByRole('status').getByText('Saved Berlin vans.').waitFor();
    await page.getByRole('heading', { level: 2, name: 'Berlin vans', exact: true }).waitFor();
    await page.getByRole('heading', { level: 2, name: 'Vehicles in Berlin vans', exact: true }).waitFor();
    await groupRow('Berlin vans').waitFor();
    assert.deepEqual((await groupRow('Berlin vans').locator('th, td').allInnerTexts()).slice(0, 3), ['Berlin vans', '—', '2']);
    const stored = (await ctx.request('GET', `/v2/groups/${groupId}`)).json<Group>();
    assert.deepEqual([stored.name, stored.description, stored.vehicleCount], ['Berlin vans', null, 2]);
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByRole('status').getByText('Nothing to change.').waitFor();
  });

  await t.test('the fleet list names each vehicle\'s groups and filters by group', async () => {
    await open('Fleet', 'Fleet');
    const rows = page.locator('table.vehicles tbody tr');
    const rowIds = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-vehicle-id')));
    await page.locator('tr[data-vehicle-id="bus-1"] .cell-groups', { hasText: 'Depot' }).waitFor();
    assert.equal(await page.locator('tr[data-vehicle-id="bus-1"] .cell-groups').innerText(), DEPOT);
    assert.equal(await page.locator('tr[data-vehicle-id="van-1"] .cell-groups').innerText(), 'Berlin vans');
    assert.equal(await page.locator('tr[data-vehicle-id="van-3"] .cell-groups').innerText(), '—');
    const filter = page.locator('#group-filter');
    assert.deepEqual(await filter.locator('option').allInnerTexts(), ['All groups', DEPOT, 'Berlin vans']);
    await filter.selectOption({ label: 'Berlin vans' });
    await page.locator('.page-info', { hasText: '1–2 of 2' }).waitFor();
    await page.locator('table.vehicles:not([aria-busy])').waitFor();
    assert.deepEqual(await rowIds(), ['van-1', 'van-2']);
    assert.equal(listQueries.at(-1)?.get('groupId'), groupId);
    // The counts are of the group's vehicles.
    await page.locator('.counts button[data-status="all"] .count-n', { hasText: /^2$/ }).waitFor();
    await shot('04-fleet-filtered');
    await filter.selectOption('');
    await page.locator('.page-info', { hasText: '1–4 of 4' }).waitFor();
    assert.deepEqual(await injected(), { elements: [], ran: 'undefined' });
  });

  await t.test('a vehicle\'s groups are chosen when registering and editing it', async () => {
    await open('Vehicles', 'Vehicles');
    const row = (id: string) => page.getByRole('table', { name: 'Registered vehicles', exact: true }).getByRole('row').filter({ hasText: id });
    await row('bus-1').locator('.cell-groups', { hasText: 'Depot' }).waitFor();
    assert.equal(await row('bus-1').locator('.cell-groups').innerText(), DEPOT);

    const register = page.getByRole('form', { name: 'Register a vehicle' });
    const choice = register.getByRole('group', { name: 'Groups' });
    await choice.getByLabel('Berlin vans').check();
    await register.getByLabel('Vehicle id').fill('tram-9');
    await register.getByRole('button', { name: 'Register' }).click();
    await register.getByRole('status').getByText('Registered tram-9.').waitFor();
    await row('tram-9').locator('.cell-groups', { hasText: 'Berlin vans' }).waitFor();
    assert.deepEqual(await groupIdsOf('tram-9'), [groupId]);
    assert.equal(await choice.getByLabel('Berlin vans').isChecked(), false, 'the form is cleared after registering');

    // Editing bus-1: Berlin vans added, Depot kept; then Depot taken away.
    await row('bus-1').getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit bus-1' });
    const editChoice = edit.getByRole('group', { name: 'Groups' });
    await editChoice.waitFor();
    assert.equal(await editChoice.getByLabel('Depot').isChecked(), true);
    assert.equal(await editChoice.getByLabel('Berlin vans').isChecked(), false);
    await editChoice.getByLabel('Berlin vans').check();
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByRole('status').getByText('Saved bus-1.').waitFor();
    assert.deepEqual((await groupIdsOf('bus-1')).sort(), [depotId, groupId].sort());
    await row('bus-1').locator('.cell-groups', { hasText: 'Berlin vans' }).waitFor();
    await editChoice.getByLabel('Depot').uncheck();
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByRole('status').getByText('Saved bus-1.').waitFor();
    await row('bus-1').locator('.cell-groups', { hasText: /^Berlin vans$/ }).waitFor();
    assert.deepEqual(await groupIdsOf('bus-1'), [groupId]);
    assert.deepEqual(await injected(), { elements: [], ran: 'undefined' });
    await shot('05-vehicle-groups');

    await open('Groups', 'Groups');
    await groupRow('Berlin vans').locator('td.num', { hasText: /^4$/ }).waitFor();
    await groupRow('Depot').locator('td.num', { hasText: /^0$/ }).waitFor();
  });

  await t.test('delete asks once more; the vehicles stay, in no group', async () => {
    await groupRow('Berlin vans').getByRole('button', { name: 'Open' }).click();
    await page.getByRole('region', { name: 'Berlin vans', exact: true }).waitFor();
    await groupRow('Berlin vans').getByRole('button', { name: 'Delete' }).click();
    await groupRow('Berlin vans').getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByText('Deleted Berlin vans; its vehicles stay.').waitFor();
    await groupRow('Berlin vans').waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('region', { name: 'Berlin vans', exact: true }).count(), 0, 'the deleted group is no longer open');
    assert.equal(await members.count(), 0);
    assert.equal((await ctx.request('GET', `/v2/groups/${groupId}`)).statusCode, 404);
    assert.deepEqual(await groupIdsOf('van-1'), []);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).statusCode, 200);
  });

  await t.test('no error in the console but the two refusals the test asked for', () => {
    const errors = consoleErrors.slice(consoleFrom);
    const refused = errors.filter((e) => /status of 400 .*\/v2\/groups$/.test(e) || /status of 404 .*\/v2\/groups\/grp_\w+\/vehicles$/.test(e));
    assert.equal(refused.length, 2, errors.join('\n'));
    assert.deepEqual(errors.filter((e) => !refused.includes(e)), []);
  });

  await t.test('a viewer reads the groups and their vehicles, with nothing offered that changes them', async () => {
    assert.equal((await ctx.request('POST', `/v2/groups/${depotId}/vehicles`, { body: { vehicleIds: ['van-2'] } })).statusCode, 204);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn('vic@example.com', 'Vic Viewer');
    const before = consoleErrors.length;
    assert.deepEqual(await navLinks(), ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports']);
    await open('Groups', 'Groups');
    await groupRow('Depot').locator('td.num', { hasText: /^1$/ }).waitFor();
    assert.equal(await page.getByRole('form', { name: 'Create a group' }).count(), 0);
    assert.equal(await groupTable.getByRole('button', { name: 'Delete' }).count(), 0);
    await groupRow('Depot').getByRole('button', { name: 'Open' }).click();
    const editor = page.getByRole('region', { name: DEPOT, exact: true });
    await editor.getByText('The <i>north</i> yard', { exact: true }).waitFor();
    await members.locator('tbody tr[data-vehicle-id="van-2"]').waitFor();
    assert.equal(await page.getByRole('form').count(), 0, 'no form: no rename, no adding');
    assert.equal(await members.getByRole('button').count(), 0, 'no removing');
    assert.deepEqual(await members.locator('thead th').allInnerTexts(), ['Vehicle', 'Name', 'Type', 'Status']);
    assert.deepEqual(await injected(), { elements: [], ran: 'undefined' });
    await shot('06-viewer');
    assert.deepEqual(consoleErrors.slice(before), []);
  });

  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(cspViolations, [], 'Content-Security-Policy violations');
});
