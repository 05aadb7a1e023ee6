// The latest state of each vehicle: the last known value of every field, merged across records.
// A record may carry only some fields, and records may arrive out of order, so each field keeps
// the value with the newest timestamp, not simply the last one received.
import type { TelemetryData, TelemetryField } from './schema.ts';
import { TELEMETRY_FIELDS } from './schema.ts';
import type { LatestSummary } from '../vehicles/view.ts';
import type { LatestState, MergeLatest } from './store.ts';

export const mergeLatest: MergeLatest = (previous, organizationId, vehicleId, records) => {
  const fields: LatestState['fields'] = { ...previous?.fields };
  let timestamp = previous?.timestamp ?? -Infinity;
  for (const record of records) {
    if (record.timestamp > timestamp) timestamp = record.timestamp;
    for (const field of TELEMETRY_FIELDS) {
      const value = record.data[field];
      if (value === undefined) continue;
      const known = fields[field];
      if (known === undefined || record.timestamp >= known.at) fields[field] = { value, at: record.timestamp };
    }
  }
  return { organizationId, vehicleId, timestamp, fields };
};

/** The state as a telemetry record's `data`, optionally only some fields. */
export function latestData(state: LatestState, only?: readonly TelemetryField[]): TelemetryData {
  const data: Record<string, unknown> = {};
  for (const field of only ?? TELEMETRY_FIELDS) {
    const known = state.fields[field];
    if (known !== undefined) data[field] = known.value;
  }
  return data;
}

/** What a vehicle's representation shows of its latest state. */
export function summaryOf(state: LatestState): LatestSummary {
  const location = state.fields.location?.value as LatestSummary['location'] | undefined;
  const battery = state.fields.battery?.value as number | undefined;
  return { location: location ?? null, battery: battery ?? null, lastUpdate: state.timestamp };
}

/** In-memory mirror of every vehicle's latest state, kept in step with the store's commits. */
export function createLatestView() {
  const byOrganization = new Map<string, Map<string, LatestState>>();

  function get(organizationId: string, vehicleId: string): LatestState | undefined {
    return byOrganization.get(organizationId)?.get(vehicleId);
  }

  function put(state: LatestState): void {
    let vehicles = byOrganization.get(state.organizationId);
    if (vehicles === undefined) {
      vehicles = new Map();
      byOrganization.set(state.organizationId, vehicles);
    }
    vehicles.set(state.vehicleId, state);
  }

  function forget(organizationId: string, vehicleId: string): void {
    byOrganization.get(organizationId)?.delete(vehicleId);
  }

  return { get, put, forget };
}

export type LatestView = ReturnType<typeof createLatestView>;

