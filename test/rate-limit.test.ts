// Rate limits (docs/API.md "Rate limits") through the whole HTTP stack: per-credential budgets with the IETF
// draft headers on every counted response, 429 before the handler runs, and the per-address
// budget of `rateLimit: 'ip'` routes. Time is a clock the tests move, so nothing here sleeps.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { authPlugin } from '../src/http/auth.ts';
import { problemsPlugin } from '../src/schema/problems.ts';
import { addressKey, rateLimitPlugin } from '../src/http/rate-limit.ts';
import { createTestApp, manualClock, testConfig, type TestApp } from './helpers/app.ts';


type Headers = LightMyRequestResponse['headers'] | Record<string, string | undefined>;

/** Parses `"name";r=1;t=2, ...` into { name: { r: 1, t: 2 } }, checking the syntax as it goes. */
function parseList(value: unknown): Record<string, Record<string, number>> {
  assert.equal(typeof value, 'string', `expected a header, got ${String(value)}`);
  const out: Record<string, Record<string, number>> = {};
  for (const member of (value as string).split(/,\s*/)) {
    const match = /^"([a-z]+)"((?:;[a-z]+=\d+)+)$/.exec(member);
    assert.ok(match, `not a structured-field list member: ${member}`);
    out[match[1]!] = Object.fromEntries(match[2]!.slice(1).split(';').map((p) => [p.split('=')[0], Number(p.split('=')[1])]));
  }
  return out;
}

function assertNoRateLimitHeaders(headers: Headers, what: string) {
  assert.equal(headers['ratelimit'], undefined, `${what}: RateLimit`);
  assert.equal(headers['ratelimit-policy'], undefined, `${what}: RateLimit-Policy`);
}

function assertRateLimited(res: LightMyRequestResponse, retryAfter: number) {
  assert.equal(res.statusCode, 429, res.body);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json();
  assert.equal(body.code, 'rate-limited');
  assert.equal(body.status, 429);
  assert.equal(body.type, 'urn:fleet:problem:rate-limited');
  assert.equal(res.headers['retry-after'], String(retryAfter));
  return body;
}

