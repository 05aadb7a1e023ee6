// The dashboard's management panels, alerts and event log end to end, in headless Chromium
// (Debian's package, driven by playwright-core) against a real service on a real port, with a
// real webhook receiver. The page is driven by roles and labels, as a person with a screen reader
// would; every wait is for a condition. Screenshots go to test-results/dashboard-manage/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Locator, WebSocketRoute } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { SCOPES as SERVER_SCOPES } from '../src/auth/scopes.ts';
import { PROTOCOLS as SERVER_PROTOCOLS } from '../src/devices/schema.ts';
import { ROLES as SERVER_ROLES } from '../src/people/roles.ts';
import { THRESHOLD_FIELDS as SERVER_FIELDS } from '../src/rules/model.ts';
import { SUBSCRIBABLE } from '../src/webhooks/schema.ts';
import { EVENT_TYPES, PROTOCOLS, ROLES, SCOPES, THRESHOLD_FIELDS } from '../web/lists.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { PAGE_TIMEOUT, freePort, openBrowser, skipUnlessChromium } from './helpers/browser.ts';
import { startReceiver } from './helpers/receiver.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-manage/', import.meta.url));
const FAST_WEBHOOKS = { retryDelaysMs: [60_000], jitter: 0, pollMs: 50 };

test('the lists the browser offers are the server\'s', () => {
  assert.deepEqual([...SCOPES], [...SERVER_SCOPES]);
  assert.deepEqual([...EVENT_TYPES], [...SUBSCRIBABLE]);
  assert.deepEqual([...THRESHOLD_FIELDS], [...SERVER_FIELDS]);
  assert.deepEqual([...PROTOCOLS], [...SERVER_PROTOCOLS]);
  assert.deepEqual([...ROLES], [...SERVER_ROLES]);
});

const skip = skipUnlessChromium('the dashboard management browser tests');

/** What sticks out at the page's width: the page itself, or a management table's cell beyond its card (run in the page). */
const OVERFLOWS = `(() => {
  const found = [];
  const viewport = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > viewport) found.push('the page is ' + document.documentElement.scrollWidth + ' px wide');
  for (const table of document.querySelectorAll('.manage-table')) {
    const card = (table.closest('.table-wrap, .card, .manage-list') ?? table.parentElement).getBoundingClientRect();
    for (const cell of table.querySelectorAll('td.actions, td:last-child')) {
      const right = cell.getBoundingClientRect().right;
      if (right > card.right + 1) found.push(table.getAttribute('aria-label') + ': a cell ends at ' + Math.round(right) + ' px, its card at ' + Math.round(card.right) + ' px');
    }
  }
  return found;
})()`;

