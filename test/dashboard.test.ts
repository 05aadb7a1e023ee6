// The browser dashboard as served: the page at `/`, its TypeScript modules stripped to
// JavaScript, the Content-Security-Policy, the client configuration, and no way to reach any
// file outside the fixed list of web/ assets. The browser flow itself is in dashboard-e2e.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WEB_DIR } from '../src/dashboard/plugin.ts';
import { TRANSITIONS as SERVER_TRANSITIONS } from '../src/vehicles/transitions.ts';
import { VEHICLE_STATUSES, VEHICLE_TYPES } from '../src/vehicles/schema.ts';
import { STATUSES, TRANSITIONS as BROWSER_TRANSITIONS, TYPES } from '../web/transitions.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { tempDir } from './helpers/process.ts';

const MODULES = readdirSync(WEB_DIR).filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'));

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp({ env: { FLEET_PUBLIC_URL: 'https://fleet.example.com', FLEET_MAP_TILE_URL: 'https://tiles.example.net/{z}/{x}/{y}.png' } });
});
after(async () => {
  await ctx.close();
});

const get = (url: string) => ctx.request('GET', url, { key: null });

function directives(csp: string): Map<string, string[]> {
  return new Map(csp.split(';').map((part) => part.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));
}

describe('the page', () => {
  test('GET / serves index.html without a credential, loading only local assets', async () => {
    const res = await get('/');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    const refs = [...res.body.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(refs.includes('/dashboard/main.ts'), `no entry module among ${refs.join(', ')}`);
    for (const ref of refs) {
      const url = new URL(ref, 'http://fleet.test/');
      assert.equal(url.origin, 'http://fleet.test', `${ref} is not local`);
      if (url.hash !== '') continue;
      const asset = await get(url.pathname);
      assert.equal(asset.statusCode, 200, `${ref}: ${asset.statusCode}`);
    }
  });

  test('a strict Content-Security-Policy: self only, plus the tile origin for images and the ws form of the origin', async () => {
    for (const url of ['/', '/dashboard/main.ts', '/dashboard/app.css']) {
      const res = await get(url);
      const csp = directives(String(res.headers['content-security-policy']));
      assert.deepEqual(csp.get('default-src'), ["'none'"], url);
      assert.deepEqual(csp.get('script-src'), ["'self'"], url);
      assert.deepEqual(csp.get('style-src'), ["'self'"], url);
      assert.deepEqual(csp.get('img-src'), ["'self'", 'https://tiles.example.net'], url);
      assert.deepEqual(csp.get('connect-src'), ["'self'", 'wss://fleet.example.com'], url);
      assert.deepEqual(csp.get('frame-ancestors'), ["'none'"], url);
      assert.deepEqual(csp.get('object-src'), ["'none'"], url);
      assert.ok(![...csp.values()].flat().some((v) => v.includes('unsafe')), `${url}: an unsafe-* source`);
    }
  });

  test('the client configuration carries the tile URL', async () => {
    const res = await get('/dashboard/config.json');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(res.json(), { tileUrl: 'https://tiles.example.net/{z}/{x}/{y}.png' });
  });

  test('without tiles: empty tile URL in the configuration, images from self only', async () => {
    const bare = await createTestApp({ env: { FLEET_MAP_TILE_URL: '' } });
    try {
      const res = await bare.request('GET', '/dashboard/config.json', { key: null });
      assert.deepEqual(res.json(), { tileUrl: '' });
      assert.deepEqual(directives(String(res.headers['content-security-policy'])).get('img-src'), ["'self'"]);
      assert.deepEqual(directives(String(res.headers['content-security-policy'])).get('connect-src'), ["'self'", 'ws://localhost:8080']);
    } finally {
      await bare.close();
    }
  });

  test('dashboard routes are public and left out of the OpenAPI document', async () => {
    const routes = ctx.app.routeTable.filter((r) => r.url === '/' || r.url.startsWith('/dashboard/'));
    assert.ok(routes.length >= 3);
    for (const route of routes) assert.ok(route.public && route.scope === undefined, `${route.method} ${route.url}`);
    const doc = (await get('/openapi.json')).json<{ paths: Record<string, unknown> }>();
    assert.deepEqual(Object.keys(doc.paths).filter((p) => p === '/' || p.startsWith('/dashboard')), []);
  });
});

describe('modules', () => {
  test('every browser module is served as JavaScript with its types stripped', async (t) => {
    assert.ok(MODULES.length >= 5, `only ${MODULES.join(', ')}`);
    const dir = tempDir(t, 'fleet-dashboard-');
    for (const name of MODULES) {
      const res = await get(`/dashboard/${name}`);
      assert.equal(res.statusCode, 200, name);
      assert.equal(res.headers['content-type'], 'text/javascript; charset=utf-8', name);
      const source = readFileSync(path.join(WEB_DIR, name), 'utf8');
      assert.notEqual(res.body, source, `${name} was served as it is`);
      assert.doesNotMatch(res.body, /^\s*import type\b|^\s*export (?:interface|type) /m, `${name} still holds types`);
      // Strip mode blanks types out in place: line numbers match the source (no source maps needed).
      assert.equal(res.body.split('\n').length, source.split('\n').length, `${name}: lines moved`);
      // Syntax-checked as an ES module by Node without running it.
      const file = path.join(dir, name.replace(/\.ts$/, '.mjs'));
      writeFileSync(file, res.body);
      const check = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8' });
      assert.equal(check.status, 0, `${name} is not valid JavaScript:\n${check.stderr}`);
      // Every module it imports is served too.
      for (const [, spec] of res.body.matchAll(/\bfrom\s+'(\.\/[^']+)'/g)) {
        assert.ok(MODULES.includes(spec!.slice(2)), `${name} imports ${spec}, which is not served`);
      }
    }
  });

  test('a module is stripped once and then served from memory, identical each time', async () => {
    const first = await get('/dashboard/api.ts');
    const second = await get('/dashboard/api.ts');
    assert.equal(first.body, second.body);
    assert.equal(first.statusCode, 200);
  });

  test('serving modules emits no experimental warning', async () => {
    const fresh = await createTestApp();
    const warnings: string[] = [];
    const listen = (warning: Error) => warnings.push(warning.message);
    process.on('warning', listen);
    try {
      assert.equal((await fresh.request('GET', '/dashboard/dom.ts', { key: null })).statusCode, 200);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', listen);
      await fresh.close();
    }
    assert.deepEqual(warnings.filter((w) => w.includes('stripTypeScriptTypes')), []);
  });

  test('the stylesheet and icon have their types', async () => {
    assert.match(String((await get('/dashboard/app.css')).headers['content-type']), /^text\/css/);
    assert.match(String((await get('/dashboard/icon.svg')).headers['content-type']), /^image\/svg\+xml/);
  });
});

