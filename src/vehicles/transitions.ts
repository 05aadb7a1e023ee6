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

/**
 * The first accepted telemetry of a `registered` vehicle makes it `active`, recorded as a change
 * by `system`. Every store applies it with these values in the telemetry commit's transaction.
 */
export const ACTIVATION = { from: 'registered', to: 'active', reason: 'first telemetry', by: 'system' } as const;

/** What telemetry does with a vehicle of this status: refuse it, activate it, or just accept. */
export function telemetryVerdict(status: VehicleStatus): 'refuse' | 'activate' | 'accept' {
  if (status === 'retired') return 'refuse';
  return status === ACTIVATION.from ? 'activate' : 'accept';
}