test('the dashboard: manage vehicles, keys, webhooks and devices; alerts and events live', { skip, timeout: 180_000 }, async (t) => {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const ctx: TestApp = await createTestApp({
    env: { FLEET_PUBLIC_URL: origin, FLEET_MAP_TILE_URL: '', FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' },
    webhooks: FAST_WEBHOOKS,
  });
  t.after(() => ctx.close());
  await ctx.app.listen({ host: '127.0.0.1', port });
  /** The receiver answers 503 while this is set. */
  let receiverDown = false;
  const receiver = await startReceiver(() => ({ status: receiverDown ? 503 : 204 }));
  t.after(() => receiver.close());
  await ctx.registerVehicle('van-1');
  const writer = await ctx.keyWith(['telemetry:write']);
  const adminId = (await ctx.request('GET', '/v2/api-keys')).json<{ apiKeys: Array<{ id: string }> }>().apiKeys[0]!.id;

  mkdirSync(SHOTS, { recursive: true });
  const { browser, page, pageErrors, cspViolations, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const open = async (label: string, heading: string) => {
    await nav.getByRole('link', { name: label, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
  };
  const form = (name: string) => page.getByRole('form', { name, exact: true });
  const row = (table: string, text: string | RegExp): Locator => page.getByRole('table', { name: table, exact: true }).getByRole('row').filter({ hasText: text });
  const get = async <T>(url: string) => {
    const res = await ctx.request('GET', url);
    return { status: res.statusCode, body: res.json<T>() };
  };

  /**
   * Whether a box is wholly inside the window (to the pixel: layout has fractions, scrolling
   * none), and whether the focus is in it.
   */
  const seen = (box: Locator) => box.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const { documentElement: view, activeElement } = el.ownerDocument;
    return { inView: r.top > -1 && r.left > -1 && r.bottom < view.clientHeight + 1 && r.right < view.clientWidth + 1, focused: el.contains(activeElement) };
  });
  /** Waits until `box` has scrolled wholly into the window (smoothly, so over a few frames). */
  const scrolledTo = async (box: Locator) => {
    for (const deadline = Date.now() + PAGE_TIMEOUT; !(await seen(box)).inView && Date.now() < deadline;) await sleep(50);
    return seen(box);
  };

  await page.goto(`${origin}/`);
  await page.getByRole('button', { name: 'Use an API key instead' }).click();
  await page.getByLabel('API key').fill(ctx.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await nav.getByRole('link', { name: 'Fleet' }).waitFor();
  assert.equal(await nav.getByRole('link', { name: 'Fleet' }).getAttribute('aria-current'), 'page');

  await t.test('vehicles: register, a problem shown beside the form with what was typed kept, edit, change status, delete', async () => {
    await open('Vehicles', 'Vehicles');
    assert.equal(await nav.getByRole('link', { name: 'Vehicles' }).getAttribute('aria-current'), 'page');
    const register = form('Register a vehicle');
    await register.getByLabel('Vehicle id').fill('tram-7');
    await register.getByLabel('Type').selectOption('bus');
    await register.getByLabel('Name (optional)').fill('Tram seven');
    await register.getByLabel('Sensors (optional)').fill('gps, lidar');
    await register.getByLabel('Capacity (optional)').fill('40');
    await register.getByRole('button', { name: 'Register' }).click();
    await register.getByRole('status').getByText('Registered tram-7.').waitFor();
    await row('Registered vehicles', 'tram-7').getByText('Tram seven').waitFor();
    const stored = await get<Record<string, unknown>>('/v2/fleet/vehicles/tram-7');
    assert.equal(stored.status, 200);
    assert.deepEqual([stored.body.type, stored.body.name, stored.body.configuration], ['bus', 'Tram seven', { sensors: ['gps', 'lidar'], capacity: 40 }]);

    // The same id again: the 409 problem beside the form, and the fields as typed.
    await register.getByLabel('Vehicle id').fill('tram-7');
    await register.getByLabel('Name (optional)').fill('Another tram');
    await register.getByRole('button', { name: 'Register' }).click();
    const problem = register.getByRole('alert');
    await problem.getByText('Vehicle already exists').waitFor();
    assert.match(await problem.innerText(), /tram-7/);
    assert.equal(await register.getByLabel('Vehicle id').inputValue(), 'tram-7');
    assert.equal(await register.getByLabel('Name (optional)').inputValue(), 'Another tram');

    // A field error: shown in the problem and beside the field it names.
    await register.getByLabel('Vehicle id').fill('tram 7!');
    await register.getByRole('button', { name: 'Register' }).click();
    await problem.getByText('Request validation failed').waitFor();
    assert.match(await problem.innerText(), /\/vehicleId/);
    const idInput = register.getByLabel('Vehicle id');
    assert.equal(await idInput.getAttribute('aria-invalid'), 'true');
    assert.match(await register.locator('.field-error:not([hidden])').first().innerText(), /must be 1 to 64 characters of A-Z a-z 0-9 \. _ : -/, 'a message in words');
    assert.equal(await idInput.inputValue(), 'tram 7!');
    await shot('01-vehicle-problem');

    // Edit: only what changed goes in the merge patch; an emptied field is removed.
    await row('Registered vehicles', 'tram-7').getByRole('button', { name: 'Edit' }).click();
    const edit = form('Edit tram-7');
    await edit.getByLabel('Name', { exact: true }).fill('Tram 7');
    await edit.getByLabel('Sensors', { exact: true }).fill('');
    await edit.getByLabel('Capacity', { exact: true }).fill('44');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await edit.getByRole('status').getByText('Saved tram-7.').waitFor();
    await row('Registered vehicles', 'tram-7').getByText('Tram 7', { exact: true }).waitFor();
    const patched = await get<Record<string, unknown>>('/v2/fleet/vehicles/tram-7');
    assert.deepEqual([patched.body.type, patched.body.name, patched.body.configuration], ['bus', 'Tram 7', { capacity: 44 }]);

    // Status: only the changes the table allows are offered.
    const status = form('Change the status of tram-7');
    const offered = await status.getByLabel('New status').locator('option').evaluateAll((os) => os.map((o) => o.getAttribute('value')));
    assert.deepEqual(offered, ['active', 'inactive', 'maintenance', 'retired']);
    await status.getByLabel('New status').selectOption('maintenance');
    await status.getByLabel('Reason (optional)').fill('depot check');
    await status.getByRole('button', { name: 'Change status' }).click();
    await page.getByText('Status changed to maintenance.').waitFor();
    await row('Registered vehicles', 'tram-7').getByText('maintenance').waitFor();
    const history = await get<{ history: Array<{ to: string; reason: string }> }>('/v2/fleet/vehicles/tram-7/status-history');
    assert.deepEqual(history.body.history.map((e) => [e.to, e.reason]), [['maintenance', 'depot check'], ['registered', null]]);
    await shot('02-vehicles');

    // Delete asks once more.
    await row('Registered vehicles', 'tram-7').getByRole('button', { name: 'Delete' }).click();
    await row('Registered vehicles', 'tram-7').getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByText('Deleted tram-7.').waitFor();
    await row('Registered vehicles', 'tram-7').waitFor({ state: 'detached' });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/tram-7')).statusCode, 404);
    assert.equal(await page.getByRole('form', { name: 'Edit tram-7' }).count(), 0);
  });

  await t.test('API keys: a scope picker, the secret shown once with a copy button, the list, revoke', async () => {
    // A laptop's window: the form is taller than it, and the secret appears under its button.
    await page.setViewportSize({ width: 1280, height: 720 });
    await open('API keys', 'API keys');
    const create = form('Create an API key');
    await create.getByLabel('Name').fill('gateway');
    // No scope: the problem names the field, beside the scope picker.
    await create.getByRole('button', { name: 'Create key' }).click();
    await create.getByRole('alert').getByText('Request validation failed').waitFor();
    assert.match(await create.getByRole('alert').innerText(), /\/scopes/);
    assert.equal(await create.getByRole('group', { name: 'Scopes' }).getAttribute('aria-invalid'), 'true');
    assert.equal(await create.getByLabel('Name').inputValue(), 'gateway');

    await create.getByRole('checkbox', { name: /^fleet:read/ }).check();
    await create.getByRole('checkbox', { name: /^telemetry:write/ }).check();
    await create.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByRole('region', { name: 'New key "gateway"' });
    const field = secret.getByLabel('API key');
    await field.waitFor();
    // Brought into view, and the focus on the key: a keyboard or a screen reader lands there.
    assert.deepEqual(await scrolledTo(secret), { inView: true, focused: true });
    assert.equal(await field.evaluate((el) => el === el.ownerDocument.activeElement), true);
    assert.match(String(await field.getAttribute('aria-describedby')), /./, 'the field is described by the note');
    assert.match(await page.locator(`#${String(await field.getAttribute('aria-describedby'))}`).innerText(), /not shown again/);
    const key = await field.inputValue();
    assert.match(key, /^fleet_[A-Za-z0-9]{32,}/);
    await secret.getByRole('button', { name: 'Copy' }).click();
    await secret.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), key);
    // The key works, with exactly its scopes.
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key })).statusCode, 200);
    assert.equal((await ctx.request('GET', '/v2/api-keys', { key })).statusCode, 403);
    const listed = row('API keys', 'gateway');
    await listed.waitFor();
    assert.match(await listed.innerText(), /fleet:read[\s\S]*telemetry:write/);
    assert.equal(await create.getByLabel('Name').inputValue(), '', 'the form is cleared after success');
    await shot('03-key-created');
    // Once: gone when done, and never in the list.
    await secret.getByRole('button', { name: 'Done' }).click();
    await secret.waitFor({ state: 'detached' });
    assert.ok(!(await page.content()).includes(key), 'the secret stayed in the page');
    await page.setViewportSize({ width: 1360, height: 900 });

    await listed.getByRole('button', { name: 'Revoke' }).click();
    await listed.getByRole('button', { name: 'Confirm revoke' }).click();
    await page.getByText('Revoked "gateway".').waitFor();
    await listed.waitFor({ state: 'detached' });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key })).statusCode, 401);
  });

  await t.test('webhooks: a refused URL shown beside the form, create, the secret once, test, deliveries, retry, rotate, disable, delete', async () => {
    await open('Webhooks', 'Webhooks');
    const create = form('Add a webhook endpoint');
    await create.getByLabel('URL').fill('ftp://hooks.example.com/fleet');
    await create.getByLabel('Description (optional)').fill('dispatch');
    // Every event type to begin with; narrowed to one.
    const allTypes = create.getByRole('checkbox', { name: /All event types/ });
    assert.equal(await allTypes.isChecked(), true);
    await allTypes.uncheck();
    await create.getByRole('checkbox', { name: 'vehicle.status_changed' }).check();
    await create.getByRole('button', { name: 'Add endpoint' }).click();
    const problem = create.getByRole('alert');
    await problem.getByText('Request validation failed').waitFor();
    assert.match(await problem.innerText(), /must be https:\/\/ or http:\/\//);
    assert.equal(await create.getByLabel('URL').getAttribute('aria-invalid'), 'true');
    assert.equal(await create.getByLabel('URL').inputValue(), 'ftp://hooks.example.com/fleet');
    assert.equal(await create.getByRole('checkbox', { name: 'vehicle.status_changed' }).isChecked(), true);
    await shot('04-webhook-problem');

    // Someone who prefers reduced motion: the secret is in view at once, not scrolled to smoothly.
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.emulateMedia({ reducedMotion: 'reduce' });
    await create.getByLabel('URL').fill(receiver.url);
    await create.getByRole('button', { name: 'Add endpoint' }).click();
    const secretBox = page.getByRole('region', { name: `Signing secret of ${receiver.url}` });
    const secret = await secretBox.getByLabel('Signing secret').inputValue();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(await seen(secretBox), { inView: true, focused: true });
    await page.emulateMedia({ reducedMotion: null });
    await page.setViewportSize({ width: 1360, height: 900 });
    await secretBox.getByRole('button', { name: 'Done' }).click();
    const endpoint = page.getByRole('article', { name: receiver.url });
    await endpoint.getByText('vehicle.status_changed').waitFor();
    const { body: list } = await get<{ webhooks: Array<{ id: string; enabled: boolean; eventTypes: string[]; description: string }> }>('/v2/webhooks');
    assert.equal(list.webhooks.length, 1);
    const id = list.webhooks[0]!.id;
    assert.deepEqual([list.webhooks[0]!.eventTypes, list.webhooks[0]!.description], [['vehicle.status_changed'], 'dispatch']);

    // Edit: only what changed is sent.
    await endpoint.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: `Edit ${receiver.url}` });
    assert.equal(await edit.getByLabel('URL').inputValue(), receiver.url);
    assert.equal(await edit.getByRole('checkbox', { name: 'vehicle.status_changed' }).isChecked(), true);
    await edit.getByLabel('Description').fill('dispatch desk');
    await edit.getByRole('checkbox', { name: 'vehicle.deleted' }).check();
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await endpoint.getByRole('status').getByText('Saved.').waitFor();
    await edit.waitFor({ state: 'detached' });
    await endpoint.getByText('dispatch desk').waitFor();
    const changed = (await get<{ description: string; eventTypes: string[] }>(`/v2/webhooks/${id}`)).body;
    assert.deepEqual([changed.description, changed.eventTypes], ['dispatch desk', ['vehicle.status_changed', 'vehicle.deleted']]);

    // Test: the receiver gets a signed webhook.test, and the delivery shows up as succeeded.
    await endpoint.getByRole('button', { name: 'Send test' }).click();
    await receiver.waitFor(() => receiver.received.length === 1);
    const first = new Webhook(secret).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>) as { type: string };
    assert.equal(first.type, 'webhook.test');
    const deliveries = endpoint.getByRole('table', { name: `Deliveries to ${receiver.url}` });
    const delivery = deliveries.getByRole('row').filter({ hasText: 'webhook.test' });
    await delivery.getByText('succeeded').waitFor();
    assert.match(await delivery.innerText(), /204/);
    assert.equal(await endpoint.getByRole('button', { name: 'Deliveries' }).getAttribute('aria-expanded'), 'true');

    // A receiver that fails: the delivery is pending with the answer it got; Retry sends the same
    // event again now (same webhook-id), and it succeeds.
    receiverDown = true;
    await endpoint.getByRole('button', { name: 'Send test' }).click();
    await receiver.waitFor(() => receiver.received.length === 2);
    const failing = deliveries.locator('tbody tr').first();
    // Pending, with what the first attempt got (the list is read again while a delivery is pending).
    await failing.getByText('answered 503').waitFor();
    assert.match(await failing.innerText(), /webhook\.test[\s\S]*\t1\tpending\t503 in \d+ ms/);
    assert.notEqual(await failing.getAttribute('data-delivery-id'), await delivery.last().getAttribute('data-delivery-id'));
    await shot('05-webhook-deliveries');
    receiverDown = false;
    await failing.getByRole('button', { name: 'Retry' }).click();
    await receiver.waitFor(() => receiver.received.length === 3);
    assert.equal(receiver.received[2]!.headers['webhook-id'], receiver.received[1]!.headers['webhook-id']);
    await failing.getByText('succeeded').waitFor();
    await failing.getByRole('cell', { name: '2', exact: true }).waitFor();

    // Rotate: a new secret, shown once; deliveries are signed with both for a while.
    await endpoint.getByRole('button', { name: 'Rotate secret' }).click();
    await endpoint.getByRole('button', { name: 'Confirm rotate secret' }).click();
    const rotatedBox = page.getByRole('region', { name: `New signing secret of ${receiver.url}` });
    const rotated = await rotatedBox.getByLabel('New signing secret').inputValue();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    await endpoint.getByRole('button', { name: 'Rotate secret', exact: true }).waitFor();
    assert.equal(await endpoint.getByRole('button', { name: 'Confirm rotate secret' }).count(), 0);
    // The focus stays with the new secret; the rotate button coming back does not take it.
    assert.deepEqual(await scrolledTo(rotatedBox), { inView: true, focused: true });
    await rotatedBox.getByRole('button', { name: 'Done' }).click();
    await endpoint.getByRole('button', { name: 'Send test' }).click();
    await receiver.waitFor(() => receiver.received.length === 4);
    new Webhook(rotated).verify(receiver.received[3]!.body, receiver.received[3]!.headers as Record<string, string>);

    // Disable and enable again.
    await endpoint.getByRole('button', { name: 'Disable' }).click();
    await endpoint.getByText('disabled', { exact: true }).waitFor();
    assert.equal((await get<{ enabled: boolean }>(`/v2/webhooks/${id}`)).body.enabled, false);
    await endpoint.getByRole('button', { name: 'Enable' }).click();
    await endpoint.getByText('enabled', { exact: true }).waitFor();
    assert.equal((await get<{ enabled: boolean }>(`/v2/webhooks/${id}`)).body.enabled, true);

    await endpoint.getByRole('button', { name: 'Delete' }).click();
    await endpoint.getByRole('button', { name: 'Confirm delete' }).click();
    await endpoint.waitFor({ state: 'detached' });
    assert.equal((await ctx.request('GET', `/v2/webhooks/${id}`)).statusCode, 404);
  });

  await t.test('devices: register, a problem for a bad IMEI, list, delete', async () => {
    await open('Devices', 'Devices');
    const create = form('Register a device');
    await create.getByLabel('Protocol').selectOption('teltonika');
    await create.getByLabel('Identifier').fill('12345');
    await create.getByLabel('Vehicle id').fill('van-1');
    await create.getByRole('button', { name: 'Register device' }).click();
    const problem = create.getByRole('alert');
    await problem.getByText('Request validation failed').waitFor();
    assert.match(await problem.innerText(), /15-digit IMEI/);
    assert.equal(await create.getByLabel('Identifier').inputValue(), '12345');

    await create.getByLabel('Identifier').fill('356307042441013');
    await create.getByRole('button', { name: 'Register device' }).click();
    await create.getByRole('status').getByText('Registered 356307042441013 for van-1.').waitFor();
    const listed = row('Devices', '356307042441013');
    await listed.getByText('Teltonika').waitFor();
    const { body } = await get<{ devices: Array<{ identifier: string; protocol: string; vehicleId: string }> }>('/v2/devices');
    assert.deepEqual(body.devices.map((d) => [d.protocol, d.identifier, d.vehicleId]), [['teltonika', '356307042441013', 'van-1']]);
    // Taken: 409, said beside the form.
    await create.getByLabel('Identifier').fill('356307042441013');
    await create.getByRole('button', { name: 'Register device' }).click();
    await problem.getByText('Device identifier taken').waitFor();

    await listed.getByRole('button', { name: 'Delete' }).click();
    await listed.getByRole('button', { name: 'Confirm delete' }).click();
    await listed.waitFor({ state: 'detached' });
    assert.equal((await get<{ devices: unknown[] }>('/v2/devices')).body.devices.length, 0);
  });

  let alertId = '';
  await t.test('alerts: a threshold rule made here, telemetry opens an alert that appears live, acknowledge and resolve it', async () => {
    await open('Alerts', 'Alerts');
    await page.getByText('Live: new events appear as they happen.').waitFor();
    const create = form('Create an alert rule');
    await create.getByLabel('Name').fill('Speeding');
    await create.getByLabel('Condition').selectOption('threshold');
    await create.getByLabel('Field').selectOption('speed');
    await create.getByLabel('Comparison').selectOption('>');
    // A value that is not a number: the problem, then the fix.
    await create.getByLabel('Value').fill('fast');
    await create.getByRole('button', { name: 'Create rule' }).click();
    await create.getByRole('alert').getByText('Request validation failed').waitFor();
    assert.equal(await create.getByLabel('Name').inputValue(), 'Speeding');
    await create.getByLabel('Value').fill('80');
    await create.getByRole('button', { name: 'Create rule' }).click();
    await create.getByRole('status').getByText('Created the rule Speeding: speed > 80 km/h.').waitFor();
    await row('Alert rules', 'Speeding').getByText('speed > 80 km/h').waitFor();
    const rules = await get<{ alertRules: Array<{ condition: unknown; enabled: boolean }> }>('/v2/alert-rules');
    assert.deepEqual(rules.body.alertRules.map((r) => [r.condition, r.enabled]), [[{ kind: 'threshold', field: 'speed', op: '>', value: 80, forSeconds: 0 }, true]]);
    await page.getByText('No alerts match.').waitFor();

    // Telemetry over the limit: the alert appears without a reload.
    const sent = await ctx.request('POST', '/v2/telemetry/van-1', { key: writer, body: { data: { speed: 97, location: { lat: 52.52, lng: 13.4 } } } });
    assert.equal(sent.statusCode, 202, sent.body);
    const alert = row('Alerts', 'Speeding');
    await alert.getByText('open', { exact: true }).waitFor();
    assert.match(await alert.innerText(), /van-1[\s\S]*97/);
    assert.match(String(await alert.getAttribute('class')), /updated/, 'the row came from the stream');
    alertId = String(await alert.getAttribute('data-alert-id'));
    await shot('06-alert-open');

    await alert.getByLabel('Note').fill('driver called');
    await alert.getByRole('button', { name: 'Acknowledge' }).click();
    await alert.getByText('acknowledged', { exact: true }).waitFor();
    assert.equal(await alert.getByLabel('Note').inputValue(), '', 'the note went with the acknowledgement');
    const acknowledged = await get<{ status: string; acknowledgedBy: string }>(`/v2/alerts/${alertId}`);
    assert.deepEqual([acknowledged.body.status, acknowledged.body.acknowledgedBy], ['acknowledged', adminId]);
    assert.equal(await alert.getByRole('button', { name: 'Acknowledge' }).count(), 0);

    await alert.getByRole('button', { name: 'Resolve' }).click();
    await alert.waitFor({ state: 'detached' });
    const resolved = await get<{ status: string; resolvedBy: string }>(`/v2/alerts/${alertId}`);
    assert.deepEqual([resolved.body.status, resolved.body.resolvedBy], ['resolved', adminId]);
    // The resolved filter shows it.
    await page.getByLabel('Status', { exact: true }).selectOption('resolved');
    await row('Alerts', 'Speeding').getByText('resolved', { exact: true }).waitFor();
    await page.getByLabel('Status', { exact: true }).selectOption('unresolved');

    // An alert that opens and resolves by itself, both live.
    assert.equal((await ctx.request('POST', '/v2/telemetry/van-1', { key: writer, body: { data: { speed: 120 } } })).statusCode, 202);
    await row('Alerts', 'Speeding').getByText('open', { exact: true }).waitFor();
    assert.equal((await ctx.request('POST', '/v2/telemetry/van-1', { key: writer, body: { data: { speed: 30 } } })).statusCode, 202);
    await row('Alerts', 'Speeding').waitFor({ state: 'detached' });

    // The other kinds of rule, and a rule switched off and on, and deleted.
    const depot = await ctx.request('POST', '/v2/geofences', { body: { name: 'Depot', geometry: { type: 'Circle', coordinates: [13.4, 52.52], radius: 300 } } });
    assert.equal(depot.statusCode, 201, depot.body);
    await open('Events', 'Event log');
    await open('Alerts', 'Alerts');
    await create.getByLabel('Name').fill('Left the depot');
    await create.getByLabel('Condition').selectOption('geofence');
    assert.equal(await create.getByLabel('Field').isVisible(), false);
    await create.getByLabel('Geofence').selectOption({ label: 'Depot' });
    await create.getByLabel('When the vehicle is').selectOption('outside');
    await create.getByLabel('Held for (seconds, optional)').fill('120');
    await create.getByRole('button', { name: 'Create rule' }).click();
    await row('Alert rules', 'Left the depot').getByText('outside Depot for 2 min').waitFor();
    await create.getByLabel('Name').fill('Silent');
    await create.getByLabel('Condition').selectOption('offline');
    await create.getByLabel('Silent for (seconds)').fill('30');
    await create.getByRole('button', { name: 'Create rule' }).click();
    await create.getByRole('alert').getByText('Request validation failed').waitFor();
    assert.equal(await create.getByLabel('Silent for (seconds)').getAttribute('aria-invalid'), 'true');
    await create.getByLabel('Silent for (seconds)').fill('900');
    await create.getByRole('button', { name: 'Create rule' }).click();
    await row('Alert rules', 'Silent').getByText('no telemetry for 15 min').waitFor();
    const conditions = (await get<{ alertRules: Array<{ name: string; condition: unknown }> }>('/v2/alert-rules')).body.alertRules;
    assert.deepEqual(conditions.map((r) => r.condition), [
      { kind: 'threshold', field: 'speed', op: '>', value: 80, forSeconds: 0 },
      { kind: 'geofence', geofenceId: depot.json<{ id: string }>().id, when: 'outside', forSeconds: 120 },
      { kind: 'offline', afterSeconds: 900 },
    ]);
    const silent = row('Alert rules', 'Silent');
    await silent.getByRole('button', { name: 'Enabled' }).click();
    await silent.getByRole('button', { name: 'Disabled' }).waitFor();
    assert.equal(await silent.getByRole('button', { name: 'Disabled' }).getAttribute('aria-pressed'), 'false');
    assert.deepEqual((await get<{ alertRules: Array<{ enabled: boolean }> }>('/v2/alert-rules')).body.alertRules.map((r) => r.enabled), [true, true, false]);
    await silent.getByRole('button', { name: 'Delete' }).click();
    await silent.getByRole('button', { name: 'Confirm delete' }).click();
    await silent.waitFor({ state: 'detached' });
    assert.equal((await get<{ alertRules: unknown[] }>('/v2/alert-rules')).body.alertRules.length, 2);
    await shot('07-alerts');
  });

  await t.test('the event log: the feed newest first, filters, live appends', async () => {
    await open('Events', 'Event log');
    const events = page.getByRole('table', { name: 'Events', exact: true });
    await events.getByRole('row').filter({ hasText: 'alert.opened' }).first().waitFor();
    const types = () => events.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-type')));
    const feed = await get<{ events: Array<{ type: string }> }>('/v2/events?limit=1000');
    assert.deepEqual(await types(), feed.body.events.map((e) => e.type).reverse(), 'the whole feed, newest first');
    for (const type of ['vehicle.registered', 'vehicle.updated', 'vehicle.status_changed', 'vehicle.deleted', 'alert.opened', 'alert.acknowledged', 'alert.resolved']) {
      assert.ok((await types()).includes(type), `${type} is in the log`);
    }
    await events.getByRole('row').filter({ hasText: 'maintenance: depot check' }).waitFor();
    await events.getByRole('row').filter({ hasText: 'Speeding: acknowledged (driver called)' }).waitFor();

    const read = page.locator('table[aria-label="Events"]:not([aria-busy])');
    await page.getByLabel('Type').selectOption('alert.resolved');
    await read.waitFor();
    assert.deepEqual(await types(), ['alert.resolved', 'alert.resolved']);
    await page.getByLabel('Type').selectOption('');
    await page.getByLabel('Vehicle').fill('van-1');
    await page.getByRole('button', { name: 'Filter' }).click();
    await read.waitFor();
    assert.ok((await events.locator('tbody tr a').allInnerTexts()).every((text) => text === 'van-1'));
    assert.ok(!(await types()).includes('vehicle.deleted'), 'tram-7 is filtered out');

    // Live: a status change made elsewhere appears on top.
    await page.getByText('Live: new events appear as they happen.').waitFor();
    const changed = await ctx.request('PUT', '/v2/fleet/vehicles/van-1/status', { body: { status: 'inactive', reason: 'end of shift' } });
    assert.equal(changed.statusCode, 200, changed.body);
    const top = events.locator('tbody tr').first();
    await top.filter({ hasText: 'active → inactive: end of shift' }).waitFor();
    assert.match(String(await top.getAttribute('class')), /updated/);
    await shot('08-events');

    // The event stream ends (its socket closed with 1000): the page makes a new stream, and reads
    // the feed on once it is live, so an event recorded while no socket was attached is shown, once.
    const streams = [...new Set(sockets.map((url) => /\/v2\/streams\/([^/?]+)/.exec(url)?.[1]).filter((id) => id !== undefined))];
    const subscribed = await Promise.all(streams.map(async (id) => ({ id, ...(await get<{ status: string; subscriptions: string[] }>(`/v2/streams/${id}`)).body })));
    const eventStream = subscribed.find((s) => s.status === 'connected' && s.subscriptions.includes('events'));
    assert.ok(eventStream !== undefined, `an events stream among ${JSON.stringify(subscribed)}`);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const routed: WebSocketRoute[] = [];
    await page.routeWebSocket(/\/v2\/streams\//, async (ws) => {
      routed.push(ws);
      await held;
      ws.connectToServer();
    });
    assert.equal((await ctx.request('DELETE', `/v2/streams/${eventStream.id}`)).statusCode, 204);
    await page.getByText('Reconnecting to live events…').waitFor();
    const back = await ctx.request('PUT', '/v2/fleet/vehicles/van-1/status', { body: { status: 'active', reason: 'next shift' } });
    assert.equal(back.statusCode, 200, back.body);
    assert.equal(await events.getByRole('row').filter({ hasText: 'next shift' }).count(), 0, 'no socket yet');
    release();
    await page.getByText('Live: new events appear as they happen.').waitFor();
    await events.getByRole('row').filter({ hasText: 'inactive → active: next shift' }).waitFor();
    assert.equal(routed.length, 1);
    assert.notEqual(/\/v2\/streams\/([^/?]+)/.exec(routed[0]!.url())?.[1], eventStream.id, 'a new stream');
    const ids = await events.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-event-id')));
    assert.equal(new Set(ids).size, ids.length, 'an event shown twice');
    assert.equal(await events.getByRole('row').filter({ hasText: 'next shift' }).count(), 1);
  });

  await t.test('at 1280 and 1440 px no page overflows sideways, and every row keeps its actions inside its card', async () => {
    await ctx.registerVehicle('delivery-van-berlin-mitte-0001', { name: 'Delivery van Berlin Mitte, the long route' });
    await ctx.registerVehicle('delivery-van-berlin-mitte-0002');
    await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'phone-of-the-driver-0001', vehicleId: 'delivery-van-berlin-mitte-0001' } });
    for (const vehicle of ['delivery-van-berlin-mitte-0001', 'delivery-van-berlin-mitte-0002']) {
      await ctx.request('POST', `/v2/telemetry/${vehicle}`, { key: writer, body: { data: { speed: 130 } } });
    }
    const opened = (await get<{ alerts: Array<{ id: string }> }>('/v2/alerts?status=open')).body.alerts;
    assert.ok(opened.length >= 2, 'two open alerts');
    await ctx.request('POST', `/v2/alerts/${opened[0]!.id}/acknowledge`, { body: {} });
    await ctx.request('POST', '/v2/webhooks', { body: { url: `${receiver.url}/a/rather/long/path/of/the/dispatch/office/receiver`, eventTypes: ['*'] } });
    const group = await ctx.request('POST', '/v2/groups', {
      body: { name: 'Delivery vans of Berlin Mitte, the long routes', description: 'Every van that leaves the Mitte depot for the long routes north and east of the city' },
    });
    assert.equal(group.statusCode, 201, group.body);
    // Its name in the Groups column of the vehicles it has.
    const members = await ctx.request('POST', `/v2/groups/${group.json<{ id: string }>().id}/vehicles`, {
      body: { vehicleIds: ['delivery-van-berlin-mitte-0001', 'delivery-van-berlin-mitte-0002'] },
    });
    assert.equal(members.statusCode, 204, members.body);
    const driver = await ctx.request('POST', '/v2/drivers', {
      body: { name: 'Maximiliane Friederike von Hohenzollern-Sigmaringen', externalId: 'PAYROLL-BERLIN-MITTE-000123', identifiers: [{ kind: 'ibutton', value: '01A2B3C4D5E6F708' }, { kind: 'rfid', value: 'CARD0000000000000000000000000001' }] },
    });
    assert.equal(driver.statusCode, 201, driver.body);
    assert.equal((await ctx.request('POST', '/v2/driver-assignments', { body: { driverId: driver.json<{ id: string }>().id, vehicleId: 'delivery-van-berlin-mitte-0001' } })).statusCode, 201);
    const schedule = await ctx.request('POST', '/v2/maintenance-schedules', {
      body: { name: 'Brake fluid, pads and discs of the long-route vans, with the workshop in Wedding', vehicleIds: ['delivery-van-berlin-mitte-0001', 'delivery-van-berlin-mitte-0002'], every: { km: 30000, engineHours: 1500, days: 365 }, dueSoon: { km: 1000, days: 30 } },
    });
    assert.equal(schedule.statusCode, 201, schedule.body);
    const pages: Array<[string, string]> = [['Alerts', 'Alerts'], ['Events', 'Event log'], ['Groups', 'Groups'], ['Drivers', 'Drivers'], ['Maintenance', 'Maintenance'], ['Vehicles', 'Vehicles'], ['Devices', 'Devices'], ['Webhooks', 'Webhooks'], ['API keys', 'API keys'], ['Audit log', 'Audit log']];
    for (const width of [1280, 1440]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [label, heading] of pages) {
        await page.goto(`${origin}/#/`);
        await open(label, heading);
        await page.locator(label === 'Webhooks' ? '.endpoint' : '.manage-table tbody tr').first().waitFor();
        const outside = await page.evaluate<string[]>(OVERFLOWS);
        assert.deepEqual(outside, [], `${label} at ${width} px`);
      }
    }
    await page.setViewportSize({ width: 1360, height: 900 });
  });

  await t.test('a key without a panel\'s scope: each panel says which scope is missing', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    assert.equal(await nav.isVisible(), false, 'no navigation while signed out');
    await page.getByLabel('API key').fill(await ctx.keyWith(['fleet:read', 'streams']));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await open('API keys', 'API keys');
    const keysProblem = page.getByRole('alert').filter({ hasText: 'This API key lacks a permission' });
    await keysProblem.waitFor();
    assert.match(await keysProblem.innerText(), /admin/);
    await open('Alerts', 'Alerts');
    const alertsProblem = page.getByRole('alert').filter({ hasText: 'This API key lacks a permission' });
    await alertsProblem.waitFor();
    assert.match(await alertsProblem.innerText(), /events:read/);
    await page.getByText(/^Live events are off: .*events:read/).waitFor();
    // Rules are readable with fleet:read.
    await row('Alert rules', 'Speeding').waitFor();
    // The event log without live events offers to read on by hand.
    await open('Events', 'Event log');
    await page.getByRole('alert').filter({ hasText: 'This API key lacks a permission' }).waitFor();
    await page.getByRole('button', { name: 'Read newer events' }).waitFor();
  });

  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(cspViolations, [], 'Content-Security-Policy violations');
});
