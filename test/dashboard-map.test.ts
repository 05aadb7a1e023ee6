// The dashboard's map, charts, route replay and geofences in headless Chromium against a real
// service on a real port: 400 vehicles clustered on the fleet map, wheel zoom, search, a chart's
// hover values and drag zoom, a seeded track replayed with its trips and stops, the exports
// downloaded, and geofences drawn on the page and found through the API. Every wait is for a
// condition, never a fixed sleep. Screenshots go to test-results/dashboard/.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Page } from 'playwright-core';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { PAGE_TIMEOUT, deadOrigin, freePort, openBrowser, skipUnlessChromium } from './helpers/browser.ts';
import { waitUntil } from './helpers/wait.ts';

/** The data attributes of the fleet map and of the chart, in the page. */
const MAP = "document.querySelector('.fleet .map').dataset";
const CHART = "document.querySelector('.chart').dataset";
const SHOTS = fileURLToPath(new URL('../test-results/dashboard/', import.meta.url));
const VEHICLES = 400;
const ids = Array.from({ length: VEHICLES }, (_, i) => `car-${String(i + 1).padStart(4, '0')}`);

/** Vehicle i's position: a rough grid over Berlin, denser in the middle. */
function positionOf(i: number): { lat: number; lng: number } {
  const ring = Math.floor(i / 40);
  const angle = (i % 40) * (Math.PI / 20) + ring * 0.3;
  const radius = 0.004 + ring * 0.012;
  return { lat: 52.52 + radius * Math.sin(angle), lng: 13.405 + 1.6 * radius * Math.cos(angle) };
}

/**
 * car-0001's track, a record every 10 s: 10 min east at 36 km/h, 8 min standing, 7 min north at
 * 36 km/h. That is two trips and one stop.
 */
function trackOf(start: number): Array<{ vehicleId: string; timestamp: string; data: Record<string, unknown> }> {
  const records = [];
  let lat = 52.50;
  let lng = 13.30;
  for (let t = 0; t <= 1500; t += 10) {
    const east = t > 0 && t <= 600;
    const north = t > 1080;
    if (east) lng += 0.001476;
    if (north) lat += 0.000899;
    const moving = east || north;
    records.push({
      vehicleId: 'car-0001',
      timestamp: new Date(start + t * 1000).toISOString(),
      data: { location: { lat, lng }, speed: moving ? 36 : 0, heading: north ? 0 : 90 },
    });
  }
  return records;
}

/**
 * The grid's labels of the map in `view` (run in the page): `problems` lists a label outside the
 * map, under a control, away from its edge (latitudes at the left, longitudes at the bottom),
 * on top of another, or repeated, and a line well inside the view without its label. With
 * `anchor`, a vehicle's marker on screen, each label is also checked against where its line is:
 * from the marker's position and the zoom, a longitude's x and a latitude's y (Web Mercator, 256 px
 * tiles), to 2 px.
 */
