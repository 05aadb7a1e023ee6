// The OpenAPI 3.1 document is generated from the same route schemas that validate requests.
// Security is derived from each route's auth config, so the document cannot disagree with the
// checks that run. The interactive docs are served from the package (no CDN).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { responses } from '../schema/common.ts';

/**
 * The Content-Security-Policy of /docs, as tight as swagger-ui allows: its page, scripts and
 * styles are files of its own (no inline script or `<style>`, no eval; React sets element styles
 * through the DOM, which style-src does not govern), its icons are `data:` images in its CSS, and
 * it fetches only this document and the operations tried out, all on this origin. The plugin's
 * own default allowed any https: style or font, framing by this origin, the swagger.io validator,
 * and upgraded every request to https, which breaks the page wherever Fleet is served over plain
 * HTTP (behind a TLS-terminating proxy on a private network, say).
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

export const openapiPlugin = fp(async function openapi(app: FastifyInstance, opts: { version: string }) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Fleet API',
        version: opts.version,
        description:
          'Fleet management and telemetry. Every error is `application/problem+json` (RFC 9457) with a stable `code`. ' +
          '`/api/v1` is deprecated in favour of `/v2`: its responses carry `Deprecation`, `Sunset` and a successor `Link`.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'An API key (`fleet_…`) or an OAuth 2.0 access token (JWT from `/oauth/token` or the configured identity provider). ' +
              'The route\'s required scope is listed in its security requirement.',
          },
          ticket: {
            type: 'apiKey',
            in: 'query',
            name: 'ticket',
            description:
              'A live stream\'s single-use WebSocket ticket, from the `url` of `POST /v2/telemetry/…/stream` or `POST /v2/streams/{streamId}/tickets`. ' +
              'Accepted only on the WebSocket upgrade of `GET /v2/streams/{streamId}`, so browsers can connect without an Authorization header.',
          },
        },
      },
      tags: [
        { name: 'vehicles', description: 'Register, list and read vehicles; change their status.' },
        { name: 'credentials', description: 'API keys of the caller\'s organization.' },
        { name: 'organizations', description: 'Organizations (platform organization only).' },
        { name: 'oauth', description: 'OAuth 2.0: clients, the token endpoint, revocation, introspection, signing keys.' },
        { name: 'telemetry', description: 'Send telemetry; read the latest state and history.' },
        { name: 'streams', description: 'Live telemetry and status over WebSocket: create a stream, attach to it, read and end it.' },
        { name: 'v1', description: 'Deprecated /api/v1 family, same representations as /v2.' },
        { name: 'operations', description: 'Health, readiness, metrics and this document.' },
      ],
    },
    transform: ({ schema, url, route }) => {
      const config = route.config ?? {};
      const scopes = config.scope === undefined ? [] : [config.scope];
      const security: Array<Record<string, string[]>> = config.public === true ? [] : [{ bearer: scopes }];
      if (config.public !== true && config.alternativeCredential !== undefined) security.push({ ticket: scopes });
      return { schema: { ...schema, security }, url };
    },
  });

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: DOCS_CSP,
    uiConfig: { deepLinking: true, persistAuthorization: false },
  });

  app.get('/openapi.json', {
    config: { public: true },
    schema: {
      tags: ['operations'],
      operationId: 'getOpenApi',
      summary: 'This OpenAPI 3.1 document',
      response: responses({ 200: Type.Object({}, { additionalProperties: true }) }, { authenticated: false }),
    },
  }, async () => app.swagger());
}, { name: 'openapi' });
