// The browser dashboard: a single-page app at `/` written as TypeScript modules in web/, with
// Leaflet (map), supercluster (marker clusters), uPlot (charts) and Leaflet-Geoman (geofence
// drawing) from node_modules. esbuild bundles web/main.ts, web/cluster-worker.ts (the map's
// cluster index, run in a Web Worker) and web/app.css (which imports the libraries' stylesheets)
// into memory once per process, on the first request or when the server starts listening, so
// `npm start` needs no separate build step and nothing comes from a CDN.
//
// What can be served is fixed: the bundle's outputs (main.js, cluster-worker.js, app.css, the
// images the stylesheets use, licenses.txt) and the other static files web/ holds at start-up
// (index.html, icon.svg).
// A request path is only ever a key into that list, never a filesystem path, so no `..` or
// encoded variant can reach another file. Anything else answers the usual 404 problem.
//
// The dashboard uses only the public API, as any third-party client would; these routes are
// public (a page and its scripts carry no secret) and hidden from the OpenAPI document.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../errors.ts';
import { SESSION_COOKIE } from '../http/auth.ts';

export const WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));
/** Where the dashboard's assets are served; `/` serves index.html. */
export const ASSET_PREFIX = '/dashboard/';

export interface DashboardOptions {
  /** FLEET_PUBLIC_URL: live-stream WebSockets are opened on its ws(s):// form. */
  publicUrl: string;
  /** FLEET_MAP_TILE_URL: `{z}/{x}/{y}` template, or '' for no tiles. */
  tileUrl: string;
  /** The web/ directory (tests may point elsewhere). */
  dir?: string;
}

export interface Asset {
  contentType: string;
  body: Buffer;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.txt': 'text/plain; charset=utf-8',
};

const NAME = /^[A-Za-z0-9._-]+$/;

/** The static files under `dir` that are served as they are (not TypeScript: that is bundled). */
export function staticAssets(dir: string): Map<string, Asset> {
  const table = new Map<string, Asset>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isFile() || !NAME.test(entry.name)) continue;
    const contentType = TYPES[path.extname(entry.name)];
    if (contentType === undefined || entry.name.endsWith('.js')) continue;
    table.set(entry.name, { contentType, body: readFileSync(path.join(dir, entry.name)) });
  }
  return table;
}

/**
 * Some library stylesheets (Leaflet-Geoman's toolbar icons) inline their images as `data:` URLs,
 * which the policy's `img-src 'self'` refuses. This plugin turns each into an image file of the
 * bundle, served from this origin like Leaflet's own images.
 */
const dataImagesToFiles: esbuild.Plugin = {
  name: 'data-images-to-files',
  setup(build) {
    const images = new Map<string, string>();
    build.onLoad({ filter: /node_modules[\\/].*\.css$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const stem = path.basename(args.path, '.css');
      const contents = source.replace(/url\((['"]?)data:image\/svg\+xml(;[^,]*)?,(.*?)\1\)/g, (_whole, _quote: string, params: string | undefined, data: string) => {
        const svg = params?.includes('base64') === true ? Buffer.from(data, 'base64').toString('utf8') : decodeURIComponent(data);
        const name = `${stem}-${images.size + 1}.svg`;
        images.set(name, svg);
        return `url("inline-image:${name}")`;
      });
      return { contents, loader: 'css', resolveDir: path.dirname(args.path) };
    });
    build.onResolve({ filter: /^inline-image:/ }, (args) => ({ path: args.path.slice('inline-image:'.length), namespace: 'inline-image' }));
    build.onLoad({ filter: /.*/, namespace: 'inline-image' }, (args) => ({ contents: images.get(args.path) ?? '', loader: 'file' }));
  },
};

/**
 * Leaflet blanks a tile it drops (zoomed away from before it loaded, or failed) by pointing it at a
 * `data:` GIF, which the policy refuses (and the console reports). Here it points at the same
 * transparent GIF, served from this origin.
 */
const LEAFLET_EMPTY_IMAGE = 'data:image/gif;base64,R0lGODlhAQABAAD/ACwAAAAAAQABAAACADs=';
const EMPTY_IMAGE = 'empty.gif';
const leafletEmptyImage: esbuild.Plugin = {
  name: 'leaflet-empty-image',
  setup(build) {
    build.onLoad({ filter: /node_modules[\\/]leaflet[\\/]dist[\\/]leaflet-src\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes(LEAFLET_EMPTY_IMAGE)) throw new Error('Leaflet no longer has the empty tile image this bundle replaces');
      return { contents: source.replaceAll(LEAFLET_EMPTY_IMAGE, `${ASSET_PREFIX}${EMPTY_IMAGE}`), loader: 'js' };
    });
  },
};

const LICENSES = 'licenses.txt';

/** The licence texts of every package with code in the bundle, from the inputs esbuild read. */
function licensesOf(inputs: readonly string[]): string {
  const packages = new Set<string>();
  for (const input of inputs) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input.replaceAll('\\', '/'));
    if (match !== null) packages.add(path.resolve(match[1]!));
  }
  const parts: string[] = [];
  for (const dir of [...packages].sort()) {
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
    const file = readdirSync(dir).find((name) => /^(?:licen[cs]e|copying)(?:\.|$)/i.test(name));
    const text = file === undefined ? `License: ${manifest.license ?? 'see the package'}` : readFileSync(path.join(dir, file), 'utf8').trim();
    parts.push(`${manifest.name} ${manifest.version}\n${'='.repeat(manifest.name.length + manifest.version.length + 1)}\n${text}\n`);
  }
  return parts.join('\n');
}

