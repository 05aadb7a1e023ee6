// Headers that tell browsers what not to do (docs/SECURITY.md): X-Content-Type-Options: nosniff
// on every response, and the interactive docs' Content-Security-Policy, as tight as the
// dashboard's where swagger-ui allows it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(async () => {
  await ctx.close();
});

/** A CSP header as a map of directive to its sources. */
function directives(header: unknown): Map<string, string[]> {
  assert.equal(typeof header, 'string', 'a Content-Security-Policy header');
  const out = new Map<string, string[]>();
  for (const part of (header as string).split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name !== undefined && name !== '') out.set(name, sources);
  }
  return out;
}

describe('X-Content-Type-Options: nosniff', () => {
  test('on every route of the table, with and without a credential, and on 404, 405 and framework errors', async () => {
    const concrete = (url: string) => url.replaceAll(/:[A-Za-z]+/g, 'probe-1').replace(/\*$/, 'index.css');
    const responses = [];
    for (const route of ctx.app.routeTable) {
      const url = concrete(route.url);
      responses.push([`${route.method} ${url} (no credential)`, await ctx.request(route.method, url, { key: null })] as const);
      if (route.method === 'GET') responses.push([`GET ${url}`, await ctx.request('GET', url)] as const);
    }
    responses.push(['404', await ctx.request('GET', '/no/such/path')] as const);
    responses.push(['405', await ctx.request('PATCH', '/v2/fleet/vehicles')] as const);
    responses.push(['bad URL', await ctx.request('GET', '/v2/fleet/vehicles/%zz')] as const);
    for (const [label, res] of responses) {
      assert.equal(res.headers['x-content-type-options'], 'nosniff', `${label}: ${res.statusCode}`);
    }
    assert.ok(responses.length > 40, `walked ${responses.length} responses`);
  });
});

const SWAGGER_STYLE_HASH = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='";

describe('the Content-Security-Policy of /docs', () => {
  for (const path of ['/docs', '/docs/', '/docs/static/index.html', '/docs/static/swagger-initializer.js', '/docs/json']) {
    test(`${path}: nothing from elsewhere, no inline script or style, no framing`, async () => {
      const res = await ctx.request('GET', path, { key: null });
      assert.ok(res.statusCode < 400, `${path}: ${res.statusCode}`);
      const csp = directives(res.headers['content-security-policy']);
      assert.deepEqual(csp.get('default-src'), ["'none'"]);
      assert.deepEqual(csp.get('script-src'), ["'self'"]);
      // Its files, and the one style swagger-ui's script applies, by its hash.
      assert.deepEqual(csp.get('style-src'), ["'self'", SWAGGER_STYLE_HASH]);
      assert.deepEqual(csp.get('connect-src'), ["'self'"]);
      assert.deepEqual(csp.get('frame-ancestors'), ["'none'"]);
      assert.deepEqual(csp.get('object-src'), ["'none'"]);
      assert.deepEqual(csp.get('base-uri'), ["'none'"]);
      assert.deepEqual(csp.get('form-action'), ["'none'"]);
      for (const [name, sources] of csp) {
        for (const source of sources) {
          const allowed = ["'self'", "'none'", 'data:', ...(name === 'style-src' ? [SWAGGER_STYLE_HASH] : [])];
          assert.ok(allowed.includes(source), `${name} allows only this origin (and data: images): found ${source}`);
        }
      }
      assert.ok(!csp.has('upgrade-insecure-requests'), 'the page works where Fleet is served over plain HTTP');
    });
  }

  test('everything the page loads is on this origin and served', async () => {
    const page = await ctx.request('GET', '/docs/', { key: null });
    assert.equal(page.statusCode, 200);
    const references = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(references.length >= 4, `found ${references.join(', ')}`);
    for (const reference of references) {
      assert.doesNotMatch(reference, /^(https?:)?\/\//, `${reference} is on this origin`);
      const url = new URL(reference, 'http://fleet/docs/').pathname;
      const res = await ctx.request('GET', url, { key: null });
      assert.equal(res.statusCode, 200, `${url}`);
    }
    assert.doesNotMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    assert.doesNotMatch(page.body, /<style|\sstyle=/, 'no inline style');
  });
});
