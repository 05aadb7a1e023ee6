// Device rules: registration, listing, and what the protocol listeners need (who a device is,
// when it was last heard from). Knows nothing of HTTP or of any protocol's bytes.
import type { VehicleScope } from '../groups/scope.ts';
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import { IDENTIFIER_RULES, type Protocol, type RegisterDeviceBody } from './schema.ts';
import type { DeviceFilter, DeviceRecord, DeviceStore } from './store.ts';

/** How often the last-seen times gathered in memory are written. */
export const LAST_SEEN_FLUSH_MS = 30_000;

export type DeviceService = ReturnType<typeof createDeviceService>;

export function createDeviceService(deps: {
  store: DeviceStore;
  clock: Clock;
  /** Devices per organization. */
  maxDevices: number;
  flushMs?: number;
  onFlushError?: (error: unknown) => void;
  /** Which vehicles a credential limited to groups sees (its devices are those of its vehicles). */
  scope?: VehicleScope;
}) {
  const { store, clock } = deps;
  /** Whether `who` sees the vehicle; without a scope to ask, only a credential of the whole organization does. */
  const sees = async (who: Principal, vehicleId: string) => (await deps.scope?.sees(who, vehicleId)) ?? who.groupIds === undefined;
  // A write per packet would cost a transaction per packet for a field nobody reads at that rate:
  // the times are kept here and written together every flushMs (and at shutdown).
  const pending = new Map<string, number>();
  let flushing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => void flush(), deps.flushMs ?? LAST_SEEN_FLUSH_MS);
  timer.unref();

  function flush(): Promise<void> {
    if (pending.size === 0) return flushing;
    const seen = [...pending].map(([id, at]) => ({ id, at }));
    pending.clear();
    flushing = flushing
      .then(() => store.touch(seen))
      .catch((error: unknown) => {
        // Kept for the next flush unless a newer time arrived meanwhile.
        for (const { id, at } of seen) if ((pending.get(id) ?? 0) < at) pending.set(id, at);
        deps.onFlushError?.(error);
      });
    return flushing;
  }

  const withPending = (device: DeviceRecord): DeviceRecord => {
    const at = pending.get(device.id);
    return at === undefined || (device.lastSeenAt ?? 0) >= at ? device : { ...device, lastSeenAt: at };
  };

  async function register(who: Principal, body: RegisterDeviceBody): Promise<DeviceRecord> {
    const rule = IDENTIFIER_RULES[body.protocol];
    if (!rule.pattern.test(body.identifier)) {
      const message = `${rule.message} for protocol ${body.protocol}`;
      throw new AppError('validation-failed', `identifier ${message}.`, { errors: [{ in: 'body', path: '/identifier', message }] });
    }
    if (who.groupIds !== undefined) await deps.scope?.assertSees(who, [body.vehicleId]);
    const device: DeviceRecord = {
      id: newId('dev'),
      organizationId: who.organizationId,
      protocol: body.protocol,
      identifier: body.identifier,
      vehicleId: body.vehicleId,
      createdAt: clock.now(),
      lastSeenAt: null,
    };
    switch (await store.insert(device, deps.maxDevices)) {
      case 'created':
        return device;
      case 'exists':
        // Not by whom: the identifier may belong to another organization.
        throw new AppError('device-exists', `The ${body.protocol} identifier "${body.identifier}" is already registered.`);
      case 'no-vehicle':
        throw new AppError('vehicle-not-found', `No vehicle "${body.vehicleId}" in this organization.`);
      case 'quota':
        throw quotaExceeded(deps.maxDevices, 'devices');
    }
  }

  /** The device, if `who` may see it: a device of a vehicle outside a scoped credential's groups is not there for it. */
  async function visible(who: Principal, id: string): Promise<DeviceRecord> {
    const device = await store.get(who.organizationId, id);
    if (device === undefined || !(await sees(who, device.vehicleId))) throw notFound(id);
    return device;
  }

  async function get(who: Principal, id: string): Promise<DeviceRecord> {
    return withPending(await visible(who, id));
  }

  async function list(who: Principal, filter: DeviceFilter) {
    if (filter.vehicleId !== undefined && !(await sees(who, filter.vehicleId))) return { devices: [], total: 0 };
    const page = await store.list(who.organizationId, who.groupIds === undefined ? filter : { ...filter, anyOfGroups: who.groupIds });
    return { devices: page.devices.map(withPending), total: page.total };
  }

  async function remove(who: Principal, id: string): Promise<void> {
    if (who.groupIds !== undefined) await visible(who, id);
    if (!(await store.delete(who.organizationId, id))) throw notFound(id);
    pending.delete(id);
  }

  /** The registered device a protocol identifier names, whatever its organization. */
  function resolve(protocol: Protocol, identifier: string): Promise<DeviceRecord | undefined> {
    return store.find(protocol, identifier);
  }

  /** The device sent data that was stored. */
  function seen(deviceId: string, at = clock.now()): void {
    if ((pending.get(deviceId) ?? 0) < at) pending.set(deviceId, at);
  }

  async function stop(): Promise<void> {
    clearInterval(timer);
    await flush();
  }

  return { register, get, list, remove, resolve, seen, flush, stop };
}

function notFound(id: string): AppError {
  return new AppError('device-not-found', `No device "${id}" in this organization.`);
}
