// Maintenance in the dashboard end to end, in headless Chromium against a real service on a real
// port (docs/API.md "Maintenance"): an admin signed in with a password adds a schedule (one without
// an interval is refused beside its field), sees which vehicles are overdue, records a service
// from an item's row (the item turns ok), filters by state, reads a vehicle's service items on its
// page, and deletes the schedule; names with markup stay text. Screenshots go to
// test-results/dashboard-maintenance/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openBrowser, servedTestApp, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-maintenance/', import.meta.url));
const PASSWORD = 'correct horse battery staple';
const MARKUP = 'Oil <img src="/none.png" data-injected onerror="window.ran=1">';

const skip = skipUnlessChromium('the dashboard maintenance browser tests');

test('the dashboard\'s maintenance: add a schedule, see what is overdue, record a service, read a vehicle\'s items, delete', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);
  await ctx.person('dana@example.com', 'Dana Ortiz', 'admin', PASSWORD);
  for (const id of ['van-1', 'van-2']) await ctx.registerVehicle(id);
  const items = async () => (await ctx.request('GET', '/v2/maintenance')).json<{ items: Array<{ vehicleId: string; state: string }> }>().items;

  mkdirSync(SHOTS, { recursive: true });
  const { page, pageErrors, cspViolations, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const itemsTable = page.getByRole('table', { name: 'Service items' });
  const itemRow = (vehicleId: string) => itemsTable.locator(`tr[data-item^="${vehicleId} "]`);

  await page.goto(`${origin}/`);
  await signInWithPassword(page, 'dana@example.com', PASSWORD, 'Dana Ortiz');
  await nav.getByRole('link', { name: 'Maintenance', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Maintenance', exact: true }).waitFor();
  assert.equal(await page.title(), 'Maintenance · Fleet');
  await page.getByText('No schedules yet: add one.').waitFor();

  const add = page.getByRole('form', { name: 'Add a schedule' });
  await add.getByLabel('Name', { exact: true }).fill(MARKUP);
  await add.getByRole('button', { name: 'Add schedule' }).click();
  await add.getByRole('alert').getByText('Request validation failed').waitFor();
  assert.equal((await ctx.request('GET', '/v2/maintenance-schedules')).json<{ total: number }>().total, 0, 'a refused schedule is not stored');
  await add.getByRole('group', { name: /^Every/ }).getByLabel('km', { exact: true }).fill('1000');
  await add.getByRole('group', { name: /^Due soon/ }).getByLabel('km', { exact: true }).fill('100');
  await add.getByRole('button', { name: 'Add schedule' }).click();
  await add.getByRole('status').getByText(`Added ${MARKUP}.`).waitFor();
  await itemRow('van-1').waitFor();

  // van-1 drives past its next service: overdue on the page (the state is read live).
  assert.equal((await ctx.request('PUT', '/v2/fleet/vehicles/van-1/meters', { body: { odometerKm: 1200 } })).statusCode, 200);
  await page.getByLabel('State').selectOption('overdue');
  await itemRow('van-1').locator('.badge', { hasText: 'overdue' }).waitFor();
  await itemRow('van-2').waitFor({ state: 'detached' });
  await shot('01-overdue');

  // Record its service from the row: the form is filled, and the item is ok again.
  await itemRow('van-1').getByRole('button', { name: 'Record service' }).click();
  const service = page.getByRole('form', { name: 'Record a service' });
  assert.equal(await service.getByLabel('Vehicle', { exact: true }).inputValue(), 'van-1');
  await service.getByLabel('Notes (optional)').fill('Oil and filter');
  await service.getByRole('button', { name: 'Record service' }).click();
  await service.getByRole('status').getByText('Recorded a service of van-1 at 1,200 km.').waitFor();
  await page.getByLabel('State').selectOption({ label: 'Every state' });
  await itemRow('van-1').locator('.badge', { hasText: 'ok' }).waitFor();
  assert.deepEqual((await items()).map((i) => [i.vehicleId, i.state]), [['van-1', 'ok'], ['van-2', 'ok']]);
  await shot('02-serviced');

  // The vehicle's page lists its items.
  await page.goto(`${origin}/#/vehicles/van-1`);
  const region = page.getByRole('region', { name: 'Maintenance' });
  await region.getByRole('table', { name: 'Service items' }).getByText('2,200 km').waitFor();
  assert.equal(await region.locator('tbody th').innerText(), MARKUP, 'a name with markup is text');

  // Delete the schedule: asked once more; the items go with it.
  await nav.getByRole('link', { name: 'Maintenance', exact: true }).click();
  const schedules = page.getByRole('table', { name: 'Schedules' });
  await schedules.getByRole('button', { name: 'Delete' }).click();
  await schedules.getByRole('button', { name: 'Confirm delete' }).click();
  await page.getByText('No schedules yet: add one.').waitFor();
  assert.deepEqual(await items(), []);

  assert.equal(await page.locator('[data-injected]').count(), 0);
  assert.equal(await page.evaluate('typeof window.ran'), 'undefined');
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, []);
});
