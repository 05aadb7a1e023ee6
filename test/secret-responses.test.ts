// Responses that carry a secret are never cached (docs/ARCHITECTURE.md "Responses that carry a
// secret"): every route flagged `config.secret` answers with `Cache-Control: no-store`, errors
// included, and the routes that hand out secrets are flagged.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(async () => {
  await ctx.close();
});

function assertNoStore(res: LightMyRequestResponse, label: string) {
  assert.equal(res.headers['cache-control'], 'no-store', `${label}: ${res.statusCode} ${res.body.slice(0, 200)}`);
  assert.equal(res.headers.pragma, 'no-cache', label);
}

describe('routes that hand out a secret', () => {
  test('are flagged in the route table', () => {
    const flagged = new Set(ctx.app.routeTable.filter((route) => route.secret).map((route) => `${route.method} ${route.url}`));
    for (const route of ['POST /v2/api-keys', 'POST /v2/organizations', 'POST /v2/oauth-clients', 'POST /oauth/token']) {
      assert.ok(flagged.has(route), `${route} is flagged secret (flagged: ${[...flagged].join(', ')})`);
    }
  });

  test('a new API key: no-store', async () => {
    const res = await ctx.request('POST', '/v2/api-keys', { body: { name: 'cached?', scopes: ['fleet:read'] } });
    assert.equal(res.statusCode, 201);
    assert.match(res.json().key, /^fleet_/);
    assertNoStore(res, 'POST /v2/api-keys');
  });

  test('a new organization with its first admin key: no-store', async () => {
    const res = await ctx.request('POST', '/v2/organizations', { body: { name: 'Cached Org' } });
    assert.equal(res.statusCode, 201);
    assert.match(res.json().adminKey.key, /^fleet_/);
    assertNoStore(res, 'POST /v2/organizations');
  });

  test('a new OAuth client with its secret, and a token issued to it: no-store', async () => {
    const res = await ctx.request('POST', '/v2/oauth-clients', { body: { name: 'cached client', scopes: ['fleet:read'] } });
    assert.equal(res.statusCode, 201, res.body);
    assertNoStore(res, 'POST /v2/oauth-clients');
    const { id, clientSecret } = res.json<{ id: string; clientSecret: string }>();
    const token = await ctx.app.inject({
      method: 'POST', url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${id}:${clientSecret}`).toString('base64')}` },
      payload: 'grant_type=client_credentials',
    });
    assert.equal(token.statusCode, 200, token.body);
    assertNoStore(token, 'POST /oauth/token');
  });

  test('their errors too', async () => {
    const res = await ctx.request('POST', '/v2/api-keys', { body: { name: 'bad', scopes: ['no-such-scope'] } });
    assert.equal(res.statusCode, 400);
    assertNoStore(res, 'a refused POST /v2/api-keys');
  });
});

describe('every flagged route', () => {
  test('answers no-store, even to a request without a credential', async () => {
    const flagged = ctx.app.routeTable.filter((route) => route.secret);
    assert.ok(flagged.length >= 4);
    for (const route of flagged) {
      const res = await ctx.app.inject({ method: route.method as 'POST', url: route.url.replaceAll(/:[A-Za-z]+/g, 'x') });
      assertNoStore(res, `${route.method} ${route.url}`);
    }
  });

  test('routes that carry no secret are left to the usual caching rules', async () => {
    const res = await ctx.request('GET', '/v2/api-keys');
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['cache-control'], undefined);
  });
});
