// Vehicle groups and their members (docs/API.md "Vehicle groups"). Every call names the
// organization; a vehicle's own groups are written with the vehicle (vehicles/store.ts).

export interface GroupRecord {
  organizationId: string;
  id: string;
  name: string;
  description: string | null;
  createdAt: number;
  updatedAt: number;
}

export type GroupWithCount = GroupRecord & { vehicleCount: number };

import type { ScopeStore } from './scope.ts';

export interface GroupStore extends ScopeStore {
  /** false when the organization already has `maxGroups` (counted in the same transaction). */
  insert(group: GroupRecord, maxGroups?: number): Promise<boolean>;
  get(organizationId: string, id: string): Promise<GroupWithCount | undefined>;
  /** Oldest first; `only`: of these groups alone (a scoped credential's). */
  list(organizationId: string, page: { limit: number; offset: number }, only?: readonly string[]): Promise<{ groups: GroupWithCount[]; total: number }>;
  update(organizationId: string, id: string, change: { name: string; description: string | null; updatedAt: number }): Promise<GroupWithCount | undefined>;
  /**
   * With its memberships; false when there was none; `in-use` (nothing deleted) while a user, an
   * unrevoked API key or an OAuth client is limited to it.
   */
  delete(organizationId: string, id: string): Promise<boolean | 'in-use'>;
  /**
   * Puts the vehicles in the group (those in it already stay), all or none: `group-not-found`, or
   * the ids of the vehicles that do not exist.
   */
  addVehicles(organizationId: string, id: string, vehicleIds: readonly string[], at: number): Promise<'added' | 'group-not-found' | { missing: string[] }>;
  /** `not-member` also when the vehicle does not exist. */
  removeVehicle(organizationId: string, id: string, vehicleId: string, at: number): Promise<'removed' | 'group-not-found' | 'not-member'>;
}
