// Summary reports in the dashboard end to end, in headless Chromium against a real service on a
// real port (docs/API.md "Summary reports"): two vans report ignition, speeds and positions on
// two past days, one of them driven by a driver (named with markup) and in a group. An admin signed
// in with a password opens the Reports page (its form starts on the last 7 days in the browser's
// time zone), runs the summary by vehicle, for one group, by driver and by day, and each table
// shows what the API answers for the same query, formatted; the report by day draws its chart;
// the CSV download is the API's CSV; an unknown time zone shows the problem beside its field.
// Report schedules (docs/API.md "Report schedules"): one is added (a bad zone refused beside its
// field first), run now, its kept report listed and downloaded as the API keeps it, and deleted; a
// viewer reads the schedules without being offered changes. Screenshots go to
// test-results/dashboard-reports/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { SummaryRow } from '../src/reports/model.ts';
import { openBrowser, servedTestApp, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';

/** What the tests read of a table row and a canvas in the page (the test's own types know no DOM). */
type TableRow = { cells: Iterable<{ textContent: string | null }> };
type Canvas = { width: number; height: number; getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } | null };

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-reports/', import.meta.url));
const PASSWORD = 'correct horse battery staple';
const MARKUP = 'Ada <img src="/none.png" data-injected onerror="window.ran=1">';

const skip = skipUnlessChromium('the dashboard reports browser tests');

