// Snapshots (docs/API.md "Live streams": messages): for each vehicle of a stream, the current
// state of each subscribed state type, so that a client never starts blind. Sent at attach, for
// the types a subscribe adds, and to every stream after a cluster bus outage.
//
// A snapshot is not a burst of sends: reading it marks each (type, vehicle) as pending, due at
// once, and the flush sends them as the socket takes them (delivery.ts), in chunks, newest values
// only. One snapshot is read at a time per stream; types asked for meanwhile join the next read,
// and a (type, vehicle) already pending is not added twice. However often a client asks, a stream
// holds at most one pending key per (type, vehicle) and its socket's buffer stays under its cap.
import type { LatestView } from '../telemetry/latest.ts';
import type { StatusChange, VehicleRecord, VehicleStore } from '../vehicles/store.ts';
import type { Delivery } from './delivery.ts';
import { STATE_MASK, STATUS, TELEMETRY_TYPES } from './messages.ts';
import type { Registry } from './registry.ts';
import { SNAPSHOT, type Stream, carries, keyOf } from './stream.ts';

export type Snapshots = ReturnType<typeof createSnapshots>;

export function createSnapshots(deps: {
  registry: Registry;
  delivery: Delivery;
  vehicles: VehicleStore;
  latest: LatestView;
  clock: { now(): number };
  log: { warn(obj: object, msg: string): void };
}) {
  const { registry, delivery } = deps;

  /** Asks for the current state of `mask`'s state types (the `events` type has none). */
  function request(stream: Stream, mask: number): void {
    stream.snapshotWanted |= mask & STATE_MASK;
    if (stream.snapshotRunning || stream.snapshotWanted === 0) return;
    void run(stream);
  }

  async function run(stream: Stream): Promise<void> {
    stream.snapshotRunning = true;
    // Live updates are held meanwhile: they join the pending keys rather than overtake the snapshot.
    stream.hold++;
    try {
      while (stream.status === 'connected') {
        const mask = stream.snapshotWanted & stream.mask;
        stream.snapshotWanted = 0;
        if (mask === 0) break;
        await read(stream, mask);
      }
    } catch (error) {
      deps.log.warn({ err: error, streamId: stream.id }, 'live stream: the snapshot could not be read');
      stream.sink?.close(1011, 'internal error');
    } finally {
      stream.snapshotRunning = false;
      stream.hold--;
      if (stream.hold === 0) delivery.flush(stream);
    }
  }

  async function read(stream: Stream, mask: number): Promise<void> {
    const vehicles = await vehiclesOf(stream);
    const changes = new Map<string, StatusChange>();
    if ((mask & (1 << STATUS)) !== 0) {
      for (const vehicle of vehicles) {
        const cached = registry.organization(stream.organizationId)?.current.get(vehicle.id)?.[STATUS];
        if (cached?.version === vehicle.statusChangedAt) continue;
        const newest = (await deps.vehicles.statusHistory(stream.organizationId, vehicle.id, { limit: 1, offset: 0 })).entries[0];
        if (newest !== undefined) changes.set(vehicle.id, newest);
      }
    }
    // From here on, synchronous: nothing can slip in between the state read and its marking.
    const index = registry.organization(stream.organizationId);
    if (stream.status !== 'connected' || index === undefined) return;
    // Types unsubscribed while the snapshot was read are left out.
    const wanted = mask & stream.mask;
    const now = deps.clock.now();
    for (const vehicle of vehicles) {
      const state = deps.latest.get(stream.organizationId, vehicle.id);
      for (const type of TELEMETRY_TYPES) {
        if ((wanted & (1 << type)) === 0 || state === undefined) continue;
        // Held updates of this type are older than (or equal to) what the flush will send.
        if (delivery.telemetryEntry(index, state, type, now) !== undefined) stream.pending.set(keyOf(type, vehicle.id), SNAPSHOT);
      }
      if ((wanted & (1 << STATUS)) !== 0) {
        const change = changes.get(vehicle.id);
        const held = index.current.get(vehicle.id)?.[STATUS];
        // A change heard while the history was read is newer than the history's newest entry.
        const entry = change !== undefined && (held === undefined || held.version < change.at) ? delivery.statusEntry(index, vehicle.id, change, now) : held;
        if (entry !== undefined) stream.pending.set(keyOf(STATUS, vehicle.id), SNAPSHOT);
      }
    }
  }

  /** The vehicles the stream covers and may carry now (a stream limited to groups: those in them). */
  async function vehiclesOf(stream: Stream): Promise<VehicleRecord[]> {
    if (stream.vehicleIds !== null) {
      const found = await Promise.all(stream.vehicleIds.map((id) => deps.vehicles.get(stream.organizationId, id)));
      return found.filter((v): v is VehicleRecord => v !== undefined && carries(stream, v.id));
    }
    const all: VehicleRecord[] = [];
    const scope = stream.groupIds === null ? {} : { anyOfGroups: stream.groupIds };
    for (let offset = 0; ; offset += 1000) {
      const page = await deps.vehicles.list(stream.organizationId, { limit: 1000, offset, ...scope });
      all.push(...page.vehicles.filter((v) => carries(stream, v.id)));
      if (page.vehicles.length < 1000) return all;
    }
  }

  /**
   * Events may have been missed (the cluster bus was down): every attached stream gets a fresh
   * snapshot of the current state, read after the latest view was reloaded.
   */
  function resnapshot(): void {
    for (const stream of registry.all()) {
      if (stream.status === 'connected' && stream.recording) request(stream, stream.mask);
    }
  }

  return { request, resnapshot };
}
