// A vehicle's meters as the API reads and sets them (docs/API.md "Meters"); a credential limited
// to groups reads and sets those of the vehicles it sees.
import type { Principal } from '../auth/scopes.ts';
import { type Clock, iso } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { VehicleScope } from '../groups/scope.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { MetersSetting } from './schema.ts';
import { initialMeters, metersView, setMeters } from './state.ts';
import type { MeterStore } from './store.ts';

export function createMeterService(deps: { store: MeterStore; vehicles: VehicleStore; scope: VehicleScope; clock: Clock }) {
  async function requireVehicle(who: Principal, vehicleId: string): Promise<void> {
    await deps.scope.assertSees(who, [vehicleId]);
    if ((await deps.vehicles.get(who.organizationId, vehicleId)) === undefined) {
      throw new AppError('vehicle-not-found', `No vehicle "${vehicleId}" in this organization.`);
    }
  }
  return {
    async get(who: Principal, vehicleId: string) {
      await requireVehicle(who, vehicleId);
      return metersView(vehicleId, await deps.store.meters(who.organizationId, vehicleId), iso);
    },
    async set(who: Principal, vehicleId: string, values: MetersSetting) {
      await requireVehicle(who, vehicleId);
      const at = deps.clock.now();
      const written = await deps.store.setMeters(who.organizationId, vehicleId, (current) => setMeters(current ?? initialMeters(), values, at));
      return metersView(vehicleId, written, iso);
    },
  };
}

export type MeterService = ReturnType<typeof createMeterService>;

