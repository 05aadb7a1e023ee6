// One node of a cluster: what happens on this node goes out on the bus, and what the other nodes
// did comes in and enters this node's dispatcher as `remote`, where the same listeners as for
// local events keep its memory (latest state, live streams, credential caches) current.
// The database stays the one source of truth; the bus only keeps the memory of each node current.
import type { Bus, ClusterEvent } from '../bus/bus.ts';
import type { Dispatcher } from '../events/dispatcher.ts';
import { typesTouched } from '../streams/stream.ts';

export interface NodeParts {
  dispatcher: Dispatcher;
  /** Rebuilds what this node keeps in memory from the store, and resends streams their snapshot. */
  resync(): Promise<void>;
  log: { warn(obj: object, msg: string): void };
  /** Hears, for each event from another node, how long it took from its publication to here, ms. */
  lag?: (ms: number) => void;
}

export function joinCluster(bus: Bus, parts: NodeParts): void {
  const { dispatcher } = parts;
  bus.subscribe((event, _from, sentAt) => {
    // Clocks of two nodes differ by their NTP skew: a message can seem to arrive before it left.
    parts.lag?.(Math.max(0, Date.now() - sentAt));
    arrive(event);
  });
  bus.onResync(() => void resync());

  function arrive(event: ClusterEvent): void {
    const origin = 'remote' as const;
    switch (event.type) {
      case 'telemetry':
        return dispatcher.emit('telemetry', { origin, organizationId: event.organizationId, states: event.states, touched: event.touched });
      case 'events':
        return dispatcher.emit('recorded', { origin, events: event.events });
      case 'key-revoked':
        return dispatcher.emit('keyRevoked', { origin, keyId: event.keyId, lookupId: event.lookupId });
      case 'client-deleted':
        return dispatcher.emit('clientDeleted', { origin, clientId: event.clientId });
      case 'stream-taken':
        return dispatcher.emit('streamTaken', { origin, streamId: event.streamId, node: event.node });
      case 'stream-ended':
        return dispatcher.emit('streamEnded', { origin, streamId: event.streamId });
      case 'rules-changed':
        return dispatcher.emit('rulesChanged', { origin, organizationId: event.organizationId });
    }
  }

  // What this node did, sent on to the others.
  dispatcher.on('telemetry', (e) => {
    if (e.origin !== 'local') return;
    const touched = typesTouched(e.records);
    bus.publish({ type: 'telemetry', organizationId: e.organizationId, states: [...e.states], touched: e.states.map((s) => touched.get(s.vehicleId) ?? 0) });
  });
  dispatcher.on('recorded', (e) => {
    if (e.origin === 'local') bus.publish({ type: 'events', events: [...e.events] });
  });
  dispatcher.on('keyRevoked', (e) => {
    if (e.origin === 'local') bus.publish({ type: 'key-revoked', keyId: e.keyId, lookupId: e.lookupId });
  });
  dispatcher.on('clientDeleted', (e) => {
    if (e.origin === 'local') bus.publish({ type: 'client-deleted', clientId: e.clientId });
  });
  dispatcher.on('streamTaken', (e) => {
    if (e.origin === 'local') bus.publish({ type: 'stream-taken', streamId: e.streamId, node: bus.node });
  });
  dispatcher.on('streamEnded', (e) => {
    if (e.origin === 'local') bus.publish({ type: 'stream-ended', streamId: e.streamId });
  });
  dispatcher.on('rulesChanged', (e) => {
    if (e.origin === 'local') bus.publish({ type: 'rules-changed', organizationId: e.organizationId });
  });

  let resyncing: Promise<void> | undefined;
  /**
   * Events were lost: read the latest state back from the store, then send streams a snapshot;
   * streams whose credential was revoked meanwhile end.
   */
  async function resync(): Promise<void> {
    if (resyncing !== undefined) return resyncing;
    resyncing = (async () => {
      try {
        await parts.resync();
      } catch (error) {
        parts.log.warn({ err: error }, 'cluster: could not reload the latest state after a bus outage; it will be retried at the next one');
      } finally {
        resyncing = undefined;
      }
    })();
    return resyncing;
  }
}
