// The bus carries what one node did to every other node of a cluster, so that each node's
// in-memory parts (latest state, live streams, credential caches) stay in step with the others.
// Embedded mode is one node and needs none; cluster mode runs it on Redis pub/sub (redis.ts).
// memory.ts connects several nodes inside one process and runs the same contract suite.
//
// Delivery is at most once, like Redis pub/sub: while the bus is down, events are lost. A node
// therefore treats every event as a hint that something changed, never as the only copy: what is
// stored is in the database, and after an outage each node rebuilds what it keeps in memory from
// there (`onResync`).
import type { EventName, RemoteEvent } from '../events/port.ts';

/**
 * Something one node did that the others must hear of: an event of the map (events/port.ts), named
 * by `type`, in the form another node receives it. Plain JSON: it crosses processes.
 */
export type ClusterEvent = { [K in EventName]: { type: K } & RemoteEvent<K> }[EventName];

export type BusState = 'up' | { degraded: string };

export interface Bus {
  /** This node's name on the bus (unique per process). */
  readonly node: string;
  /** Sends to every other node. Never throws: an event that cannot be sent is counted and lost. */
  publish(event: ClusterEvent): void;
  /**
   * Events from the other nodes, never this node's own, in the order each node sent them, with the
   * time the sender published each (ms since the epoch, by the sender's clock).
   */
  subscribe(listener: (event: ClusterEvent, from: string, sentAt: number) => void): void;
  /** Called when the bus comes back after being down: events sent meanwhile may have been missed. */
  onResync(listener: () => void): void;
  state(): BusState;
  close(): Promise<void>;
}
