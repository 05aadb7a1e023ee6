// The bus carries what one node did to every other node of a cluster, so that each node's
// in-memory parts (latest state, live streams, credential caches) stay in step with the others.
// Embedded mode is one node and needs none; cluster mode runs it on Redis pub/sub (redis.ts).
// memory.ts connects several nodes inside one process and runs the same contract suite.
//
// Delivery is at most once, like Redis pub/sub: while the bus is down, events are lost. A node
// therefore treats every event as a hint that something changed, never as the only copy: what is
// stored is in the database, and after an outage each node rebuilds what it keeps in memory from
// there (`onResync`).
import type { LatestState } from '../telemetry/store.ts';
import type { EventRecord } from '../events/types.ts';

/** Something one node did that the others must hear of. Plain JSON: it crosses processes. */
export type ClusterEvent =
  /** Telemetry committed: each touched vehicle's merged latest state and the event types touched (a bit mask). */
  | { type: 'telemetry'; organizationId: string; states: LatestState[]; touched: number[] }
  /** Events recorded in the event log (a status change, a deletion, ...), as committed. */
  | { type: 'events'; events: EventRecord[] }
  /** An organization's geofences or alert rules changed. */
  | { type: 'rules-changed'; organizationId: string }
  /** An API key was revoked: nodes drop it from their credential caches. */
  | { type: 'key-revoked'; keyId: string; lookupId: string }
  /** An OAuth client was deleted: nodes end the live streams its tokens opened. */
  | { type: 'client-deleted'; clientId: string }
  /** A node took a live stream over (a client reconnected there): its previous node lets go. */
  | { type: 'stream-taken'; streamId: string; node: string }
  /** A live stream was deleted through another node. */
  | { type: 'stream-ended'; streamId: string };

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
