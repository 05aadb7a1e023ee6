import { iso } from '../clock.ts';
import type { DeviceRecord } from './store.ts';

export function toDevice(d: DeviceRecord) {
  return {
    id: d.id, protocol: d.protocol, identifier: d.identifier, vehicleId: d.vehicleId,
    createdAt: iso(d.createdAt), lastSeenAt: d.lastSeenAt === null ? null : iso(d.lastSeenAt),
  };
}
