// Which node holds a connection of a vehicle's device, for `queue: false` in cluster mode: a
// command is refused only when no node has the device connected now. Each node says when a
// vehicle's first connection on a channel opens and its last one closes, and renews what it holds
// (a lease, so that a node that died stops counting); the memory form joins the nodes of one
// process (tests), the Redis form a deployment's (cluster/device-presence.ts).

export interface DevicePresence {
  /** A vehicle's device on `key` (organization, vehicle, channel) is connected here (true) or no longer (false). */
  set(key: string, present: boolean): void;
  /** Renews the lease of every key held here. */
  renew(keys: readonly string[]): Promise<void>;
  /** Whether another node holds the key now. */
  elsewhere(key: string): Promise<boolean>;
}

export const presenceKey = (organizationId: string, vehicleId: string, channel: string) => `${organizationId}\n${vehicleId}\n${channel}`;

/** Nodes in one process: what each holds, by node. */
export function createMemoryPresenceNetwork() {
  const held = new Map<string, Set<string>>();
  let nodes = 0;
  return {
    join(): DevicePresence {
      const node = String(++nodes);
      return {
        set(key, present) {
          let set = held.get(key);
          if (set === undefined) held.set(key, (set = new Set()));
          if (present) set.add(node);
          else set.delete(node);
        },
        renew: async () => undefined,
        elsewhere: async (key) => [...(held.get(key) ?? [])].some((n) => n !== node),
      };
    },
  };
}
