// Scoped credentials (docs/API.md "Scoped credentials"): a user, API key or OAuth client limited to
// vehicle groups sees a vehicle only while it is in one of them. Everything that reads or acts on
// a vehicle asks here (the route hook in http/vehicle-scope.ts, lists, the feed, streams); a
// vehicle outside the scope answers exactly as another organization's does.
import { ORGANIZATION_WIDE, type Principal, type Scope } from '../auth/scopes.ts';
import { AppError } from '../errors.ts';

/** Membership as the scope reads it, from the store on every request (so a change applies at once, on every node). */
export interface ScopeStore {
  /** Of `vehicleIds`, those in at least one of `groupIds`. */
  inGroups(organizationId: string, groupIds: readonly string[], vehicleIds: readonly string[]): Promise<string[]>;
  /** Every vehicle in at least one of `groupIds`. */
  membersOf(organizationId: string, groupIds: readonly string[]): Promise<string[]>;
  /** The groups one vehicle is in (one index read: the per-request check of a route that names a vehicle). */
  groupsOfVehicle(organizationId: string, vehicleId: string): Promise<string[]>;
  /** The same, answered at once by a store that reads synchronously (the embedded one): no promise on a hot path. */
  groupsOfVehicleNow?(organizationId: string, vehicleId: string): string[];
}

/** The answer for a vehicle that is not there for the caller: the same words for another organization's and one outside the scope. */
export function vehicleNotFound(id: string): AppError {
  return new AppError('vehicle-not-found', `No vehicle "${id}" in this organization.`);
}

/** 403 `outside-groups` for a credential limited to groups: `what` is the organization's to change, not a group's. */
export function assertWholeOrganization(who: Principal, what: string): void {
  if (who.groupIds !== undefined) throw new AppError('outside-groups', `A credential limited to groups cannot create, change or delete ${what}.`);
}

export function unknownGroups(groupIds: readonly string[]): AppError {
  return new AppError('group-not-found', `No group ${groupIds.map((id) => `"${id}"`).join(', ')} in this organization, or not all of them.`);
}

/** A credential limited to groups cannot hold an organization-wide scope (400 at `/scopes`). */
export function assertScopedScopes(scopes: readonly Scope[], groupIds: readonly string[] | null | undefined): void {
  if (groupIds === null || groupIds === undefined) return;
  const wide = scopes.filter((scope) => ORGANIZATION_WIDE.includes(scope));
  if (wide.length === 0) return;
  throw new AppError('validation-failed', `A credential limited to groups cannot hold organization-wide scopes: ${wide.join(', ')}.`, {
    errors: [{ in: 'body', path: '/scopes', message: `must not include ${wide.join(', ')} with groupIds` }],
  });
}

export type VehicleScope = ReturnType<typeof createVehicleScope>;

export function createVehicleScope(store: ScopeStore) {
  /** Of `vehicleIds`, those `who` may see; undefined when it sees the whole organization. */
  async function visibleOf(who: Principal, vehicleIds: readonly string[]): Promise<Set<string> | undefined> {
    const own = who.groupIds;
    if (own === undefined) return undefined;
    if (vehicleIds.length === 0) return new Set();
    if (vehicleIds.length === 1) {
      const [vehicleId] = vehicleIds as [string];
      const groups = await store.groupsOfVehicle(who.organizationId, vehicleId);
      return new Set(groups.some((id) => own.includes(id)) ? [vehicleId] : []);
    }
    return new Set(await store.inGroups(who.organizationId, own, vehicleIds));
  }

  /** 404 `vehicle-not-found` unless `who` may see every one of the vehicles. */
  async function assertSees(who: Principal, vehicleIds: readonly string[]): Promise<void> {
    const visible = await visibleOf(who, vehicleIds);
    if (visible === undefined) return;
    const hidden = [...new Set(vehicleIds)].filter((id) => !visible.has(id));
    if (hidden.length === 1) throw vehicleNotFound(hidden[0]!);
    if (hidden.length > 1) throw new AppError('vehicle-not-found', `No vehicle ${hidden.slice(0, 10).map((id) => `"${id}"`).join(', ')} in this organization.`);
  }

  /**
   * Whether `who` sees the vehicle, answered at once where the store can (undefined: ask
   * assertSees). Always true for a credential of the whole organization.
   */
  function seesNow(who: Principal, vehicleId: string): boolean | undefined {
    const own = who.groupIds;
    if (own === undefined) return true;
    if (store.groupsOfVehicleNow === undefined) return undefined;
    return store.groupsOfVehicleNow(who.organizationId, vehicleId).some((id) => own.includes(id));
  }

  return {
    visibleOf,
    assertSees,
    seesNow,
    /** Whether `who` sees the vehicle (a device's, an alert's): at once where the store can answer so. */
    async sees(who: Principal, vehicleId: string): Promise<boolean> {
      return seesNow(who, vehicleId) ?? (await visibleOf(who, [vehicleId]))!.has(vehicleId);
    },
  };
}

/**
 * The groups a vehicle registered or changed by `who` is put in. A scoped credential registers
 * into its own groups only (default: all of them) and changes only its own groups' part of a
 * vehicle's list: the groups it cannot see are kept as they were (`current`). It never leaves a
 * vehicle in none of its groups (403), so it never loses sight of a vehicle by its own change.
 */
export function groupsToSet(who: Principal, asked: readonly string[] | undefined, current: readonly string[] | undefined): string[] | undefined {
  const own = who.groupIds;
  if (own === undefined) return asked === undefined ? undefined : [...asked];
  if (asked === undefined) return current === undefined ? [...own] : undefined;
  if (asked.length === 0) {
    throw new AppError('outside-groups', 'A credential limited to groups keeps a vehicle in at least one of its groups.');
  }
  const outside = asked.filter((id) => !own.includes(id));
  if (outside.length > 0) {
    throw new AppError('outside-groups', `This credential may put vehicles only in its own groups; not in ${outside.map((id) => `"${id}"`).join(', ')}.`);
  }
  const kept = (current ?? []).filter((id) => !own.includes(id));
  return [...kept, ...asked];
}

/** A vehicle's groups as `who` is shown them: only its own when it is limited to groups. */
export function groupsShown(who: Principal, groupIds: readonly string[]): readonly string[] {
  const own = who.groupIds;
  return own === undefined ? groupIds : groupIds.filter((id) => own.includes(id));
}
