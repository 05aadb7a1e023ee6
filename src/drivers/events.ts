// The public form of an assignment and the events of its start and end, built alike whether the
// API or a vehicle's identifier reader changed who drives (docs/API.md "Drivers").
import { iso } from '../clock.ts';
import { type EventRecord, newEvent } from '../events/types.ts';
import { newId } from '../ids.ts';
import type { AssignmentRecord } from './store.ts';

export function toAssignmentView(a: AssignmentRecord) {
  return {
    id: a.id, driverId: a.driverId, vehicleId: a.vehicleId, startedAt: iso(a.startedAt),
    endedAt: a.endedAt === null ? null : iso(a.endedAt), source: a.source,
  };
}

export const assignedEvent = (a: AssignmentRecord): EventRecord => newEvent(a.organizationId, 'driver.assigned', a.vehicleId, a.startedAt, toAssignmentView(a));
export const unassignedEvent = (a: AssignmentRecord): EventRecord => newEvent(a.organizationId, 'driver.unassigned', a.vehicleId, a.endedAt!, toAssignmentView(a));

/** The assignment a vehicle's identifier reader starts, at the time of the record that carried the identifier. */
export function deviceAssignment(at: { organizationId: string; vehicleId: string }, driverId: string, startedAt: number): AssignmentRecord {
  return { organizationId: at.organizationId, id: newId('asg'), driverId, vehicleId: at.vehicleId, startedAt, endedAt: null, source: 'device' };
}