const GRID_LABELS = String.raw`((viewSelector, anchorSelector) => {
  const problems = [];
  const view = document.querySelector(viewSelector);
  if (view === null) return { problems: ['no map'], lat: 0, lng: 0 };
  const c = view.getBoundingClientRect();
  const controls = [...view.querySelectorAll('.leaflet-control')].map((el) => el.getBoundingClientRect()).filter((r) => r.width > 0);
  const cross = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const valueOf = (text) => {
    const m = /^(\d+(?:\.\d+)?)°([NSEW]?)$/.exec(text);
    return m === null ? NaN : Number(m[1]) * (m[2] === 'S' || m[2] === 'W' ? -1 : 1);
  };
  const labels = [...view.querySelectorAll('.grid-label')].filter((el) => !el.hidden).map((el) => ({
    text: el.textContent, lat: el.classList.contains('grid-label-lat'), r: el.getBoundingClientRect(),
  }));
  const texts = labels.map((l) => l.text);
  for (const [i, l] of labels.entries()) {
    const { r } = l;
    if (Number.isNaN(valueOf(l.text))) problems.push(l.text + ': not a coordinate');
    if (texts.indexOf(l.text) !== i) problems.push(l.text + ': labelled more than once');
    if (r.width === 0 || r.left < c.left || r.right > c.right || r.top < c.top || r.bottom > c.bottom) problems.push(l.text + ': not wholly inside the map');
    if (controls.some((k) => cross(r, k))) problems.push(l.text + ': under a control');
    if (labels.some((o, j) => j !== i && cross(r, o.r))) problems.push(l.text + ': on another label');
    const atEdge = l.lat
      ? r.left - c.left <= 8 || controls.some((k) => k.bottom > r.top && k.top < r.bottom && Math.abs(r.left - k.right) <= 8)
      : c.bottom - r.bottom <= 8 || controls.some((k) => k.right > r.left && k.left < r.right && Math.abs(k.top - r.bottom) <= 8);
    if (!atEdge) problems.push(l.text + (l.lat ? ': not at the left edge' : ': not at the bottom edge'));
  }
  const lat = labels.filter((l) => l.lat);
  const lng = labels.filter((l) => !l.lat);
  if (anchorSelector !== null) {
    const marker = document.querySelector(anchorSelector);
    const zoom = Number(document.querySelector('.fleet .map').dataset.zoom);
    if (marker === null || lng.length < 2) return { problems: [...problems, 'no anchor, or fewer than two longitude labels'], lat: lat.length, lng: lng.length };
    const m = marker.getBoundingClientRect();
    const [mx, my, lat0, lng0] = [m.left + m.width / 2, m.top + m.height / 2, Number(marker.dataset.lat), Number(marker.dataset.lng)];
    const world = 256 * 2 ** zoom;
    const merc = (v) => Math.log(Math.tan(Math.PI / 4 + (v * Math.PI) / 360));
    const xOf = (v) => mx + ((v - lng0) / 360) * world;
    const yOf = (v) => my - ((merc(v) - merc(lat0)) / (2 * Math.PI)) * world;
    for (const l of lng) if (Math.abs((l.r.left + l.r.right) / 2 - xOf(valueOf(l.text))) > 2) problems.push(l.text + ': not at its line');
    for (const l of lat) if (Math.abs((l.r.top + l.r.bottom) / 2 - yOf(valueOf(l.text))) > 2) problems.push(l.text + ': not at its line');
    // The lines' step, from neighbouring longitude labels; every line well inside has its label.
    const values = lng.map((l) => valueOf(l.text)).sort((a, b) => a - b);
    const step = Math.min(...values.slice(1).map((v, i) => v - values[i]));
    const has = (list, v) => list.some((l) => Math.abs(valueOf(l.text) - v) < step / 10);
    for (let k = Math.ceil((lng0 - (mx - c.left) / world * 360) / step); k * step < lng0 + ((c.right - mx) / world) * 360; k++) {
      const x = xOf(k * step);
      if (x > c.left + 40 && x < c.right - 40 && !has(lng, k * step)) problems.push('the line at ' + (k * step).toFixed(4) + '° longitude has no label');
    }
    for (let k = Math.floor(lat0 / step) - 20; k <= Math.floor(lat0 / step) + 20; k++) {
      const y = yOf(k * step);
      if (y > c.top + 30 && y < c.bottom - 40 && !has(lat, k * step)) problems.push('the line at ' + (k * step).toFixed(4) + '° latitude has no label');
    }
  }
  return { problems, lat: lat.length, lng: lng.length };
})`;

async function wheel(page: Page, selector: string, deltaY: number) {
  const box = await page.locator(selector).boundingBox();
  assert.ok(box !== null);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, deltaY);
}

const skip = skipUnlessChromium('the dashboard map tests');

