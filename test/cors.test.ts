// CORS and the WebSocket origin rules over real HTTP: preflights without a credential, the headers
// of answers and of errors (401, 404, 429, problem+json), CORS off by default, and a WebSocket from
// a page of the host the request was sent to, whatever FLEET_PUBLIC_URL names.
import assert from 'node:assert/strict';
import type { LookupFunction } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { type StreamApp, type StreamClient, attach, closeAll, createStream, createStreamApp, refused } from './helpers/streams.ts';

const APP = 'http://app.example:3000';

type Answer = { status: number; headers: Record<string, string>; body: string };

async function call(base: string, method: 'GET' | 'POST' | 'OPTIONS' | 'DELETE', path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const res = await request(`${base}${path}`, { method, headers, body });
  const text = await res.body.text();
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) flat[name] = Array.isArray(value) ? value.join(', ') : String(value);
  return { status: res.statusCode, headers: flat, body: text };
}

const list = (value: string | undefined) => (value ?? '').split(',').map((v) => v.trim().toLowerCase()).filter((v) => v !== '');

function assertCors(answer: Answer, origin: string, what: string): void {
  assert.equal(answer.headers['access-control-allow-origin'], origin, `${what}: Access-Control-Allow-Origin`);
  const exposed = list(answer.headers['access-control-expose-headers']);
  for (const name of ['location', 'ratelimit', 'ratelimit-policy', 'retry-after', 'x-request-id']) {
    assert.ok(exposed.includes(name), `${what}: ${name} exposed (got ${exposed.join(', ')})`);
  }
  assert.equal(answer.headers['access-control-allow-credentials'], undefined, `${what}: no credentials mode (bearer tokens only)`);
}

function assertNoCors(answer: Answer, what: string): void {
  for (const name of Object.keys(answer.headers)) assert.ok(!name.startsWith('access-control-'), `${what}: no ${name}`);
}

describe('CORS on (FLEET_CORS_ORIGINS lists an origin)', () => {
  let ctx: StreamApp;
  before(async () => {
    ctx = await createStreamApp({ env: { FLEET_CORS_ORIGINS: `${APP}, https://other.example`, FLEET_RATE_LIMIT_REQUESTS: '3' } });
    await ctx.registerVehicle('van-1');
  });
  after(() => ctx.close());

  test('a preflight is answered 204 without a credential, with the methods, headers and max age', async () => {
    const res = await call(ctx.publicUrl, 'OPTIONS', '/v2/fleet/vehicles/van-1', {
      origin: APP, 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization, content-type, x-request-id',
    });
    assert.equal(res.status, 204, res.body);
    assert.equal(res.body, '');
    assert.equal(res.headers['access-control-allow-origin'], APP);
    const methods = list(res.headers['access-control-allow-methods']);
    for (const m of ['get', 'post', 'put', 'patch', 'delete']) assert.ok(methods.includes(m), `method ${m} allowed (got ${methods.join(', ')})`);
    const headers = list(res.headers['access-control-allow-headers']);
    for (const h of ['authorization', 'content-type', 'x-request-id']) assert.ok(headers.includes(h), `header ${h} allowed`);
    assert.ok(Number(res.headers['access-control-max-age']) > 0);
    assert.match(res.headers.vary ?? '', /origin/i, 'answers vary by Origin');
    // Origins are matched as browsers send them; the second listed origin works as the first.
    const other = await call(ctx.publicUrl, 'OPTIONS', '/v2/telemetry', { origin: 'https://other.example', 'access-control-request-method': 'POST' });
    assert.equal(other.status, 204);
    assert.equal(other.headers['access-control-allow-origin'], 'https://other.example');
  });

  test('a request from the origin reads its answer: Allow-Origin, and the exposed headers', async () => {
    const res = await call(ctx.publicUrl, 'GET', '/v2/fleet/vehicles', { origin: APP, authorization: `Bearer ${ctx.adminKey}` });
    assert.equal(res.status, 200, res.body);
    assertCors(res, APP, 'GET /v2/fleet/vehicles');
    assert.ok(res.headers['x-request-id']);
    assert.ok(res.headers.ratelimit, 'the rate-limit headers it may now read are there');
  });

  test('errors carry the CORS headers too: 401, 404, 400 (problem+json), 429', async () => {
    const unauthenticated = await call(ctx.publicUrl, 'GET', '/v2/fleet/vehicles', { origin: APP });
    assert.equal(unauthenticated.status, 401);
    assertCors(unauthenticated, APP, '401');
    const missing = await call(ctx.publicUrl, 'GET', '/v2/nowhere', { origin: APP, authorization: `Bearer ${ctx.adminKey}` });
    assert.equal(missing.status, 404);
    assert.match(missing.headers['content-type']!, /^application\/problem\+json/);
    assertCors(missing, APP, '404');
    const key = await ctx.keyWith(['fleet:read', 'fleet:write']);
    const invalid = await call(ctx.publicUrl, 'POST', '/v2/fleet/vehicles', { origin: APP, authorization: `Bearer ${key}`, 'content-type': 'application/json' }, '{"vehicleId":7}');
    assert.equal(invalid.status, 400, invalid.body);
    assert.match(invalid.headers['content-type']!, /^application\/problem\+json/);
    assertCors(invalid, APP, '400');
    let limited: Answer | undefined;
    for (let i = 0; i < 10 && limited === undefined; i++) {
      const res = await call(ctx.publicUrl, 'GET', '/v2/fleet/vehicles', { origin: APP, authorization: `Bearer ${key}` });
      if (res.status === 429) limited = res;
    }
    assert.ok(limited !== undefined, 'the rate limit of 3 was reached');
    assertCors(limited, APP, '429');
    assert.ok(Number(limited.headers['retry-after']) >= 1);
  });

  test('an origin not listed gets no CORS header, and its preflight is not granted', async () => {
    const res = await call(ctx.publicUrl, 'GET', '/v2/fleet/vehicles', { origin: 'https://evil.example', authorization: `Bearer ${ctx.adminKey}` });
    assert.equal(res.status, 200);
    assertNoCors(res, 'GET from another origin');
    const preflight = await call(ctx.publicUrl, 'OPTIONS', '/v2/fleet/vehicles', { origin: 'https://evil.example', 'access-control-request-method': 'POST' });
    assert.notEqual(preflight.status, 204);
    assertNoCors(preflight, 'preflight from another origin');
  });

  test('OPTIONS without an Origin is no preflight: 405 with Allow, as without CORS', async () => {
    const res = await call(ctx.publicUrl, 'OPTIONS', '/v2/fleet/vehicles');
    assert.equal(res.status, 405, res.body);
    assert.equal(res.headers.allow, 'GET, HEAD, POST');
    assertNoCors(res, 'OPTIONS without Origin');
    const unknown = await call(ctx.publicUrl, 'OPTIONS', '/v2/nowhere');
    assert.equal(unknown.status, 404);
  });
});

