// The OpenAPI document (docs/API.md "Versioning") describes exactly what the server serves, with the
// security each route really checks; the interactive docs work without any network.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { RouteEntry } from '../src/app.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

interface Response {
  $ref?: string;
  description?: string;
  content?: Record<string, { schema?: { $ref?: string } }>;
}
interface Operation {
  operationId?: string;
  deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, Response>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components?: {
    securitySchemes?: Record<string, unknown>;
    responses?: Record<string, Response>;
    schemas?: Record<string, { properties?: Record<string, unknown> }>;
  };
}

type ApiDocument = Exclude<Parameters<typeof SwaggerParser.validate>[1], string>;

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

let ctx: TestApp;
let doc: Document;
let raw: unknown;

before(async () => {
  ctx = await createTestApp();
  const res = await ctx.request('GET', '/openapi.json', { key: null });
  assert.equal(res.statusCode, 200, res.body.slice(0, 300));
  raw = res.json();
  doc = res.json<Document>();
});
after(async () => {
  await ctx.close();
});

const isDocsAsset = (url: string) => url === '/docs' || url.startsWith('/docs/');
/** The browser dashboard's pages and scripts: not API operations, so not in the document. */
const isDashboard = (url: string) => url === '/' || url.startsWith('/dashboard/');
const toOpenApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

/** Every (method, path) served, as the document should name it. */
function servedOperations(): Map<string, RouteEntry> {
  const out = new Map<string, RouteEntry>();
  for (const route of ctx.app.routeTable) {
    if (route.method === 'HEAD' || isDocsAsset(route.url) || isDashboard(route.url)) continue;
    out.set(`${route.method} ${toOpenApiPath(route.url)}`, route);
  }
  return out;
}

/** A response, its `$ref` to `components.responses` followed. */
function resolved(response: Response): Response {
  if (response.$ref === undefined) return response;
  const name = response.$ref.replace('#/components/responses/', '');
  const target = doc.components?.responses?.[name];
  assert.ok(target !== undefined, `${response.$ref} is not in components.responses`);
  return target;
}

function documentedOperations(): Array<{ key: string; path: string; method: string; op: Operation }> {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!HTTP_METHODS.has(method)) continue;
      out.push({ key: `${method.toUpperCase()} ${path}`, path, method, op });
    }
  }
  return out;
}

test('GET /openapi.json without a credential is a valid OpenAPI 3.1 document', async () => {
  assert.equal(doc.openapi, '3.1.0');
  await assert.doesNotReject(SwaggerParser.validate(structuredClone(raw) as ApiDocument), 'swagger-parser validate()');
  // The validator is really checking: the same document with a broken response is refused.
  const broken = structuredClone(raw) as Document;
  delete (broken.paths['/healthz']!.get!.responses!['200'] as { description?: string }).description;
  await assert.rejects(SwaggerParser.validate(broken as unknown as ApiDocument));
});

test('the document names exactly the routes the server serves', () => {
  const served = new Set(servedOperations().keys());
  const documented = new Set(documentedOperations().map((o) => o.key));
  assert.ok(served.size >= 14, `only ${served.size} served operations`);
  const undocumented = [...served].filter((k) => !documented.has(k)).sort();
  const unserved = [...documented].filter((k) => !served.has(k)).sort();
  assert.deepEqual(
    { undocumented, unserved },
    { undocumented: [], unserved: [] },
    `served but not documented: ${undocumented.join(', ') || 'none'}; documented but not served: ${unserved.join(', ') || 'none'}`,
  );
});

test('every operation has a unique operationId and a 2xx response (a 302 for the single sign-on redirects)', () => {
  const ops = documentedOperations();
  assert.ok(ops.length > 0);
  const seen = new Map<string, string>();
  for (const { key, path, op } of ops) {
    assert.equal(typeof op.operationId, 'string', `${key}: no operationId`);
    assert.ok(op.operationId!.length > 0, `${key}: empty operationId`);
    assert.ok(!seen.has(op.operationId!), `${key}: operationId ${op.operationId!} also used by ${seen.get(op.operationId!)}`);
    seen.set(op.operationId!, key);
    const statuses = Object.keys(op.responses ?? {});
    // The browser's way through single sign-on answers redirects only.
    const redirect = path.startsWith('/auth/sso/') && statuses.includes('302');
    assert.ok(redirect || statuses.some((s) => /^2(\d\d|XX)$/.test(s)), `${key}: no 2xx response among ${statuses.join(', ')}`);
  }
});

