// Drivers in the dashboard end to end, in headless Chromium against a real service on a real port
// (docs/API.md "Drivers"): an admin signed in with a password adds a driver (a bad identifier is
// refused beside its field), finds drivers by name, assigns one to a vehicle and then another to
// the same vehicle (the first one's assignment ends), reads a driver's assignments, sees the
// vehicle's page name its driver and show and set its meters, ends an assignment and deletes a driver; names with markup stay
// text. Screenshots go to test-results/dashboard-drivers/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openBrowser, servedTestApp, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-drivers/', import.meta.url));
const PASSWORD = 'correct horse battery staple';
const MARKUP = 'Ada <img src="/none.png" data-injected onerror="window.ran=1"><b data-injected>Lovelace</b>';

interface Driver { id: string; name: string; vehicleId: string | null; identifiers: Array<{ kind: string; value: string }> }

const skip = skipUnlessChromium('the dashboard drivers browser tests');

test('the dashboard\'s drivers: add, find, assign, reassign, read the record, end, delete', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);
  await ctx.person('dana@example.com', 'Dana Ortiz', 'admin', PASSWORD);
  for (const id of ['van-1', 'van-2']) await ctx.registerVehicle(id);
  const drivers = async () => (await ctx.request('GET', '/v2/drivers')).json<{ drivers: Driver[] }>().drivers;
  // One made through the API, named with markup.
  assert.equal((await ctx.request('POST', '/v2/drivers', { body: { name: MARKUP } })).statusCode, 201);

  mkdirSync(SHOTS, { recursive: true });
  const { page, pageErrors, cspViolations, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const table = page.getByRole('table', { name: 'Drivers', exact: true });
  const row = (text: string) => table.getByRole('row').filter({ hasText: text });
  const feedback = page.locator('.manage-list > .feedback[aria-live]');

  await page.goto(`${origin}/`);
  await signInWithPassword(page, 'dana@example.com', PASSWORD, 'Dana Ortiz');
  await nav.getByRole('link', { name: 'Drivers', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Drivers', exact: true }).waitFor();
  assert.equal(await page.title(), 'Drivers · Fleet');
  await row('Lovelace').waitFor();
  assert.equal(await row('Lovelace').getByRole('rowheader').innerText(), MARKUP, 'a name with markup is text');

  const add = page.getByRole('form', { name: 'Add a driver' });
  await add.getByLabel('Name', { exact: true }).fill('Grace Hopper');
  await add.getByLabel('Identifier (optional)').fill('not-hex');
  await add.getByRole('button', { name: 'Add driver' }).click();
  await add.getByRole('alert').getByText('Request validation failed').waitFor();
  assert.equal((await drivers()).length, 1, 'a refused driver is not stored');
  await add.getByLabel('Identifier (optional)').fill('01a2b3c4d5e6f708');
  await add.getByRole('button', { name: 'Add driver' }).click();
  await add.getByRole('status').getByText('Added Grace Hopper.').waitFor();
  await row('Grace Hopper').getByText('01A2B3C4D5E6F708').waitFor();
  await shot('01-added');

  // Find by name.
  await page.getByLabel('Name or external id').fill('hop');
  await page.getByRole('button', { name: 'Find' }).click();
  await row('Lovelace').waitFor({ state: 'detached' });
  assert.equal(await table.locator('tbody tr').count(), 1);
  await page.getByLabel('Name or external id').fill('');
  await page.getByRole('button', { name: 'Find' }).click();
  await row('Lovelace').waitFor();

  // Grace drives van-1; then Ada takes van-1 over: Grace's assignment ends.
  await row('Grace Hopper').getByLabel('Vehicle for Grace Hopper').fill('van-1');
  await row('Grace Hopper').getByRole('button', { name: 'Assign', exact: true }).click();
  await feedback.getByText(/^Grace Hopper drives van-1 from/).waitFor();
  await row('Grace Hopper').locator('td.driving', { hasText: 'van-1' }).waitFor();
  const ada = (await drivers()).find((d) => d.name === MARKUP)!;
  await row('Lovelace').locator('input').fill('van-1');
  await row('Lovelace').getByRole('button', { name: 'Assign', exact: true }).click();
  await row('Lovelace').locator('td.driving', { hasText: 'van-1' }).waitFor();
  await row('Grace Hopper').locator('td.driving', { hasText: '—' }).waitFor();
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string }>().driverId, ada.id);
  await row('Grace Hopper').getByRole('button', { name: 'Assignments' }).click();
  const record = page.getByRole('table', { name: 'Assignments of Grace Hopper' });
  await record.waitFor();
  const cells = await record.locator('tbody tr').first().locator('td').allInnerTexts();
  assert.equal(cells[0], 'van-1');
  assert.notEqual(cells[2], 'ongoing', 'Grace\'s assignment ended when Ada took the van');
  await shot('02-reassigned');

  // The vehicle's page names its driver, linked to the drivers.
  await page.goto(`${origin}/#/vehicles/van-1`);
  await page.locator('a.driver', { hasText: 'Lovelace' }).waitFor();
  assert.equal(await page.locator('a.driver').innerText(), MARKUP);

  // Its meters: shown as the service keeps them, set from the page (a refused value named beside its field).
  const meters = page.getByRole('region', { name: 'Meters' });
  await meters.locator('[data-meter="odometer"]', { hasText: '0 km' }).waitFor();
  await meters.locator('summary', { hasText: 'Set meters' }).click();
  const setForm = meters.getByRole('form', { name: 'Set meters' });
  await setForm.getByLabel('Odometer now (km)').fill('-5');
  await setForm.getByLabel('Engine hours now').fill('12.5');
  await setForm.getByRole('button', { name: 'Set meters' }).click();
  await setForm.getByRole('alert').waitFor();
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1/meters')).json<{ engineHours: number }>().engineHours, 0, 'a refused setting changes nothing');
  await setForm.getByLabel('Odometer now (km)').fill('48211.5');
  await setForm.getByRole('button', { name: 'Set meters' }).click();
  await setForm.getByRole('status').getByText('Meters set; later records add to them.').waitFor();
  await meters.locator('[data-meter="odometer"]', { hasText: '48,211.5 km' }).waitFor();
  await meters.locator('[data-meter="engine"]', { hasText: '12.5 h' }).waitFor();
  const stored = (await ctx.request('GET', '/v2/fleet/vehicles/van-1/meters')).json<{ odometerKm: number; engineHours: number }>();
  assert.deepEqual([stored.odometerKm, stored.engineHours], [48211.5, 12.5]);
  await shot('03-meters');

  // End Ada's assignment, then delete Grace: asked once more; her record stays.
  await nav.getByRole('link', { name: 'Drivers', exact: true }).click();
  await row('Lovelace').getByRole('button', { name: 'End' }).click();
  await row('Lovelace').locator('td.driving', { hasText: '—' }).waitFor();
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>().driverId, null);
  await row('Grace Hopper').getByRole('button', { name: 'Delete' }).click();
  await row('Grace Hopper').getByRole('button', { name: 'Confirm delete' }).click();
  await row('Grace Hopper').waitFor({ state: 'detached' });
  assert.deepEqual((await drivers()).map((d) => d.name), [MARKUP]);
  const kept = (await ctx.request('GET', '/v2/driver-assignments?vehicleId=van-1')).json<{ assignments: unknown[] }>().assignments;
  assert.equal(kept.length, 2, 'the deleted driver\'s assignment stays on record');

  assert.equal(await page.locator('[data-injected]').count(), 0);
  assert.equal(await page.evaluate('typeof window.ran'), 'undefined');
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, []);
});
