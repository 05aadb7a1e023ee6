// The dashboard's webhook panel opens a delivery's attempts, newest first, in headless Chromium
// against a real service and a real receiver that fails once; the open attempts stay open while
// the deliveries list is read again. Every wait is for a condition.
//
// Without /usr/bin/chromium the browser suite is skipped with a loud message, except under
// CI=true, where that is a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort, openBrowser, skipUnlessChromium } from './helpers/browser.ts';
import { startReceiver } from './helpers/receiver.ts';
import { waitUntil } from './helpers/wait.ts';

const skip = skipUnlessChromium('the dashboard attempts browser test');

test('a delivery\'s attempts open under it in the deliveries list', { skip, timeout: 120_000 }, async (t) => {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const ctx: TestApp = await createTestApp({
    env: { FLEET_PUBLIC_URL: origin, FLEET_MAP_TILE_URL: '', FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' },
    webhooks: { retryDelaysMs: [60_000], jitter: 0, pollMs: 50 },
  });
  t.after(() => ctx.close());
  await ctx.app.listen({ host: '127.0.0.1', port });
  let down = true;
  const receiver = await startReceiver(() => ({ status: down ? 503 : 204 }));
  t.after(() => receiver.close());

  // One delivery: a 503, then (retried by hand) a 204.
  const webhook = (await ctx.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['vehicle.deleted'] } })).json();
  const delivery = (await ctx.request('POST', `/v2/webhooks/${webhook.id}/test`)).json();
  await receiver.waitFor(() => receiver.received.length >= 1);
  const latest = async () => (await ctx.request('GET', `/v2/webhooks/${webhook.id}/deliveries`)).json().deliveries[0];
  const attempted = async (n: number) => {
    await waitUntil(async () => (await latest()).attempt >= n, `attempt ${n} of the delivery recorded`, 10_000);
    return latest();
  };
  assert.equal((await attempted(1)).status, 'pending');

  const { page, pageErrors, close } = await openBrowser({ width: 1360, height: 900 });
  t.after(close);
  await page.goto(`${origin}/#/manage/webhooks`);
  await page.getByRole('button', { name: 'Use an API key instead' }).click();
  await page.getByLabel('API key').fill(ctx.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Webhooks', exact: true }).waitFor();
  const endpoint = page.getByRole('article', { name: receiver.url });
  await endpoint.getByRole('button', { name: 'Deliveries' }).click();
  const row = endpoint.locator(`tr[data-delivery-id="${delivery.id}"]`);
  await row.getByText('pending').waitFor();

  await row.getByRole('button', { name: 'Attempts' }).click();
  const attempts = endpoint.getByRole('table', { name: `Attempts of webhook.test ${delivery.eventId}` });
  await attempts.getByRole('cell', { name: 'The receiver answered 503 Service Unavailable; a 2xx was expected' }).first().waitFor();
  assert.equal(await row.getByRole('button', { name: 'Attempts' }).getAttribute('aria-expanded'), 'true');

  // Retried from the page: the list is read again while pending, and the attempts open with it.
  down = false;
  await row.getByRole('button', { name: 'Retry' }).click();
  await receiver.waitFor(() => receiver.received.length >= 2);
  await row.getByText('succeeded').waitFor();
  await attempts.getByRole('row').filter({ hasText: 'succeeded' }).waitFor();
  // At least once: as many attempts as the delivery counts, newest first, the success on top.
  const count = (await attempted(2)).attempt;
  await row.getByRole('cell', { name: String(count), exact: true }).waitFor();
  await attempts.locator(`tbody tr[data-attempt="${count}"]`).waitFor();
  const rows = await attempts.locator('tbody tr').allInnerTexts();
  assert.equal(rows.length, count, rows.join('\n'));
  assert.match(rows[0]!, new RegExp(`^${count}\\t.+\\tsucceeded\\t204 in \\d+ ms`));
  assert.match(rows.at(-1)!, /^1\t.+\tfailed\t503 in \d+ ms\tThe receiver answered 503 Service Unavailable; a 2xx was expected/);

  // Closed again.
  await row.getByRole('button', { name: 'Attempts' }).click();
  await attempts.waitFor({ state: 'hidden' });
  assert.deepEqual(pageErrors, []);
});
