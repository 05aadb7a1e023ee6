// What one Teltonika connection may hold, and how many may be held: the port takes no credential
// before the IMEI, so without these a single address could keep sockets open until the process
// runs out of file descriptors, and the main HTTP port with it.
import type net from 'node:net';
import type { Registry } from 'prom-client';
import { addressKey } from '../../http/rate-limit.ts';
import { counterIn } from '../../metric.ts';

export type CutReason = 'too-many' | 'too-many-from-address' | 'login-timeout' | 'packet-timeout';

export function createConnectionLimits(deps: { connections: number; perAddress: number; registry: Registry }) {
  const { connections, perAddress } = deps;
  const byAddress = new Map<string, number>();
  let open = 0;
  const cuts = counterIn(deps.registry, {
    name: 'fleet_teltonika_connections_closed_total',
    help: 'Teltonika connections closed by the port\'s limits: too-many (all connections), too-many-from-address, login-timeout (no IMEI in time), packet-timeout (a packet begun and not finished in time).',
    labelNames: ['reason'],
  });

  return {
    cut(reason: CutReason): void {
      cuts.inc({ reason });
    },

    /**
     * Counts the socket in, or answers why it is refused. A counted socket is counted out when it
     * closes, however it closes.
     */
    admit(socket: net.Socket): CutReason | undefined {
      if (open >= connections) return 'too-many';
      const key = addressKey(socket.remoteAddress);
      const held = byAddress.get(key) ?? 0;
      if (held >= perAddress) return 'too-many-from-address';
      open += 1;
      byAddress.set(key, held + 1);
      socket.once('close', () => {
        open -= 1;
        const left = (byAddress.get(key) ?? 1) - 1;
        if (left === 0) byAddress.delete(key);
        else byAddress.set(key, left);
      });
      return undefined;
    },
  };
}
