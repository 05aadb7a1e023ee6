// The HTTP side: the Fastify instance with what every request gets, then the cross-cutting plugins
// in the order their hooks must run, then each module's routes over the services.
import { randomUUID } from 'node:crypto';
import cookie from '@fastify/cookie';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import pkg from '../../package.json' with { type: 'json' };
import { auditPlugin } from '../audit/plugin.ts';
import { auditRoutes } from '../audit/routes.ts';
import { groupRoutes } from '../groups/routes.ts';
import { driverRoutes } from '../drivers/routes.ts';
import { meterRoutes } from '../meters/routes.ts';
import { maintenanceRoutes } from '../maintenance/routes.ts';
import { summaryRoutes } from '../reports/routes.ts';
import { reportScheduleRoutes } from '../reports/schedules/routes.ts';
import { apiKeyRoutes } from '../auth/keys-routes.ts';
import { oauthRoutes } from '../auth/oauth/routes.ts';
import type { Clock } from '../clock.ts';
import { dashboardPlugin } from '../dashboard/plugin.ts';
import { deviceEndpointRoutes } from '../devices/endpoints.ts';
import { deviceRoutes } from '../devices/routes.ts';
import { commandRoutes } from '../commands/routes.ts';
import { eventRoutes } from '../events/routes.ts';
import { historyRoutes } from '../history/routes.ts';
import { authPlugin } from '../http/auth.ts';
import { vehicleScopePlugin } from '../http/vehicle-scope.ts';
import { corsPlugin } from '../http/cors.ts';
import { healthRoutes } from '../http/health.ts';
import { metricsPlugin } from '../http/metrics.ts';
import { openapiPlugin } from '../http/openapi.ts';
import { overloadPlugin } from '../http/overload.ts';
import { rateLimitPlugin } from '../http/rate-limit.ts';
import { RequestLogController, lazyChildLogger, serializeRequest } from '../http/request-logger.ts';
import { secretResponsesPlugin } from '../http/secrets.ts';
import { shutdownArrivalsPlugin, timeoutOptions } from '../http/timeouts.ts';
import { organizationRoutes } from '../organizations/routes.ts';
import { peopleRoutes } from '../people/routes.ts';
import { ssoRoutes } from '../sso/routes.ts';
import { osmandRoutes } from '../protocols/osmand/routes.ts';
import { rulesRoutes } from '../rules/routes.ts';
import { geofenceRoutes } from '../geofences/routes.ts';
import { addNamedSchemas } from '../schema/named.ts';
import { clientErrorHandler, frameworkErrorHandler, problemsPlugin } from '../schema/problems.ts';
import { serializerCompiler } from '../schema/serializer.ts';
import { validatorCompiler } from '../schema/validation.ts';
import { streamRoutes } from '../streams/routes.ts';
import { telemetryRoutes } from '../telemetry/routes.ts';
import { vehicleRoutesV1 } from '../vehicles/routes.v1.ts';
import { vehicleRoutesV2 } from '../vehicles/routes.v2.ts';
import { webhookRoutes } from '../webhooks/routes.ts';
import type { AppDeps } from './deps.ts';
import type { Services } from './services.ts';

export const BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** One served route, as registered: what the security tests and the OpenAPI check walk over. */
export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
  scope: string | undefined;
  /** Its responses carry a secret (config.secret): never cached. */
  secret: boolean;
  /** Only a person's session cookie authenticates it (config.session): their own account. */
  session: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: readonly RouteEntry[];
  }
}

/** The Fastify instance: logging, limits, deadlines, compilers, and the hooks every request gets. */
export function createServer(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    ...(deps.logger === undefined
      ? {
          logger: {
            level: deps.config.logLevel,
            redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
            // Stream tickets and access tokens in query strings never reach the logs.
            serializers: { req: serializeRequest },
          },
        }
      : { loggerInstance: deps.logger }),
    // Each request's child logger is made on its first line at an enabled level (request-logger.ts).
    childLoggerFactory: lazyChildLogger,
    // The health probes' request lines at debug.
    logController: new RequestLogController(),
    bodyLimit: BODY_LIMIT,
    // Headers, whole request and idle connection each have a deadline (http/timeouts.ts).
    ...timeoutOptions(deps.config.http.timeouts),
    // What Fastify refuses before routing, and Node's HTTP parser before Fastify, is a problem too.
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    requestIdHeader: false,
    // A caller's X-Request-Id is kept when it is a sane token, so traces join up across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // Every named schema once, for the OpenAPI document (named.ts).
  addNamedSchemas(app);
  // Only JSON bodies are accepted; anything else is answered 415.
  app.removeContentTypeParser('text/plain');
  // Traced requests: the server span starts before any other hook (tracing/otel.ts).
  deps.tracing?.instrument(app);
  // Hooks on every request are written callback-style: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    // nosniff on every response: a JSON body (a problem echoing part of the URL, say) is never
    // to be read by a browser as HTML or script.
    void reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
    done();
  });
  // While shutting down, answer in-flight requests with `Connection: close`: Fastify closes only
  // connections idle at close time, and a kept-alive one would otherwise hold the process open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    done(null, payload);
  });
  return app;
}

