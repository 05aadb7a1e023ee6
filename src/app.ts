// buildApp wires the service together: cross-cutting plugins first, then each module. This is
// the one place that knows every part; each part knows only the few interfaces it is given.
import { randomUUID } from 'node:crypto';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import pkg from '../package.json' with { type: 'json' };
import { apiKeyRoutes } from './auth/keys-routes.ts';
import { createOAuthService } from './auth/oauth/clients.ts';
import { oauthRoutes } from './auth/oauth/routes.ts';
import { createAuthService } from './auth/service.ts';
import type { Bus } from './bus/bus.ts';
import { type ClusterOutbox, joinCluster } from './cluster/node.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import { dashboardPlugin } from './dashboard/plugin.ts';
import { authPlugin } from './http/auth.ts';
import { historyRoutes } from './history/routes.ts';
import { createHistoryService } from './history/service.ts';
import { type CheckState, healthRoutes } from './http/health.ts';
import { createMetricsRegistry, metricsPlugin } from './http/metrics.ts';
import { openapiPlugin } from './http/openapi.ts';
import { problemsPlugin } from './http/problems.ts';
import { rateLimitPlugin } from './http/rate-limit.ts';
import { lazyChildLogger } from './http/request-logger.ts';
import { validatorCompiler } from './http/validation.ts';
import { organizationRoutes } from './organizations/routes.ts';
import type { RateLimitStore } from './ratelimit/store.ts';
import type { Stores } from './storage/stores.ts';
import type { StreamDirectory } from './streams/directory.ts';
import { createStreamHub } from './streams/hub.ts';
import { streamRoutes } from './streams/routes.ts';
import type { StreamSettings } from './streams/settings.ts';
import { createSocketManager } from './streams/socket.ts';
import { createLatestView, summaryOf } from './telemetry/latest.ts';
import { createMqttIngestion } from './telemetry/mqtt.ts';
import { startRetention } from './telemetry/retention.ts';
import { telemetryRoutes } from './telemetry/routes.ts';
import { createTelemetryService } from './telemetry/service.ts';
import { vehicleRoutesV1 } from './vehicles/routes.v1.ts';
import { vehicleRoutesV2 } from './vehicles/routes.v2.ts';
import { createVehicleService } from './vehicles/service.ts';
import type { LatestLookup } from './vehicles/view.ts';

export const BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** One served route, as registered: what the security tests and the OpenAPI check walk over. */
export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
  scope: string | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: readonly RouteEntry[];
  }
}