const DAY = 86_400_000;
const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** A row as the page is expected to show it: key, km to 0.1, h:mm, h:mm, hours to 0.01, trips, km/h. */
function shown(row: SummaryRow, key: string): string[] {
  const hm = (seconds: number) => {
    const minutes = Math.round(seconds / 60);
    return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}`;
  };
  const fixed = (value: number, digits: number) => value.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return [key, fixed(row.distanceKm, 1), hm(row.drivingSeconds), hm(row.idleSeconds), fixed(row.engineHours, 2), String(row.trips),
    row.maxSpeed === null ? '—' : row.maxSpeed.toLocaleString('en', { maximumFractionDigits: 1 })];
}

/**
 * A drive of `minutes` at `speed` km/h northwards from `lat`, a record a minute, between two
 * minutes of idling with the ignition on, and a last record with the ignition off.
 */
function drive(start: number, lat: number, minutes: number, speed: number) {
  const records: Array<{ timestamp: string; data: Record<string, unknown> }> = [];
  const at = (minute: number) => new Date(start + minute * 60_000).toISOString();
  const step = speed / 60 / 111.2;
  for (let m = 0; m < 2; m++) records.push({ timestamp: at(m), data: { location: { lat, lng: 13.4 }, speed: 0, ignition: true } });
  for (let m = 1; m <= minutes; m++) {
    records.push({ timestamp: at(m + 1), data: { location: { lat: lat + m * step, lng: 13.4 }, speed: speed + (m % 3) * 4.5, ignition: true } });
  }
  const end = lat + minutes * step;
  for (let m = 0; m < 2; m++) records.push({ timestamp: at(minutes + 2 + m), data: { location: { lat: end, lng: 13.4 }, speed: 0, ignition: true } });
  records.push({ timestamp: at(minutes + 4), data: { location: { lat: end, lng: 13.4 }, speed: 0, ignition: false } });
  return records;
}

test('the dashboard\'s reports: a summary by vehicle, group, driver and day as the API answers it, its chart, its CSV, a bad zone; schedules run and their kept reports', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);
  await ctx.person('dana@example.com', 'Dana Ortiz', 'admin', PASSWORD);
  await ctx.person('vic@example.com', 'Vic Viewer', 'viewer', PASSWORD);

  // Two days ago and yesterday (UTC), in the morning: always in the past.
  const midnight = Date.parse(`${dateOf(Date.now())}T00:00:00Z`);
  const [first, second] = [midnight - 2 * DAY, midnight - DAY];
  const group = await ctx.request('POST', '/v2/groups', { body: { name: 'Berlin vans' } });
  assert.equal(group.statusCode, 201, group.body);
  const groupId = group.json<{ id: string }>().id;
  await ctx.registerVehicle('van-1', { groupIds: [groupId] });
  await ctx.registerVehicle('van-2');
  const driver = await ctx.request('POST', '/v2/drivers', { body: { name: MARKUP } });
  assert.equal(driver.statusCode, 201, driver.body);
  const driverId = driver.json<{ id: string }>().id;
  const assigned = await ctx.request('POST', '/v2/driver-assignments', {
    body: { driverId, vehicleId: 'van-1', startedAt: new Date(first - 3_600_000).toISOString() },
  });
  assert.equal(assigned.statusCode, 201, assigned.body);
  const send = async (vehicleId: string, records: ReturnType<typeof drive>) => {
    const res = await ctx.request('POST', `/v2/telemetry/${vehicleId}`, { body: { records } });
    assert.equal(res.statusCode, 202, res.body);
  };
  await send('van-1', [...drive(first + 8 * 3_600_000, 52.5, 20, 40), ...drive(second + 9 * 3_600_000, 52.6, 35, 55)]);
  await send('van-2', drive(second + 14 * 3_600_000, 52.4, 12, 30));

  const from = dateOf(first - DAY);
  const to = dateOf(midnight + DAY);
  const apiRows = async (query: Record<string, string>) => {
    const res = await ctx.request('GET', '/v2/reports/summary', { query: { from, to, timezone: 'UTC', ...query } });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<{ rows: SummaryRow[] }>().rows;
  };

  mkdirSync(SHOTS, { recursive: true });
  const { page, pageErrors, cspViolations, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const form = page.getByRole('form', { name: 'Summary report' });
  const table = page.getByRole('table', { name: 'Summary report rows' });
  const results = page.getByRole('region', { name: 'Summary', exact: true });
  const tableText = () => table.locator('tbody tr').evaluateAll((rows) =>
    rows.map((tr) => [...(tr as unknown as TableRow).cells].map((cell) => cell.textContent?.trim() ?? '')));
  /** Runs the report and waits for the summary line to say what it shows. */
  const run = async (status: RegExp) => {
    await form.getByRole('button', { name: 'Run report' }).click();
    await results.getByRole('status').filter({ hasText: status }).waitFor();
  };

  await page.goto(`${origin}/`);
  await signInWithPassword(page, 'dana@example.com', PASSWORD, 'Dana Ortiz');
  await nav.getByRole('link', { name: 'Reports', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Reports', exact: true }).waitFor();
  assert.equal(await page.title(), 'Reports · Fleet');
  assert.equal(await results.count(), 0, 'no results before a report is run');

  // The defaults: the last 7 days up to today (not counted), in the browser's own time zone.
  const browser = await page.evaluate(() => {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const parts = new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(new Date());
    const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
    return { zone, today: `${part('year')}-${part('month')}-${part('day')}` };
  });
  assert.equal(await form.getByLabel('Time zone').inputValue(), browser.zone);
  assert.equal(await form.getByLabel('To', { exact: true }).inputValue(), browser.today);
  assert.equal(await form.getByLabel('From', { exact: true }).inputValue(), dateOf(Date.parse(`${browser.today}T00:00:00Z`) - 7 * DAY));
  assert.equal(await form.getByLabel('Group by').inputValue(), 'vehicle');
  const zones = await form.locator('datalist option').evaluateAll((options) => options.map((o) => (o as unknown as { value: string }).value));
  assert.ok(zones.includes('Europe/Berlin') && zones.includes(browser.zone), zones.join(' '));

  await form.getByLabel('From', { exact: true }).fill(from);
  await form.getByLabel('To', { exact: true }).fill(to);
  await form.getByLabel('Time zone').fill('UTC');

  // By vehicle: each vehicle's row as the API gives it, linking to its page.
  const byVehicle = await apiRows({ groupBy: 'vehicle' });
  assert.deepEqual(byVehicle.map((r) => r.vehicleId), ['van-1', 'van-2']);
  assert.ok(byVehicle.every((r) => r.distanceKm > 0 && r.drivingSeconds > 0 && r.idleSeconds > 0 && r.maxSpeed !== null), JSON.stringify(byVehicle));
  await run(/^2 vehicles, /);
  assert.deepEqual(await table.locator('thead th').allInnerTexts(),
    ['Vehicle', 'Distance (km)', 'Driving (h:mm)', 'Idle (h:mm)', 'Engine hours', 'Trips', 'Max speed (km/h)']);
  assert.deepEqual(await tableText(), byVehicle.map((r) => shown(r, r.vehicleId!)));
  assert.equal(await table.getByRole('link', { name: 'van-2' }).getAttribute('href'), '#/vehicles/van-2');
  await shot('01-by-vehicle');

  // One group's vehicles.
  await form.getByLabel('Vehicle group').selectOption({ label: 'Berlin vans' });
  await run(/^1 vehicle, /);
  assert.deepEqual(await tableText(), (await apiRows({ groupBy: 'vehicle', groupId })).map((r) => shown(r, r.vehicleId!)));
  await form.getByLabel('Vehicle group').selectOption({ label: 'Every vehicle' });

  // By driver: the driver by name (text, never markup).
  await form.getByLabel('Group by').selectOption('driver');
  await run(/^1 driver, /);
  const byDriver = await apiRows({ groupBy: 'driver' });
  assert.deepEqual(byDriver.map((r) => r.driverId), [driverId]);
  assert.deepEqual(await tableText(), byDriver.map((r) => shown(r, MARKUP)));
  assert.equal(await table.locator('thead th').first().innerText(), 'Driver');

  // By day: a row per date, and the chart of them drawn.
  await form.getByLabel('Group by').selectOption('day');
  await run(/^2 dates, /);
  const byDay = await apiRows({ groupBy: 'day' });
  assert.deepEqual(byDay.map((r) => r.date), [dateOf(first), dateOf(second)]);
  assert.deepEqual(await tableText(), byDay.map((r) => shown(r, r.date!)));
  const figure = page.getByRole('figure', { name: 'Distance and driving time by date' });
  await figure.waitFor();
  const chart = figure.locator('.chart');
  await figure.locator('.chart[data-bars="2"]').waitFor();
  assert.equal(await chart.getAttribute('data-from'), dateOf(first));
  assert.equal(await chart.getAttribute('data-to'), dateOf(second));
  // The bars are on the canvas: pixels of their fill in the plot.
  const barPixels = await chart.locator('canvas').evaluate((element) => {
    const canvas = element as unknown as Canvas;
    const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i]! < 60 && data[i + 1]! > 90 && data[i + 1]! < 130 && data[i + 2]! > 200 && data[i + 3]! > 60 && data[i + 3]! < 120) count++;
    return count;
  });
  assert.ok(barPixels > 200, `bar pixels: ${barPixels}`);
  const total = byDay.reduce((sum, r) => sum + r.distanceKm, 0);
  assert.match(await figure.locator('figcaption').innerText(),
    new RegExp(`^Distance and driving time on 2 dates: ${total.toLocaleString('en', { minimumFractionDigits: 1, maximumFractionDigits: 1 }).replace('.', '\\.')} km and `));
  await shot('02-by-day');

  // The CSV download: the same report, as the API gives it.
  const [file] = await Promise.all([page.waitForEvent('download'), results.getByRole('button', { name: 'Download CSV' }).click()]);
  const name = `summary_day_${from}_${to}.csv`;
  assert.equal(file.suggestedFilename(), name);
  const csv = readFileSync(await file.path(), 'utf8');
  assert.equal(csv.split('\r\n')[0], 'date,distanceKm,drivingSeconds,idleSeconds,engineHours,trips,maxSpeed');
  const expected = await ctx.request('GET', '/v2/reports/summary', { query: { from, to, timezone: 'UTC', groupBy: 'day', format: 'csv' } });
  assert.equal(csv, expected.body);
  await results.getByRole('status').filter({ hasText: `Downloaded ${name}.` }).waitFor();

  // An unknown time zone: the problem, also beside the field; no stale report left on show.
  await form.getByLabel('Time zone').fill('Mars/Olympus_Mons');
  await form.getByRole('button', { name: 'Run report' }).click();
  const problem = form.getByRole('alert');
  await problem.getByText(/"Mars\/Olympus_Mons" is no IANA time zone/).first().waitFor();
  assert.equal(await form.getByLabel('Time zone').getAttribute('aria-invalid'), 'true');
  await results.waitFor({ state: 'hidden' });
  await shot('03-bad-zone');
  // Corrected, it answers again and the problem goes.
  await form.getByLabel('Time zone').fill('Europe/Berlin');
  await run(/\(Europe\/Berlin\)\.$/);
  assert.equal(await problem.count(), 0);
  assert.deepEqual(await tableText(), (await apiRows({ groupBy: 'day', timezone: 'Europe/Berlin' })).map((r) => shown(r, r.date!)));

  // Report schedules: one with an unknown zone is refused beside the field; one by vehicle of each
  // day in UTC as CSV is added, run now (yesterday's report), listed and downloaded as kept.
  const schedules = page.getByRole('table', { name: 'Report schedules' });
  await page.getByText('No report schedules yet: add one.').waitFor();
  const add = page.getByRole('form', { name: 'Add a report schedule' });
  await add.getByLabel('Name', { exact: true }).fill('Daily distance');
  await add.getByLabel('Time zone').fill('Nowhere/Atlantis');
  await add.getByRole('button', { name: 'Add schedule' }).click();
  await add.getByRole('alert').getByText(/"Nowhere\/Atlantis" is no IANA time zone/).waitFor();
  assert.equal(await add.getByLabel('Time zone').getAttribute('aria-invalid'), 'true');
  await add.getByLabel('Time zone').fill('UTC');
  await add.getByLabel('Format').selectOption('csv');
  await add.getByRole('button', { name: 'Add schedule' }).click();
  await add.getByRole('status').getByText('Added Daily distance.').waitFor();
  const scheduleRow = schedules.locator('tbody tr', { hasText: 'Daily distance' });
  await scheduleRow.waitFor();
  assert.deepEqual((await scheduleRow.locator('th, td').allInnerTexts()).slice(0, 6), ['Daily distance', 'Vehicle', 'Day', 'UTC', 'CSV', 'every vehicle']);
  const stored = (await ctx.request('GET', '/v2/report-schedules')).json<{ schedules: Array<Record<string, unknown>> }>().schedules;
  assert.equal(stored.length, 1);
  assert.deepEqual({ ...stored[0], id: undefined, createdAt: undefined, updatedAt: undefined },
    { id: undefined, name: 'Daily distance', groupBy: 'vehicle', period: 'day', timezone: 'UTC', vehicleIds: null, groupId: null, format: 'csv', createdAt: undefined, updatedAt: undefined });
  const scheduleId = stored[0]!.id as string;

  const yesterday = dateOf(second);
  await scheduleRow.getByRole('button', { name: 'Run Daily distance now' }).click();
  await page.getByRole('status').filter({ hasText: `Made the report of ${yesterday} for Daily distance.` }).waitFor();
  const kept = page.getByRole('table', { name: 'Kept reports' });
  await page.getByRole('heading', { name: 'Kept reports of Daily distance' }).waitFor();
  await kept.locator('tbody tr').first().waitFor();
  const keptList = (await ctx.request('GET', `/v2/reports?scheduleId=${scheduleId}`)).json<{ reports: Array<{ id: string; period: { from: string; to: string }; url: string }> }>().reports;
  assert.equal(keptList.length, 1);
  assert.deepEqual(keptList[0]!.period, { from: yesterday, to: dateOf(midnight) });
  const keptRows = await kept.locator('tbody tr').evaluateAll((rows) => rows.map((tr) => [...(tr as unknown as TableRow).cells].map((c) => c.textContent?.trim() ?? '')));
  assert.equal(keptRows.length, 1);
  assert.deepEqual([keptRows[0]![0], keptRows[0]![2], keptRows[0]![3]], [yesterday, 'CSV', 'Download']);
  await shot('04-schedules');
  const [keptFile] = await Promise.all([page.waitForEvent('download'), kept.getByRole('button', { name: `Download the report of ${yesterday}` }).click()]);
  assert.equal(keptFile.suggestedFilename(), `report_${keptList[0]!.id}.csv`);
  const keptCsv = readFileSync(await keptFile.path(), 'utf8');
  assert.equal(keptCsv.split('\r\n')[0], 'vehicleId,distanceKm,drivingSeconds,idleSeconds,engineHours,trips,maxSpeed');
  assert.equal(keptCsv, (await ctx.request('GET', keptList[0]!.url)).body);
  assert.equal(keptCsv.split('\r\n').filter((line) => line !== '').length, 3, 'yesterday: van-1 and van-2');

  // Deleted: asked once more, then gone.
  await scheduleRow.getByRole('button', { name: 'Delete' }).click();
  await scheduleRow.getByRole('button', { name: 'Confirm delete' }).click();
  await page.getByText('No report schedules yet: add one.').waitFor();
  assert.equal((await ctx.request('GET', '/v2/report-schedules')).json<{ total: number }>().total, 0);

  // A viewer (no `rules` scope) reads the schedules and their reports, and is offered no changes.
  const other = await ctx.request('POST', '/v2/report-schedules', {
    body: { name: 'Weekly vans', groupBy: 'day', period: 'week', timezone: 'Europe/Berlin', format: 'json', groupId },
  });
  assert.equal(other.statusCode, 201, other.body);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await signInWithPassword(page, 'vic@example.com', PASSWORD, 'Vic Viewer');
  await nav.getByRole('link', { name: 'Reports', exact: true }).click();
  const viewerRow = schedules.locator('tbody tr', { hasText: 'Weekly vans' });
  await viewerRow.waitFor();
  assert.deepEqual((await viewerRow.locator('th, td').allInnerTexts()).slice(0, 6),
    ['Weekly vans', 'Day', 'Week (Monday to Sunday)', 'Europe/Berlin', 'JSON', 'group Berlin vans']);
  assert.deepEqual(await viewerRow.getByRole('button').allInnerTexts(), ['Reports']);
  assert.equal(await page.getByRole('form', { name: 'Add a report schedule' }).count(), 0);
  await viewerRow.getByRole('button', { name: 'Reports of Weekly vans' }).click();
  await page.getByText('No reports yet: the first is made when a period has ended, or with "Run now".').waitFor();

  assert.equal(await page.locator('[data-injected]').count(), 0);
  assert.equal(await page.evaluate('typeof window.ran'), 'undefined');
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(cspViolations, []);
});