describe('nothing else', () => {
  const assertNotFound = (res: Awaited<ReturnType<typeof get>>, url: string) => {
    assert.equal(res.statusCode, 404, `${url}: ${res.statusCode}`);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, url);
    const problem = res.json<{ code: string; status: number; title: string }>();
    assert.equal(problem.code, 'route-not-found', url);
    assert.equal(problem.status, 404);
    assert.doesNotMatch(res.body, /"dependencies"|compilerOptions|root:|import /, `${url} leaked a file`);
  };

  test('an unknown asset is a 404 problem', async () => {
    for (const url of ['/dashboard/nope.ts', '/dashboard/main.js', '/dashboard/', '/dashboard/index.html', '/dashboard/tsconfig.json']) {
      assertNotFound(await get(url), url);
    }
  });

  test('path traversal reaches nothing', async () => {
    const attempts = [
      '/dashboard/../package.json',
      '/dashboard/..%2fpackage.json',
      '/dashboard/%2e%2e/%2e%2e/package.json',
      '/dashboard/%2e%2e%2f%2e%2e%2fpackage.json',
      '/dashboard/..%5c..%5cpackage.json',
      '/dashboard/..\\..\\package.json',
      '/dashboard/%2fetc%2fpasswd',
      '/dashboard//etc/passwd',
      '/dashboard/main.ts%00.css',
      '/dashboard/..%252f..%252fpackage.json',
      '/dashboard/../src/app.ts',
      '/dashboard/../../src/config.ts',
    ];
    for (const url of attempts) assertNotFound(await get(url), url);
  });
});

test('the browser\'s transition table is the server\'s', () => {
  assert.deepEqual(BROWSER_TRANSITIONS, SERVER_TRANSITIONS);
  assert.deepEqual([...STATUSES], [...VEHICLE_STATUSES]);
  assert.deepEqual([...TYPES], [...VEHICLE_TYPES]);
});
