// Each vehicle's status as the telemetry commits read it: once per batch, and nearly always the
// same answer, so it is kept in memory. This module is also the only writer of a vehicle's status
// (activation by telemetry, a requested change), so the memory cannot miss a change: a new writer
// has to come through here. One process per database file, so no other process writes it.
// A write whose transaction fails leaves the memory unsure: the caller's transaction wrapper then
// calls `clear()`.
import type { DatabaseSync } from 'node:sqlite';
import type { EventRecord } from '../../events/types.ts';
import { activation } from '../../vehicles/events.ts';
import type { StatusChange, VehicleRecord } from '../../vehicles/store.ts';
import type { VehicleStatus } from '../../vehicles/schema.ts';
import { VEHICLE_COLUMNS, VEHICLE_RELATIONS, sqliteRows } from '../rows.ts';
import type { AppendEvents } from './events.ts';
import { vehicleKey } from '../../vehicles/key.ts';

export interface VehicleStatuses {
  /** The vehicle's status, undefined when it does not exist. */
  get(organizationId: string, vehicleId: string): string | undefined;
  /**
   * Inside a transaction: makes a `registered` vehicle `active` (its first telemetry at `at`),
   * with its history entry and event; the event, or undefined when it was not registered.
   */
  activate(organizationId: string, vehicleId: string, at: number): EventRecord | undefined;
  /**
   * Inside a transaction: compare-and-set of a requested change, with its history entry and
   * events; the vehicle after it, or undefined when its status is no longer `change.from`.
   */
  change(organizationId: string, vehicleId: string, change: StatusChange & { from: VehicleStatus }, events: readonly EventRecord[]): VehicleRecord | undefined;
  /** Records a registration's history entry (a new vehicle is `registered`). */
  registered(organizationId: string, vehicleId: string, change: StatusChange): void;
  /** After the vehicle was deleted. */
  forget(organizationId: string, vehicleId: string): void;
  /** After a failed transaction that may have changed any. */
  clear(): void;
}

export function createVehicleStatuses(db: DatabaseSync, appendEvents: AppendEvents): VehicleStatuses {
  const select = db.prepare('SELECT status FROM vehicles WHERE organization_id = ? AND id = ?');
  const update = db.prepare(
    `UPDATE vehicles SET status = ?, status_changed_at = ?, updated_at = ?
     WHERE organization_id = ? AND id = ? AND status = ? RETURNING ${VEHICLE_COLUMNS}, ${VEHICLE_RELATIONS.sqlite}`,
  );
  const insertChange = db.prepare(
    'INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const known = new Map<string, string>();

  function write(organizationId: string, vehicleId: string, change: StatusChange & { from: VehicleStatus }, events: readonly EventRecord[]) {
    const row = update.get(change.to, change.at, change.at, organizationId, vehicleId, change.from);
    if (row === undefined) {
      known.delete(vehicleKey(organizationId, vehicleId));
      return undefined;
    }
    insertChange.run(organizationId, vehicleId, change.from, change.to, change.reason, change.at, change.by);
    appendEvents(events, change.at);
    known.set(vehicleKey(organizationId, vehicleId), change.to);
    return sqliteRows.vehicle(row);
  }

  return {
    get(organizationId, vehicleId) {
      const key = vehicleKey(organizationId, vehicleId);
      let status = known.get(key);
      if (status === undefined) {
        status = select.get(organizationId, vehicleId)?.status as string | undefined;
        // A vehicle that does not exist is not remembered: it may be registered any moment.
        if (status !== undefined) known.set(key, status);
      }
      return status;
    },
    activate(organizationId, vehicleId, at) {
      const { change, event } = activation(organizationId, vehicleId, at);
      return write(organizationId, vehicleId, change as StatusChange & { from: VehicleStatus }, [event]) === undefined ? undefined : event;
    },
    change: write,
    registered(organizationId, vehicleId, change) {
      insertChange.run(organizationId, vehicleId, change.from, change.to, change.reason, change.at, change.by);
      known.set(vehicleKey(organizationId, vehicleId), change.to);
    },
    forget(organizationId, vehicleId) {
      known.delete(vehicleKey(organizationId, vehicleId));
    },
    clear() {
      known.clear();
    },
  };
}
