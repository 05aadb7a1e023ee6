// The browser dashboard: a single-page app at `/` written as plain TypeScript modules in web/.
// There is no bundler and no build step: each browser module is served as JavaScript by
// stripping its types with Node's own stripTypeScriptTypes, once per file, on first request.
//
// What can be served is fixed at start-up: the files web/ holds then, listed once. A request
// path is only ever a key into that list, never a filesystem path, so no `..` or encoded
// variant can reach another file. Anything else answers the usual 404 problem.
//
// The dashboard uses only the public API, as any third-party client would; these routes are
// public (a page and its scripts carry no secret) and hidden from the OpenAPI document.
import { readdirSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../errors.ts';

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

interface Asset {
  file: string;
  contentType: string;
  /** TypeScript modules are stripped to JavaScript. */
  strip: boolean;
  /** Filled on first request. */
  body?: Buffer;
}

const TYPES: Record<string, string> = {
  '.ts': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** The files under `dir` that may be served, by their URL name; built once. */
export function assetTable(dir: string): Map<string, Asset> {
  const table = new Map<string, Asset>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const name = entry.name;
    const ext = path.extname(name);
    const contentType = TYPES[ext];
    // Type declarations, tests and the web tsconfig are not for the browser.
    if (contentType === undefined || name.endsWith('.d.ts') || name.endsWith('.test.ts') || !/^[A-Za-z0-9._-]+$/.test(name)) continue;
    table.set(name, { file: path.join(dir, name), contentType, strip: ext === '.ts' });
  }
  return table;
}

/**
 * stripTypeScriptTypes is marked experimental in Node 24 and says so once per process with a
 * warning on stderr. The call is deliberate and its output checked by the tests, so that one
 * warning is held back; every other warning passes through untouched.
 */
function stripQuietly(source: string): string {
  const saved = Object.getOwnPropertyDescriptor(process, 'emitWarning');
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const message = typeof warning === 'string' ? warning : warning.message;
    if (!message.includes('stripTypeScriptTypes')) emit(warning, ...rest);
  });
  try {
    // 'strip' mode only blanks out types, so line and column numbers match the source file.
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    if (saved === undefined) delete (process as { emitWarning?: unknown }).emitWarning;
    else Object.defineProperty(process, 'emitWarning', saved);
  }
}

function bodyOf(asset: Asset): Buffer {
  if (asset.body === undefined) {
    const raw = readFileSync(asset.file);
    asset.body = asset.strip ? Buffer.from(stripQuietly(raw.toString('utf8'))) : raw;
  }
  return asset.body;
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
  const assets = assetTable(opts.dir ?? WEB_DIR);
  const index = assets.get('index.html');
  if (index === undefined) throw new Error(`dashboard: no index.html in ${opts.dir ?? WEB_DIR}`);
  const csp = contentSecurityPolicy(opts);
  const clientConfig = JSON.stringify({ tileUrl: opts.tileUrl });

  const send = (reply: FastifyReply, contentType: string, body: Buffer | string) =>
    reply
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .type(contentType)
      .send(body);

  // Not part of the API: public (nothing secret in a page or a script) and left out of OpenAPI.
  const route = { config: { public: true }, schema: { hide: true } } as const;

  app.get('/', route, async (_request, reply) => send(reply, index.contentType, bodyOf(index)));

  // What the browser needs to know that only the server's configuration says.
  app.get(`${ASSET_PREFIX}config.json`, route, async (_request, reply) => send(reply, 'application/json; charset=utf-8', clientConfig));

  app.get<{ Params: { '*': string } }>(`${ASSET_PREFIX}*`, route, async (request, reply) => {
    const name = request.params['*'];
    const asset = name === 'index.html' ? undefined : assets.get(name);
    if (asset === undefined) {
      throw new AppError('route-not-found', `No dashboard asset "${name.slice(0, 100)}".`);
    }
    return send(reply, asset.contentType, bodyOf(asset));
  });
}