describe('per-credential limit (5 per 60 s)', () => {
  const clock = manualClock();
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ clock, env: { FLEET_RATE_LIMIT_REQUESTS: '5', FLEET_RATE_LIMIT_WINDOW_SECONDS: '60' } });
  });
  after(() => ctx.close());

  const readWrite = () => ctx.keyWith(['fleet:read', 'fleet:write']);

  test('every authenticated response carries the headers, 200, 404 and 400 alike, counting down by one', async () => {
    const key = await readWrite();
    const responses = [
      await ctx.request('GET', '/v2/fleet/vehicles', { key }),
      await ctx.request('GET', '/v2/fleet/vehicles/no-such-vehicle', { key }),
      await ctx.request('GET', '/v2/fleet/vehicles', { key, query: { limit: '0' } }),
      await ctx.request('POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'rl-1', type: 'spaceship' } }),
      await ctx.request('GET', '/api/v1/fleet', { key }),
    ];
    assert.deepEqual(responses.map((r) => r.statusCode), [200, 404, 400, 400, 200]);
    responses.forEach((res, i) => {
      assert.equal(res.headers['ratelimit-policy'], '"default";q=5;w=60');
      // GCRA: each request owes 60/5 = 12 s; t is when the whole quota is back.
      assert.equal(res.headers['ratelimit'], `"default";r=${4 - i};t=${12 * (i + 1)}`);
      assert.deepEqual(parseList(res.headers['ratelimit']), { default: { r: 4 - i, t: 12 * (i + 1) } });
    });
  });

  test('once spent: 429 rate-limited with Retry-After and the headers, and the refused request did nothing', async () => {
    const key = await readWrite();
    for (let i = 0; i < 5; i++) assert.equal((await ctx.request('GET', '/v2/fleet/vehicles', { key })).statusCode, 200);
    const refused = await ctx.request('POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'rl-refused', type: 'van' } });
    const body = assertRateLimited(refused, 12);
    assert.match(body.detail, /5 requests per 60 s/);
    assert.equal(refused.headers['ratelimit-policy'], '"default";q=5;w=60');
    assert.equal(refused.headers['ratelimit'], '"default";r=0;t=60');
    // The admin key has its own budget; it shows the vehicle was never registered.
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/rl-refused')).statusCode, 404);
    // A refusal costs nothing: after 12 s exactly one request is allowed again.
    clock.advance(12_000);
    const again = await ctx.request('POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'rl-refused', type: 'van' } });
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['ratelimit'], '"default";r=0;t=60');
    assertRateLimited(await ctx.request('GET', '/v2/fleet/vehicles', { key }), 12);
  });

  test('two keys of the same organization keep separate budgets', async () => {
    const first = await readWrite();
    const second = await readWrite();
    for (let i = 0; i < 5; i++) await ctx.request('GET', '/v2/fleet/vehicles', { key: first });
    assertRateLimited(await ctx.request('GET', '/v2/fleet/vehicles', { key: first }), 12);
    const other = await ctx.request('GET', '/v2/fleet/vehicles', { key: second });
    assert.equal(other.statusCode, 200);
    assert.equal(other.headers['ratelimit'], '"default";r=4;t=12');
  });

  test('the budget refills: one request per 12 s, the whole quota after the window', async () => {
    const key = await readWrite();
    for (let i = 0; i < 5; i++) await ctx.request('GET', '/v2/fleet/vehicles', { key });
    clock.advance(11_999);
    assertRateLimited(await ctx.request('GET', '/v2/fleet/vehicles', { key }), 1);
    clock.advance(60_001);
    for (let i = 0; i < 5; i++) {
      const res = await ctx.request('GET', '/v2/fleet/vehicles', { key });
      assert.equal(res.statusCode, 200);
      assert.equal(parseList(res.headers['ratelimit']).default!.r, 4 - i);
    }
    assertRateLimited(await ctx.request('GET', '/v2/fleet/vehicles', { key }), 12);
  });

  test('concurrent requests: exactly the quota gets through', async () => {
    const key = await readWrite();
    const all = await Promise.all(Array.from({ length: 12 }, () => ctx.request('GET', '/v2/fleet/vehicles', { key })));
    assert.deepEqual(all.map((r) => r.statusCode).sort(), [...Array<number>(5).fill(200), ...Array<number>(7).fill(429)]);
  });

  test('public routes, failed authentication and unknown paths carry no headers and cost nothing', async () => {
    const key = await ctx.keyWith(['fleet:read']);
    for (const url of ['/healthz', '/openapi.json']) {
      const res = await ctx.request('GET', url, { key });
      assert.equal(res.statusCode, 200, url);
      assertNoRateLimitHeaders(res.headers, url);
    }
    for (let i = 0; i < 6; i++) {
      const none = await ctx.request('GET', '/v2/fleet/vehicles', { key: null });
      assert.equal(none.statusCode, 401);
      assertNoRateLimitHeaders(none.headers, 'no credential');
      const wrong = await ctx.request('GET', '/v2/fleet/vehicles', { key: `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}` });
      assert.equal(wrong.statusCode, 401);
      assertNoRateLimitHeaders(wrong.headers, 'invalid credential');
      const unknown = await ctx.request('GET', '/v2/nowhere', { key });
      assert.equal(unknown.statusCode, 404);
      assertNoRateLimitHeaders(unknown.headers, 'unknown path');
    }
    const counted = await ctx.request('GET', '/v2/fleet/vehicles', { key });
    assert.equal(counted.headers['ratelimit'], '"default";r=4;t=12', 'none of the above spent the key\'s budget');
  });

  test('a request refused for its scope (403) is counted against its credential, and a spent budget answers 429 first', async () => {
    const key = await ctx.keyWith(['fleet:read']);
    const forbidden = () => ctx.request('POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'x', type: 'van' } });
    for (let i = 0; i < 5; i++) {
      const res = await forbidden();
      assert.equal(res.statusCode, 403);
      assert.equal(res.json<{ code: string }>().code, 'insufficient-scope');
      assert.equal(res.headers['ratelimit'], `"default";r=${4 - i};t=${12 * (i + 1)}`);
    }
    assertRateLimited(await forbidden(), 12);
    assertRateLimited(await ctx.request('GET', '/v2/fleet/vehicles', { key }), 12);
  });

  test('over a real socket', async () => {
    const key = await readWrite();
    const base = await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    const get = () => fetch(`${base}/v2/fleet/vehicles`, { headers: { authorization: `Bearer ${key}` } });
    for (let i = 0; i < 5; i++) {
      const res = await get();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit-policy'), '"default";q=5;w=60');
      assert.equal(res.headers.get('ratelimit'), `"default";r=${4 - i};t=${12 * (i + 1)}`);
      await res.arrayBuffer();
    }
    const refused = await get();
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '12');
    assert.equal(refused.headers.get('ratelimit'), '"default";r=0;t=60');
    assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(((await refused.json()) as { code: string }).code, 'rate-limited');
  });
});