export interface AppDeps {
  config: Config;
  stores: Stores;
  clock?: Clock;
  /** Overrides the logger built from config (tests pass a silent or capturing one). */
  logger?: FastifyServerOptions['loggerInstance'];
  metrics?: Registry;
  /** Rate-limit counters shared by several nodes (cluster mode) or a test; default: this process. */
  rateLimitStore?: RateLimitStore;
  /** Live-stream time limits and sizes (docs/API.md "Live streams"); tests shorten them. */
  streams?: Partial<StreamSettings>;
  /** Cluster mode: the bus to the other nodes, the directory of streams, and the state /readyz reports. */
  cluster?: { bus: Bus; directory: StreamDirectory; state(): CheckState };
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const clock = deps.clock ?? systemClock;
  const app = Fastify({
    ...(deps.logger === undefined
      ? {
          logger: {
            level: deps.config.logLevel,
            redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
          },
        }
      : { loggerInstance: deps.logger }),
    // Each request's child logger is made on its first line at an enabled level (request-logger.ts).
    childLoggerFactory: lazyChildLogger,
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    // A caller's X-Request-Id is kept when it is a sane token, so traces join up across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });

  app.setValidatorCompiler(validatorCompiler);
  // Only JSON bodies are accepted; anything else is answered 415.
  app.removeContentTypeParser('text/plain');
  // Hooks on every request are written callback-style: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
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

  const oauth = createOAuthService({
    store: deps.stores.oauth,
    clock,
    issuer: deps.config.publicUrl,
    tokenTtlSeconds: deps.config.oauth.tokenTtlSeconds,
    maxClients: deps.config.quotas.oauthClients,
    external: deps.config.oauth.external,
    findOrganization: (id) => deps.stores.auth.getOrganization(id),
  });
  // Set once every part exists: what this node does is then also sent to the other nodes.
  let cluster: ClusterOutbox | undefined;
  const auth = createAuthService({
    store: deps.stores.auth, clock, maxApiKeys: deps.config.quotas.apiKeys, verifyAccessToken: oauth.verifyAccessToken,
    onKeyRevoked: (keyId, lookupId) => cluster?.keyRevoked(keyId, lookupId),
  });
  const latest = createLatestView();
  // Live streams hear of every committed telemetry record (HTTP and MQTT alike) and status change.
  const streams = createStreamHub({
    vehicles: deps.stores.vehicles, latest, clock, maxStreams: deps.config.quotas.streams, settings: deps.streams,
    ...(deps.cluster === undefined ? {} : {
      cluster: {
        directory: deps.cluster.directory, node: deps.cluster.bus.node, log: app.log,
        announce: (event: 'taken' | 'ended', streamId: string) => cluster?.stream(event, streamId),
      },
    }),
  });
  const vehicles = createVehicleService({
    store: deps.stores.vehicles, clock, maxVehicles: deps.config.quotas.vehicles,
    onDeleted: (organizationId, vehicleId) => {
      latest.forget(organizationId, vehicleId);
      streams.forgetVehicle(organizationId, vehicleId);
      cluster?.vehicleDeleted(organizationId, vehicleId);
    },
    onStatusChanged: (organizationId, vehicleId, change) => {
      streams.statusChanged(organizationId, vehicleId, change);
      cluster?.statusChanged(organizationId, vehicleId, change);
    },
  });
  const telemetry = createTelemetryService({
    store: deps.stores.telemetry, vehicles: deps.stores.vehicles, latest, clock,
    events: {
      telemetry: (organizationId, records, states) => {
        streams.telemetry(organizationId, records, states);
        cluster?.telemetry(organizationId, records, states);
      },
      // The status change the store recorded with the first telemetry (each adapter's activation statement).
      activated: (organizationId, vehicleId, at) => {
        const change = { from: 'registered', to: 'active', reason: 'first telemetry', at } as const;
        streams.statusChanged(organizationId, vehicleId, change);
        cluster?.statusChanged(organizationId, vehicleId, change);
      },
    },
  });
  await telemetry.load();
  if (deps.cluster !== undefined) {
    cluster = joinCluster(deps.cluster.bus, { latest, streams, auth, reloadLatest: () => telemetry.load(), log: app.log });
  }
  const latestOf: LatestLookup = (organizationId, vehicleId) => {
    const state = latest.get(organizationId, vehicleId);
    return state === undefined ? undefined : summaryOf(state);
  };

  await app.register(problemsPlugin);
  const sockets = createSocketManager({ hub: streams, clock, log: app.log });
  // Before auth: its hooks must see every request, so that an upgrade refused by auth (a bad ticket,
  // a foreign origin) still has its socket closed after the error response.
  await app.register(websocket, {
    // Client messages over 64 KiB close the socket with 1009 (ws's default allows 100 MiB).
    options: { maxPayload: streams.settings.maxClientMessageBytes },
    // Shutdown closes every stream's socket with 1001 (the plugin's default sends no code).
    preClose: async () => {
      await sockets.closeAll(1001, 'server shutting down');
      streams.stop();
    },
    // ws closes the socket itself on protocol errors (1009 for a message too large, 1002): let it finish.
    errorHandler: (error, socket, request) => {
      request.log.debug({ err: error }, 'live stream socket error');
      if (socket.readyState === socket.OPEN) socket.close(1011, 'internal error');
    },
  });
  // auth first: its onRoute check must see every route registered after it.
  await app.register(authPlugin, { auth });
  // Right after auth: its onRequest hook needs the principal, and must refuse before any other work.
  await app.register(rateLimitPlugin, { config: deps.config.rateLimit, clock, store: deps.rateLimitStore });
  // After auth, whose onRoute hook settles each route's public/scope config first.
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      routeTable.push({ method, url: route.url, public: route.config?.public === true, scope: route.config?.scope });
    }
  });
  await app.register(openapiPlugin, { version: pkg.version });
  const metrics = deps.metrics ?? createMetricsRegistry();
  await app.register(metricsPlugin, { registry: metrics });
  // MQTT ingestion (own listener, existing broker, or off) over the same ingest function as HTTP.
  const mqtt = createMqttIngestion({ config: deps.config.mqtt, telemetry, auth, registry: metrics, log: app.log });
  await app.register(healthRoutes, {
    checks: {
      store: () => deps.stores.ping(),
      mqtt: () => mqtt.readiness(),
      cluster: async () => deps.cluster?.state() ?? 'disabled',
    },
  });
  await app.register(vehicleRoutesV2, { service: vehicles, latest: latestOf });
  await app.register(vehicleRoutesV1, { service: vehicles, latest: latestOf });
  await app.register(telemetryRoutes, { service: telemetry });
  await app.register(historyRoutes, { service: createHistoryService({ telemetry: deps.stores.telemetry, vehicles: deps.stores.vehicles }) });
  await app.register(apiKeyRoutes, { auth });
  await app.register(organizationRoutes, { auth });
  await app.register(oauthRoutes, { oauth, publicUrl: deps.config.publicUrl });
  await app.register(streamRoutes, {
    hub: streams, sockets, publicUrl: deps.config.publicUrl, allowedOrigins: deps.config.streams.allowedOrigins,
  });
  // The browser dashboard at `/`: static pages over the public API above.
  await app.register(dashboardPlugin, { publicUrl: deps.config.publicUrl, tileUrl: deps.config.dashboard.tileUrl });

  const retention = startRetention({
    store: deps.stores.telemetry, clock, days: deps.config.telemetry.retentionDays, log: app.log,
  });
  app.addHook('onReady', () => mqtt.start());
  // preClose: MQTT stops taking messages and answers those in hand while the store is still open.
  app.addHook('preClose', () => mqtt.stop());
  app.addHook('onClose', async () => {
    retention.stop();
    await telemetry.drain();
  });

  return app;
}
