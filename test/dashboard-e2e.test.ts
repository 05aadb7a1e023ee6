// The dashboard end to end, in headless Chromium (Debian's package, driven by playwright-core;
// no browser is ever downloaded) against a real service on a real port. Every wait is for a
// condition, never a fixed sleep. Screenshots go to test-results/dashboard/.
//
// Without /usr/bin/chromium the suite is skipped with a loud message, except under CI=true,
// where that is a failure (.ci/run installs it).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { WebSocketRoute } from 'playwright-core';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { PAGE_TIMEOUT, deadOrigin, freePort, openBrowser, skipUnlessChromium } from './helpers/browser.ts';
import { waitUntil } from './helpers/wait.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard/', import.meta.url));

const skip = skipUnlessChromium('the dashboard browser tests');

// The service names itself localhost (FLEET_PUBLIC_URL's default form) while the page is opened at
// 127.0.0.1: the page's live streams go to the origin it was loaded from.
test('the dashboard: sign in, list, filter, page, open a vehicle, change its status, watch it move', { skip, timeout: 180_000 }, async (t) => {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const ctx: TestApp = await createTestApp({
    env: { FLEET_PUBLIC_URL: `http://localhost:${port}`, FLEET_MAP_TILE_URL: `${await deadOrigin()}/{z}/{x}/{y}.png` },
  });
  t.after(() => ctx.close());
  await ctx.app.listen({ host: '127.0.0.1', port });

  // 24 vans and 6 buses; 10 of them report a position around Berlin, two are in maintenance.
  const ids: string[] = [];
  for (let i = 1; i <= 24; i++) ids.push(`van-${String(i).padStart(2, '0')}`);
  for (let i = 1; i <= 6; i++) ids.push(`bus-${String(i).padStart(2, '0')}`);
  for (const id of ids) await ctx.registerVehicle(id, { type: id.slice(0, 3) });
  const now = Date.now();
  const records: Array<{ vehicleId: string; timestamp: string; data: Record<string, unknown> }> = ids.slice(0, 10).map((vehicleId, i) => ({
    vehicleId,
    timestamp: new Date(now - 60_000 + i).toISOString(),
    data: { location: { lat: 52.45 + (i % 5) * 0.03, lng: 13.3 + Math.floor(i / 5) * 0.08 + (i % 3) * 0.02 }, battery: 60 + i, speed: 20 + i },
  }));
  for (let i = 0; i < 12; i++) {
    records.push({ vehicleId: 'van-02', timestamp: new Date(now - (13 - i) * 300_000).toISOString(), data: { speed: 30 + 4 * (i % 5), battery: 95 - i * 2, location: { lat: 52.5, lng: 13.36 } } });
  }
  const ingest = await ctx.request('POST', '/v2/telemetry', { body: { records } });
  assert.equal(ingest.statusCode, 202, ingest.body);
  for (const id of ['van-20', 'bus-03']) {
    const res = await ctx.request('PUT', `/v2/fleet/vehicles/${id}/status`, { body: { status: 'maintenance' } });
    assert.equal(res.statusCode, 200, res.body);
  }
  const goodKey = await ctx.keyWith(['fleet:read', 'fleet:write', 'telemetry:read', 'streams']);
  const telemetryOnly = await ctx.keyWith(['telemetry:read']);
  const readOnly = await ctx.keyWith(['fleet:read', 'telemetry:read']);

  mkdirSync(SHOTS, { recursive: true });
  const { page, pageErrors, cspViolations, consoleErrors, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });

  const alert = page.locator('[role="alert"]');
  const signIn = async (key: string) => {
    await page.locator('#api-key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  await t.test('a wrong key: a clear message, and still signed out', async () => {
    await page.goto(`${origin}/`);
    await page.getByRole('button', { name: 'Use an API key instead' }).click();
    await signIn('fleet_thisKeyIsWrongAndWillNeverBeAcceptedXYZ');
    await alert.getByText('This API key was not accepted').waitFor();
    await shot('01-wrong-key');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('fleet.apiKey')), null);
    assert.equal(await page.locator('#sign-out').count(), 0);
  });

  await t.test('a key without fleet:read: a clear message naming the scope', async () => {
    await signIn(telemetryOnly);
    await alert.getByText('This API key lacks a permission').waitFor();
    assert.match(await alert.innerText(), /fleet:read/);
    await shot('02-missing-scope');
  });

  const rows = page.locator('table.vehicles tbody tr');
  const waitRows = async (count: number, info: string) => {
    await page.locator('table.vehicles:not([aria-busy])').waitFor();
    await page.locator('.page-info', { hasText: info }).waitFor();
    assert.equal(await rows.count(), count);
  };

  await t.test('a key without streams: the fleet all the same, and a note that live updates are off', async () => {
    await signIn(readOnly);
    await waitRows(25, '1–25 of 30');
    const banner = page.locator('#live-problem');
    await banner.getByText('Live updates are off').waitFor();
    assert.match(await banner.innerText(), /streams/);
    await page.locator('#sign-out').click();
    await page.locator('#api-key').waitFor();
  });

  await t.test('a good key: the fleet, its counts, live', async () => {
    await signIn(goodKey);
    await waitRows(25, '1–25 of 30');
    await page.locator('#live-state', { hasText: 'Live' }).waitFor();
    const counts = Object.fromEntries(await page.locator('.counts button').evaluateAll((buttons) =>
      buttons.map((b) => [b.getAttribute('data-status'), Number(b.querySelector('.count-n').textContent)])));
    assert.deepEqual(counts, { all: 30, registered: 18, active: 10, inactive: 0, maintenance: 2, retired: 0 });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('fleet.apiKey')), goodKey);
    assert.ok(requests.every((url) => !url.includes(goodKey)), 'the key appeared in a URL');
  });

  await t.test('markers move and battery updates as telemetry arrives', async () => {
    // Ten vehicles a few kilometres apart are clustered at first; the search finds one.
    const find = async (id: string) => {
      await page.locator('#map-search').fill(id);
      await page.locator('.map-search button').click();
    };
    await page.locator('.fleet .map[data-vehicles="10"]').waitFor();
    await find('van-01');
    const marker = page.locator('.marker[data-vehicle-id="van-01"]');
    await marker.waitFor();
    assert.match(String(await marker.getAttribute('aria-label')), /^van-01, active, at 52\.45/);
    // Without reachable tiles the map says so and still draws the grid and the markers.
    await page.locator('.map-note', { hasText: 'could not be loaded' }).waitFor();
    const res = await ctx.request('POST', '/v2/telemetry/van-01', {
      key: await ctx.keyWith(['telemetry:write']),
      body: { data: { location: { lat: 52.47, lng: 13.33 }, battery: 42 } },
    });
    assert.equal(res.statusCode, 202, res.body);
    await page.locator('tr[data-vehicle-id="van-01"] .cell-battery', { hasText: '42 %' }).waitFor();
    // The map has the new position: the search finds van-01 there.
    await find('van-01');
    await page.locator('.marker[data-vehicle-id="van-01"][data-lat="52.47"][data-lng="13.33"]').waitFor();
    assert.match(String(await marker.getAttribute('aria-label')), /at 52\.47000, 13\.33000/);
    await page.locator('.updated').first().waitFor({ state: 'attached' });
    await page.locator('.map-fit').click();
    await shot('03-fleet');
  });

  await t.test('filter by status and by type', async () => {
    await page.locator('#status-filter').selectOption('maintenance');
    await waitRows(2, '1–2 of 2');
    const rowIds = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-vehicle-id')));
    assert.deepEqual(await rowIds(), ['bus-03', 'van-20']);
    // A status changed elsewhere takes the vehicle out of the filtered list, live, and back in.
    for (const [status, count, range] of [['inactive', 1, '1–1 of 1'], ['maintenance', 2, '1–2 of 2']] as const) {
      const res = await ctx.request('PUT', '/v2/fleet/vehicles/van-20/status', { body: { status } });
      assert.equal(res.statusCode, 200, res.body);
      await waitRows(count, range);
    }
    await page.locator('#status-filter').selectOption('');
    await page.locator('#type-filter').selectOption('bus');
    await waitRows(6, '1–6 of 6');
    assert.ok((await rowIds()).every((id) => id.startsWith('bus-')));
    await page.locator('.counts button[data-status="all"] .count-n', { hasText: /^6$/ }).waitFor();
    await page.locator('#type-filter').selectOption('');
    await waitRows(25, '1–25 of 30');
  });

  await t.test('page through the list', async () => {
    await page.locator('#page-next').click();
    await waitRows(5, '26–30 of 30');
    assert.equal(await page.locator('#page-next').isDisabled(), true);
    await page.locator('#page-prev').click();
    await waitRows(25, '1–25 of 30');
    assert.equal(await page.locator('#page-prev').isDisabled(), true);
  });

  await t.test('live updates survive a dropped socket (fresh ticket, lastSeq) and an ended stream (new stream)', async () => {
    const writer = await ctx.keyWith(['telemetry:write']);
    const battery = async (value: number) => {
      const res = await ctx.request('POST', '/v2/telemetry/van-03', { key: writer, body: { data: { battery: value } } });
      assert.equal(res.statusCode, 202, res.body);
      await page.locator('tr[data-vehicle-id="van-03"] .cell-battery', { hasText: `${value} %` }).waitFor();
    };
    const streamOf = (url: string) => /\/v2\/streams\/([^/?]+)/.exec(url)?.[1];
    const first = streamOf(sockets.at(-1)!);
    assert.ok(first !== undefined && !sockets.at(-1)!.includes(goodKey));
    // From here on the page's sockets pass through the test, which can cut them.
    const routed: WebSocketRoute[] = [];
    await page.routeWebSocket(/\/v2\/streams\//, (ws) => {
      ws.connectToServer();
      routed.push(ws);
    });
    // The stream is ended through the API: the socket closes with 1000 and the page makes a new stream.
    const ended = await ctx.request('DELETE', `/v2/streams/${first}`, { key: goodKey });
    assert.equal(ended.statusCode, 204, ended.body);
    await waitUntil(() => routed.length === 1, 'a socket on a new stream', PAGE_TIMEOUT);
    const second = streamOf(routed[0]!.url());
    assert.ok(second !== undefined && second !== first, 'a new stream');
    await page.locator('#live-state', { hasText: 'Live' }).waitFor();
    await battery(33);
    // The socket drops (not an end): the page asks for a fresh ticket and resumes after the last seq.
    await routed[0]!.close({ code: 4001, reason: 'dropped by the test' });
    await waitUntil(() => routed.length === 2, 'a reconnect', PAGE_TIMEOUT);
    const resumed = routed[1]!.url();
    assert.equal(streamOf(resumed), second, 'the same stream');
    // Batched: the page takes the messages of a turn of the server in one frame (docs/API.md "Live streams").
    assert.match(resumed, /[?&]ticket=[^&]+&lastSeq=\d+&batch=true$/);
    await page.locator('#live-state', { hasText: 'Live' }).waitFor();
    await battery(34);
  });

  await t.test('a vehicle: details, latest telemetry, chart, and only the allowed status changes', async () => {
    await page.locator('table.vehicles a', { hasText: 'van-02' }).click();
    await page.waitForURL(/#\/vehicles\/van-02$/);
    await page.locator('.vehicle-header .badge', { hasText: 'active' }).waitFor();
    await page.locator('.latest dd', { hasText: 'km/h' }).first().waitFor();
    await page.locator('figcaption', { hasText: /^1[0-9] speed and 1[0-9] battery readings/ }).waitFor();
    const options = () => page.locator('#new-status option').evaluateAll((os) => os.map((o) => o.getAttribute('value')));
    assert.deepEqual(await options(), ['inactive', 'maintenance', 'retired']);
    await page.locator('#new-status').selectOption('maintenance');
    await page.locator('#status-reason').fill('brake check');
    await page.getByRole('button', { name: 'Change status' }).click();
    await page.getByText('Status changed to maintenance.').waitFor();
    await page.locator('.vehicle-header .badge', { hasText: 'maintenance' }).waitFor();
    assert.deepEqual(await options(), ['active', 'inactive', 'retired']);
    await page.locator('table.history td', { hasText: 'brake check' }).waitFor();
    const stored = await ctx.request('GET', '/v2/fleet/vehicles/van-02');
    assert.equal(stored.json<{ status: string }>().status, 'maintenance');
    await shot('04-vehicle');
  });

  await t.test('a vehicle that has sent nothing yet: "No telemetry yet", and no failed request in the console', async () => {
    const before = consoleErrors.length;
    await page.goto(`${origin}/#/vehicles/van-20`);
    // Shown once the vehicle's details have arrived (and, before, once a latest-state request failed).
    await page.getByText('No telemetry yet.').waitFor();
    // (The map's tiles come from a dead origin on purpose: their failures are not the API's.)
    assert.deepEqual(consoleErrors.slice(before).filter((e) => e.includes('/v2/')), []);
  });

  await t.test('an error from the API is shown with its title and detail', async () => {
    await page.goto(`${origin}/#/vehicles/no-such-vehicle`);
    await alert.first().getByText('Vehicle not found').waitFor();
    assert.match(await alert.first().innerText(), /no-such-vehicle/);
  });

  await t.test('sign out', async () => {
    await page.locator('#sign-out').click();
    await page.locator('#api-key').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('fleet.apiKey')), null);
  });

  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(cspViolations, [], 'Content-Security-Policy violations');
});
