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

/** The newer value of each field of two states of one vehicle (another node's and this one's). */
export function mergeStates(known: LatestState | undefined, incoming: LatestState): LatestState {
  if (known === undefined) return incoming;
  const fields: LatestState['fields'] = { ...known.fields };
  for (const field of TELEMETRY_FIELDS) {
    const value = incoming.fields[field];
    if (value !== undefined && (fields[field] === undefined || value.at >= fields[field].at)) fields[field] = value;
  }
  return { ...known, timestamp: Math.max(known.timestamp, incoming.timestamp), fields };
}

/**
 * In-memory mirror of every vehicle's latest state, kept in step with the store's commits, this
 * node's and in a cluster the other nodes': each is merged in field by field (`merge`), since a
 * commit may hold only part of the vehicle's state (PostgreSQL keeps one row per node) and the bus
 * may deliver other nodes' commits in another order than they were made.
 */
export function createLatestView() {
  // Each vehicle's entry is updated in place: a node following other nodes' commits puts a state
  // per vehicle per commit it hears, and a WeakMap of states to generations cost it more (in
  // inserts and in the collector's work on them) than the merge itself.
  const byOrganization = new Map<string, Map<string, { state: LatestState; changed: number }>>();
  /** Bumped by every change, so a reload can tell what changed while it was reading. */
  let generation = 0;

  function get(organizationId: string, vehicleId: string): LatestState | undefined {
    return byOrganization.get(organizationId)?.get(vehicleId)?.state;
  }

  function put(state: LatestState): void {
    let vehicles = byOrganization.get(state.organizationId);
    if (vehicles === undefined) {
      vehicles = new Map();
      byOrganization.set(state.organizationId, vehicles);
    }
    const entry = vehicles.get(state.vehicleId);
    if (entry === undefined) {
      vehicles.set(state.vehicleId, { state, changed: ++generation });
    } else {
      entry.state = state;
      entry.changed = ++generation;
    }
  }

  function forget(organizationId: string, vehicleId: string): void {
    byOrganization.get(organizationId)?.delete(vehicleId);
  }

  /** Folds `state` into what is known of its vehicle; the result, now in the view. */
  function merge(state: LatestState): LatestState {
    const merged = mergeStates(get(state.organizationId, state.vehicleId), state);
    put(merged);
    return merged;
  }

  /**
   * Replaces the view with `states` read from the store, keeping what changed since `since`
   * (a `mark()` taken before the read): after a bus outage, what the other nodes committed
   * meanwhile comes in, and vehicles deleted meanwhile go.
   */
  function reload(states: readonly LatestState[], since: number): void {
    const loaded = new Set<string>();
    for (const state of states) {
      loaded.add(`${state.organizationId}\u0000${state.vehicleId}`);
      merge(state);
    }
    for (const [organizationId, vehicles] of byOrganization) {
      for (const [vehicleId, entry] of vehicles) {
        if (!loaded.has(`${organizationId}\u0000${vehicleId}`) && entry.changed <= since) vehicles.delete(vehicleId);
      }
    }
  }

  return { get, merge, forget, reload, mark: () => generation };
}

export type LatestView = ReturnType<typeof createLatestView>;

