// Vehicle rules: registration, listing, status transitions. Knows nothing of HTTP.
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { quotaExceeded } from '../quotas.ts';
import type { RegisterVehicleBody, StatusChangeBody, VehicleStatus, VehicleType } from './schema.ts';
import type { Page, StatusChange, VehicleRecord, VehicleStore } from './store.ts';
import { TRANSITIONS, canTransition } from './transitions.ts';

export interface ListOptions extends Page {
  statuses?: VehicleStatus[];
  types?: VehicleType[];
}

export type VehicleService = ReturnType<typeof createVehicleService>;

export function createVehicleService(deps: {
  store: VehicleStore;
  clock: Clock;
  maxVehicles?: number;
  /** Told after a vehicle is deleted, so views derived from it (latest telemetry) drop it too. */
  onDeleted?: (organizationId: string, vehicleId: string) => void;
  /** Told after every committed status change (live streams carry them). */
  onStatusChanged?: (organizationId: string, vehicleId: string, change: StatusChange) => void;
}) {
  const { store, clock } = deps;

  async function register(who: Principal, body: RegisterVehicleBody): Promise<VehicleRecord> {
    const now = clock.now();
    const vehicle: VehicleRecord = {
      organizationId: who.organizationId,
      id: body.vehicleId,
      type: body.type,
      status: 'registered',
      configuration: body.configuration ?? {},
      createdAt: now,
      updatedAt: now,
      statusChangedAt: now,
    };
    const registration: StatusChange = { from: null, to: 'registered', reason: null, at: now, by: who.credentialId };
    const outcome = await store.insert(vehicle, registration, deps.maxVehicles);
    switch (outcome) {
      case 'created':
        return vehicle;
      case 'exists':
        throw new AppError('vehicle-exists', `A vehicle "${body.vehicleId}" already exists in this organization.`);
      case 'quota':
        throw quotaExceeded(deps.maxVehicles ?? 0, 'vehicles');
    }
  }

  async function get(who: Principal, id: string): Promise<VehicleRecord> {
    const vehicle = await store.get(who.organizationId, id);
    if (vehicle === undefined) throw notFound(id);
    return vehicle;
  }

  function list(who: Principal, options: ListOptions) {
    return store.list(who.organizationId, options);
  }

  async function remove(who: Principal, id: string): Promise<void> {
    if (!(await store.delete(who.organizationId, id))) throw notFound(id);
    deps.onDeleted?.(who.organizationId, id);
  }

  async function changeStatus(who: Principal, id: string, body: StatusChangeBody): Promise<VehicleRecord> {
    // Compare-and-set in a short loop: a concurrent change between our read and our write makes
    // the store refuse, and we judge the transition again from the status that won.
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await get(who, id);
      if (current.status === body.status) return current;
      if (!canTransition(current.status, body.status)) {
        const allowed = TRANSITIONS[current.status];
        throw new AppError(
          'invalid-status-transition',
          `A vehicle cannot go from "${current.status}" to "${body.status}"; allowed: ${allowed.length > 0 ? allowed.join(', ') : 'none (terminal)'}.`,
        );
      }
      const change = { from: current.status, to: body.status, reason: body.reason ?? null, at: clock.now(), by: who.credentialId };
      const changed = await store.changeStatus(who.organizationId, id, change);
      if (changed !== undefined) {
        deps.onStatusChanged?.(who.organizationId, id, change);
        return changed;
      }
    }
    throw new AppError('service-unavailable', 'The vehicle is changing too often; try again.', {
      headers: { 'retry-after': '1' },
    });
  }

  async function statusHistory(who: Principal, id: string, page: Page) {
    await get(who, id);
    return store.statusHistory(who.organizationId, id, page);
  }

  return { register, get, list, remove, changeStatus, statusHistory };
}

function notFound(id: string): AppError {
  return new AppError('vehicle-not-found', `No vehicle "${id}" in this organization.`);
}
