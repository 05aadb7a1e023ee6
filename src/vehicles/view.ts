// The public representations of a vehicle, shared by /v2 and /api/v1.
import { iso } from '../clock.ts';
import type { VehicleDetails, VehicleListItem } from './schema.ts';
import type { StatusChange, VehicleRecord } from './store.ts';

/** What the latest telemetry contributes to a vehicle's representation. */
export interface LatestSummary {
  location: { lat: number; lng: number } | null;
  battery: number | null;
  lastUpdate: number | null;
}

const NO_TELEMETRY: LatestSummary = { location: null, battery: null, lastUpdate: null };

/** Where a vehicle's latest telemetry comes from; undefined before any. */
export type LatestLookup = (organizationId: string, vehicleId: string) => LatestSummary | undefined;

export function toListItem(v: VehicleRecord, latest: LatestSummary = NO_TELEMETRY): VehicleListItem {
  return {
    id: v.id,
    type: v.type,
    name: v.name,
    status: v.status,
    location: latest.location,
    battery: latest.battery,
    lastUpdate: latest.lastUpdate === null ? null : iso(latest.lastUpdate),
    groupIds: v.groupIds,
  };
}

export function toDetails(v: VehicleRecord, latest: LatestSummary = NO_TELEMETRY): VehicleDetails {
  return {
    ...toListItem(v, latest),
    configuration: v.configuration,
    createdAt: iso(v.createdAt),
    updatedAt: iso(v.updatedAt),
    statusChangedAt: iso(v.statusChangedAt),
    driverId: v.driverId,
  };
}

export function toHistoryEntry(change: StatusChange) {
  return { from: change.from, to: change.to, reason: change.reason, at: iso(change.at), by: change.by };
}