test('the dashboard map, charts, replay and geofences', { skip, timeout: 180_000 }, async (t) => {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const ctx: TestApp = await createTestApp({
    env: { FLEET_PUBLIC_URL: origin, FLEET_MAP_TILE_URL: `${await deadOrigin()}/{z}/{x}/{y}.png` },
  });
  t.after(() => ctx.close());
  await ctx.app.listen({ host: '127.0.0.1', port });

  // All at once: the registrations share commits (one after another, each waits for its own disk sync).
  await Promise.all(ids.map((id) => ctx.registerVehicle(id, { type: 'car' })));
  const now = Date.now();
  const trackStart = now - 40 * 60_000;
  const track = trackOf(trackStart);
  const latest = ids.slice(1).map((vehicleId, i) => ({
    vehicleId, timestamp: new Date(now - 60_000).toISOString(), data: { location: positionOf(i + 1), heading: (i * 37) % 360, speed: 20, battery: 50 + (i % 50) },
  }));
  for (const records of [track, latest.slice(0, 200), latest.slice(200)]) {
    const res = await ctx.request('POST', '/v2/telemetry', { body: { records } });
    assert.equal(res.statusCode, 202, res.body);
  }
  const key = await ctx.keyWith(['fleet:read', 'fleet:write', 'telemetry:read', 'streams', 'rules']);

  mkdirSync(SHOTS, { recursive: true });
  const session = await openBrowser();
  t.after(() => session.close());
  const { page } = session;
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), animations: 'disabled' });
  const map = page.locator('.fleet .map');
  const data = async (name: string) => Number(await map.getAttribute(`data-${name}`));
  /**
   * Waits until a JavaScript expression, run in the page, is true. Polled from here: Playwright's
   * own polling would evaluate it with `eval` in the page, which the page's policy refuses.
   */
  const until = (expression: string) => waitUntil(async () => await page.evaluate(expression) === true, expression, PAGE_TIMEOUT);
  // The map's zoom as the page shows it, once no zoom animation runs: Leaflet drops a zoom asked for
  // while one animates, and the page may show the new zoom (a live update's redraw) before it ends.
  const settledWhen = (comparison: string) => `Number(${MAP}.zoom) ${comparison} && document.querySelector('.fleet .leaflet-zoom-anim') === null`;
  const zoomSettled = (comparison: string) => until(settledWhen(comparison));
  /**
   * Turns the wheel over the map once no zoom animates, until the zoom compares as asked: a turn
   * that lands as an animation starts (the page's own redraw, on a busy machine) is dropped by
   * Leaflet, and turned again after 5 s, up to four turns.
   */
  const wheelUntil = async (deltaY: number, comparison: string) => {
    for (let turn = 1; ; turn++) {
      await zoomSettled('>= 0');
      await wheel(page, '.fleet .map-view', deltaY);
      try {
        await waitUntil(async () => await page.evaluate(settledWhen(comparison)) === true, settledWhen(comparison), turn < 4 ? 5_000 : PAGE_TIMEOUT);
        return;
      } catch (error) {
        if (turn >= 4) throw error;
      }
    }
  };

  await t.test('the fleet map clusters every vehicle and says why there are no tiles', async () => {
    await page.goto(`${origin}/`);
    await page.getByRole('button', { name: 'Use an API key instead' }).click();
    await page.locator('#api-key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator(`.fleet .map[data-vehicles="${VEHICLES}"]`).waitFor();
    await page.locator('.map-note', { hasText: 'could not be loaded' }).waitFor();
    // The view fits the fleet: every vehicle is in a cluster or stands alone on screen.
    await until(`Number(${MAP}.clustered) + Number(${MAP}.markers) === ${VEHICLES}`);
    assert.ok(await data('clusters') > 0, 'no clusters');
    const counts = await page.locator('.cluster').evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-count'))));
    assert.equal(counts.reduce((a, b) => a + b, 0), await data('clustered'));
    // No tile shows, so no tile attribution either.
    assert.doesNotMatch(await page.locator('.fleet .leaflet-control-attribution').innerText(), /OpenStreetMap/);
    await shot('10-map-clusters');
  });

  await t.test('the mouse wheel zooms in, and clusters open up', async () => {
    const zoom = await data('zoom');
    const markers = await data('markers');
    // One turn of the wheel (Leaflet takes it four levels in): a second turn read against the zoom
    // before both would pass on the first turn's zoom, and the second, landing later, takes the
    // view in past most vehicles.
    await wheelUntil(-400, `> ${zoom}`);
    await until(`Number(${MAP}.markers) > ${markers}`);
    // A cluster clicked zooms in to where it splits.
    const view = await page.locator('.fleet .map-view').boundingBox();
    assert.ok(view !== null);
    // The view's clusters come from the worker after the zoom: waited for, not read once. A busy
    // browser may take the wheel further in, past every cluster: then one step back out.
    const clusterOnScreen = async () => (await page.locator('.cluster').evaluateAll((els) => els.map((el) => {
      const r = el.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    }))).find((b) => b.x > view.x + 40 && b.x < view.x + view.width - 40 && b.y > view.y + 40 && b.y < view.y + view.height - 40);
    let target = await clusterOnScreen();
    for (let step = 0; target === undefined && step < 4; step++) {
      for (const deadline = Date.now() + 3000; target === undefined && Date.now() < deadline; target = await clusterOnScreen()) await sleep(50);
      if (target !== undefined) break;
      const at = await data('zoom');
      await wheelUntil(200, `< ${at}`);
    }
    assert.ok(target !== undefined, `no cluster on screen at zoom ${await data('zoom')}`);
    const before = await data('zoom');
    await page.mouse.click(target.x, target.y);
    await zoomSettled(`> ${before}`);
  });

  await t.test('search jumps to a vehicle: its label, and its arrow turned to its heading', async () => {
    await page.locator('#map-search').fill('car-0123');
    await page.locator('.map-search button').click();
    const found = page.locator('.marker.found[data-vehicle-id="car-0123"]');
    await found.waitFor();
    assert.ok(await data('zoom') >= 17);
    assert.equal(await found.locator('.marker-label').innerText(), 'car-0123');
    const heading = (121 * 37) % 360;
    assert.match(String(await found.getAttribute('aria-label')), new RegExp(`^car-0123, active, at .*, heading ${heading}°$`));
    assert.equal(await found.locator('.marker-arrow').evaluate((el) => el.style.transform), `rotate(${heading}deg)`);
    // The marker is on screen, once the map has finished moving to it (slower on a busy machine).
    const onScreen = async () => {
      const box = await found.boundingBox();
      const view = await page.locator('.fleet .map-view').boundingBox();
      return box !== null && view !== null && box.x > view.x && box.x < view.x + view.width && box.y > view.y && box.y < view.y + view.height;
    };
    for (const deadline = Date.now() + 5000; !(await onScreen()) && Date.now() < deadline;) await sleep(50);
    assert.ok(await onScreen());
    await shot('11-map-search');
    await page.locator('#map-search').fill('no-such-car');
    await page.locator('.map-search button').click();
    await page.locator('.map-search-result', { hasText: 'No vehicle "no-such-car" on the map.' }).waitFor();
  });

  /** The grid's labels of a map, once they pass the checks (they follow the map within a frame of its moving). */
  const gridLabels = async (view: string, anchor: string | null) => {
    const check = `${GRID_LABELS}(${JSON.stringify(view)}, ${JSON.stringify(anchor)})`;
    let result = await page.evaluate<{ problems: string[]; lat: number; lng: number }>(check);
    for (const deadline = Date.now() + PAGE_TIMEOUT; result.problems.length > 0 && Date.now() < deadline; result = await page.evaluate(check)) await sleep(50);
    assert.deepEqual(result.problems, [], `the grid's labels of ${view}`);
    return result;
  };

  await t.test('the grid is labelled like a chart\'s axes: each line once along the left and bottom edges, whole, following the map', async () => {
    // A laptop's window. The map is where the search left it: on car-0123, at a zoom where it stands alone.
    await page.setViewportSize({ width: 1280, height: 720 });
    const found = '.marker.found[data-vehicle-id="car-0123"]';
    for (let zoom = await data('zoom'); zoom > 17; zoom = await data('zoom')) {
      await page.getByRole('button', { name: 'Zoom out' }).click();
      await zoomSettled(`< ${zoom}`);
    }
    const first = await gridLabels('.fleet .map-view', found);
    assert.ok(first.lat >= 1 && first.lng >= 2, `${first.lat} latitude and ${first.lng} longitude labels`);
    const texts = () => page.locator('.fleet .grid-label:not([hidden])').evaluateAll((els) => els.map((el) => `${el.textContent} ${Math.round(el.getBoundingClientRect().left)} ${Math.round(el.getBoundingClientRect().top)}`));
    const before = await texts();
    await shot('11b-map-grid');

    // Zoomed in with the keyboard (around the vehicle in the middle): finer lines, labelled again.
    await page.locator('.fleet .map-view').focus();
    await page.keyboard.press('Equal');
    await zoomSettled(`=== 18`);
    // The zoom's number changes as its animation starts; the labels follow once it ends.
    const moved = (from: string[]) => waitUntil(async () => JSON.stringify(await texts()) !== JSON.stringify(from), 'the grid labels to follow the map', PAGE_TIMEOUT);
    await moved(before);
    await gridLabels('.fleet .map-view', found);

    // Panned with the keyboard: the labels stay on the edges and on their lines.
    const zoomed = await texts();
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.press('ArrowUp');
    await moved(zoomed);
    await gridLabels('.fleet .map-view', found);
    await page.setViewportSize({ width: 1360, height: 900 });
  });

  await t.test('a vehicle\'s chart shows values under the pointer and zooms to a dragged span', async () => {
    await page.goto(`${origin}/#/vehicles/car-0001`);
    await page.locator('figcaption', { hasText: /^151 speed and 0 battery readings/ }).waitFor();
    const chart = page.locator('.chart');
    // The time axis fits the data (25 minutes), not the 6 hours asked for.
    await until(`${CHART}.from !== undefined`);
    const span = async () => {
      const [from, to] = await chart.evaluate((el) => [el.dataset.from, el.dataset.to]);
      return Date.parse(to) - Date.parse(from);
    };
    assert.ok(Math.abs(await span() - 1_500_000) < 60_000, `span ${await span()} ms`);
    const over = await page.locator('.u-over').boundingBox();
    assert.ok(over !== null);
    await page.mouse.move(over.x + over.width * 0.2, over.y + over.height / 2);
    const speedValue = page.locator('.u-legend .u-series').nth(1).locator('.u-value');
    await until(String.raw`/km\/h$/.test(document.querySelectorAll('.u-legend .u-series .u-value')[1].textContent)`);
    assert.equal(await speedValue.innerText(), '36.0 km/h');
    await shot('12-chart-hover');
    // Drag across the middle fifth: the chart zooms to about that span.
    await page.mouse.move(over.x + over.width * 0.4, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.6, over.y + over.height / 2, { steps: 5 });
    await page.mouse.up();
    await until(`Date.parse(${CHART}.to) - Date.parse(${CHART}.from) < 600000`);
    assert.ok(await span() > 200_000 && await span() < 400_000, `zoomed span ${await span()} ms`);
    await page.locator('.u-over').dblclick();
    await until(`Date.parse(${CHART}.to) - Date.parse(${CHART}.from) > 1400000`);
  });

  await t.test('route replay: the track, its trips and stops, and playback along it', async () => {
    await page.locator('#replay-summary', { hasText: '151 positions' }).waitFor();
    assert.match(await page.locator('#replay-summary').innerText(), /2 trips, 1 stops\.$/);
    assert.equal(await page.locator('table.trips tbody tr').count(), 2);
    assert.equal(await page.locator('table.stops tbody tr').count(), 1);
    assert.match(await page.locator('table.trips tbody tr').first().innerText(), /9 min 50 s\s+5\.\d\d km\s+36 km\/h/);
    assert.match(await page.locator('table.stops tbody tr').first().innerText(), /7 min 50 s/);
    // The track, both trips drawn over it and the stop as a dot.
    assert.equal(await page.locator('.replay-map path.leaflet-interactive').count(), 4);
    const cursor = page.locator('.replay-cursor');
    const startLng = Number(await cursor.getAttribute('data-lng'));
    assert.equal(startLng, 13.3);
    await page.locator('#replay-speed').selectOption('20');
    await page.locator('#replay-play').click();
    await until(`Number(document.querySelector('#replay-time').value) >= 20`);
    // 20×: east along the first trip.
    assert.ok(Number(await cursor.getAttribute('data-lng')) > startLng);
    assert.equal(await cursor.getAttribute('data-lat'), '52.5');
    await page.locator('#replay-play').click();
    assert.equal(await page.locator('#replay-play').innerText(), 'Play');
    await page.locator('.replay').scrollIntoViewIfNeeded();
    await page.locator('.replay').screenshot({ path: path.join(SHOTS, '13-replay.png'), animations: 'disabled' });
    // A trip clicked moves the replay to its start.
    await page.locator('table.trips button', { hasText: 'Trip 2' }).click();
    const at = Number(await page.locator('#replay-time').inputValue());
    assert.ok(at >= 1080 && at <= 1100, `Trip 2 at ${at} s`);
  });

  await t.test('the period downloads as CSV, GPX and GeoJSON with the bearer token', async () => {
    for (const [format, head] of [['csv', /^timestamp,lat,lng,speed,heading,battery,temperature,odometer,diagnostics\r\n/], ['gpx', /^<\?xml[^>]*>\s*<gpx /], ['geojson', /^\{"type":"FeatureCollection"/]] as const) {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.locator(`.replay-export button[data-format="${format}"]`).click(),
      ]);
      assert.match(download.suggestedFilename(), new RegExp(`^car-0001_\\d{8}T\\d{6}Z_\\d{8}T\\d{6}Z\\.${format}$`));
      const file = await download.path();
      const text = readFileSync(file, 'utf8');
      assert.match(text, head, format);
      if (format === 'csv') assert.equal(text.trim().split('\r\n').length, 152);
      if (format === 'geojson') assert.equal((JSON.parse(text) as { features: unknown[] }).features.length, 151);
      await page.locator('.replay-export-status', { hasText: `Downloaded ${download.suggestedFilename()}.` }).waitFor();
    }
  });

  const geofences = async () => (await ctx.request('GET', '/v2/geofences')).json<{ geofences: Array<{ id: string; name: string; geometry: { type: string; radius?: number; coordinates: unknown } }> }>().geofences;
  const mapPoint = async (fx: number, fy: number) => {
    const box = await page.locator('.geofence-map-view').boundingBox();
    assert.ok(box !== null);
    return { x: box.x + box.width * fx, y: box.y + box.height * fy };
  };
  const clickAt = async (fx: number, fy: number) => {
    const p = await mapPoint(fx, fy);
    await page.mouse.click(p.x, p.y);
  };

  await t.test('a polygon drawn on the page is created through the API, with the vehicles inside', async () => {
    await page.locator('nav a', { hasText: 'Geofences' }).click();
    await page.locator('.geofences .empty', { hasText: 'No geofences yet.' }).waitFor();
    // The drawing toolbar under the zoom buttons: the latitude labels go beside both.
    await gridLabels('.geofence-map-view', null);
    await page.locator('.leaflet-pm-icon-polygon').click();
    for (const [x, y] of [[0.35, 0.35], [0.65, 0.35], [0.65, 0.65], [0.35, 0.65]] as const) await clickAt(x, y);
    await clickAt(0.35, 0.35);
    await page.locator('#geofence-editor-title', { hasText: 'New geofence' }).waitFor();
    await page.locator('#geofence-name').fill('Mitte');
    await page.locator('#geofence-save').click();
    await page.locator('.geofence-editor .ok', { hasText: 'Created Mitte.' }).waitFor();
    const [created] = await geofences();
    assert.equal(created?.name, 'Mitte');
    assert.equal(created.geometry.type, 'Polygon');
    const ring = (created.geometry.coordinates as number[][][])[0]!;
    assert.equal(ring.length, 5);
    assert.deepEqual(ring[0], ring[4]);
    await page.locator(`li[data-geofence-id="${created.id}"]`).waitFor();
    // Membership follows telemetry: a vehicle reporting from the middle of it is inside.
    const [lngs, lats] = [ring.map((p) => p[0]!), ring.map((p) => p[1]!)];
    const middle = { lat: (Math.min(...lats) + Math.max(...lats)) / 2, lng: (Math.min(...lngs) + Math.max(...lngs)) / 2 };
    const res = await ctx.request('POST', '/v2/telemetry/car-0400', { body: { data: { location: middle } } });
    assert.equal(res.statusCode, 202, res.body);
    await page.locator('#geofence-cancel').click();
    await page.locator(`li[data-geofence-id="${created.id}"] button`).click();
    await page.locator('.inside-list a[data-vehicle-id="car-0400"]').waitFor();
    assert.deepEqual((await ctx.request('GET', `/v2/geofences/${created.id}/vehicles`)).json(), { vehicleIds: ['car-0400'] });
    await page.locator('#geofence-cancel').click();
  });

  await t.test('a circle is drawn, renamed and deleted; a crossing ring is refused with the service\'s problem', async () => {
    await page.locator('.leaflet-pm-icon-circle').click();
    await clickAt(0.2, 0.2);
    await clickAt(0.25, 0.2);
    await page.locator('#geofence-name').fill('Depot');
    await page.locator('#geofence-save').click();
    await page.locator('.geofence-editor .ok', { hasText: 'Created Depot.' }).waitFor();
    let circle = (await geofences()).find((g) => g.name === 'Depot');
    assert.equal(circle?.geometry.type, 'Circle');
    assert.ok(circle.geometry.radius! > 1);
    await shot('14-geofences');
    await page.locator('#geofence-name').fill('Depot north');
    await page.locator('#geofence-save').click();
    await page.locator('.geofence-editor .ok', { hasText: 'Saved Depot north.' }).waitFor();
    circle = (await geofences()).find((g) => g.id === circle!.id);
    assert.equal(circle?.name, 'Depot north');
    await page.locator('#geofence-delete').click();
    await page.locator('#geofence-delete', { hasText: 'Delete "Depot north" now' }).click();
    await page.locator('.list-message .ok', { hasText: 'Deleted Depot north.' }).waitFor();
    assert.equal((await ctx.request('GET', `/v2/geofences/${circle.id}`)).statusCode, 404);

    // A bow tie: the service refuses the crossing ring and says so.
    await page.locator('.leaflet-pm-icon-polygon').click();
    for (const [x, y] of [[0.7, 0.7], [0.9, 0.9], [0.9, 0.7], [0.7, 0.9]] as const) await clickAt(x, y);
    await clickAt(0.7, 0.7);
    await page.locator('#geofence-name').fill('Bow tie');
    await page.locator('#geofence-save').click();
    const problem = page.locator('.geofence-editor .problem');
    await problem.waitFor();
    assert.match(await problem.innerText(), /cross/i);
    assert.equal((await geofences()).length, 1);
    await shot('15-geofence-problem');
  });

  await t.test('a geofence too small to see at the zoom shows a pin, which names and selects it; zoomed in, the shape is enough', async () => {
    // 60 m across, some 30 km from Mitte: a couple of pixels when the map shows both.
    const small = await ctx.request('POST', '/v2/geofences', { body: { name: 'Stop <b>7</b>', geometry: { type: 'Circle', coordinates: [13.4, 52.82], radius: 30 } } });
    assert.equal(small.statusCode, 201);
    const id = small.json<{ id: string }>().id;
    await page.reload();
    await page.locator(`li[data-geofence-id="${id}"]`).waitFor();
    const pins = page.locator('.geofence-map-view path.geofence-pin');
    await pins.first().waitFor();
    assert.equal(await pins.count(), 1, 'Mitte is large enough at this zoom: only the small one has a pin');
    await pins.first().hover();
    await page.locator('.leaflet-tooltip', { hasText: 'Stop <b>7</b>' }).waitFor();
    await shot('16-geofence-pin');
    await pins.first().click();
    await page.locator('#geofence-editor-title', { hasText: 'Stop <b>7</b>' }).waitFor();
    await waitUntil(async () => (await pins.count()) === 0, 'the pin gone once the map zoomed in on the geofence');
  });

  assert.deepEqual(session.pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(session.cspViolations, [], 'Content-Security-Policy violations');
});
