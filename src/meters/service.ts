// A vehicle's meters as the API reads and sets them (docs/API.md "Meters"). A credential limited
// to groups reaches only the vehicles it sees: the vehicle-scope hook checks the path's vehicle
// before these run (http/vehicle-scope.ts).
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { vehicleNotFound } from '../groups/scope.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { MetersSetting } from './schema.ts';
import { initialMeters, metersView, setMeters } from './state.ts';
import type { MeterStore } from './store.ts';

export function createMeterService(deps: { store: MeterStore; vehicles: VehicleStore; clock: Clock }) {
  async function requireVehicle(who: Principal, vehicleId: string): Promise<void> {
    if ((await deps.vehicles.get(who.organizationId, vehicleId)) === undefined) throw vehicleNotFound(vehicleId);
  }
  return {
    async get(who: Principal, vehicleId: string) {
      await requireVehicle(who, vehicleId);
      return metersView(vehicleId, await deps.store.meters(who.organizationId, vehicleId));
    },
    async set(who: Principal, vehicleId: string, values: MetersSetting) {
      await requireVehicle(who, vehicleId);
      const at = deps.clock.now();
      const written = await deps.store.setMeters(who.organizationId, vehicleId, (current) => setMeters(current ?? initialMeters(), values, at));
      return metersView(vehicleId, written);
    },
  };
}

export type MeterService = ReturnType<typeof createMeterService>;
