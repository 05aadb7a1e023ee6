// The dashboard's first hour, walked in headless Chromium against a real service on a real port,
// opened at 127.0.0.1 and at localhost (the service names itself localhost either way): an admin
// signs in with a password, opens every page of the navigation, a vehicle and its replay, and
// sees an alert open live. Each page must finish loading with no console error, no uncaught
// error, no CSP violation, no request answered 4xx/5xx or failed (but for the map tiles, whose
// origin is closed, as on a machine without internet), and nothing wider than the window at
// 1280 and 1440 px.
//
// Without /usr/bin/chromium the suite is skipped with a loud message, except under CI=true,
// where that is a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { waitUntil } from './helpers/wait.ts';
import { type BrowserPage, PAGE_TIMEOUT, cleanups, deadOrigin, freePort, openBrowser, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';

const skip = skipUnlessChromium('the dashboard first-hour walk');
const PASSWORD = 'correct horse battery staple';

/**
 * The requests of each watched page still under way, tiles excepted: whether each was made by a
 * page since left (`go`). Leaving a page cancels what it still reads (an aborted fetch), as it
 * should: that is no failure.
 */
const underWay = new WeakMap<BrowserPage, Map<unknown, boolean>>();

/** Opens `url` in the tab, leaving the page before. */
async function go(tab: BrowserPage, url: string): Promise<void> {
  const pending = underWay.get(tab);
  if (pending !== undefined) for (const request of pending.keys()) pending.set(request, true);
  await tab.page.goto(url);
}

/** What went wrong on the page since the last look, tiles excepted. */
function watch(tab: BrowserPage, tiles: string): () => string[] {
  const requests: string[] = [];
  const pending = new Map<unknown, boolean>();
  underWay.set(tab, pending);
  tab.page.on('request', (request) => {
    if (!request.url().startsWith(tiles)) pending.set(request, false);
  });
  tab.page.on('requestfinished', (request) => pending.delete(request));
  tab.page.on('requestfailed', (request) => {
    const left = pending.get(request) === true;
    pending.delete(request);
    const error = request.failure()?.errorText ?? '?';
    if (left && error === 'net::ERR_ABORTED') return;
    if (!request.url().startsWith(tiles)) requests.push(`${request.method()} ${request.url()} failed: ${error}`);
  });
  tab.page.on('response', (response) => {
    if (response.status() >= 400 && !response.url().startsWith(tiles)) requests.push(`${response.request().method()} ${response.url()} answered ${response.status()}`);
  });
  return () => {
    const seen = [
      ...requests.splice(0),
      ...tab.pageErrors.splice(0).map((e) => `uncaught: ${e}`),
      ...tab.cspViolations.splice(0).map((e) => `CSP: ${e}`),
      // A tile that cannot be fetched is logged by the browser too.
      ...tab.consoleErrors.splice(0).filter((e) => !e.includes(tiles)).map((e) => `console: ${e}`),
    ];
    return seen;
  };
}

/**
 * Run in the page, two frames after a resize (what follows the window's width, a chart, does so
 * from a ResizeObserver, before the next paint): how wide it is against the window, and which
 * elements reach past the window when it is wider.
 */
const WIDTH = `(async () => {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => requestAnimationFrame(resolve));
  const doc = document.documentElement;
  const wide = doc.scrollWidth <= doc.clientWidth ? [] : [...document.querySelectorAll('body *')]
    .filter((el) => el.getBoundingClientRect().right > doc.clientWidth + 1)
    .slice(0, 5)
    .map((el) => el.tagName.toLowerCase() + (el.id === '' ? '' : '#' + el.id) + [...el.classList].map((c) => '.' + c).join(''));
  return { scroll: doc.scrollWidth, client: doc.clientWidth, wide };
})()`;

/**
 * Waits until the page has nothing left loading, and no request under way (a page leaving cancels
 * what it still reads, such as the fleet's counts, which show no loading box), then checks it is
 * no wider than the window at 1280 and 1440 px.
 */
async function settled(tab: BrowserPage, what: string): Promise<void> {
  const { page } = tab;
  await page.locator('#main > :not([hidden])').first().waitFor();
  await page.locator('#main .loading').first().waitFor({ state: 'detached', timeout: PAGE_TIMEOUT });
  const pending = underWay.get(tab);
  if (pending !== undefined) await waitUntil(() => pending.size === 0, `${what}: no request under way`, PAGE_TIMEOUT);
  for (const width of [1280, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    const { scroll, client, wide } = await page.evaluate<{ scroll: number; client: number; wide: string[] }>(WIDTH);
    assert.ok(scroll <= client, `${what} at ${width} px is ${scroll} px wide in a ${client} px window: ${wide.join(', ')}`);
  }
}

test('the first hour: sign in, every page, a vehicle, its replay, an alert opening live; at 127.0.0.1 and at localhost', { skip, timeout: 240_000 }, async (t) => {
  const cleanup = cleanups(t);
  const port = await freePort();
  const tiles = await deadOrigin();
  const ctx: TestApp = await createTestApp({
    env: { FLEET_PUBLIC_URL: `http://localhost:${port}`, FLEET_MAP_TILE_URL: `${tiles}/{z}/{x}/{y}.png` },
  });
  cleanup(() => ctx.close());
  await ctx.app.listen({ host: '127.0.0.1', port });

  // A small fleet as the README's first minutes leave it: vans reporting around Berlin, a
  // geofence, an alert rule, a driver, a group.
  const now = Date.now();
  for (let i = 1; i <= 7; i++) await ctx.registerVehicle(`van-${i}`); // van-7 never reports
  const records = [];
  for (let i = 1; i <= 6; i++) {
    for (let k = 0; k < 20; k++) {
      records.push({ vehicleId: `van-${i}`, timestamp: new Date(now - 600_000 + k * 30_000).toISOString(), data: { location: { lat: 52.5 + i / 100 + k / 2000, lng: 13.4 + i / 100 }, speed: k % 5 === 0 ? 0 : 40, battery: 90 - k, ignition: true } });
    }
  }
  assert.equal((await ctx.request('POST', '/v2/telemetry', { body: { records } })).statusCode, 202);
  assert.equal((await ctx.request('POST', '/v2/geofences', { body: { name: 'Depot', geometry: { type: 'Circle', coordinates: [13.41, 52.51], radius: 300 } } })).statusCode, 201);
  assert.equal((await ctx.request('POST', '/v2/alert-rules', { body: { name: 'Too fast', condition: { kind: 'threshold', field: 'speed', op: '>', value: 100 } } })).statusCode, 201);
  assert.equal((await ctx.request('POST', '/v2/drivers', { body: { name: 'Ada Driver' } })).statusCode, 201);
  assert.equal((await ctx.request('POST', '/v2/groups', { body: { name: 'North' } })).statusCode, 201);
  await ctx.person('admin@example.com', 'Ada Admin', 'admin', PASSWORD);

  let fast = 0;
  for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
    const tab = await openBrowser({ width: 1440, height: 900 });
    cleanup(() => tab.close());
    const problems = watch(tab, tiles);
    const { page } = tab;
    await page.goto(`${origin}/`);
    await signInWithPassword(page, 'admin@example.com', PASSWORD, 'Ada Admin');
    await page.locator('#live-state', { hasText: 'Live' }).waitFor();
    await settled(tab, `${origin} fleet`);
    assert.deepEqual(problems(), [], `${origin}: signing in`);

    const links = await page.locator('header nav a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    assert.ok(links.length >= 12 && links.includes('#/geofences') && links.includes('#/alerts'), `the navigation: ${links.join(' ')}`);
    for (const href of [...links, '#/account', '#/vehicles/van-7', '#/vehicles/van-1']) {
      await go(tab, `${origin}/${href}`);
      await settled(tab, `${origin}/${href}`);
      assert.deepEqual(problems(), [], `${origin}/${href}`);
    }

    // The vehicle page (last above) shows its route replay; then an alert opening live.
    await page.getByRole('region', { name: 'Route replay' }).locator('canvas, svg, .leaflet-container').first().waitFor();
    assert.deepEqual(problems(), [], `${origin}: the replay`);

    await go(tab, `${origin}/#/alerts`);
    await settled(tab, `${origin} alerts`);
    fast++;
    const sent = await ctx.request('POST', '/v2/telemetry/van-2', { body: { timestamp: new Date(Date.now() - 1000 + fast).toISOString(), data: { speed: 120 + fast } } });
    assert.equal(sent.statusCode, 202);
    await page.locator('#main', { hasText: 'Too fast' }).locator('text=van-2').first().waitFor();
    assert.deepEqual(problems(), [], `${origin}: an alert opening live`);
    await tab.close();
  }
});