test('security requirements name exactly the scope each route checks', () => {
  const served = servedOperations();
  const schemes = doc.components?.securitySchemes ?? {};
  for (const { key, op } of documentedOperations()) {
    const route = served.get(key);
    assert.ok(route, `${key} is not served`);
    if (route.public) {
      assert.deepEqual(op.security, [], `${key} is public: security must be []`);
      continue;
    }
    if (route.session) {
      assert.deepEqual(op.security, [{ session: [] }], `${key} takes only the session cookie`);
      continue;
    }
    assert.ok(route.scope !== undefined, `${key}: the route table gives it no scope`);
    assert.ok(Array.isArray(op.security) && op.security.length > 0, `${key}: no security requirement`);
    for (const requirement of op.security) {
      const names = Object.keys(requirement);
      assert.ok(names.length > 0, `${key}: empty security requirement (would make it anonymous)`);
      for (const name of names) {
        assert.ok(name in schemes, `${key}: security scheme ${name} is not in components.securitySchemes`);
        // Scopes belong to the OAuth scheme; the bearer and ticket schemes take none.
        assert.deepEqual(requirement[name], name === 'oauth2' ? [route.scope] : [], `${key}: ${name} scopes`);
      }
    }
    assert.ok(op.security.some((requirement) => 'oauth2' in requirement), `${key}: no oauth2 requirement naming its scope`);
    const statuses = Object.keys(op.responses ?? {});
    for (const status of ['401', '403']) {
      assert.ok(statuses.includes(status), `${key}: a protected operation must document ${status}`);
    }
  }
});

test('every /api/v1 operation is deprecated, every /v2 one is not', () => {
  const ops = documentedOperations();
  const v1 = ops.filter((o) => o.path.startsWith('/api/v1/'));
  assert.ok(v1.length >= 4, `only ${v1.length} /api/v1 operations`);
  for (const { key, op } of v1) assert.equal(op.deprecated, true, `${key} must be deprecated`);
  for (const { key, op } of ops.filter((o) => o.path.startsWith('/v2/'))) {
    assert.notEqual(op.deprecated, true, `${key} is current, not deprecated`);
  }
});

/** RFC 6749 fixes the error shape of the OAuth endpoints: JSON `{error, error_description}`. */
const OAUTH_ENDPOINTS = new Set(['/oauth/token', '/oauth/revoke', '/oauth/introspect']);

test('every 4xx and 5xx response is documented as application/problem+json', () => {
  let errors = 0;
  for (const { key, path, op } of documentedOperations()) {
    for (const [status, given] of Object.entries(op.responses ?? {})) {
      if (!/^[45]/.test(status)) continue;
      errors++;
      const response = resolved(given);
      if (OAUTH_ENDPOINTS.has(path) && (status === '400' || status === '401')) {
        const ref = response.content?.['application/json']?.schema?.$ref;
        assert.equal(ref, '#/components/schemas/OAuthError', `${key} ${status}: an OAuth error`);
        assert.ok(doc.components?.schemas?.OAuthError?.properties?.error !== undefined, 'OAuthError has `error`');
        continue;
      }
      assert.ok(
        response.content !== undefined && 'application/problem+json' in response.content,
        `${key} ${status}: content types ${Object.keys(response.content ?? {}).join(', ') || 'none'}`,
      );
      // One problem schema, named once and referenced by every error response.
      assert.equal(response.content['application/problem+json'].schema?.$ref, '#/components/schemas/Problem', `${key} ${status}: the Problem schema`);
    }
    if (path.includes('{id}')) {
      assert.ok(Object.keys(op.responses ?? {}).includes('404'), `${key}: an operation on one vehicle must document 404`);
    }
  }
  assert.ok(errors > 0, 'no error responses documented at all');
});

test('/docs serves the interactive docs and their assets locally', async () => {
  for (const url of ['/docs', '/docs/']) {
    const page = await ctx.request('GET', url, { key: null });
    assert.equal(page.statusCode, 200, `GET ${url}: ${page.statusCode}`);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const refs = [...page.body.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(refs.length > 0, `GET ${url}: no scripts or stylesheets referenced`);
    const base = new URL(url, 'http://fleet.test');
    const assets = refs.map((ref) => new URL(ref, base));
    const external = assets.filter((a) => a.origin !== base.origin).map(String);
    assert.deepEqual(external, [], `GET ${url} loads from the network`);
    const scripts = assets.filter((a) => a.pathname.endsWith('.js') || a.pathname.endsWith('.css'));
    assert.ok(scripts.some((a) => a.pathname.startsWith('/docs/static/')), `GET ${url}: no asset under /docs/static`);
    for (const asset of scripts) {
      const res = await ctx.request('GET', asset.pathname, { key: null });
      assert.equal(res.statusCode, 200, `GET ${url} references ${asset.pathname}, which answers ${res.statusCode}`);
      assert.ok(res.body.length > 0, `${asset.pathname} is empty`);
    }
  }
});
