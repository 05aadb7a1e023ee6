// The OpenAPI 3.1 document is generated from the same route schemas that validate requests.
// Security is derived from each route's auth config, so the document cannot disagree with the
// checks that run. The interactive docs are served from the package (no CDN).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { SCOPES, SCOPE_DESCRIPTIONS } from '../auth/scopes.ts';
import { DECLARED_HEADERS, responses } from '../schema/common.ts';
import { V1_DEPRECATED_AT, V1_SUNSET_AT } from './versioning.ts';

/**
 * The Content-Security-Policy of /docs, as tight as swagger-ui allows: its page, scripts and
 * styles are files of its own (no inline script, one inline style known by its hash, no eval; React sets element styles
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
  // The one inline style swagger-ui's script applies, allowed by its hash (test/docs-browser.test.ts
  // fails on any other, as a console error).
  "style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/** Response headers, each described once under `components.headers`. */
const HEADERS: Record<string, { description: string; schema: Record<string, unknown>; example: unknown }> = {
  'X-Request-Id': {
    description: 'The request\'s id: the caller\'s own `X-Request-Id` when it is a sane token, else a new UUID. Quote it when reporting a problem.',
    schema: { type: 'string' }, example: '3f1c2b7e-9a4d-4c1e-8f0a-2b6d5e7c9a10',
  },
  Location: {
    description: 'The path of the created resource; of a redirect (302), where it sends the browser.', schema: { type: 'string', format: 'uri-reference' }, example: '/v2/fleet/vehicles/van-042',
  },
  RateLimit: {
    description: 'The budget left (IETF draft-ietf-httpapi-ratelimit-headers): per policy that counted the request, `r` requests remaining and `t` seconds until the budget is whole again.',
    schema: { type: 'string' }, example: '"default";r=1187;t=1',
  },
  'RateLimit-Policy': {
    description: 'The policies that counted the request: `q` requests per window of `w` seconds; `default` per credential, `ip` per client address.',
    schema: { type: 'string' }, example: '"default";q=1200;w=60',
  },
  'Retry-After': {
    description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 0 }, example: 3,
  },
  Deprecation: {
    description: 'RFC 9745: this API family is deprecated, since the given time (`@` Unix seconds).',
    schema: { type: 'string' }, example: `@${Math.floor(V1_DEPRECATED_AT.getTime() / 1000)}`,
  },
  Sunset: {
    description: 'RFC 8594: when this API family stops being served.', schema: { type: 'string' }, example: V1_SUNSET_AT.toUTCString(),
  },
  'Content-Disposition': {
    description: 'RFC 6266: the response is a file to save, and its name.', schema: { type: 'string' }, example: 'attachment; filename="van-042.csv"',
  },
  Link: {
    description: 'RFC 8288 links. On `/api/v1`: the `/v2` successor of the operation, `rel="successor-version"`. On the event feed: ' +
      'the next page, `rel="next"` (the request again with `after` set to the page\'s `next`), sent before the body.',
    schema: { type: 'string' }, example: '</v2/events?limit=1000&after=ZTE6MDoxMDAw>; rel="next"',
  },
};

/** The names of the problem responses under `components.responses`, by status. */
const PROBLEM_RESPONSE_NAMES: Record<string, string> = {
  400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden', 404: 'NotFound', 409: 'Conflict', 410: 'Gone',
  413: 'PayloadTooLarge', 415: 'UnsupportedMediaType', 429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable',
};

/** Headers of the problem responses beyond `X-Request-Id`. */
const PROBLEM_HEADERS: Record<string, string[]> = {
  429: ['RateLimit', 'RateLimit-Policy', 'Retry-After'],
  503: ['Retry-After'],
};

const DEPRECATION_HEADERS = ['Deprecation', 'Sunset', 'Link'];

interface Response {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: { $ref?: string } }>;
  $ref?: string;
}
interface Operation {
  responses?: Record<string, Response>;
  parameters?: unknown[];
  'x-rate-limited'?: boolean;
  'x-declared-headers'?: Record<string, string[]>;
}

