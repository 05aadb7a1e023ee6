// Names people typed are shown as text on every page of the dashboard, never read as HTML: a
// geofence, a vehicle, an alert rule and an API key named with markup are shown on the pages that
// show them (the geofence's shape also in its map tooltip, the key as who acted in the audit log), in headless Chromium against a real service,
// and no element of those names ends up in the page. Every wait is for a condition.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openBrowser, servedTestApp, skipUnlessChromium } from './helpers/browser.ts';

const skip = skipUnlessChromium('the dashboard text browser tests');

/** A name that, read as HTML, adds elements marked `data-injected` (and runs a handler, if allowed). */
const markup = (what: string) =>
  `${what} <img src="/none.png" data-injected="${what}" onerror="document.body.dataset.ran='${what}'"><b data-injected="${what}">bold</b>`;
const NAMES = { geofence: markup('Depot'), vehicle: markup('Van'), rule: markup('Inside'), key: markup('Gate') };

test('names with markup are text on every page that shows them, map tooltips included', { skip, timeout: 120_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);

  await ctx.registerVehicle('van-1', { name: NAMES.vehicle });
  const geofence = await ctx.request('POST', '/v2/geofences', { body: { name: NAMES.geofence, geometry: { type: 'Circle', coordinates: [13.4, 52.52], radius: 300 } } });
  assert.equal(geofence.statusCode, 201, geofence.body);
  const rule = await ctx.request('POST', '/v2/alert-rules', { body: { name: NAMES.rule, condition: { kind: 'geofence', geofenceId: geofence.json().id, when: 'inside' } } });
  assert.equal(rule.statusCode, 201, rule.body);
  // Inside the geofence: an event of entering it and an open alert of the rule.
  assert.equal((await ctx.request('POST', '/v2/telemetry/van-1', { body: { data: { location: { lat: 52.52, lng: 13.4 } } } })).statusCode, 202);
  // A change by the key named with markup: the audit log names it as who acted.
  const gate = (await ctx.auth.createKey(ctx.organizationId, { name: NAMES.key, scopes: ['fleet:write'] })).secret;
  await ctx.registerVehicle('van-2', {}, gate);

  const { page, pageErrors, cspViolations, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const main = page.locator('main');
  await page.goto(`${origin}/`);
  await page.getByRole('button', { name: 'Use an API key instead' }).click();
  await page.getByLabel('API key').fill(ctx.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await nav.getByRole('link', { name: 'Fleet' }).waitFor();

  const injected = async () => ({
    elements: await page.locator('[data-injected]').evaluateAll((found) => found.map((el) => el.outerHTML)),
    ran: await page.locator('body').getAttribute('data-ran'),
  });

  /** Each page, and a name (with the place it is shown as text) it must show before it is judged. */
  const pages: Array<{ hash: string; heading: string; shows: Array<{ name: string; within?: string }> }> = [
    { hash: '#/', heading: 'Fleet', shows: [] },
    { hash: '#/geofences', heading: 'Geofences', shows: [{ name: NAMES.geofence, within: '[data-geofence-id]' }] },
    { hash: '#/alerts', heading: 'Alerts', shows: [{ name: NAMES.rule, within: 'table' }] },
    { hash: '#/events', heading: 'Event log', shows: [] },
    { hash: '#/manage/vehicles', heading: 'Vehicles', shows: [{ name: NAMES.vehicle, within: 'table' }] },
    { hash: '#/vehicles/van-1', heading: 'van-1', shows: [] },
    { hash: '#/audit', heading: 'Audit log', shows: [{ name: NAMES.key, within: 'table' }] },
  ];
  for (const { hash, heading, shows } of pages) {
    await t.test(hash, async () => {
      await page.goto(`${origin}/${hash}`);
      await page.getByRole('heading', { level: 1, name: heading }).first().waitFor();
      for (const { name, within } of shows) {
        await main.locator(within ?? '*').getByText(name, { exact: true }).first().waitFor();
      }
      if (hash === '#/geofences') {
        const shape = page.locator('.geofence-map path.leaflet-interactive').first();
        await shape.hover();
        const tooltip = page.locator('.leaflet-tooltip');
        await tooltip.waitFor();
        assert.equal(await tooltip.textContent(), NAMES.geofence, 'the tooltip shows the name as typed');
      }
      assert.deepEqual(await injected(), { elements: [], ran: null }, `${hash}: nothing of a name became an element`);
    });
  }
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, [], 'no inline handler of a name was even attempted');
});
