// What reacts to what happened: every listener of the dispatcher, written once for an event of
// this node and one heard from another (docs/ARCHITECTURE.md "One event port"), and in cluster
// mode the bus to and from the other nodes.
import type { Registry } from 'prom-client';
import type { Bus } from '../bus/bus.ts';
import { clusterPort, joinCluster } from '../cluster/node.ts';
import type { Dispatcher } from '../events/dispatcher.ts';
import type { EventPort } from '../events/port.ts';
import { toEnvelope } from '../events/types.ts';
import { histogramIn } from '../metric.ts';
import type { Tracing } from '../tracing/tracing.ts';
import type { StatusChange } from '../vehicles/store.ts';
import type { Services } from './services.ts';

/** The port the parts are given: the dispatcher, and in cluster mode the bus to the other nodes after it. */
export function eventPort(dispatcher: Dispatcher, bus: Bus | undefined, tracing?: Tracing): EventPort {
  return bus === undefined ? dispatcher : clusterPort(dispatcher, bus, tracing);
}

/** What each event does on this node, whichever node it happened on. */
export function wireEvents(dispatcher: Dispatcher, parts: Services): void {
  const { streams, latest, ruleEngine, auth, people, deliveries, eventCounts } = parts;
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
      eventCounts.recorded(e.events);
      deliveries.wake();
    }
  });
  dispatcher.on('rulesChanged', (e) => ruleEngine.forget(e.organizationId));
  // A stream lives no longer than the credential that opened it.
  dispatcher.on('keyRevoked', (e) => {
    // The auth service that revoked it has forgotten it already.
    if (e.origin === 'remote') auth.forgetKey(e.keyId, e.lookupId);
    streams.credentialRevoked(e.keyId);
  });
  dispatcher.on('clientDeleted', (e) => streams.credentialRevoked(e.clientId));
  dispatcher.on('userChanged', (e) => {
    // The people service that changed the user has forgotten their sessions already.
    if (e.origin === 'remote') people.forgetUser(e.userId);
    if (e.signedOut) streams.credentialRevoked(e.userId);
    else if (e.accessChanged === true) streams.credentialChanged(e.userId);
  });
  dispatcher.on('membershipChanged', (e) => streams.membershipChanged(e.organizationId));
  // This node offered its own command to its channels as it queued it.
  dispatcher.on('commandQueued', (e) => {
    if (e.origin === 'remote') void parts.commands.offerQueued(e.organizationId, e.commandId).catch(() => undefined);
  });
  dispatcher.on('streamTaken', (e) => {
    if (e.origin === 'remote') streams.release(e.streamId);
  });
  dispatcher.on('streamEnded', (e) => {
    if (e.origin === 'remote') streams.endedElsewhere(e.streamId);
  });
}

/** Cluster mode: what the other nodes did enters the dispatcher; after a bus outage, this node's memory is rebuilt. */
export function followCluster(bus: Bus, dispatcher: Dispatcher, parts: Services, core: { metrics: Registry; log: { warn(obj: object, msg: string): void } }): void {
  const { ruleEngine, telemetry, streams } = parts;
  const busLag = histogramIn(core.metrics, {
    name: 'fleet_bus_lag_seconds', help: 'Time from another node publishing an event on the cluster bus to this node receiving it (the nodes\' clocks must agree: NTP).',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  });
  joinCluster(bus, {
    dispatcher, log: core.log, lag: (ms) => busLag.observe(ms / 1000),
    resync: async () => {
      ruleEngine.forget();
      await telemetry.load();
      streams.resnapshot();
      streams.rescope();
      await streams.recheckCredentials();
    },
  });
}
