// One node of a cluster: what happens on this node goes out on the bus, and what the other nodes
// did comes in and enters this node's dispatcher as `remote`, where the same listeners as for
// local events keep its memory (latest state, live streams, credential caches) current.
// The database stays the one source of truth; the bus only keeps the memory of each node current.
import type { Bus, ClusterEvent } from '../bus/bus.ts';
import type { Dispatcher } from '../events/dispatcher.ts';
import type { EventName, EventPort, FleetEvents, RemoteForms } from '../events/port.ts';
import { typesTouched } from '../streams/stream.ts';
import type { Tracing } from '../tracing/tracing.ts';

/** How each event of RemoteForms is sent: what another node needs of it. */
const remoteForms: { [K in keyof RemoteForms]: (event: FleetEvents[K]) => RemoteForms[K] } = {
  telemetry: ({ organizationId, records, states }) => {
    const touched = typesTouched(records);
    return { organizationId, states, touched: states.map((s) => touched.get(s.vehicleId) ?? 0) };
  },
};

/** An event as it crosses the bus: named by `type`, in its remote form. */
function toWire<K extends EventName>(name: K, event: FleetEvents[K]): ClusterEvent {
  const form = (remoteForms as Partial<Record<EventName, (event: never) => object>>)[name];
  return { type: name, ...(form === undefined ? event : form(event as never)) } as ClusterEvent;
}

/** The port of a cluster's node: each event is dispatched on this node, then sent to the others. */
export function clusterPort(dispatcher: EventPort, bus: Bus, tracing?: Tracing): EventPort {
  return {
    emit(name, event) {
      dispatcher.emit(name, event);
      const span = tracing?.child('bus publish', { 'messaging.system': 'redis', 'messaging.operation.type': 'send', 'fleet.event': name });
      bus.publish(toWire(name, event));
      span?.end();
    },
  };
}

export interface NodeParts {
  dispatcher: Pick<Dispatcher, 'emitRemote'>;
  /** Rebuilds what this node keeps in memory from the store, and resends streams their snapshot. */
  resync(): Promise<void>;
  log: { warn(obj: object, msg: string): void };
  /** Hears, for each event from another node, how long it took from its publication to here, ms. */
  lag?: (ms: number) => void;
}

/** What the other nodes did enters this node's dispatcher; after a bus outage, its memory is rebuilt. */
export function joinCluster(bus: Bus, parts: NodeParts): void {
  bus.subscribe((event, _from, sentAt) => {
    // Clocks of two nodes differ by their NTP skew: a message can seem to arrive before it left.
    parts.lag?.(Math.max(0, Date.now() - sentAt));
    const { type, ...remote } = event;
    parts.dispatcher.emitRemote(type, remote);
  });
  bus.onResync(() => void resync());

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