const optional = (file: string): string[] => (existsSync(file) ? [file] : []);

/** Bundles `dir`'s main.ts and app.css with esbuild, in memory; the outputs by their URL names. */
export async function buildBundle(dir: string): Promise<Map<string, Asset>> {
  const result = await esbuild.build({
    entryPoints: [path.join(dir, 'main.ts'), path.join(dir, 'app.css'), ...optional(path.join(dir, 'cluster-worker.ts'))],
    bundle: true,
    write: false,
    outdir: path.join(dir, 'out'),
    format: 'esm',
    target: 'es2022',
    minify: true,
    legalComments: 'eof',
    loader: { '.png': 'file', '.svg': 'file' },
    assetNames: '[name]',
    publicPath: ASSET_PREFIX,
    logLevel: 'silent',
    plugins: [dataImagesToFiles, leafletEmptyImage],
    metafile: true,
    banner: { js: `/*! Fleet dashboard. Third-party licences: ${ASSET_PREFIX}${LICENSES} */` },
  });
  const table = new Map<string, Asset>();
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    const contentType = TYPES[path.extname(name)];
    if (contentType === undefined || !NAME.test(name)) throw new Error(`dashboard bundle: unexpected output ${name}`);
    table.set(name, { contentType, body: Buffer.from(file.contents) });
  }
  table.set(LICENSES, { contentType: 'text/plain; charset=utf-8', body: Buffer.from(licensesOf(Object.keys(result.metafile.inputs))) });
  table.set(EMPTY_IMAGE, { contentType: 'image/gif', body: Buffer.from(LEAFLET_EMPTY_IMAGE.split(',')[1]!, 'base64') });
  return table;
}

/** One bundle per web/ directory and process, shared by every app instance (tests make many). */
const bundles = new Map<string, Promise<Map<string, Asset>>>();
export function bundleOf(dir: string): Promise<Map<string, Asset>> {
  let bundle = bundles.get(dir);
  if (bundle === undefined) {
    bundle = buildBundle(dir);
    // A failed build is tried again on the next request (after the source is fixed).
    bundle.catch(() => bundles.delete(dir));
    bundles.set(dir, bundle);
  }
  return bundle;
}

/** Whether the bundle of `dir` has been asked for (it is being built, or is built). */
export function bundleStarted(dir: string): boolean {
  return bundles.has(dir);
}

function originOf(url: string): string | undefined {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** The Content-Security-Policy of every dashboard response: own origin only, plus tiles and the stream socket. */
export function contentSecurityPolicy(opts: Pick<DashboardOptions, 'publicUrl' | 'tileUrl'>): string {
  const tiles = opts.tileUrl === '' ? undefined : originOf(opts.tileUrl);
  const api = originOf(opts.publicUrl);
  const socket = api === undefined ? undefined : api.replace(/^http/, 'ws');
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self'${tiles === undefined ? '' : ` ${tiles}`}`,
    `connect-src 'self'${socket === undefined ? '' : ` ${socket}`}`,
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

export async function dashboardPlugin(app: FastifyInstance, opts: DashboardOptions) {
  const dir = opts.dir ?? WEB_DIR;
  const assets = staticAssets(dir);
  const index = assets.get('index.html');
  if (index === undefined) throw new Error(`dashboard: no index.html in ${dir}`);
  const csp = contentSecurityPolicy(opts);
  const withCookie = JSON.stringify({ tileUrl: opts.tileUrl, sessionCookie: true });
  const withoutCookie = JSON.stringify({ tileUrl: opts.tileUrl, sessionCookie: false });

  const send = (reply: FastifyReply, contentType: string, body: Buffer | string) =>
    reply
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .type(contentType)
      .send(body);

  // A listening server bundles now, so the first page load does not wait for it; a failure is
  // logged here and answered as a 500 problem by the asset route.
  app.addHook('onListen', async () => {
    bundleOf(dir).catch((error: unknown) => app.log.error({ err: error }, 'dashboard: the bundle failed to build'));
  });

  // Not part of the API: public (nothing secret in a page or a script) and left out of OpenAPI.
  const route = { config: { public: true }, schema: { hide: true } } as const;

  app.get('/', route, async (_request, reply) => send(reply, index.contentType, index.body));

  // What the browser needs to know that only the server's configuration says, and whether the
  // request carried a session cookie at all (HttpOnly: the page cannot see it): without one, the
  // page does not ask GET /auth/session, whose 401 every first visit would log in the console.
  app.get(`${ASSET_PREFIX}config.json`, route, async (request, reply) =>
    send(reply, 'application/json; charset=utf-8', request.cookies?.[SESSION_COOKIE] === undefined ? withoutCookie : withCookie));

  app.get<{ Params: { '*': string } }>(`${ASSET_PREFIX}*`, route, async (request, reply) => {
    const name = request.params['*'];
    const asset = name === 'index.html' || !NAME.test(name) ? undefined : (await bundleOf(dir)).get(name) ?? assets.get(name);
    if (asset === undefined) {
      throw new AppError('route-not-found', `No dashboard asset "${name.slice(0, 100)}".`);
    }
    return send(reply, asset.contentType, asset.body);
  });
}
