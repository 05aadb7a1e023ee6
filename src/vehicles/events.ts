// The events a vehicle's life records (docs/API.md "Events"), built in one place for every writer.
import { type EventRecord, newEvent } from '../events/types.ts';
import type { StatusChange } from './store.ts';
import { ACTIVATION } from './transitions.ts';

export function statusChangedEvent(organizationId: string, vehicleId: string, change: StatusChange): EventRecord {
  return newEvent(organizationId, 'vehicle.status_changed', vehicleId, change.at, {
    from: change.from, to: change.to, reason: change.reason, by: change.by,
  });
}

/** The status change and its event for a vehicle activated by its first telemetry at `at`. */
export function activation(organizationId: string, vehicleId: string, at: number): { change: StatusChange; event: EventRecord } {
  const change: StatusChange = { ...ACTIVATION, at };
  return { change, event: statusChangedEvent(organizationId, vehicleId, change) };
}
