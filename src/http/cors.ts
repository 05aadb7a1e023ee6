// CORS (docs/API.md "Browsers on other origins"): pages of the origins in FLEET_CORS_ORIGINS may
// call the API. Registered before authentication, so a preflight (which never carries a
// credential) is answered 204 without one, and every answer to an allowed origin, errors
// included (401, 404, 429, 503 ...), carries the CORS headers a browser needs to let the page read
// it. Without an Origin header a request is no CORS request: it gets no CORS headers, and an
// OPTIONS without one is answered as before (405 with Allow).
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** Methods the API serves; a preflight answers with these. */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Request headers a page may send beyond the CORS-safelisted ones. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id'];
/** Response headers a page may read beyond the safelisted ones (Content-Type, Cache-Control, ...). */
export const CORS_EXPOSED_HEADERS = [
  'Location', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'X-Request-Id', 'WWW-Authenticate', 'Deprecation', 'Sunset', 'Link',
];
/** How long a browser may reuse a preflight's answer, seconds (Chromium caps it at 7200). */
const PREFLIGHT_MAX_AGE = 600;

export const corsPlugin = fp(async function corsOrigins(app: FastifyInstance, opts: { origins: readonly string[] }) {
  if (opts.origins.length === 0) return;
  const any = opts.origins.includes('*');
  const allowed = new Set(opts.origins);
  // The plugin's catch-all OPTIONS route needs no credential: it answers preflights (in the
  // hook, before auth) and otherwise hands over to the 404/405 handler.
  app.addHook('onRoute', (route) => {
    if (route.url === '*' && route.method === 'OPTIONS') route.config = { ...route.config, public: true };
  });
  await app.register(cors, {
    // A function rather than the list, so that a request without Origin (or from an origin not
    // allowed) gets no CORS header at all, and its OPTIONS falls through to the 405 it had.
    origin: (origin, callback) => {
      if (origin === undefined) return callback(null, false);
      // Origins are compared as browsers send them: scheme and host in lower case.
      if (any) return callback(null, '*');
      return callback(null, allowed.has(origin.toLowerCase()) ? origin : false);
    },
    methods: CORS_METHODS,
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE,
    // An OPTIONS from an allowed origin without Access-Control-Request-Method is answered like a
    // preflight (204) rather than with the plugin's own 400 in text/plain.
    strictPreflight: false,
    // Credentials are bearer tokens in Authorization, never cookies: no Allow-Credentials.
    credentials: false,
  });
}, { name: 'cors', dependencies: ['problems'] });
