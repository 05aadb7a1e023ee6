// The browser dashboard as served: the page at `/`, the bundle esbuild makes of web/ and its
// libraries, the Content-Security-Policy, the client configuration, and no way to reach any file
// outside the fixed list of assets. The browser flows are in dashboard-e2e and dashboard-map.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { bundleOf, bundleStarted, dashboardPlugin, WEB_DIR } from '../src/dashboard/plugin.ts';
import { TRANSITIONS as SERVER_TRANSITIONS } from '../src/vehicles/transitions.ts';
import { VEHICLE_STATUSES, VEHICLE_TYPES } from '../src/vehicles/schema.ts';
import { STATUSES, TRANSITIONS as BROWSER_TRANSITIONS, TYPES } from '../web/transitions.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { tempDir } from './helpers/process.ts';

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
    assert.ok(refs.includes('/dashboard/main.js'), `no bundle among ${refs.join(', ')}`);
    for (const ref of refs) {
      const url = new URL(ref, 'http://fleet.test/');
      assert.equal(url.origin, 'http://fleet.test', `${ref} is not local`);
      if (url.hash !== '') continue;
      const asset = await get(url.pathname);
      assert.equal(asset.statusCode, 200, `${ref}: ${asset.statusCode}`);
    }
  });

  test('a strict Content-Security-Policy: self only, plus the tile origin for images and the ws form of the origin', async () => {
    for (const url of ['/', '/dashboard/main.js', '/dashboard/app.css', '/dashboard/layers.png']) {
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

  test('the client configuration carries the tile URL, and whether the request carried a session cookie', async () => {
    const res = await get('/dashboard/config.json');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(res.json(), { tileUrl: 'https://tiles.example.net/{z}/{x}/{y}.png', sessionCookie: false });
    // Whether there is one, not whether it is good: the page then asks GET /auth/session.
    const withCookie = await ctx.request('GET', '/dashboard/config.json', { key: null, headers: { cookie: 'fleet_session=anything' } });
    assert.deepEqual(withCookie.json(), { tileUrl: 'https://tiles.example.net/{z}/{x}/{y}.png', sessionCookie: true });
  });

  test('without tiles: empty tile URL in the configuration, images from self only', async () => {
    const bare = await createTestApp({ env: { FLEET_MAP_TILE_URL: '' } });
    try {
      const res = await bare.request('GET', '/dashboard/config.json', { key: null });
      assert.deepEqual(res.json(), { tileUrl: '', sessionCookie: false });
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

describe('the bundle', () => {
  test('one script holds every module and library, as plain JavaScript with nothing left to import; the worker too', async (t) => {
    const dir = tempDir(t, 'fleet-dashboard-');
    for (const name of ['main.js', 'cluster-worker.js']) {
      const script = await get(`/dashboard/${name}`);
      assert.equal(script.statusCode, 200, name);
      assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8', name);
      // Syntax-checked as an ES module by Node without running it.
      const file = path.join(dir, name.replace(/\.js$/, '.mjs'));
      writeFileSync(file, script.body);
      const check = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8' });
      assert.equal(check.status, 0, `${name} is not valid JavaScript:\n${check.stderr}`);
      assert.doesNotMatch(script.body, /\bimport\s*[{*\w][^;]*?\bfrom\s*["']|\bimport\s*\(\s*["']/, `${name} still imports a module`);
    }
    assert.ok((await get('/dashboard/cluster-worker.js')).body.includes('getClusterExpansionZoom'));
    const res = await get('/dashboard/main.js');
    // Leaflet, uPlot, Leaflet-Geoman and the map's worker are in it, with their licences beside it.
    for (const needle of ['leaflet-container', 'u-legend', 'pm:create', '/dashboard/cluster-worker.js']) assert.ok(res.body.includes(needle), needle);
    assert.match(res.body, /^\/\*! Fleet dashboard\. Third-party licences: \/dashboard\/licenses\.txt \*\//);
    const licenses = await get('/dashboard/licenses.txt');
    assert.equal(licenses.statusCode, 200);
    assert.match(String(licenses.headers['content-type']), /^text\/plain/);
    for (const name of ['leaflet', 'supercluster', 'kdbush', 'uplot', '@geoman-io/leaflet-geoman-free']) {
      assert.match(licenses.body, new RegExp(`^${name} \\d+\\.\\d+\\.\\d+\\n=+\\n\\S`, 'm'), name);
    }
    // Nothing inlined that the policy would refuse.
    assert.doesNotMatch(res.body, /data:image/);
  });

  test('the stylesheet bundles the libraries\' styles; every image it uses is served from here', async () => {
    const res = await get('/dashboard/app.css');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/css/);
    assert.ok(res.body.includes('.leaflet-container'), 'Leaflet');
    assert.ok(res.body.includes('.uplot'), 'uPlot');
    assert.ok(res.body.includes('.leaflet-pm-toolbar'), 'Leaflet-Geoman');
    const urls = [...res.body.matchAll(/url\(\s*["']?([^"')]+)["']?\s*\)/g)].map((m) => m[1]!).filter((u) => !u.startsWith('#'));
    assert.ok(urls.length >= 10, urls.join(', '));
    for (const url of urls) {
      assert.match(url, /^\/dashboard\/[\w.-]+\.(?:png|svg)$/, url);
      const image = await get(url);
      assert.equal(image.statusCode, 200, url);
      assert.match(String(image.headers['content-type']), /^image\/(?:png|svg\+xml)$/, url);
    }
  });

  test('Leaflet\'s blank tile comes from this origin', async () => {
    assert.ok((await get('/dashboard/main.js')).body.includes('/dashboard/empty.gif'));
    const gif = await get('/dashboard/empty.gif');
    assert.equal(gif.statusCode, 200);
    assert.equal(gif.headers['content-type'], 'image/gif');
    assert.equal(gif.rawPayload.subarray(0, 6).toString('latin1'), 'GIF89a');
  });

  test('built once per process and then served from memory, identical each time and for every app', async () => {
    assert.equal(bundleOf(WEB_DIR), bundleOf(WEB_DIR));
    const first = await get('/dashboard/main.js');
    const other = await createTestApp();
    try {
      assert.equal((await other.request('GET', '/dashboard/main.js', { key: null })).body, first.body);
    } finally {
      await other.close();
    }
    assert.equal((await get('/dashboard/main.js')).body, first.body);
  });

  test('a server that listens starts the build at once; a failed build answers 500 and is tried again', async (t) => {
    const dir = tempDir(t, 'fleet-dashboard-web-');
    writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>t</title>');
    writeFileSync(path.join(dir, 'app.css'), 'body { color: red; }');
    writeFileSync(path.join(dir, 'main.ts'), 'export const one: number = ;\n');
    const app = Fastify();
    t.after(() => app.close());
    await app.register(dashboardPlugin, { publicUrl: 'http://127.0.0.1', tileUrl: '', dir });
    assert.equal(bundleStarted(dir), false);
    await app.listen({ host: '127.0.0.1', port: 0 });
    assert.equal(bundleStarted(dir), true);
    const broken = await app.inject({ method: 'GET', url: '/dashboard/main.js' });
    assert.equal(broken.statusCode, 500);
    assert.doesNotMatch(broken.body, /export const one/);
    writeFileSync(path.join(dir, 'main.ts'), 'export const one: number = 1;\nconsole.log(one);\n');
    const fixed = await app.inject({ method: 'GET', url: '/dashboard/main.js' });
    assert.equal(fixed.statusCode, 200);
    assert.doesNotMatch(fixed.body, /: number/);
    assert.deepEqual([...(await bundleOf(dir)).keys()].sort(), ['app.css', 'empty.gif', 'licenses.txt', 'main.js']);
  });

  test('the icon has its type', async () => {
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
    for (const url of ['/dashboard/nope.ts', '/dashboard/main.ts', '/dashboard/api.ts', '/dashboard/', '/dashboard/index.html', '/dashboard/tsconfig.json', '/dashboard/out/main.js']) {
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