describe('CORS with *', () => {
  let ctx: StreamApp;
  before(async () => {
    ctx = await createStreamApp({ env: { FLEET_CORS_ORIGINS: '*' } });
  });
  after(() => ctx.close());

  test('any origin may call; the answer says *', async () => {
    const preflight = await call(ctx.publicUrl, 'OPTIONS', '/v2/fleet/vehicles', { origin: 'https://anywhere.example', 'access-control-request-method': 'GET' });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['access-control-allow-origin'], '*');
    const res = await call(ctx.publicUrl, 'GET', '/v2/fleet/vehicles', { origin: 'https://anywhere.example' });
    assert.equal(res.status, 401);
    assertCors(res, '*', '401 with *');
  });
});

describe('CORS off (the default)', () => {
  let ctx: StreamApp;
  before(async () => {
    ctx = await createStreamApp();
  });
  after(() => ctx.close());

  test('no CORS header on any answer, and a preflight is refused as before (405)', async () => {
    const preflight = await call(ctx.publicUrl, 'OPTIONS', '/v2/fleet/vehicles', { origin: APP, 'access-control-request-method': 'GET' });
    assert.equal(preflight.status, 405);
    assertNoCors(preflight, 'preflight');
    const res = await call(ctx.publicUrl, 'GET', '/v2/fleet/vehicles', { origin: APP, authorization: `Bearer ${ctx.adminKey}` });
    assert.equal(res.status, 200);
    assertNoCors(res, 'GET');
    const error = await call(ctx.publicUrl, 'GET', '/v2/fleet/vehicles', { origin: APP });
    assert.equal(error.status, 401);
    assertNoCors(error, '401');
  });
});

describe('WebSocket origins', () => {
  let ctx: StreamApp;
  const clients: StreamClient[] = [];
  before(async () => {
    // The public URL names a host no client here uses: same-origin is judged by the Host the
    // request was sent to.
    ctx = await createStreamApp({ env: { FLEET_PUBLIC_URL: 'https://fleet.example.com', FLEET_CORS_ORIGINS: APP } });
    await ctx.registerVehicle('van-1');
  });
  after(async () => {
    await closeAll(clients);
    await ctx.close();
  });

  const port = () => new URL(ctx.wsUrl).port;

  test('a page of the host the socket is opened to attaches, through any name that reaches the service', async () => {
    for (const host of ['127.0.0.1', 'localhost', 'dashboard.fleet.test']) {
      const stream = await createStream(ctx, { events: ['location'] }, 'van-1');
      const url = new URL(stream.url as string);
      const target = `ws://${host}:${port()}${url.pathname}${url.search}`;
      // A made-up name resolves to the test's server, as a name in DNS or /etc/hosts would.
      const lookup: LookupFunction = (_name, options, callback) =>
        options.all ? (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
      const client = await attach(target, { origin: `http://${host}:${port()}`, ...(host === 'dashboard.fleet.test' ? { lookup } : {}) }, clients);
      assert.equal((await client.next()).type, 'connected', host);
    }
  });

  test('another host\'s page is refused; a CORS origin attaches', async () => {
    const stream = await createStream(ctx, { events: ['location'] }, 'van-1');
    const url = new URL(stream.url as string);
    const target = `ws://127.0.0.1:${port()}${url.pathname}${url.search}`;
    for (const origin of [`http://localhost:${port()}`, `http://127.0.0.1:${Number(port()) + 1}`, 'https://evil.example', 'null']) {
      const res = await refused(target, { origin }, clients);
      assert.equal(res.status, 403, origin);
      assert.equal(res.body.code, 'origin-not-allowed');
    }
    const client = await attach(target, { origin: APP }, clients);
    assert.equal((await client.next()).type, 'connected');
  });
});
