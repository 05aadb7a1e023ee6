// The dashboard's audit log page end to end, in headless Chromium against a real service on a real
// port (docs/API.md "Audit log"): an admin signed in with a password sees the entries of changes
// made through the API, newest first, as text; filters by outcome, action and time; pages along
// `nextCursor` and back; a viewer is not offered the page, and opening it anyway shows the refusal.
// One service and one browser for the file; the subtests run in order on the same page.
// Screenshots go to test-results/dashboard-audit/.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { auditActionOf } from '../src/audit/actions.ts';
import { OUTCOMES } from '../src/audit/entry.ts';
import { AUDIT_ACTIONS, AUDIT_OUTCOMES, AUDIT_RESOURCE_TYPES } from '../web/lists.ts';
import { createTestApp } from './helpers/app.ts';
import { openBrowser, PAGE_TIMEOUT, servedTestApp, signInWithPassword, skipUnlessChromium } from './helpers/browser.ts';
import { waitUntil } from './helpers/wait.ts';

const SHOTS = fileURLToPath(new URL('../test-results/dashboard-audit/', import.meta.url));
const PASSWORD = 'correct horse battery staple';
/** The actions of requests no route names (src/audit/plugin.ts). */
const UNROUTED = ['credential.rejected', 'access.denied', 'request.not_found', 'request.failed'];

interface Entry {
  id: string;
  action: string;
  outcome: string;
  status: number;
  actor: { type: string; id: string | null; name: string | null };
  resource: { type: string | null; id: string | null };
}
interface Page {
  entries: Entry[];
  nextCursor: string | null;
}

test('the audit log\'s suggestions are the server\'s actions, outcomes and resource types', async (t) => {
  const ctx = await createTestApp();
  t.after(() => ctx.close());
  const doc = (await ctx.request('GET', '/openapi.json', { key: null })).json<{ paths: Record<string, Record<string, { operationId?: string }>> }>();
  const specs = Object.values(doc.paths).flatMap((item) => Object.values(item)).map((op) => auditActionOf(op.operationId)).filter((s) => s !== undefined);
  assert.ok(specs.length > 40, `the document names ${specs.length} audited operations`);
  const routed = new Set(specs.flatMap((s) => ('atResponse' in s ? [s.action, `${s.action}_failed`] : [s.action])));
  assert.deepEqual([...AUDIT_ACTIONS].sort(), [...new Set([...routed, ...UNROUTED])].sort());
  assert.deepEqual([...AUDIT_RESOURCE_TYPES].sort(), [...new Set(specs.map((s) => s.resource))].sort());
  assert.deepEqual([...AUDIT_OUTCOMES], [...OUTCOMES]);
});

const skip = skipUnlessChromium('the dashboard audit log browser tests');

/** `<input type="datetime-local">` wants local time without a zone. */
function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

