// The parts of the service, each made from the few interfaces it uses. Each part that causes
// events is given the one event port and says what happened itself; what reacts is wired in
// events.ts, the HTTP side in http.ts, starting and stopping in lifecycle.ts.
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import { createOAuthService } from '../auth/oauth/clients.ts';
import { createAuthService } from '../auth/service.ts';
import type { Clock } from '../clock.ts';
import { createCommandService } from '../commands/service.ts';
import { createDeviceService } from '../devices/service.ts';
import { createFeedService } from '../events/feed.ts';
import { eventMetrics } from '../events/metrics.ts';
import type { EventPort } from '../events/port.ts';
import { startEventRetention } from '../events/retention.ts';
import { createHistoryService } from '../history/service.ts';
import { registerReading } from '../http/metrics.ts';
import { createDeviceGuard } from '../protocols/guard.ts';
import { createProtocolIngest } from '../protocols/ingest.ts';
import { startPeopleCleanup } from '../people/cleanup.ts';
import { startAuditRetention } from '../audit/retention.ts';
import { createGroupService } from '../groups/service.ts';
import { createDriverService } from '../drivers/service.ts';
import { createMeterService } from '../meters/service.ts';
import { createMaintenanceService } from '../maintenance/service.ts';
import { startMaintenanceChecks } from '../maintenance/check.ts';
import { summaryServiceOf } from '../reports/summary.ts';
import { startRollupRepairs } from '../reports/repair.ts';
import { createReportScheduleService } from '../reports/schedules/service.ts';
import { startReportChecks } from '../reports/schedules/check.ts';
import { createVehicleScope } from '../groups/scope.ts';
import { DEFAULT_PEOPLE_SETTINGS, createPeopleService } from '../people/service.ts';
import { osmandChannel } from '../protocols/osmand/commands.ts';
import { createOsmandListener } from '../protocols/osmand/listener.ts';
import { createTeltonikaListener } from '../protocols/teltonika/listener.ts';
import { createRuleEngine } from '../rules/engine.ts';
import { startOfflineChecks } from '../rules/offline.ts';
import { createRulesService } from '../rules/service.ts';
import { createGeofenceService } from '../geofences/service.ts';
import { createSsoService } from '../sso/service.ts';
import { createStreamService } from '../streams/service.ts';
import { createLatestView, summaryOf } from '../telemetry/latest.ts';
import { createMqttIngestion } from '../telemetry/mqtt.ts';
import { startRetention } from '../telemetry/retention.ts';
import { createTelemetryService } from '../telemetry/service.ts';
import { createVehicleService } from '../vehicles/service.ts';
import type { LatestLookup } from '../vehicles/view.ts';
import { createThreadedOutbound } from '../webhooks/outbound.ts';
import { DEFAULT_PACING, createPacing } from '../webhooks/pacing.ts';
import { createWebhookService } from '../webhooks/service.ts';
import { DEFAULT_DELIVERY_SETTINGS, createDeliveryWorker } from '../webhooks/worker.ts';
import type { AppDeps } from './deps.ts';

export type Services = Awaited<ReturnType<typeof createServices>>;

