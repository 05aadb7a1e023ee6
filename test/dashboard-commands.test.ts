// Commands on the dashboard's vehicle page, in headless Chromium against a real service on a real
// port (docs/API.md "Commands"): the types offered are the vehicle's channel's, an engine stop
// needs its confirmation, a sent command is listed and cancelled, a change made elsewhere arrives
// live, and a viewer reads the history without a control that sends or cancels. A screenshot of
// the panel goes to test-results/dashboard-commands.png.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openBrowser, servedTestApp, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';

const PASSWORD = 'correct horse battery staple';
const skip = skipUnlessChromium('the dashboard commands browser tests');

test('the vehicle page\'s commands: types of its channel, the engine stop confirmed, send, cancel, live changes; a viewer only reads', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);
  await ctx.person('otto@example.com', 'Otto Operator', 'operator', PASSWORD);
  await ctx.person('vic@example.com', 'Vic Viewer', 'viewer', PASSWORD);
  await ctx.registerVehicle('van-1');
  await ctx.registerVehicle('phone-van');
  assert.equal((await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'phone-1', vehicleId: 'phone-van' } })).statusCode, 201);

  const { page, pageErrors, cspViolations, close } = await openBrowser();
  t.after(close);
  await page.goto(`${origin}/`);
  await signInWithPassword(page, 'otto@example.com', PASSWORD, 'Otto Operator');
  const commands = page.getByRole('region', { name: 'Commands' });
  const typeSelect = commands.getByLabel('Command', { exact: true });
  const rows = commands.getByRole('table', { name: 'Commands, newest first' }).locator('tbody tr');
  const statusOf = (i: number) => rows.nth(i).locator('.badge').innerText();
  const openVehicle = async (id: string) => {
    await page.goto(`${origin}/#/vehicles/${id}`);
    await page.getByRole('heading', { level: 1, name: id }).waitFor();
    await typeSelect.waitFor();
  };

  // An OsmAnd vehicle: custom text only.
  await openVehicle('phone-van');
  assert.deepEqual(await typeSelect.locator('option').evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value)), ['custom']);
  await commands.getByText('No commands yet.').waitFor();

  // No device: MQTT, every type.
  await openVehicle('van-1');
  assert.equal((await typeSelect.locator('option').count()), 6);
  await typeSelect.selectOption('outputControl');
  await commands.getByLabel('Output').selectOption('2');
  await commands.getByRole('button', { name: 'Send command' }).click();
  await commands.getByText('Command outputControl queued.').waitFor();
  await rows.first().getByText('output 2 on').waitFor();
  assert.equal(await statusOf(0), 'queued');

  // The engine stop: refused by the form until confirmed; nothing sent meanwhile.
  await typeSelect.selectOption('engineStop');
  const confirm = commands.getByRole('checkbox');
  await commands.getByRole('button', { name: 'Send command' }).click();
  assert.equal(await confirm.evaluate((box) => (box as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing), true);
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1/commands')).json<{ commands: unknown[] }>().commands.length, 1);
  await confirm.check();
  await commands.getByRole('button', { name: 'Send command' }).click();
  await commands.getByText('Command engineStop queued.').waitFor();
  assert.equal(await rows.count(), 2);

  // Cancel from the page; and a change made through the API arrives live.
  await rows.first().getByRole('button', { name: 'Cancel' }).click();
  await rows.first().locator('.badge', { hasText: 'cancelled' }).waitFor();
  const listed = (await ctx.request('GET', '/v2/fleet/vehicles/van-1/commands')).json<{ commands: Array<{ id: string; status: string }> }>().commands;
  assert.deepEqual(listed.map((c) => c.status), ['cancelled', 'queued']);
  assert.equal((await ctx.request('DELETE', `/v2/commands/${listed[1]!.id}`)).statusCode, 200);
  await rows.nth(1).locator('.badge', { hasText: 'cancelled' }).waitFor();
  const made = await ctx.request('POST', '/v2/fleet/vehicles/van-1/commands', { body: { type: 'reboot' } });
  assert.equal(made.statusCode, 202);
  await rows.first().getByText('reboot').waitFor();
  assert.equal(await rows.count(), 3);
  await commands.screenshot({ path: fileURLToPath(new URL('../test-results/dashboard-commands.png', import.meta.url)), animations: 'disabled' });

  // A viewer reads the history, with nothing to send or cancel.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signInWithPassword(page, 'vic@example.com', PASSWORD, 'Vic Viewer');
  await page.goto(`${origin}/#/vehicles/van-1`);
  await rows.first().waitFor();
  assert.equal(await rows.count(), 3);
  await commands.getByText('Sending commands needs the commands scope').waitFor();
  assert.equal(await commands.getByRole('button', { name: 'Cancel' }).count(), 0);
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, []);
});