test('the dashboard\'s audit log: entries as text, filters, paging, and only for those who may read it', { skip, timeout: 180_000 }, async (t) => {
  const { ctx, origin } = await servedTestApp(t);

  const person = (email: string, name: string, role: string) => ctx.person(email, name, role, PASSWORD);
  const auditPage = async (query: Record<string, string>) => {
    await ctx.app.auditFlush();
    const res = await ctx.request('GET', '/v2/audit-log', { query });
    assert.equal(res.statusCode, 200, res.body);
    return res.json<Page>();
  };

  await person('dana@example.com', 'Dana Ortiz', 'admin');
  const vicId = await person('vic@example.com', 'Vic Viewer', 'viewer');
  // A key whose name is markup: the page must show it as the text it is.
  const markup = '<img src="x" onerror="window.auditPwned = 1">Gate <b>7</b>';
  const gate = (await ctx.auth.createKey(ctx.organizationId, { name: markup, scopes: ['fleet:read', 'fleet:write'] })).secret;
  const vehicles = Array.from({ length: 23 }, (_, i) => `van-${String(i + 1).padStart(2, '0')}`);
  for (const id of vehicles) await ctx.registerVehicle(id);
  await ctx.registerVehicle('gate-7', {}, gate);
  const duplicate = await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-01', type: 'van' } });
  assert.equal(duplicate.statusCode, 409, duplicate.body);
  const missing = await ctx.request('DELETE', '/v2/fleet/vehicles/no-such-van');
  assert.equal(missing.statusCode, 404, missing.body);
  const refused = await ctx.request('GET', '/v2/audit-log', { key: await ctx.keyWith(['fleet:read']) });
  assert.equal(refused.statusCode, 403, refused.body);
  await ctx.app.auditFlush();

  mkdirSync(SHOTS, { recursive: true });
  const { page, pageErrors, cspViolations, consoleErrors, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  /** The query of every audit log request the page made. */
  const reads: URLSearchParams[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname === '/v2/audit-log') reads.push(url.searchParams);
  });
  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled' });
  const nav = page.getByRole('navigation', { name: 'Sections' });
  const navLinks = () => nav.getByRole('link').allInnerTexts();
  const signIn = (email: string, name: string) => signInWithPassword(page, email, PASSWORD, name);
  const table = page.getByRole('table', { name: 'Audit log entries', exact: true });
  const rows = table.locator('tbody tr');
  const filters = page.getByRole('search', { name: 'Filter the audit log' });
  const pager = page.getByRole('navigation', { name: 'Audit log pages' });
  let consoleFrom = 0;
  const shownIds = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-entry-id') ?? ''));
  /** Waits until the table, read, shows entries that `wanted` accepts. */
  const showingWhen = async (wanted: (ids: string[]) => boolean, what: string) => {
    let seen: string[] = [];
    await waitUntil(async () => {
      if (await table.getAttribute('aria-busy') !== null) return false;
      seen = await shownIds();
      return wanted(seen);
    }, what, PAGE_TIMEOUT, { every: 50, seen: () => `the table showed ${seen.length === 0 ? 'nothing' : seen.join(', ')}` });
  };
  /** Waits until the table shows exactly these entries, in this order. */
  const showing = (ids: string[]) => showingWhen((seen) => seen.join() === ids.join(), `the entries ${ids.join(', ')}`);

  await t.test('an admin is offered the page; it lists the entries newest first, as text, with no actions', async () => {
    await page.goto(`${origin}/`);
    await signIn('dana@example.com', 'Dana Ortiz');
    // (Before signing in, the page asked for a session there was not: that 401 is the sign-in page's.)
    consoleFrom = consoleErrors.length;
    assert.deepEqual(await navLinks(), ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports', 'Vehicles', 'Devices', 'Webhooks', 'API keys', 'Users', 'Audit log']);
    await nav.getByRole('link', { name: 'Audit log', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Audit log', exact: true }).waitFor();
    assert.equal(new URL(page.url()).hash, '#/audit');
    assert.equal(await nav.getByRole('link', { name: 'Audit log', exact: true }).getAttribute('aria-current'), 'page');
    assert.equal(await page.title(), 'Audit log · Fleet');

    // Dana's own sign-in, by her, as a user.
    const login = table.locator('tbody tr[data-action="session.login"]');
    await login.first().waitFor();
    const loginCells = await login.first().locator('td, th').allInnerTexts();
    assert.match(loginCells[1]!, /Dana Ortiz\s+user · usr_/);
    assert.equal(loginCells[4], 'succeeded');

    const ids = await shownIds();
    assert.ok(ids.length >= 28, `${ids.length} rows`);
    assert.deepEqual(ids, [...ids].sort().reverse(), 'newest first');

    const failed = table.locator('tbody tr[data-action="vehicle.created"][data-outcome="failed"]');
    const cells = await failed.locator('td, th').allInnerTexts();
    assert.deepEqual(cells.slice(1), [
      `First admin key\nAPI key · ${(await auditPage({ action: 'vehicle.created', outcome: 'failed' })).entries[0]!.actor.id}`,
      'vehicle.created', 'vehicle\nvan-01', 'failed', '409', 'POST /v2/fleet/vehicles', '127.0.0.1',
    ]);
    assert.match(await failed.locator('td').nth(5).getAttribute('title') ?? '', /^Request id: \S+\nUser agent: lightMyRequest$/);

    const byGate = rows.filter({ hasText: 'gate-7' });
    assert.equal(await byGate.locator('td.audit-actor > span').first().innerText(), markup);
    assert.equal(await table.locator('img, b').count(), 0, 'no markup from the API');
    assert.equal(await page.evaluate('typeof window.auditPwned'), 'undefined');
    assert.equal(await table.getByRole('button').count(), 0, 'no actions on an entry');
    await shot('01-audit-log');
  });

  await t.test('filters: by outcome, by action, by time; an empty result says so; Clear shows everything again', async () => {
    const outcome = filters.getByLabel('Outcome', { exact: true });
    await outcome.selectOption('failed');
    const failed = await auditPage({ outcome: 'failed' });
    assert.deepEqual(failed.entries.map((e) => `${e.action} ${e.status}`).sort(), ['vehicle.created 409', 'vehicle.deleted 404']);
    await showing(failed.entries.map((e) => e.id));

    await outcome.selectOption('denied');
    const denied = await auditPage({ outcome: 'denied' });
    assert.deepEqual(denied.entries.map((e) => e.action), ['access.denied']);
    await showing(denied.entries.map((e) => e.id));

    await outcome.selectOption('');
    await filters.getByLabel('Action', { exact: true }).fill('vehicle.deleted');
    await filters.getByRole('button', { name: 'Filter' }).click();
    const deleted = await auditPage({ action: 'vehicle.deleted' });
    assert.deepEqual(deleted.entries.map((e) => e.resource.id), ['no-such-van']);
    await showing(deleted.entries.map((e) => e.id));
    assert.equal(reads.at(-1)?.get('action'), 'vehicle.deleted');

    // From tomorrow: nothing yet.
    const tomorrow = localInput(Date.now() + 86_400_000);
    await filters.getByLabel('From', { exact: true }).fill(tomorrow);
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No entries match these filters.').waitFor();
    assert.equal(await rows.count(), 0);
    assert.equal(reads.at(-1)?.get('from'), new Date(tomorrow).toISOString(), 'the local time sent as an instant');
    await shot('02-no-match');

    // An hour either side of now: the entry again.
    await filters.getByLabel('From', { exact: true }).fill(localInput(Date.now() - 3_600_000));
    await filters.getByLabel('To', { exact: true }).fill(localInput(Date.now() + 3_600_000));
    await filters.getByRole('button', { name: 'Filter' }).click();
    await showing(deleted.entries.map((e) => e.id));
    assert.ok(reads.at(-1)?.has('to'));

    await filters.getByRole('button', { name: 'Clear' }).click();
    await showingWhen((seen) => seen.length >= 28, 'every entry again');
    assert.equal(await filters.getByLabel('Action', { exact: true }).inputValue(), '');
    assert.equal(await filters.getByLabel('From', { exact: true }).inputValue(), '');
    assert.deepEqual([...reads.at(-1)!.keys()], ['limit']);
  });

  await t.test('paging: Older follows nextCursor, Newer and Newest go back', async () => {
    await filters.getByLabel('Action', { exact: true }).fill('vehicle.created');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await filters.getByLabel('Per page').selectOption('10');
    const pages: Page[] = [await auditPage({ action: 'vehicle.created', limit: '10' })];
    while (pages.at(-1)!.nextCursor !== null) pages.push(await auditPage({ action: 'vehicle.created', limit: '10', cursor: pages.at(-1)!.nextCursor! }));
    assert.deepEqual(pages.map((p) => p.entries.length), [10, 10, 5]);
    const ids = (n: number) => pages[n]!.entries.map((e) => e.id);
    const info = pager.locator('.page-info');
    const [newest, newer, older] = ['Newest', 'Newer', 'Older'].map((name) => pager.getByRole('button', { name, exact: true }));

    await showing(ids(0));
    assert.equal(await info.innerText(), 'Page 1: entries 1–10');
    assert.equal(await newer!.isDisabled(), true);
    await older!.click();
    await showing(ids(1));
    assert.equal(await info.innerText(), 'Page 2: entries 11–20');
    assert.equal(reads.at(-1)?.get('cursor'), pages[0]!.nextCursor);
    await older!.click();
    await showing(ids(2));
    assert.equal(await info.innerText(), 'Page 3: entries 21–25');
    assert.equal(await older!.isDisabled(), true, 'the last page');
    await shot('03-last-page');
    await newer!.click();
    await showing(ids(1));
    await older!.click();
    await showing(ids(2));
    await newest!.click();
    await showing(ids(0));
    assert.equal(await info.innerText(), 'Page 1: entries 1–10');
    assert.equal(await older!.isDisabled(), false);
  });

  await t.test('no error in the console while reading the log', () => {
    assert.deepEqual(consoleErrors.slice(consoleFrom), []);
  });

  await t.test('a viewer is not offered the page; opened anyway, it shows the refusal', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn('vic@example.com', 'Vic Viewer');
    assert.deepEqual(await navLinks(), ['Fleet', 'Geofences', 'Alerts', 'Events', 'Groups', 'Drivers', 'Maintenance', 'Reports']);
    const before = consoleErrors.length;
    await page.evaluate('location.hash = "#/audit"');
    const problem = page.getByRole('alert').filter({ hasText: 'Your role does not allow this' });
    await problem.waitFor();
    assert.match(await problem.innerText(), /audit:read/);
    assert.equal(await rows.count(), 0);
    await shot('04-viewer-refused');
    // The refusal's own failed request is the only error, and the log has it.
    assert.ok(consoleErrors.length > before);
    assert.deepEqual(consoleErrors.slice(before).filter((e) => !e.includes('403')), []);
    const logged = await auditPage({ actorId: vicId, action: 'access.denied' });
    assert.deepEqual(logged.entries.map((e) => `${e.actor.name} ${e.status}`), ['Vic Viewer 403']);
  });

  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  assert.deepEqual(cspViolations, [], 'Content-Security-Policy violations');
});