test('FLEET_RATE_LIMIT_REQUESTS=0 turns the per-credential limit and its headers off', async () => {
  const ctx = await createTestApp({ env: { FLEET_RATE_LIMIT_REQUESTS: '0' } });
  try {
    for (let i = 0; i < 30; i++) {
      const res = await ctx.request('GET', '/v2/fleet/vehicles');
      assert.equal(res.statusCode, 200);
      assertNoRateLimitHeaders(res.headers, `request ${i}`);
    }
  } finally {
    await ctx.close();
  }
});

describe("per-address limit on `rateLimit: 'ip'` routes (3 per 60 s)", () => {
  // The OAuth endpoints are not ours to build here: a minimal app with the same plugins and
  // stand-in routes flagged the same way.
  const clock = manualClock();
  let ctx: TestApp;
  let app: FastifyInstance;
  let handled = 0;
  before(async () => {
    ctx = await createTestApp();
    const config = testConfig({ FLEET_RATE_LIMIT_REQUESTS: '5', FLEET_TOKEN_RATE_LIMIT_REQUESTS: '3' });
    app = Fastify();
    await app.register(problemsPlugin);
    await app.register(authPlugin, { auth: ctx.auth });
    await app.register(rateLimitPlugin, { config: config.rateLimit, clock });
    app.post('/token', { config: { public: true, rateLimit: 'ip' } }, async () => {
      handled++;
      return { ok: true };
    });
    app.get('/open', { config: { public: true } }, async () => ({ ok: true }));
    app.get('/both', { config: { scope: 'fleet:read', rateLimit: 'ip' } }, async () => ({ ok: true }));
    await app.ready();
  });
  after(async () => {
    await app.close();
    await ctx.close();
  });

  const post = (remoteAddress: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: '/token', remoteAddress, headers });

  test('counts per client address, with the "ip" policy in the headers; 429 before the handler runs', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await post('198.51.100.1');
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['ratelimit-policy'], '"ip";q=3;w=60');
      assert.equal(res.headers['ratelimit'], `"ip";r=${2 - i};t=${20 * (i + 1)}`);
    }
    const before = handled;
    const refused = await post('198.51.100.1');
    const body = assertRateLimited(refused, 20);
    assert.match(body.detail, /client address/);
    assert.equal(refused.headers['ratelimit'], '"ip";r=0;t=60');
    assert.equal(handled, before, 'the handler did not run');
    assert.equal((await post('198.51.100.2')).statusCode, 200, 'another address has its own budget');
    clock.advance(20_000);
    assert.equal((await post('198.51.100.1')).statusCode, 200, 'refilled');
  });

  test('X-Forwarded-For is not trusted: the socket address is what counts', async () => {
    for (let i = 0; i < 3; i++) await post('198.51.100.3', { 'x-forwarded-for': `203.0.113.${i}` });
    assertRateLimited(await post('198.51.100.3', { 'x-forwarded-for': '203.0.113.99' }), 20);
  });

  test('IPv6 addresses count by /64; IPv4-mapped addresses as IPv4', async () => {
    await post('2001:db8:1:2::1');
    await post('2001:db8:1:2:ffff:ffff:ffff:ffff');
    await post('2001:db8:1:2::abcd');
    assertRateLimited(await post('2001:db8:1:2::2'), 20);
    assert.equal((await post('2001:db8:1:3::1')).statusCode, 200, 'the next /64 is another client');
    for (let i = 0; i < 3; i++) await post('198.51.100.4');
    assertRateLimited(await post('::ffff:198.51.100.4'), 20);
  });

  test('routes without the flag are not limited per address', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await app.inject({ method: 'GET', url: '/open', remoteAddress: '198.51.100.5' });
      assert.equal(res.statusCode, 200);
      assertNoRateLimitHeaders(res.headers, '/open');
    }
  });

  test('an authenticated route with the flag has both budgets, and both policies in the headers', async () => {
    const key = await ctx.keyWith(['fleet:read']);
    const res = await app.inject({ method: 'GET', url: '/both', remoteAddress: '198.51.100.6', headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(parseList(res.headers['ratelimit-policy']), { ip: { q: 3, w: 60 }, default: { q: 5, w: 60 } });
    assert.deepEqual(parseList(res.headers['ratelimit']), { ip: { r: 2, t: 20 }, default: { r: 4, t: 12 } });
  });
});

test('addressKey', () => {
  const cases: Array<[string | undefined, string]> = [
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:192.0.2.1', '192.0.2.1'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:0db8:0000:0001:aaaa:bbbb:cccc:dddd', '2001:db8:0:1::/64'],
    ['2001:db8:0:1::', '2001:db8:0:1::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
    [undefined, 'unknown'],
  ];
  for (const [address, key] of cases) assert.equal(addressKey(address), key, String(address));
});
