// The SDK in a browser: headless Chromium loads sdk/src as ES modules (its types stripped, the way
// a bundler would), from a page of another origin allowed by FLEET_CORS_ORIGINS, and makes typed
// calls, pages a list, keeps a live stream through a server-side drop with the browser's own
// WebSocket, and verifies webhook signatures with the browser's WebCrypto. Debian's Chromium
// driven by playwright-core, as the other browser tests; skipped loudly when absent, except under
// CI=true.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import type * as Sdk from '../sdk/src/index.ts';
import { createStreamApp, send } from './helpers/streams.ts';
import { type Cleanup, PAGE_TIMEOUT, cleanups, openBrowser, serveOrigin, skipUnlessChromium } from './helpers/browser.ts';
import { waitUntil } from './helpers/wait.ts';

const skip = skipUnlessChromium('the SDK browser test');

const SDK_SRC = fileURLToPath(new URL('../sdk/src/', import.meta.url));
const OPENAPI_FETCH = fileURLToPath(import.meta.resolve('openapi-fetch'));
/** Where the page loads the SDK from (a variable, so that the type checker leaves the import alone). */
const SDK_URL = '/sdk/index.ts';

/** What the page keeps between evaluations. */
type PageState = { fleet: Sdk.FleetClient; stream: Sdk.LiveStream; batteries: number[] };

/** The other origin: an empty page with an import map, the SDK's modules, and openapi-fetch. */
async function pageServer(cleanup: Cleanup): Promise<string> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://page');
    if (url.pathname === '/') {
      const importMap = JSON.stringify({ imports: { 'openapi-fetch': '/vendor/openapi-fetch.mjs' } });
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><title>an app</title><script type="importmap">${importMap}</script><p>an app</p>`);
    } else if (url.pathname === '/vendor/openapi-fetch.mjs') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(OPENAPI_FETCH));
    } else if (/^\/sdk\/[a-z-]+\.ts$/.test(url.pathname) && !url.pathname.endsWith('.d.ts')) {
      const source = readFileSync(path.join(SDK_SRC, url.pathname.slice('/sdk/'.length)), 'utf8');
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(stripTypeScriptTypes(source));
    } else {
      res.writeHead(404).end();
    }
  });
  return serveOrigin(server, cleanup);
}

async function browserPage(cleanup: Cleanup, origin: string): Promise<Page> {
  const { page, pageErrors, close } = await openBrowser();
  cleanup(close);
  await page.goto(`${origin}/`);
  cleanup(() => assert.deepEqual(pageErrors, [], 'errors in the page'));
  return page;
}

test('in Chromium: typed calls, paging, a stream kept through a drop, webhook verification', { skip, timeout: 90_000 }, async (t) => {
  const cleanup = cleanups(t);
  const origin = await pageServer(cleanup);
  const ctx = await createStreamApp({ env: { FLEET_CORS_ORIGINS: origin } });
  cleanup(() => ctx.close());
  const page = await browserPage(cleanup, origin);

  // Calls and paging, from the page.
  const listed = await page.evaluate(async ({ baseUrl, apiKey, sdkUrl }) => {
    const sdk = (await import(sdkUrl)) as typeof Sdk;
    const fleet = sdk.createFleetClient({ baseUrl, apiKey });
    (globalThis as unknown as PageState).fleet = fleet;
    for (const id of ['b-1', 'b-2', 'b-3']) sdk.ok(await fleet.POST('/v2/fleet/vehicles', { body: { vehicleId: id, type: 'van' } }));
    const ids: string[] = [];
    for await (const vehicle of fleet.paginate.vehicles({ limit: 2 })) ids.push(vehicle.id);
    const missing = await fleet.GET('/v2/fleet/vehicles/{id}', { params: { path: { id: 'nope' } } });
    return { ids, missing: [missing.response.status, missing.error?.code] };
  }, { baseUrl: ctx.publicUrl, apiKey: ctx.adminKey, sdkUrl: SDK_URL });
  assert.deepEqual(listed, { ids: ['b-1', 'b-2', 'b-3'], missing: [404, 'vehicle-not-found'] });

  // A stream read by the page; the server drops its socket halfway.
  await page.evaluate(async () => {
    const w = globalThis as unknown as PageState;
    w.batteries = [];
    w.stream = await w.fleet.openStream({ vehicleId: 'b-1', events: ['battery'], interval: 0 });
    void (async () => {
      for await (const message of w.stream) if (message.type === 'battery') w.batteries.push(message.data.battery!);
    })();
  });
  const batteries = () => page.evaluate(() => (globalThis as unknown as PageState).batteries);
  let got: number[] = [];
  const until = (count: number) => waitUntil(async () => (got = await batteries()).length >= count, `${count} messages`, PAGE_TIMEOUT, { seen: () => `got ${JSON.stringify(got)}` });
  for (let i = 1; i <= 5; i++) await send(ctx, 'b-1', { battery: i });
  await until(5);
  for (const socket of ctx.app.websocketServer.clients) socket.terminate();
  for (let i = 6; i <= 10; i++) await send(ctx, 'b-1', { battery: i });
  await until(10);
  assert.deepEqual(await batteries(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.equal(await page.evaluate(() => (globalThis as unknown as PageState).stream.reconnects), 1);
  await page.evaluate(() => (globalThis as unknown as PageState).stream.close());

  // Webhook signatures made by the reference implementation, checked with the browser's WebCrypto.
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const payload = JSON.stringify({ id: 'evt_b', type: 'vehicle.deleted', occurredAt: '2026-11-25T08:30:00.000Z', vehicleId: 'b-1', data: {} });
  const at = new Date();
  const headers = { 'webhook-id': 'evt_b', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign('evt_b', at, payload) };
  const verdicts = await page.evaluate(async ({ secret, payload, headers, sdkUrl }) => {
    const sdk = (await import(sdkUrl)) as typeof Sdk;
    const verdict = (body: string) => sdk.verifyWebhook({ payload: body, headers: new Headers(headers), secret })
      .then((event) => event.type, (error: unknown) => (error instanceof sdk.WebhookVerificationError ? error.reason : `unexpected: ${String(error)}`));
    return [await verdict(payload), await verdict(payload.replace('b-1', 'b-2'))];
  }, { secret, payload, headers, sdkUrl: SDK_URL });
  assert.deepEqual(verdicts, ['vehicle.deleted', 'no-matching-signature']);
});
