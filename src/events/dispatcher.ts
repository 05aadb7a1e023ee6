// The in-process dispatcher: services say what happened, and everything that reacts subscribes
// in app.ts (live streams, the latest-state view, the cluster outbox, the webhook worker). What
// another node did arrives from the cluster bus into the same dispatcher with `origin: 'remote'`,
// so what a deletion or a status change does to this node's memory is written once.
import type { LatestState, StoredRecord } from '../telemetry/store.ts';
import type { EventRecord } from './types.ts';

export type Origin = 'local' | 'remote';

/** Everything the dispatcher carries, by name. */
export interface FleetEvents {
  /**
   * Telemetry was committed. Local: the records and each touched vehicle's merged latest state.
   * Remote: the states another node merged, and a bit mask of the stream types each touched.
   */
  telemetry:
    | { origin: 'local'; organizationId: string; records: readonly StoredRecord[]; states: readonly LatestState[] }
    | { origin: 'remote'; organizationId: string; states: readonly LatestState[]; touched: readonly number[] };
  /** Events were recorded in the event log (committed). */
  recorded: { origin: Origin; events: readonly EventRecord[] };
  /** An API key was revoked: credential caches drop it, streams it opened end. */
  keyRevoked: { origin: Origin; keyId: string; lookupId: string };
  /** An OAuth client was deleted: streams its tokens opened end. */
  clientDeleted: { origin: Origin; clientId: string };
  /** This node took a live stream over (remote: another node did), or one was ended elsewhere. */
  streamTaken: { origin: Origin; streamId: string; node: string };
  streamEnded: { origin: Origin; streamId: string };
  /** An organization's geofences or alert rules changed: rule engines read them again. */
  rulesChanged: { origin: Origin; organizationId: string };
}

type Listener<K extends keyof FleetEvents> = (event: FleetEvents[K]) => void;

export interface Dispatcher {
  on<K extends keyof FleetEvents>(name: K, listener: Listener<K>): void;
  /**
   * Calls every listener of `name` in the order they subscribed. A listener that throws is logged
   * and the others still run: one part's bug must not keep the others uninformed.
   */
  emit<K extends keyof FleetEvents>(name: K, event: FleetEvents[K]): void;
}

export function createDispatcher(log: { error(obj: object, msg: string): void }): Dispatcher {
  const listeners = new Map<keyof FleetEvents, Listener<never>[]>();
  return {
    on(name, listener) {
      const list = listeners.get(name);
      if (list === undefined) listeners.set(name, [listener]);
      else list.push(listener);
    },
    emit(name, event) {
      const list = listeners.get(name);
      if (list === undefined) return;
      for (const listener of list) {
        try {
          (listener as Listener<typeof name>)(event);
        } catch (error) {
          log.error({ err: error, event: name }, 'an event listener failed');
        }
      }
    },
  };
}
