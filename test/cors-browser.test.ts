// A page of another origin (a second local port) calls the API from headless Chromium: with the
// page's origin in FLEET_CORS_ORIGINS it reads answers, their exposed headers and its errors, and
// opens a live stream's WebSocket; without it, the browser itself refuses the page every answer.
// Debian's Chromium driven by playwright-core, as in dashboard-e2e.test.ts; skipped loudly when
// absent, except under CI=true.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { type TestContext, test } from 'node:test';
import type { Page } from 'playwright-core';
import { createTestApp } from './helpers/app.ts';
import { freePort } from './helpers/oauth.ts';
import { type Cleanup, cleanups, openBrowser, serveOrigin, skipUnlessChromium } from './helpers/browser.ts';

const skip = skipUnlessChromium('the CORS browser tests');

/** A page server on its own port: the other origin. */
async function pageOrigin(_t: TestContext, cleanup: Cleanup): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>another app</title><p>another app</p>');
  });
  return serveOrigin(server, cleanup);
}

async function fleet(cleanup: Cleanup, env: Record<string, string>) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const ctx = await createTestApp({ env: { FLEET_PORT: String(port), FLEET_PUBLIC_URL: url, ...env } });
  cleanup(() => ctx.close());
  await ctx.app.listen({ host: '127.0.0.1', port });
  return { ctx, url };
}

async function browserPage(cleanup: Cleanup, origin: string): Promise<Page> {
  const { page, close } = await openBrowser();
  cleanup(close);
  await page.goto(`${origin}/`);
  return page;
}

/** What the page sees of one fetch: the answer it may read, or the error the browser gave it. */
type Seen = { ok: true; status: number; headers: Record<string, string | null>; body: string } | { ok: false; error: string };

function pageFetch(page: Page, url: string, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<Seen> {
  return page.evaluate(async ({ url, init }) => {
    try {
      const res = await fetch(url, init);
      const names = ['x-request-id', 'ratelimit', 'ratelimit-policy', 'location', 'retry-after', 'content-type'];
      return { ok: true as const, status: res.status, headers: Object.fromEntries(names.map((n) => [n, res.headers.get(n)])), body: await res.text() };
    } catch (error) {
      return { ok: false as const, error: String(error) };
    }
  }, { url, init });
}

/** Opens a WebSocket from the page: its first message, or how it failed. */
function pageSocket(page: Page, url: string): Promise<{ first?: string; failed?: string }> {
  return page.evaluate((url) => new Promise<{ first?: string; failed?: string }>((resolve) => {
    const ws = new WebSocket(url);
    ws.onmessage = (message) => {
      resolve({ first: String(message.data) });
      ws.close();
    };
    ws.onclose = (event) => resolve({ failed: `closed ${event.code}` });
  }), url);
}

test('a page of an allowed origin calls the API, reads headers and errors, and opens a stream', { skip, timeout: 60_000 }, async (t) => {
  const cleanup = cleanups(t);
  const origin = await pageOrigin(t, cleanup);
  const { ctx, url } = await fleet(cleanup, { FLEET_CORS_ORIGINS: origin });
  const page = await browserPage(cleanup, origin);
  const auth = { authorization: `Bearer ${ctx.adminKey}` };

  const created = await pageFetch(page, `${url}/v2/fleet/vehicles`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'x-request-id': 'from-the-page-1' }, body: JSON.stringify({ vehicleId: 'van-1', type: 'van' }),
  });
  assert.ok(created.ok, `the preflighted POST reached the page: ${JSON.stringify(created)}`);
  assert.equal(created.status, 201, created.body);
  assert.equal(created.headers.location, '/v2/fleet/vehicles/van-1', 'Location is exposed');
  assert.equal(created.headers['x-request-id'], 'from-the-page-1', 'X-Request-Id was allowed in and is exposed');
  assert.match(created.headers.ratelimit ?? '', /"default";r=\d+/, 'RateLimit is exposed');
  assert.ok(created.headers['ratelimit-policy'], 'RateLimit-Policy is exposed');

  const listed = await pageFetch(page, `${url}/v2/fleet/vehicles`, { headers: auth });
  assert.ok(listed.ok && listed.status === 200, JSON.stringify(listed));
  assert.equal((JSON.parse(listed.body) as { vehicles: { id: string }[] }).vehicles[0]!.id, 'van-1');

  const refused = await pageFetch(page, `${url}/v2/fleet/vehicles`, {});
  assert.ok(refused.ok, 'a 401 is readable by the page, not a network error');
  assert.equal(refused.status, 401);
  assert.match(refused.headers['content-type'] ?? '', /^application\/problem\+json/);
  assert.equal((JSON.parse(refused.body) as { code: string }).code, 'unauthorized');

  const stream = await pageFetch(page, `${url}/v2/telemetry/van-1/stream`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ events: ['location'] }),
  });
  assert.ok(stream.ok && stream.status === 201, JSON.stringify(stream));
  const socket = await pageSocket(page, (JSON.parse(stream.body) as { url: string }).url);
  assert.equal(JSON.parse(socket.first ?? '{}').type, 'connected', `the page's WebSocket attached: ${JSON.stringify(socket)}`);
});

test('without FLEET_CORS_ORIGINS the browser keeps every answer from the page, and its WebSocket is refused', { skip, timeout: 60_000 }, async (t) => {
  const cleanup = cleanups(t);
  const origin = await pageOrigin(t, cleanup);
  const { ctx, url } = await fleet(cleanup, {});
  const page = await browserPage(cleanup, origin);
  const auth = { authorization: `Bearer ${ctx.adminKey}` };

  const listed = await pageFetch(page, `${url}/v2/fleet/vehicles`, { headers: auth });
  assert.equal(listed.ok, false, `a cross-origin read must fail without CORS: ${JSON.stringify(listed)}`);
  const created = await pageFetch(page, `${url}/v2/fleet/vehicles`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ vehicleId: 'van-1', type: 'van' }),
  });
  assert.equal(created.ok, false);
  // The preflight failed, so the POST itself was never sent.
  assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).statusCode, 404);

  await ctx.registerVehicle('van-2');
  const res = await ctx.request('POST', '/v2/telemetry/van-2/stream', { body: { events: ['location'] } });
  assert.equal(res.statusCode, 201, res.body);
  const socket = await pageSocket(page, res.json<{ url: string }>().url);
  assert.equal(socket.first, undefined, 'no message reaches a page of an origin not allowed');
  assert.match(socket.failed ?? '', /^closed 1006/);
});
