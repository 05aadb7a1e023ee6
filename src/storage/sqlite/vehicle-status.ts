// Each vehicle's status as the telemetry commits read it: once per batch, and nearly always the
// same answer, so it is kept in memory. Every write of a vehicle's status goes through this
// process's stores (one process per database file), which tell it: the vehicle store when it
// changes or deletes a vehicle, the telemetry store when a commit activates one (and when a
// commit fails, since an activation in it did not happen).
import type { DatabaseSync } from 'node:sqlite';

const keyOf = (organizationId: string, vehicleId: string) => `${organizationId}\n${vehicleId}`; // ids never hold a newline

export interface VehicleStatuses {
  /** The vehicle's status, undefined when it does not exist. */
  get(organizationId: string, vehicleId: string): string | undefined;
  /** After a write that set it to `status`. */
  set(organizationId: string, vehicleId: string, status: string): void;
  /** After a write that changed or deleted it, or may have. */
  forget(organizationId: string, vehicleId: string): void;
  /** After a failed transaction that may have changed any. */
  clear(): void;
}

export function createVehicleStatuses(db: DatabaseSync): VehicleStatuses {
  const select = db.prepare('SELECT status FROM vehicles WHERE organization_id = ? AND id = ?');
  const known = new Map<string, string>();
  return {
    get(organizationId, vehicleId) {
      const key = keyOf(organizationId, vehicleId);
      let status = known.get(key);
      if (status === undefined) {
        status = select.get(organizationId, vehicleId)?.status as string | undefined;
        // A vehicle that does not exist is not remembered: it may be registered any moment.
        if (status !== undefined) known.set(key, status);
      }
      return status;
    },
    set(organizationId, vehicleId, status) {
      known.set(keyOf(organizationId, vehicleId), status);
    },
    forget(organizationId, vehicleId) {
      known.delete(keyOf(organizationId, vehicleId));
    },
    clear() {
      known.clear();
    },
  };
}