const headerRefs = (names: string[]) => Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));

const isProblem = (response: Response) =>
  response.content?.['application/problem+json']?.schema?.$ref === '#/components/schemas/Problem';

/** Headers a route's response schema describes itself, as references to the named ones. */
function declaredInline(headers: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(headers ?? {})) {
    const known = Object.keys(HEADERS).find((header) => header.toLowerCase() === name.toLowerCase());
    if (known === undefined) throw new Error(`response header ${name} is not among the named headers (http/openapi.ts)`);
    out[known] = { $ref: `#/components/headers/${known}` };
  }
  return out;
}

/**
 * The finishing of the document: each problem response is described once under
 * `components.responses` and referenced, every response declares the headers it carries (by
 * reference to `components.headers`), and the /api/v1 family declares its deprecation headers.
 */
function finish(document: Record<string, unknown>): Record<string, unknown> {
  const components = document.components as Record<string, Record<string, unknown>>;
  const problems: Record<string, Response> = {};
  const paths = document.paths as Record<string, Record<string, Operation>>;
  for (const [path, item] of Object.entries(paths)) {
    const deprecated = path.startsWith('/api/v1/');
    for (const operation of Object.values(item)) {
      const declared = operation['x-declared-headers'] ?? {};
      const rateLimited = operation['x-rate-limited'] === true;
      delete operation['x-declared-headers'];
      delete operation['x-rate-limited'];
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const name = PROBLEM_RESPONSE_NAMES[status];
        const names = [
          'X-Request-Id',
          ...(declared[status] ?? []),
          ...(isProblem(response) ? PROBLEM_HEADERS[status] ?? [] : rateLimited && /^2/.test(status) ? ['RateLimit', 'RateLimit-Policy'] : []),
        ];
        const described = { ...response, headers: { ...declaredInline(response.headers), ...headerRefs(names) } };
        if (isProblem(response) && name !== undefined && !deprecated) {
          const known = problems[name];
          if (known === undefined) problems[name] = described;
          if (known === undefined || known.description === response.description) {
            operation.responses![status] = { $ref: `#/components/responses/${name}` };
            continue;
          }
        }
        operation.responses![status] = deprecated ? { ...described, headers: { ...described.headers, ...headerRefs(DEPRECATION_HEADERS) } } : described;
      }
    }
  }
  components.responses = problems;
  components.headers = HEADERS;
  return document;
}

