// Headless Chromium for the dashboard's browser suites: Debian's package driven by
// playwright-core (no browser is ever downloaded), a fresh profile per suite, and the page's
// uncaught errors and Content-Security-Policy violations collected for the suite to check.
// Browser suites run beside other test files, each other included: every wait for what a page
// shows is for the condition, bounded by PAGE_TIMEOUT.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { createTestApp, type TestApp } from './app.ts';
import { skipUnless } from './skip.ts';
import { freePort } from './ports.ts';

export { freePort };

export const CHROMIUM = process.env.FLEET_TEST_CHROMIUM ?? '/usr/bin/chromium';
/**
 * How long a page may take to show what a test waits for: long enough for a Chromium that shares
 * a busy machine with other test files; a wait ends as soon as the page shows it.
 */
export const PAGE_TIMEOUT = 30_000;
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export function skipUnlessChromium(suites: string): string | false {
  return skipUnless(existsSync(CHROMIUM) ? undefined : 'not installed', `Chromium at ${CHROMIUM}`, suites,
    'Install Debian\'s chromium package (apt-get install chromium)');
}


/**
 * A test app served on a port of its own at 127.0.0.1, which is its public URL, without map tiles,
 * for a browser to open; closed after the test.
 */
export async function servedTestApp(t: TestContext): Promise<{ ctx: TestApp; origin: string }> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const ctx = await createTestApp({ env: { FLEET_PUBLIC_URL: origin, FLEET_MAP_TILE_URL: '' } });
  // The browsers go first: the service's close waits for the connections they hold (a page's live
  // WebSocket among them), and a test's own `t.after(close)`, registered later, would run after it.
  t.after(async () => {
    await Promise.all([...openBrowsers].map((opened) => opened.close()));
    await ctx.close();
  });
  await ctx.app.listen({ host: '127.0.0.1', port });
  return { ctx, origin };
}

/** A closed port: tile requests fail at once, as they do on a machine without internet. */
export async function deadOrigin(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

export interface BrowserPage {
  browser: BrowserContext;
  page: Page;
  pageErrors: string[];
  cspViolations: string[];
  /** Every error the console shows (a failed request's status among them), as its text and URL. */
  consoleErrors: string[];
  close: () => Promise<void>;
}

export async function openBrowser(viewport = { width: 1360, height: 900 }, timeout = PAGE_TIMEOUT): Promise<BrowserPage> {
  const profile = mkdtempSync(path.join(tmpdir(), 'fleet-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, viewport, acceptDownloads: true,
  });
  const page = browser.pages()[0] ?? await browser.newPage();
  page.setDefaultTimeout(timeout);
  const pageErrors: string[] = [];
  const cspViolations: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    if (message.type() === 'error') consoleErrors.push(`${message.text()} ${message.location().url}`);
  });
  let closing: Promise<void> | undefined;
  const opened: BrowserPage = {
    browser, page, pageErrors, cspViolations, consoleErrors,
    close() {
      closing ??= (async () => {
        openBrowsers.delete(opened);
        const closed = browser.close().then(() => true, () => false);
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), BROWSER_CLOSE_MS); });
        if (!await Promise.race([closed, late])) killProfile(profile);
        clearTimeout(timer);
        rmSync(profile, { recursive: true, force: true });
      })();
      return closing;
    },
  };
  openBrowsers.add(opened);
  return opened;
}

/** Browsers open in this process, closed before the service they talk to (see servedTestApp). */
const openBrowsers = new Set<BrowserPage>();
const BROWSER_CLOSE_MS = 15_000;

/** Kills the Chromium processes of a profile (its directory is on their command line): a browser that did not close. */
function killProfile(profile: string): void {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(profile)) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
}

export type Cleanup = (step: () => Promise<unknown> | void) => void;

/**
 * Clean-up steps for a test, run last registered first: a browser goes before the servers it holds
 * kept-alive connections to, which would otherwise keep them waiting.
 */
export function cleanups(t: TestContext): Cleanup {
  const steps: (() => Promise<unknown> | void)[] = [];
  t.after(async () => {
    for (const step of steps.reverse()) await step();
  });
  return (step) => void steps.push(step);
}

/** Serves `server` on a port of its own (another origin than the service's); closed at clean-up. */
export async function serveOrigin(server: Server, cleanup: Cleanup): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return `http://127.0.0.1:${address.port}`;
}

/** Signs in through the dashboard's password form; resolves once the header names the person. */
export async function signInWithPassword(page: Page, email: string, password: string, name: string): Promise<void> {
  const form = page.getByRole('form', { name: 'Sign in', exact: true });
  await form.getByLabel('Email').fill(email);
  await form.getByLabel('Password').fill(password);
  await form.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#session .who-name', { hasText: name }).waitFor();
}
