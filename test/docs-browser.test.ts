// The interactive docs at /docs in headless Chromium, under their own Content-Security-Policy: the
// operations render (each is seen on scrolling through the page), and the console shows no error (a style or script the policy blocks would).
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
  // Every operation is listed, the audit log's among them. With 150 tags and operations or more,
  // swagger-ui renders only those near the viewport: the page is read while scrolled to its end.
  const seen = new Set<string>();
  for (let step = 0; step < 400; step++) {
    for (const summary of await browser.page.locator('.opblock-summary').allInnerTexts()) seen.add(summary.replace(/\s+/g, ' '));
    const atEnd = await browser.page.evaluate<boolean>(
      'window.scrollBy(0, window.innerHeight / 2), window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 1');
    if (atEnd && step > 0) break;
    await browser.page.waitForTimeout(20);
  }
  const summaries = [...seen];
  assert.ok(summaries.some((text) => text.includes('/v2/audit-log')), summaries.join('\n'));
  assert.ok(summaries.length > 100, `${summaries.length} operations seen`);
  assert.deepEqual(browser.cspViolations, []);
  assert.deepEqual(browser.pageErrors, []);
  assert.deepEqual(browser.consoleErrors, []);
});
