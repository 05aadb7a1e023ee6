// Several nodes in one process, connected as Redis connects processes: each event is copied
// through JSON (no shared objects), delivered asynchronously and in order, never to its sender.
// Tests use it to run two apps as two nodes; embedded mode (one node) uses no bus at all.
import { randomBytes } from 'node:crypto';
import type { Bus, ClusterEvent } from './bus.ts';

interface Member {
  readonly node: string;
  deliver(json: string, from: string, sentAt: number): void;
  /** Marks that an event for this node was lost while the network was down. */
  missed: boolean;
  resync(): void;
}

export function createMemoryBusNetwork() {
  const members = new Set<Member>();
  let down = false;

  function join(): Bus {
    const node = `node-${randomBytes(4).toString('hex')}`;
    const listeners: ((event: ClusterEvent, from: string, sentAt: number) => void)[] = [];
    const resyncs: (() => void)[] = [];
    const member: Member = {
      node,
      missed: false,
      deliver(json, from, sentAt) {
        const event = JSON.parse(json) as ClusterEvent;
        for (const listener of listeners) listener(event, from, sentAt);
      },
      resync() {
        if (!member.missed) return;
        member.missed = false;
        for (const listener of resyncs) listener();
      },
    };
    members.add(member);
    return {
      node,
      publish(event) {
        if (down) {
          for (const other of members) if (other !== member) other.missed = true;
          return;
        }
        const json = JSON.stringify(event);
        const sentAt = Date.now();
        queueMicrotask(() => {
          for (const other of members) if (other !== member) other.deliver(json, node, sentAt);
        });
      },
      subscribe: (listener) => void listeners.push(listener),
      onResync: (listener) => void resyncs.push(listener),
      state: () => (down ? { degraded: 'the bus is down' } : 'up'),
      async close() {
        members.delete(member);
      },
    };
  }

  return {
    join,
    /** Takes the network down (events are lost) or brings it back (nodes that missed some resync). */
    setDown(value: boolean) {
      down = value;
      if (!down) for (const member of members) member.resync();
    },
  };
}