export const openapiPlugin = fp(async function openapi(app: FastifyInstance, opts: { version: string; publicUrl: string }) {
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
      servers: [{ url: opts.publicUrl, description: 'This service (FLEET_PUBLIC_URL).' }],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'An API key (`fleet_…`) or an OAuth 2.0 access token (JWT from `/oauth/token` or the configured identity provider). ' +
              'The scope each operation needs is named in its `oauth2` security requirement and its description; an API key needs that scope too.',
          },
          oauth2: {
            type: 'oauth2',
            description:
              'OAuth 2.0 client credentials: an OAuth client of the organization (`POST /v2/oauth-clients`) gets an access token from the token endpoint, ' +
              'sent as `Authorization: Bearer`. A token holds the scopes asked for, at most the client\'s.',
            flows: {
              clientCredentials: {
                tokenUrl: new URL('/oauth/token', opts.publicUrl).href,
                scopes: Object.fromEntries(SCOPES.map((scope) => [scope, SCOPE_DESCRIPTIONS[scope]])),
              },
            },
          },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: 'fleet_session',
            description:
              'A person\'s session, set by `POST /auth/login`: the user\'s role gives the scopes. POST, PUT, PATCH and DELETE made with it also send ' +
              'the session\'s `csrfToken` as `X-CSRF-Token`. A request with an Authorization header ignores the cookie.',
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
        { name: 'users', description: 'People of the organization: invite, change roles, disable, delete.' },
        { name: 'sessions', description: 'A person\'s own sign-in, session, password and two-factor sign-in.' },
        { name: 'groups', description: 'Vehicle groups: named sets of the organization\'s vehicles; a vehicle\'s `groupIds`, and `groupId` on the vehicle list.' },
        { name: 'drivers', description: 'Drivers, their identifiers, and who drives which vehicle (assignments); a vehicle\'s `driverId`.' },
        { name: 'maintenance', description: 'Service schedules by distance, engine hours and days; service records; what is due soon or overdue, per vehicle and fleet-wide.' },
        { name: 'reports', description: 'Summary reports (distance, driving, idle and engine time, trips, top speed) per vehicle, driver or day; report schedules and the reports they keep.' },
        { name: 'audit', description: 'The audit log: who changed what, every sign-in and every refusal.' },
        { name: 'organizations', description: 'Organizations (platform organization only).' },
        { name: 'oauth', description: 'OAuth 2.0: clients, the token endpoint, revocation, introspection, signing keys.' },
        { name: 'telemetry', description: 'Send telemetry; read the latest state and history.' },
        { name: 'streams', description: 'Live telemetry and status over WebSocket: create a stream, attach to it, read and end it.' },
        { name: 'devices', description: 'Trackers (OsmAnd, Teltonika) registered for vehicles, and the OsmAnd endpoint they send to.' },
        { name: 'commands', description: 'Commands to vehicles\' devices (Teltonika Codec 12, OsmAnd, MQTT): send, follow, cancel.' },
        { name: 'events', description: 'The event feed: everything that happened, in order.' },
        { name: 'webhooks', description: 'Webhook endpoints that receive events (Standard Webhooks), and their deliveries.' },
        { name: 'geofences', description: 'Areas vehicles enter and leave.' },
        { name: 'alerts', description: 'Alert rules, and the alerts they open.' },
        { name: 'v1', description: 'Deprecated /api/v1 family, same representations as /v2.' },
        { name: 'operations', description: 'Health, readiness, metrics and this document.' },
      ],
    },
    // A named schema (schema/named.ts) appears under its own name: `#/components/schemas/Problem`.
    refResolver: {
      buildLocalReference: (json: { $id?: unknown }, _baseUri: unknown, _fragment: unknown, i: number) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    // Security comes from the route's own auth config, the one the checks read. The scope is a
    // scope of the OAuth scheme; a bearer API key needs the same scope, which the description says.
    transform: ({ schema, url, route }) => {
      const config = route.config ?? {};
      const authenticated = config.public !== true;
      const scopes = config.scope === undefined ? [] : [config.scope];
      const security: Array<Record<string, string[]>> = !authenticated ? []
        : config.session === true ? [{ session: [] }] : [{ bearer: [] }, { oauth2: scopes }, { session: [] }];
      if (authenticated && config.alternativeCredential !== undefined) security.push({ ticket: [] });
      const declared = (schema?.response as { [DECLARED_HEADERS]?: Record<number, string[]> } | undefined)?.[DECLARED_HEADERS];
      const needs = scopes.length === 0 ? '' : `Needs scope \`${scopes[0]}\`${config.platform === true ? ' of the platform organization' : ''}.`;
      const description = [schema?.description, needs].filter((part) => typeof part === 'string' && part !== '').join('\n\n');
      return {
        schema: {
          ...schema,
          ...(description === '' ? {} : { description }),
          security,
          'x-rate-limited': authenticated || config.rateLimit === 'ip',
          ...(declared === undefined ? {} : { 'x-declared-headers': declared }),
        },
        url,
      };
    },
    transformObject: (documentObject) => finish((documentObject as { openapiObject: Record<string, unknown> }).openapiObject),
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
      description: 'Generated from the schemas that validate requests and serialize responses; for client generators and the interactive docs at `/docs`.',
      response: responses({ 200: Type.Object({}, { additionalProperties: true, description: 'The OpenAPI 3.1 document.' }) }, { authenticated: false }),
    },
  }, async () => app.swagger());
}, { name: 'openapi' });