/** The cross-cutting plugins, then every module's routes. */
export async function registerHttp(app: FastifyInstance, parts: Services, deps: AppDeps, core: { clock: Clock; metrics: Registry }): Promise<void> {
  const { config } = deps;
  const { streams, auth, mqtt, listeners } = parts;
  await app.register(problemsPlugin);
  // First of the request hooks: a preflight is answered before any credential is asked for, and
  // every later refusal (401, 429, 503) already carries the CORS headers.
  await app.register(corsPlugin, { origins: config.cors.origins });
  // Next: an overloaded process refuses at once, before any work is spent on the request.
  await app.register(overloadPlugin, { config: config.overload });
  await app.register(shutdownArrivalsPlugin, { requestMs: config.http.timeouts.requestMs, webSockets: true });
  // Before auth: its hooks must see every request, so that an upgrade refused by auth (a bad ticket,
  // a foreign origin) still has its socket closed after the error response.
  await app.register(websocket, {
    // Client messages over 64 KiB close the socket with 1009 (ws's default allows 100 MiB).
    options: { maxPayload: streams.settings.maxClientMessageBytes },
    // Shutdown closes every stream's socket with 1001 (the plugin's default sends no code).
    preClose: () => streams.close(),
    // ws closes the socket itself on protocol errors (1009 for a message too large, 1002): let it finish.
    errorHandler: (error, socket, request) => {
      request.log.debug({ err: error }, 'live stream socket error');
      if (socket.readyState === socket.OPEN) socket.close(1011, 'internal error');
    },
  });
  // Before auth, which reads the session cookie.
  await app.register(cookie);
  // auth first: its onRoute check must see every route registered after it.
  await app.register(authPlugin, {
    auth, sessions: { cached: (secret) => parts.people.cachedSessionPrincipal(secret), resolve: (secret) => parts.people.sessionPrincipal(secret) },
  });
  // After auth (an entry names the principal); its preHandler hook is the last before each handler.
  await app.register(auditPlugin, { store: deps.stores.audit, clock: core.clock });
  await app.register(vehicleScopePlugin, { scope: parts.vehicleScope });
  // Before every route: routes flagged `secret` get their no-store hook as they are added.
  await app.register(secretResponsesPlugin);
  // Right after auth: its onRequest hook needs the principal, and must refuse before any other work.
  await app.register(rateLimitPlugin, { config: config.rateLimit, clock: core.clock, store: deps.rateLimitStore });
  // After auth, whose onRoute hook settles each route's public/scope config first.
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      routeTable.push({
        method, url: route.url, public: route.config?.public === true, scope: route.config?.scope, secret: route.config?.secret === true,
        session: route.config?.session === true,
      });
    }
  });
  await app.register(openapiPlugin, { version: pkg.version, publicUrl: config.publicUrl });
  await app.register(metricsPlugin, { registry: core.metrics });
  await app.register(healthRoutes, {
    checks: {
      store: () => deps.stores.ping(),
      mqtt: () => mqtt.readiness(),
      osmand: async () => (await listeners.osmand?.readiness()) ?? 'disabled',
      teltonika: async () => (await listeners.teltonika?.readiness()) ?? 'disabled',
      cluster: async () => deps.cluster?.state() ?? 'disabled',
    },
  });
  await app.register(vehicleRoutesV2, { service: parts.vehicles, latest: parts.latestOf });
  await app.register(eventRoutes, { feed: parts.feed });
  await app.register(webhookRoutes, { service: parts.webhooks });
  await app.register(geofenceRoutes, { service: parts.geofences, vehicles: parts.vehicles });
  await app.register(rulesRoutes, { service: parts.rules });
  await app.register(vehicleRoutesV1, { service: parts.vehicles, latest: parts.latestOf });
  await app.register(telemetryRoutes, { service: parts.telemetry });
  await app.register(historyRoutes, { service: parts.history });
  await app.register(apiKeyRoutes, { auth });
  await app.register(organizationRoutes, { auth });
  await app.register(peopleRoutes, { people: parts.people, publicUrl: config.publicUrl });
  await app.register(ssoRoutes, { sso: parts.sso, publicUrl: config.publicUrl });
  await app.register(auditRoutes, { store: deps.stores.audit });
  await app.register(groupRoutes, { service: parts.groups });
  await app.register(driverRoutes, { service: parts.drivers });
  await app.register(meterRoutes, { service: parts.meters });
  await app.register(maintenanceRoutes, { service: parts.maintenance });
  await app.register(summaryRoutes, { service: parts.summaries });
  await app.register(reportScheduleRoutes, { service: parts.reportSchedules });
  await app.register(deviceRoutes, { service: parts.devices });
  await app.register(deviceEndpointRoutes, { publicUrl: config.publicUrl, mqtt: config.mqtt, listeners: { mqtt, ...listeners } });
  await app.register(commandRoutes, { service: parts.commands });
  await app.register(osmandRoutes, { path: '/osmand', ingest: parts.protocolIngest, commands: parts.commands.link });
  await app.register(oauthRoutes, { oauth: parts.oauth, publicUrl: config.publicUrl });
  await app.register(streamRoutes, {
    service: streams, publicUrl: config.publicUrl,
    // Pages allowed to call the API may follow its stream URLs too.
    allowedOrigins: [...config.streams.allowedOrigins, ...config.cors.origins],
  });
  // The browser dashboard at `/`: static pages over the public API above.
  await app.register(dashboardPlugin, { publicUrl: config.publicUrl, tileUrl: config.dashboard.tileUrl });
}
