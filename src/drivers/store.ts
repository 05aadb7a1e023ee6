// Drivers, their identifiers and their assignments to vehicles (docs/API.md "Drivers"). Every call
// names the organization. A change of assignments is written with its events in one transaction.
import type { EventRecord } from '../events/types.ts';
import type { DriverIdentifier } from './schema.ts';

export interface DriverRecord {
  organizationId: string;
  id: string;
  name: string;
  externalId: string | null;
  identifiers: DriverIdentifier[];
  phone: string | null;
  notes: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A driver as read: with the vehicle of its ongoing assignment. */
export type DriverWithVehicle = DriverRecord & { vehicleId: string | null };

export interface AssignmentRecord {
  organizationId: string;
  id: string;
  driverId: string;
  vehicleId: string;
  startedAt: number;
  /** Null while ongoing. */
  endedAt: number | null;
  source: 'api' | 'device';
}

export interface DriverChange {
  name: string;
  externalId: string | null;
  identifiers: DriverIdentifier[];
  phone: string | null;
  notes: string | null;
  updatedAt: number;
}


export interface AssignmentFilter {
  vehicleId?: string;
  driverId?: string;
  /** Assignments ongoing at or after this time (ms). */
  from?: number;
  /** Assignments that started before this time (ms). */
  to?: number;
  /** After this position (startedAt, id) of the previous page, newest first. */
  before?: [number, string];
  limit: number;
}

export interface DriverStore {
  /** `quota` past `maxDrivers` (counted in the same transaction); `taken`: an identifier is another driver's. */
  insert(driver: DriverRecord, maxDrivers?: number): Promise<'created' | 'quota' | { taken: string }>;
  get(organizationId: string, id: string): Promise<DriverWithVehicle | undefined>;
  /** Oldest first; `q`: name or external id contains it, case-insensitive. */
  list(organizationId: string, filter: { q?: string; limit: number; offset: number }): Promise<{ drivers: DriverWithVehicle[]; total: number }>;
  update(organizationId: string, id: string, change: DriverChange): Promise<DriverWithVehicle | undefined | { taken: string }>;
  /** With its identifiers; its ongoing assignment ends at `at` (kept, as its past ones), with its event. */
  delete(organizationId: string, id: string, at: number): Promise<{ events: EventRecord[] } | undefined>;
  /**
   * Starts `assignment`, ending at its start the driver's and the vehicle's ongoing ones (their
   * `driver.unassigned` events, then its `driver.assigned`). `same`: that driver already drives that
   * vehicle (nothing changes); `conflict`: an assignment it would end started after it.
   */
  assign(assignment: AssignmentRecord, now: number): Promise<
    | 'no-driver' | 'no-vehicle'
    | { same: AssignmentRecord }
    | { conflict: AssignmentRecord }
    | { assignment: AssignmentRecord; events: EventRecord[] }
  >;
  /** Ends an ongoing assignment at `at`; `ended` when it had ended already (unchanged); `too-early` before its start. */
  end(organizationId: string, id: string, at: number, now: number): Promise<
    undefined | 'too-early' | { ended: AssignmentRecord } | { assignment: AssignmentRecord; event: EventRecord }
  >;
  getAssignment(organizationId: string, id: string): Promise<AssignmentRecord | undefined>;
  assignments(organizationId: string, filter: AssignmentFilter): Promise<AssignmentRecord[]>;
}
