// The interactive docs at /docs in headless Chromium, under their own Content-Security-Policy: the
// operations render, and the console shows no error (a style or script the policy blocks would).
// Debian's Chromium driven by playwright-core; skipped loudly when absent, except under CI=true.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestApp } from './helpers/app.ts';
import { cleanups, openBrowser, skipUnlessChromium } from './helpers/browser.ts';
import { listeningPort } from './helpers/raw-http.ts';

test('/docs renders the operations with nothing blocked and no console error', { skip: skipUnlessChromium('the /docs browser test') }, async (t) => {
  const cleanup = cleanups(t);
  const app = await createTestApp();
  cleanup(() => app.close());
  const port = await listeningPort(app.app);
  const browser = await openBrowser();
  cleanup(() => browser.close());
  await browser.page.goto(`http://127.0.0.1:${port}/docs`);
  await browser.page.waitForSelector('.opblock');
  // Every operation is listed, the audit log's among them.
  await browser.page.locator('.opblock-summary-path', { hasText: '/v2/audit-log' }).first().waitFor();
  assert.ok(await browser.page.locator('.opblock').count() > 50);
  assert.deepEqual(browser.cspViolations, []);
  assert.deepEqual(browser.pageErrors, []);
  assert.deepEqual(browser.consoleErrors, []);
});
