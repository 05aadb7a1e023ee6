// buildApp wires the service together: cross-cutting plugins first, then each module. This is
// the one place that knows every part; each part knows only the few interfaces it is given.
import { randomUUID } from 'node:crypto';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import { histogramIn } from './metric.ts';
import pkg from '../package.json' with { type: 'json' };
import { apiKeyRoutes } from './auth/keys-routes.ts';
import { createOAuthService } from './auth/oauth/clients.ts';
import { oauthRoutes } from './auth/oauth/routes.ts';
import { createAuthService } from './auth/service.ts';
import type { Bus } from './bus/bus.ts';
import { clusterPort, joinCluster } from './cluster/node.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import { dashboardPlugin } from './dashboard/plugin.ts';
import { deviceRoutes } from './devices/routes.ts';
import { createDeviceService } from './devices/service.ts';
import { createDispatcher } from './events/dispatcher.ts';
import { createFeedService } from './events/feed.ts';
import { eventMetrics } from './events/metrics.ts';
import { startEventRetention } from './events/retention.ts';
import { eventRoutes } from './events/routes.ts';
import { toEnvelope } from './events/types.ts';
import { authPlugin } from './http/auth.ts';
import { historyRoutes } from './history/routes.ts';
import { createHistoryService } from './history/service.ts';
import { corsPlugin } from './http/cors.ts';
import { healthRoutes } from './http/health.ts';
import { createMetricsRegistry, metricsPlugin, registerReading } from './http/metrics.ts';
import { openapiPlugin } from './http/openapi.ts';
import { overloadPlugin } from './http/overload.ts';
import { rateLimitPlugin } from './http/rate-limit.ts';
import { secretResponsesPlugin } from './http/secrets.ts';
import { RequestLogController, lazyChildLogger, serializeRequest } from './http/request-logger.ts';
import { shutdownArrivalsPlugin, timeoutOptions } from './http/timeouts.ts';
import { organizationRoutes } from './organizations/routes.ts';
import { createProtocolIngest } from './protocols/ingest.ts';
import { createDeviceGuard } from './protocols/guard.ts';
import { createOsmandListener } from './protocols/osmand/listener.ts';
import { osmandRoutes } from './protocols/osmand/routes.ts';
import { createTeltonikaListener } from './protocols/teltonika/listener.ts';
import type { RateLimitStore } from './ratelimit/store.ts';
import type { CheckState } from './readiness.ts';
import { addNamedSchemas } from './schema/named.ts';
import { clientErrorHandler, frameworkErrorHandler, problemsPlugin } from './schema/problems.ts';
import { serializerCompiler } from './schema/serializer.ts';
import { validatorCompiler } from './schema/validation.ts';
import type { Stores } from './storage/stores.ts';
import type { StreamDirectory } from './streams/directory.ts';
import { streamRoutes } from './streams/routes.ts';
import { type EventEnvelope, type StreamService, createStreamService } from './streams/service.ts';
import type { StreamSettings } from './streams/settings.ts';
import { createLatestView, summaryOf } from './telemetry/latest.ts';
import { createMqttIngestion } from './telemetry/mqtt.ts';
import { startRetention } from './telemetry/retention.ts';
import { telemetryRoutes } from './telemetry/routes.ts';
import { createRuleEngine } from './rules/engine.ts';
import { startOfflineChecks } from './rules/offline.ts';
import { rulesRoutes } from './rules/routes.ts';
import { createRulesService } from './rules/service.ts';
import { createTelemetryService } from './telemetry/service.ts';
import { vehicleRoutesV1 } from './vehicles/routes.v1.ts';
import { vehicleRoutesV2 } from './vehicles/routes.v2.ts';
import { createVehicleService } from './vehicles/service.ts';
import type { StatusChange } from './vehicles/store.ts';
import type { LatestLookup } from './vehicles/view.ts';
import { createThreadedOutbound } from './webhooks/outbound.ts';
import { DEFAULT_PACING, createPacing } from './webhooks/pacing.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { createWebhookService } from './webhooks/service.ts';
import { DEFAULT_DELIVERY_SETTINGS, type DeliverySettings, createDeliveryWorker } from './webhooks/worker.ts';

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
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: readonly RouteEntry[];
    /**
     * Live streams' entry for recorded events (docs/API.md "Live streams": the `events` type): the
     * event core calls it for every event, recorded on this node or heard from another.
     */
    streamEvent: StreamService['event'];
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
  /** How often the offline alert check runs, ms; tests shorten it below the configured whole seconds. */
  offlineCheckMs?: number;
  /** Webhook delivery timing (retry delays, leases, polling); tests shorten them. */
  webhooks?: Partial<DeliverySettings>;
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

  // Every part says what happened through the dispatcher; whatever reacts subscribes below. In
  // cluster mode each event is then sent to the other nodes.
  const dispatcher = createDispatcher(app.log);
  const events = deps.cluster === undefined ? dispatcher : clusterPort(dispatcher, deps.cluster.bus);
  const oauth = createOAuthService({
    store: deps.stores.oauth,
    clock,
    issuer: deps.config.publicUrl,
    tokenTtlSeconds: deps.config.oauth.tokenTtlSeconds,
    maxClients: deps.config.quotas.oauthClients,
    external: deps.config.oauth.external,
    findOrganization: (id) => deps.stores.auth.getOrganization(id),
    events,
  });
  const metrics = deps.metrics ?? createMetricsRegistry();
  const counted = eventMetrics(metrics);
  const auth = createAuthService({
    store: deps.stores.auth, clock, maxApiKeys: deps.config.quotas.apiKeys, verifyAccessToken: oauth.verifyAccessToken,
    events,
  });
  const latest = createLatestView();
  const latestOf: LatestLookup = (organizationId, vehicleId) => {
    const state = latest.get(organizationId, vehicleId);
    return state === undefined ? undefined : summaryOf(state);
  };
  const streams = createStreamService({
    vehicles: deps.stores.vehicles, latest, clock, maxStreams: deps.config.quotas.streams, settings: deps.streams, log: app.log,
    credentialLive: (organizationId, credentialId) => credentialLive(organizationId, credentialId),
    ...(deps.cluster === undefined ? {} : {
      cluster: { directory: deps.cluster.directory, node: deps.cluster.bus.node, log: app.log, events },
    }),
  });
  const ruleEngine = createRuleEngine({ store: deps.stores.rules, trips: deps.config.rules.tripEvents });
  /**
   * Whether the credential a stream was created with still stands: an API key not revoked or
   * expired, an OAuth client not deleted (its token's own expiry is the stream's). An external
   * identity provider's credentials are not known here: their tokens' expiry bounds them.
   */
  async function credentialLive(organizationId: string, credentialId: string): Promise<boolean> {
    if (credentialId.startsWith('key_')) return auth.keyLive(organizationId, credentialId);
    if (credentialId.startsWith('oc_')) return oauth.clientLive(organizationId, credentialId);
    return true;
  }
  const vehicles = createVehicleService({
    store: deps.stores.vehicles, clock, maxVehicles: deps.config.quotas.vehicles, latest: latestOf, events,
  });
  const telemetry = createTelemetryService({
    store: deps.stores.telemetry, vehicles: deps.stores.vehicles, latest, clock, registry: metrics,
    events,
    rules: ruleEngine,
  });
  await telemetry.load();
  const rules = createRulesService({
    store: deps.stores.rules, clock, quota: { geofences: deps.config.quotas.geofences, vertices: deps.config.quotas.geofenceVertices }, maxRules: deps.config.quotas.alertRules, events,
  });
  const offline = startOfflineChecks({
    store: deps.stores.rules, vehicles: deps.stores.vehicles, clock, events, log: app.log, intervalMs: deps.offlineCheckMs ?? deps.config.rules.offlineCheckSeconds * 1000,
    lastTelemetry: (organizationId, vehicleId) => latest.get(organizationId, vehicleId)?.timestamp,
  });

  // Deliveries' HTTP on a thread of its own: off the event loop that serves requests.
  const outbound = createThreadedOutbound({ allowPrivate: deps.config.webhooks.allowPrivate, timeoutMs: 10_000 });
  // While requests keep the event loop busy, the worker's part of it is capped (pacing.ts): on the
  // embedded store, whose work is all on this loop.
  const pacing = deps.stores.webhooks.onEventLoop ? createPacing(DEFAULT_PACING) : undefined;
  const deliveries = createDeliveryWorker({
    store: deps.stores.webhooks, outbound, clock, log: app.log, settings: { ...DEFAULT_DELIVERY_SETTINGS, endpointConcurrency: deps.config.webhooks.endpointConcurrency, ...deps.webhooks },
    attempted: (result) => counted.attempted(result), pacing,
  });
  const webhooks = createWebhookService({
    store: deps.stores.webhooks, clock, maxPerOrganization: deps.config.quotas.webhooks,
    allowPrivate: deps.config.webhooks.allowPrivate, wake: deliveries.wake,
  });

  // What a commit on this node or another does to this node's memory, written once.
  dispatcher.on('telemetry', (e) => {
    if (e.origin === 'local') streams.telemetry(e.organizationId, e.records, e.states);
    else streams.remoteTelemetry(e.organizationId, e.states.map((state) => latest.merge(state)), e.touched);
  });
  dispatcher.on('recorded', (e) => {
    for (const event of e.events) {
      if (event.vehicleId === null) continue;
      // Streams subscribed to `events` carry every event of their vehicles, never conflated.
      streams.event(event.organizationId, { ...toEnvelope(event), vehicleId: event.vehicleId });
      if (event.type === 'vehicle.status_changed') {
        const { from, to, reason } = event.data as Pick<StatusChange, 'from' | 'to' | 'reason'>;
        streams.statusChanged(event.organizationId, event.vehicleId, { from, to, reason, at: event.occurredAt });
      } else if (event.type === 'vehicle.deleted') {
        latest.forget(event.organizationId, event.vehicleId);
        streams.forgetVehicle(event.organizationId, event.vehicleId);
      }
    }
    // Webhooks read the log itself; a local commit only means there is something to read now.
    if (e.origin === 'local') {
      counted.recorded(e.events);
      deliveries.wake();
    }
  });
  dispatcher.on('rulesChanged', (e) => ruleEngine.forget(e.organizationId));
  dispatcher.on('keyRevoked', (e) => {
    if (e.origin === 'remote') auth.forgetKey(e.keyId, e.lookupId);
    streams.credentialRevoked(e.keyId);
  });
  dispatcher.on('clientDeleted', (e) => streams.credentialRevoked(e.clientId));
  dispatcher.on('streamTaken', (e) => {
    if (e.origin === 'remote') streams.release(e.streamId);
  });
  dispatcher.on('streamEnded', (e) => {
    if (e.origin === 'remote') streams.endedElsewhere(e.streamId);
  });
  // Counts the parts keep as plain numbers on their hot paths, read at each scrape.
  registerReading(metrics, { name: 'fleet_streams_open', type: 'gauge', help: 'Live streams this node holds that are open (attached or waiting for a socket).' },
    () => streams.openStreams());
  registerReading(metrics, { name: 'fleet_stream_sockets', type: 'gauge', help: 'WebSockets attached to live streams on this node.' },
    () => streams.stats().sockets);
  registerReading(metrics, { name: 'fleet_stream_messages_sent_total', type: 'counter', help: 'Messages sent on live-stream WebSockets by this node.' },
    () => streams.stats().messagesSent);
  registerReading(metrics, {
    name: 'fleet_alert_evaluations_total', type: 'counter',
    help: 'Telemetry records judged against their organization\'s alert rules and geofences, in the commits of this node.',
  }, () => ruleEngine.evaluations());
  if (deps.cluster !== undefined) {
    const busLag = histogramIn(metrics, {
      name: 'fleet_bus_lag_seconds', help: 'Time from another node publishing an event on the cluster bus to this node receiving it (the nodes\' clocks must agree: NTP).',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    });
    joinCluster(deps.cluster.bus, {
      dispatcher, log: app.log, lag: (ms) => busLag.observe(ms / 1000),
      resync: async () => {
        ruleEngine.forget();
        await telemetry.load();
        streams.resnapshot();
        await streams.recheckCredentials();
      },
    });
  }

  await app.register(problemsPlugin);
  // First of the request hooks: a preflight is answered before any credential is asked for, and
  // every later refusal (401, 429, 503) already carries the CORS headers.
  await app.register(corsPlugin, { origins: deps.config.cors.origins });
  // Next: an overloaded process refuses at once, before any work is spent on the request.
  await app.register(overloadPlugin, { config: deps.config.overload });
  await app.register(shutdownArrivalsPlugin, { requestMs: deps.config.http.timeouts.requestMs });
  app.decorate('streamEvent', (organizationId: string, envelope: EventEnvelope) => streams.event(organizationId, envelope));
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
  // auth first: its onRoute check must see every route registered after it.
  await app.register(authPlugin, { auth });
  // Before every route: routes flagged `secret` get their no-store hook as they are added.
  await app.register(secretResponsesPlugin);
  // Right after auth: its onRequest hook needs the principal, and must refuse before any other work.
  await app.register(rateLimitPlugin, { config: deps.config.rateLimit, clock, store: deps.rateLimitStore });
  // After auth, whose onRoute hook settles each route's public/scope config first.
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      routeTable.push({
        method, url: route.url, public: route.config?.public === true, scope: route.config?.scope, secret: route.config?.secret === true,
      });
    }
  });
  await app.register(openapiPlugin, { version: pkg.version, publicUrl: deps.config.publicUrl });
  await app.register(metricsPlugin, { registry: metrics });
  // MQTT ingestion (own listener, existing broker, or off) over the same ingest function as HTTP.
  const mqtt = createMqttIngestion({ config: deps.config.mqtt, telemetry, auth, registry: metrics, log: app.log });
  // Device protocols, over the same ingest function again; each listener acknowledges only what
  // this node committed, so in cluster mode a device may send to any node.
  const devices = createDeviceService({
    store: deps.stores.devices, clock, maxDevices: deps.config.quotas.devices, onFlushError: (error) => app.log.warn({ err: error }, 'device last-seen times not written; kept for the next try'),
  });
  const protocolIngest = createProtocolIngest({ devices, telemetry });
  const { protocols, devicePorts } = deps.config;
  // One allowance of unknown identifiers per address across every device entry point.
  const deviceGuard = createDeviceGuard({ settings: devicePorts, clock, registry: metrics });
  const listeners = {
    osmand: protocols.osmandPort === 0 ? undefined : createOsmandListener({
      host: protocols.host, port: protocols.osmandPort, timeouts: deps.config.http.timeouts, ingest: protocolIngest, guard: deviceGuard,
      log: app.log.child({ component: 'osmand' }),
    }),
    teltonika: protocols.teltonikaPort === 0 ? undefined : createTeltonikaListener({
      host: protocols.host, port: protocols.teltonikaPort, idleMs: protocols.teltonikaIdleMs, limits: devicePorts, guard: deviceGuard,
      registry: metrics, ingest: protocolIngest, log: app.log.child({ component: 'teltonika' }),
    }),
  };
  await app.register(healthRoutes, {
    checks: {
      store: () => deps.stores.ping(),
      mqtt: () => mqtt.readiness(),
      osmand: async () => (await listeners.osmand?.readiness()) ?? 'disabled',
      teltonika: async () => (await listeners.teltonika?.readiness()) ?? 'disabled',
      cluster: async () => deps.cluster?.state() ?? 'disabled',
    },
  });
  await app.register(vehicleRoutesV2, { service: vehicles, latest: latestOf });
  await app.register(eventRoutes, { feed: createFeedService({ store: deps.stores.events }) });
  await app.register(webhookRoutes, { service: webhooks });
  await app.register(rulesRoutes, { service: rules, vehicles });
  await app.register(vehicleRoutesV1, { service: vehicles, latest: latestOf });
  await app.register(telemetryRoutes, { service: telemetry });
  await app.register(historyRoutes, { service: createHistoryService({ telemetry: deps.stores.telemetry, vehicles: deps.stores.vehicles }) });
  await app.register(apiKeyRoutes, { auth });
  await app.register(organizationRoutes, { auth });
  await app.register(deviceRoutes, { service: devices });
  await app.register(osmandRoutes, { path: '/osmand', ingest: protocolIngest, guard: deviceGuard });
  await app.register(oauthRoutes, { oauth, publicUrl: deps.config.publicUrl });
  await app.register(streamRoutes, {
    service: streams, publicUrl: deps.config.publicUrl,
    // Pages allowed to call the API may follow its stream URLs too.
    allowedOrigins: [...deps.config.streams.allowedOrigins, ...deps.config.cors.origins],
  });
  // The browser dashboard at `/`: static pages over the public API above.
  await app.register(dashboardPlugin, { publicUrl: deps.config.publicUrl, tileUrl: deps.config.dashboard.tileUrl });

  const retention = startRetention({
    store: deps.stores.telemetry, clock, days: deps.config.telemetry.retentionDays, log: app.log,
  });
  const eventRetention = startEventRetention({
    events: deps.stores.events, deliveries: deps.stores.webhooks, clock, days: deps.config.events.retentionDays, log: app.log,
  });
  app.addHook('onReady', async () => {
    await Promise.all([mqtt.start(), listeners.osmand?.start(), listeners.teltonika?.start()]);
    deliveries.start();
    void offline.runOnce();
  });
  // preClose: MQTT and the device listeners stop taking messages and answer those in hand while
  // the store is still open.
  app.addHook('preClose', async () => {
    await Promise.all([mqtt.stop(), listeners.osmand?.stop(), listeners.teltonika?.stop()]);
  });
  app.addHook('onClose', async () => {
    retention.stop();
    eventRetention.stop();
    offline.stop();
    await deliveries.stop();
    pacing?.close();
    await outbound.close();
    await telemetry.drain();
    await devices.stop();
  });

  return app;
}
