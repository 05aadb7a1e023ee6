import type { VehicleStatus } from './schema.ts';

/** The status transition table of the contract. `retired` is terminal. */
export const TRANSITIONS: Readonly<Record<VehicleStatus, readonly VehicleStatus[]>> = {
  registered: ['active', 'inactive', 'maintenance', 'retired'],
  active: ['inactive', 'maintenance', 'retired'],
  inactive: ['active', 'maintenance', 'retired'],
  maintenance: ['active', 'inactive', 'retired'],
  retired: [],
};

export function canTransition(from: VehicleStatus, to: VehicleStatus): boolean {
  return TRANSITIONS[from].includes(to);
}
