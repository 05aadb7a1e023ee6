// The in-process dispatcher: the parts say what happened through its `emit` (their EventPort,
// port.ts), and everything that reacts subscribes in src/app/events.ts (live streams, the
// latest-state view, credential caches, the webhook worker). What another node did arrives from the
// cluster bus (cluster/node.ts) through `emitRemote`, so each listener is written once for both:
// what a deletion or a status change does to this node's memory is the same wherever it happened.
import type { EventName, EventPort, Heard, RemoteEvent } from './port.ts';

type Listener<K extends EventName> = (event: Heard<K>) => void;

export interface Dispatcher extends EventPort {
  on<K extends EventName>(name: K, listener: Listener<K>): void;
  /** What another node did, heard on the cluster bus: its listeners hear it as `remote`. */
  emitRemote<K extends EventName>(name: K, event: RemoteEvent<K>): void;
}

export function createDispatcher(log: { error(obj: object, msg: string): void }): Dispatcher {
  const listeners = new Map<EventName, Listener<never>[]>();

  /**
   * Calls every listener of `name` in the order they subscribed. A listener that throws is logged
   * and the others still run: one part's bug must not keep the others uninformed.
   */
  function dispatch(name: EventName, event: Heard<EventName>): void {
    const list = listeners.get(name);
    if (list === undefined) return;
    for (const listener of list) {
      try {
        (listener as Listener<EventName>)(event);
      } catch (error) {
        log.error({ err: error, event: name }, 'an event listener failed');
      }
    }
  }

  return {
    on(name, listener) {
      const list = listeners.get(name);
      if (list === undefined) listeners.set(name, [listener]);
      else list.push(listener);
    },
    // The parts never say where: an event they emit is this node's.
    emit: (name, event) => dispatch(name, { origin: 'local', ...event }),
    emitRemote: (name, event) => dispatch(name, { origin: 'remote', ...event }),
  };
}
