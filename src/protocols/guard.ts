// The device ports take no credential: a device's identifier is its credential, and whether one is
// registered shows in the answer. Without a brake, one address could try a tracker model's whole
// serial range in minutes and, on a hit, send positions into another organization's vehicle.
//
// So each address (an IPv6 /64 counted as one) may present a few distinct unknown identifiers;
// past those, each further one holds the address back for a time that doubles with every strike,
// up to a ceiling. While held back, every identifier it presents (registered or not) is refused
// without being looked up, so a hit cannot be told from a miss. A registered device never counts
// against its address, and devices at other addresses are never affected. An address is
// forgotten a day after its last unknown identifier.
//
// Per node and in memory: with N nodes behind one balancer an address gets N times the allowance.
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.ts';
import { addressKey } from '../http/rate-limit.ts';
import { counterIn } from '../metric.ts';

export interface DeviceGuardSettings {
  /** Distinct unknown identifiers an address may present before it is held back. */
  unknownIdentifiers: number;
  /** The longest an address is held back at a time, ms (the first time: 1 s, then doubling). */
  backoffMaxMs: number;
}

const FIRST_BACKOFF_MS = 1_000;
const FORGET_AFTER_MS = 24 * 3600_000;
/** Addresses remembered at once; past this the least recently active is forgotten first. */
const MAX_ADDRESSES = 100_000;

interface AddressState {
  /** The distinct unknown identifiers of the allowance (no more are kept). */
  unknown: Set<string>;
  strikes: number;
  heldUntil: number;
  lastUnknown: number;
}

export type DeviceGuard = ReturnType<typeof createDeviceGuard>;

export function createDeviceGuard(deps: { settings: DeviceGuardSettings; clock: Clock; registry: Registry }) {
  const { settings, clock } = deps;
  const addresses = new Map<string, AddressState>();
  const refused = counterIn(deps.registry, {
    name: 'fleet_device_identifiers_refused_total',
    help: 'Device identifiers refused on the device ports, by protocol and reason: unknown (looked up, not registered) or held-back (the address is backing off; not looked up).',
    labelNames: ['protocol', 'reason'],
  });

  function current(key: string, now: number): AddressState | undefined {
    const state = addresses.get(key);
    if (state !== undefined && now - state.lastUnknown > FORGET_AFTER_MS && now >= state.heldUntil) {
      addresses.delete(key);
      return undefined;
    }
    return state;
  }

  return {
    /** Seconds the address is still held back, or 0 when its identifiers may be looked up. */
    heldBack(protocol: string, address: string | undefined): number {
      const now = clock.now();
      const state = current(addressKey(address), now);
      if (state === undefined || now >= state.heldUntil) return 0;
      refused.inc({ protocol, reason: 'held-back' });
      return Math.ceil((state.heldUntil - now) / 1000);
    },

    /** An identifier presented from `address` that no device is registered with. */
    unknown(protocol: string, address: string | undefined, identifier: string): void {
      refused.inc({ protocol, reason: 'unknown' });
      const now = clock.now();
      const key = addressKey(address);
      const state = current(key, now) ?? { unknown: new Set<string>(), strikes: 0, heldUntil: 0, lastUnknown: now };
      // Moved to the end: the map's order is then least recently active first.
      addresses.delete(key);
      addresses.set(key, state);
      for (const oldest of addresses.keys()) {
        if (addresses.size <= MAX_ADDRESSES) break;
        addresses.delete(oldest);
      }
      state.lastUnknown = now;
      const id = identifier.slice(0, 64);
      // A device not yet registered retries with the same identifier: that is not guessing.
      if (state.unknown.has(id)) return;
      if (state.unknown.size < settings.unknownIdentifiers) {
        state.unknown.add(id);
        return;
      }
      state.heldUntil = now + Math.min(FIRST_BACKOFF_MS * 2 ** Math.min(state.strikes, 30), settings.backoffMaxMs);
      state.strikes += 1;
    },
  };
}
