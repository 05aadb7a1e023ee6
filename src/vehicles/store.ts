import type { EventRecord } from '../events/types.ts';
import type { Configuration, VehicleStatus, VehicleType } from './schema.ts';

export interface VehicleRecord {
  organizationId: string;
  id: string;
  type: VehicleType;
  /** A person's name for it (optional). */
  name: string | null;
  status: VehicleStatus;
  configuration: Configuration;
  createdAt: number;
  updatedAt: number;
  statusChangedAt: number;
  /** The groups it is in, by id (docs/API.md "Vehicle groups"). */
  groupIds: string[];
  /** The driver of its ongoing assignment (docs/API.md "Drivers"); null when none. */
  driverId: string | null;
}

export interface StatusChange {
  from: VehicleStatus | null;
  to: VehicleStatus;
  reason: string | null;
  at: number;
  by: string;
}

export interface Page {
  limit: number;
  offset: number;
}

export interface VehicleFilter extends Page {
  statuses?: VehicleStatus[];
  types?: VehicleType[];
  /** Only the vehicles in this group. */
  groupId?: string;
  /** Only the vehicles in at least one of these groups (a credential limited to groups). */
  anyOfGroups?: readonly string[];
}

/** A vehicle to register: the vehicle, its registration entry, and the events it records. */
export interface NewVehicle {
  vehicle: VehicleRecord;
  registration: StatusChange;
  events: readonly EventRecord[];
}

/**
 * Persistence of vehicles and their status history. Every call is scoped to one organization:
 * there is deliberately no way to reach a vehicle without naming its organization.
 * Times are milliseconds since the epoch. Each write takes the events it causes and records
 * them in the event log in the same transaction.
 */
export interface VehicleStore {
  /**
   * Stores the vehicle, its registration entry and its groups, unless the id is taken in the
   * organization, the organization already has `maxVehicles` (counted in the same transaction as
   * the insert), or one of its groups does not exist (`unknown-group`).
   */
  insert(vehicle: VehicleRecord, registration: StatusChange, maxVehicles?: number, events?: readonly EventRecord[]): Promise<'created' | 'exists' | 'quota' | 'unknown-group'>;
  /**
   * Several registrations in one transaction, each as `insert` would store it: per registration
   * `created`, or `exists` (the id is taken; nothing of it is written). All or none: `quota` when
   * the ones not taken would take the organization past `maxVehicles`, `unknown-group` when one
   * names a group that does not exist; nothing is stored then. Ids are distinct.
   */
  insertMany(registrations: readonly NewVehicle[], maxVehicles?: number): Promise<('created' | 'exists')[] | 'quota' | 'unknown-group'>;
  get(organizationId: string, id: string): Promise<VehicleRecord | undefined>;
  /** Ordered by id ascending, so pages are stable. */
  list(organizationId: string, filter: VehicleFilter): Promise<{ vehicles: VehicleRecord[]; total: number }>;
  /** Removes the vehicle with its history; false when there was none. */
  delete(organizationId: string, id: string, events?: readonly EventRecord[]): Promise<boolean>;
  /**
   * Compare-and-set: writes `next`'s type, name, configuration, groups and updatedAt only while
   * the vehicle's `updatedAt` is still `expectedUpdatedAt`. Undefined when it is gone or changed
   * meanwhile; `unknown-group` (nothing written) when one of `next`'s groups does not exist.
   */
  update(organizationId: string, id: string, expectedUpdatedAt: number, next: VehicleRecord, events?: readonly EventRecord[]): Promise<VehicleRecord | undefined | 'unknown-group'>;
  /**
   * Compare-and-set: applies `change` only while the vehicle's status is still `change.from`, and
   * records it in the history in the same transaction. Undefined when the vehicle is gone or its
   * status moved meanwhile.
   */
  changeStatus(organizationId: string, id: string, change: StatusChange & { from: VehicleStatus }, events?: readonly EventRecord[]): Promise<VehicleRecord | undefined>;
  /** Newest first. */
  statusHistory(organizationId: string, id: string, page: Page): Promise<{ entries: StatusChange[]; total: number }>;
}