export async function createServices(deps: AppDeps, core: { clock: Clock; events: EventPort; log: FastifyBaseLogger; metrics: Registry }) {
  const { config, stores } = deps;
  const { clock, events, log, metrics } = core;
  const eventCounts = eventMetrics(metrics);

  const oauth = createOAuthService({
    store: stores.oauth,
    clock,
    issuer: config.publicUrl,
    tokenTtlSeconds: config.oauth.tokenTtlSeconds,
    maxClients: config.quotas.oauthClients,
    external: config.oauth.external,
    findOrganization: (id) => stores.auth.getOrganization(id),
    events,
  });
  const auth = createAuthService({
    store: stores.auth, clock, maxApiKeys: config.quotas.apiKeys, verifyAccessToken: oauth.verifyAccessToken, events,
  });
  const peopleSettings = { ...DEFAULT_PEOPLE_SETTINGS, publicUrl: config.publicUrl, idleMs: config.sessions.idleMinutes * 60_000 };
  const people = createPeopleService({ store: stores.people, organizations: stores.auth, clock, events, settings: peopleSettings });
  const peopleCleanup = startPeopleCleanup({ store: stores.people, clock, settings: peopleSettings, log });
  const auditRetention = startAuditRetention({ store: stores.audit, clock, retentionDays: config.audit.retentionDays, log });
  const sso = createSsoService({
    store: stores.sso, people, clock, publicUrl: config.publicUrl, allowPrivate: config.sso.allowPrivate,
  });
  /**
   * Whether the credential a stream was created with still stands: an API key not revoked or
   * expired, an OAuth client not deleted (its token's own expiry is the stream's), a user still
   * active (the session's own expiry is the stream's). An external
   * identity provider's credentials are not known here: their tokens' expiry bounds them.
   */
  async function credentialLive(organizationId: string, credentialId: string): Promise<boolean> {
    if (credentialId.startsWith('key_')) return auth.keyLive(organizationId, credentialId);
    if (credentialId.startsWith('oc_')) return oauth.clientLive(organizationId, credentialId);
    if (credentialId.startsWith('usr_')) return people.userLive(organizationId, credentialId);
    return true;
  }

  const latest = createLatestView();
  const latestOf: LatestLookup = (organizationId, vehicleId) => {
    const state = latest.get(organizationId, vehicleId);
    return state === undefined ? undefined : summaryOf(state);
  };
  const streams = createStreamService({
    vehicles: stores.vehicles, groups: stores.groups, latest, clock, maxStreams: config.quotas.streams, settings: deps.streams, log, credentialLive,
    ...(deps.cluster === undefined ? {} : { cluster: { directory: deps.cluster.directory, node: deps.cluster.bus.node, log, events } }),
  });
  const ruleEngine = createRuleEngine({ store: stores.rules, trips: config.rules.tripEvents });
  const groups = createGroupService({ store: stores.groups, clock, maxGroups: config.quotas.groups, events });
  const vehicleScope = createVehicleScope(stores.groups);
  const drivers = createDriverService({ store: stores.drivers, clock, maxDrivers: config.quotas.drivers, events, scope: vehicleScope });
  const meters = createMeterService({ store: stores.meters, vehicles: stores.vehicles, clock });
  const maintenance = createMaintenanceService({
    store: stores.maintenance, vehicles: stores.vehicles, groups: stores.groups, scope: vehicleScope, clock, events, maxSchedules: config.quotas.maintenanceSchedules,
  });
  const maintenanceChecks = startMaintenanceChecks({
    store: stores.maintenance, service: maintenance, clock, log, intervalMs: config.maintenance.checkSeconds * 1000,
  });
  const summaries = summaryServiceOf(stores, vehicleScope.assertSees);
  const rollupRepairs = startRollupRepairs({ store: stores.rollups, log });
  const reportSchedules = createReportScheduleService({
    store: stores.reportSchedules, groups: stores.groups, summaries, clock, events, maxSchedules: config.quotas.reportSchedules,
  });
  const reportChecks = startReportChecks({
    store: stores.reportSchedules, service: reportSchedules, clock, log, intervalMs: config.reports.checkSeconds * 1000,
  });
  const vehicles = createVehicleService({
    store: stores.vehicles, clock, maxVehicles: config.quotas.vehicles, latest: latestOf, events,
  });
  const telemetry = createTelemetryService({
    store: stores.telemetry, vehicles: stores.vehicles, latest, clock, registry: metrics, events, rules: ruleEngine, scope: vehicleScope, tracing: deps.tracing,
  });
  await telemetry.load();
  const rules = createRulesService({ store: stores.rules, clock, maxRules: config.quotas.alertRules, events, scope: vehicleScope });
  const geofences = createGeofenceService({
    store: stores.rules, clock, quota: { geofences: config.quotas.geofences, vertices: config.quotas.geofenceVertices }, rulesUsing: rules.rulesUsingGeofence, events, scope: vehicleScope,
  });
  const offline = startOfflineChecks({
    store: stores.rules, vehicles: stores.vehicles, clock, events, log, intervalMs: deps.offlineCheckMs ?? config.rules.offlineCheckSeconds * 1000,
    lastTelemetry: (organizationId, vehicleId) => latest.get(organizationId, vehicleId)?.timestamp,
  });

  // Deliveries' HTTP on a thread of its own: off the event loop that serves requests.
  const outbound = createThreadedOutbound({ allowPrivate: config.webhooks.allowPrivate, timeoutMs: 10_000 });
  // While requests keep the event loop busy, the worker's part of it is capped (pacing.ts): on the
  // embedded store, whose work is all on this loop.
  const pacing = stores.webhooks.onEventLoop ? createPacing(DEFAULT_PACING) : undefined;
  const deliveries = createDeliveryWorker({
    store: stores.webhooks, outbound, clock, log, settings: { ...DEFAULT_DELIVERY_SETTINGS, endpointConcurrency: config.webhooks.endpointConcurrency, ...deps.webhooks },
    attempted: (result) => eventCounts.attempted(result), pacing,
  });
  const webhooks = createWebhookService({
    store: stores.webhooks, clock, maxPerOrganization: config.quotas.webhooks,
    allowPrivate: config.webhooks.allowPrivate, wake: deliveries.wake,
  });

  // Counts the parts keep as plain numbers on their hot paths, read at each scrape.
  registerReading(metrics, { name: 'fleet_streams_open', type: 'gauge', help: 'Live streams this node holds that are open (attached or waiting for a socket).' },
    () => streams.openStreams());
  registerReading(metrics, { name: 'fleet_stream_sockets', type: 'gauge', help: 'WebSockets attached to live streams on this node.' },
    () => streams.stats().sockets);
  registerReading(metrics, { name: 'fleet_stream_messages_sent_total', type: 'counter', help: 'Messages sent on live-stream WebSockets by this node.' },
    () => streams.stats().messagesSent);
  const { replica } = stores;
  if (replica !== undefined) {
    registerReading(metrics, { name: 'fleet_database_replica_lag_seconds', type: 'gauge', help: 'How far the read replica (FLEET_DATABASE_READ_URL) was behind the primary at the last measure, seconds; NaN while it cannot be reached.' },
      () => (replica.lagMs() ?? Number.NaN) / 1000);
    registerReading(metrics, { name: 'fleet_database_reads_on_replica', type: 'gauge', help: '1 while the reads that may lag go to the read replica, 0 while they go to the primary.' },
      () => (replica.onReplica() ? 1 : 0));
  }
  registerReading(metrics, {
    name: 'fleet_alert_evaluations_total', type: 'counter',
    help: 'Telemetry records judged against their organization\'s alert rules and geofences, in the commits of this node.',
  }, () => ruleEngine.evaluations());

  // Commands to devices: the service, and each protocol's channel attached to it below.
  const commands = createCommandService({
    store: stores.commands, vehicles: stores.vehicles, devices: stores.devices, clock, events, scope: vehicleScope,
    timeoutMs: config.commands.timeoutSeconds * 1000, log,
    // The node holding the device's connection sends it: every node is told, and takes it only if it is still queued.
    ...(deps.cluster === undefined ? {} : {
      announce: (command) => events.emit('commandQueued', { organizationId: command.organizationId, commandId: command.id }),
      ...(deps.cluster.presence === undefined ? {} : { presence: deps.cluster.presence }),
    }),
  });
  commands.attach(osmandChannel);
  // MQTT ingestion (own listener, existing broker, or off) over the same ingest function as HTTP.
  const mqtt = createMqttIngestion({
    config: config.mqtt, telemetry, auth, registry: metrics, log, commands: { link: commands.link, mayUse: commands.deviceMayUse },
  });
  if (mqtt.channel !== undefined) commands.attach(mqtt.channel);
  // Device protocols, over the same ingest function again; each listener acknowledges only what
  // this node committed, so in cluster mode a device may send to any node.
  const devices = createDeviceService({
    store: stores.devices, clock, maxDevices: config.quotas.devices, scope: vehicleScope, onFlushError: (error) => log.warn({ err: error }, 'device last-seen times not written; kept for the next try'),
  });
  const { protocols, devicePorts } = config;
  // One allowance of unknown identifiers per address across every device entry point.
  const deviceGuard = createDeviceGuard({ settings: devicePorts, clock, registry: metrics });
  const protocolIngest = createProtocolIngest({ devices, telemetry, guard: deviceGuard });
  const listeners = {
    osmand: protocols.osmandPort === 0 ? undefined : createOsmandListener({
      host: protocols.host, port: protocols.osmandPort, timeouts: config.http.timeouts, ingest: protocolIngest, commands: commands.link,
      log: log.child({ component: 'osmand' }),
    }),
    teltonika: protocols.teltonikaPort === 0 ? undefined : createTeltonikaListener({
      host: protocols.host, port: protocols.teltonikaPort, idleMs: protocols.teltonikaIdleMs, limits: devicePorts,
      registry: metrics, ingest: protocolIngest, commands: commands.link, log: log.child({ component: 'teltonika' }),
    }),
  };
  if (listeners.teltonika?.channel !== undefined) commands.attach(listeners.teltonika.channel);

  const retention = startRetention({
    store: stores.telemetry, clock, days: config.telemetry.retentionDays, log,
  });
  const eventRetention = startEventRetention({
    events: stores.events, deliveries: stores.webhooks, clock, days: config.events.retentionDays, log,
  });

  return {
    oauth, auth, people, sso, latest, latestOf, streams, ruleEngine, vehicles, telemetry, rules, geofences, offline,
    eventCounts, outbound, pacing, deliveries, webhooks,
    feed: createFeedService({ store: stores.events }),
    history: createHistoryService({ telemetry: stores.telemetry, vehicles: stores.vehicles, drivers: stores.drivers }),
    mqtt, devices, protocolIngest, deviceGuard, listeners, commands, retention, eventRetention, peopleCleanup, auditRetention, groups, drivers, meters, maintenance, maintenanceChecks, vehicleScope,
    summaries, rollupRepairs, reportSchedules, reportChecks,
  };
}
