// What happened, by name: the one map of the service's events and the port every part says them
// through. A part that causes one is given an EventPort and calls `emit('recorded', …)` itself;
// whatever reacts subscribes to the dispatcher (dispatcher.ts), in src/app/events.ts. In cluster
// mode each event also crosses the bus to the other nodes, whose messages are derived from this
// map (bus/bus.ts): a new event is one entry here, and one function in cluster/node.ts if another
// node is to receive it in a form of its own (RemoteForms).
import type { LatestState, StoredRecord } from '../telemetry/store.ts';
import type { EventRecord } from './types.ts';

/**
 * Every event, by name, as the part that caused it says it. No event has a `type` of its own: on
 * the bus, `type` names the event.
 */
export interface FleetEvents {
  /** Telemetry was committed: the records, and each touched vehicle's merged latest state. */
  telemetry: { organizationId: string; records: readonly StoredRecord[]; states: readonly LatestState[] };
  /** Events were recorded in the event log (committed). */
  recorded: { events: readonly EventRecord[] };
  /** An API key was revoked: credential caches drop it, streams it opened end. */
  keyRevoked: { keyId: string; lookupId: string };
  /**
   * A user changed (role, groups, status), signed out or was deleted: cached sessions of theirs are
   * read again; `signedOut` (disabled, deleted) or `accessChanged` (their role or groups): the
   * streams they opened end.
   */
  userChanged: { userId: string; signedOut: boolean; accessChanged?: boolean };
  /** An OAuth client was deleted: streams its tokens opened end. */
  clientDeleted: { clientId: string };
  /** A node took a live stream over (a client reconnected there): the node that held it lets go. */
  streamTaken: { streamId: string; node: string };
  /** A live stream held by another node was ended (deleted) through this one. */
  streamEnded: { streamId: string };
  /** An organization's geofences or alert rules changed: rule engines read them again. */
  rulesChanged: { organizationId: string };
  /**
   * Which of an organization's vehicles are in which groups changed (a vehicle registered into
   * groups or its groups changed, members added or removed, a group deleted): live streams of
   * credentials limited to groups read their vehicles again.
   */
  membershipChanged: { organizationId: string };
  /** A command was queued (cluster mode): the node holding a connection of its vehicle's device sends it. */
  commandQueued: { organizationId: string; commandId: string };
}

export type EventName = keyof FleetEvents;

/** The events another node receives in a form of their own: what it needs of them, in less. */
export interface RemoteForms {
  /** Without the records: the merged states, and a bit mask of the stream types each vehicle's records touched. */
  telemetry: { organizationId: string; states: readonly LatestState[]; touched: readonly number[] };
}

/** An event as another node receives it: its remote form, or as it was said. */
export type RemoteEvent<K extends EventName> = K extends keyof RemoteForms ? RemoteForms[K] : FleetEvents[K];

/** An event as a listener hears it: said on this node (`local`), or on another (`remote`). */
export type Heard<K extends EventName> = ({ origin: 'local' } & FleetEvents[K]) | ({ origin: 'remote' } & RemoteEvent<K>);

/** How a part says what happened: given to each part that causes events, in place of callbacks of its own. */
export interface EventPort {
  emit<K extends EventName>(name: K, event: FleetEvents[K]): void;
}
