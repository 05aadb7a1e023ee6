// Vehicle groups: named sets of an organization's vehicles (docs/API.md "Vehicle groups").
import type { Principal } from '../auth/scopes.ts';
import { type Clock, iso } from '../clock.ts';
import type { EventPort } from '../events/port.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import { assertWholeOrganization } from './scope.ts';
import type { GroupChange, GroupCreation } from './schema.ts';
import type { GroupRecord, GroupStore, GroupWithCount } from './store.ts';

export type GroupService = ReturnType<typeof createGroupService>;

export function toGroupView(g: GroupWithCount) {
  return { id: g.id, name: g.name, description: g.description, vehicleCount: g.vehicleCount, createdAt: iso(g.createdAt), updatedAt: iso(g.updatedAt) };
}

export function createGroupService(deps: { store: GroupStore; clock: Clock; maxGroups?: number; events?: EventPort }) {
  const { store, clock } = deps;
  const membershipChanged = (organizationId: string) => deps.events?.emit('membershipChanged', { organizationId });

  async function create(who: Principal, body: GroupCreation): Promise<GroupWithCount> {
    assertWholeOrganization(who, 'groups or their members');
    const now = clock.now();
    const group: GroupRecord = {
      organizationId: who.organizationId, id: newId('grp'), name: body.name, description: body.description ?? null, createdAt: now, updatedAt: now,
    };
    if (!(await store.insert(group, deps.maxGroups))) throw quotaExceeded(deps.maxGroups ?? 0, 'groups');
    return { ...group, vehicleCount: 0 };
  }

  async function get(who: Principal, id: string): Promise<GroupWithCount> {
    // A credential limited to groups sees its own groups only; another is not there for it.
    const group = who.groupIds !== undefined && !who.groupIds.includes(id) ? undefined : await store.get(who.organizationId, id);
    if (group === undefined) throw notFound(id);
    return group;
  }

  async function update(who: Principal, id: string, change: GroupChange): Promise<GroupWithCount> {
    assertWholeOrganization(who, 'groups or their members');
    const current = await get(who, id);
    const updated = await store.update(who.organizationId, id, {
      name: change.name ?? current.name,
      description: change.description === undefined ? current.description : change.description,
      updatedAt: Math.max(clock.now(), current.updatedAt + 1),
    });
    if (updated === undefined) throw notFound(id);
    return updated;
  }

  async function remove(who: Principal, id: string): Promise<void> {
    assertWholeOrganization(who, 'groups or their members');
    const deleted = await store.delete(who.organizationId, id);
    if (deleted === 'in-use') {
      throw new AppError('group-in-use', `Users, API keys or OAuth clients are limited to group "${id}"; change or remove them first.`);
    }
    if (!deleted) throw notFound(id);
    membershipChanged(who.organizationId);
  }

  async function addVehicles(who: Principal, id: string, vehicleIds: readonly string[]): Promise<void> {
    assertWholeOrganization(who, 'groups or their members');
    const outcome = await store.addVehicles(who.organizationId, id, vehicleIds, clock.now());
    if (outcome === 'group-not-found') throw notFound(id);
    if (typeof outcome === 'object') {
      const shown = outcome.missing.slice(0, 10).map((v) => `"${v}"`).join(', ');
      throw new AppError('vehicle-not-found', `No vehicle ${shown}${outcome.missing.length > 10 ? ` and ${outcome.missing.length - 10} more` : ''} in this organization; none was added.`);
    }
    membershipChanged(who.organizationId);
  }

  async function removeVehicle(who: Principal, id: string, vehicleId: string): Promise<void> {
    assertWholeOrganization(who, 'groups or their members');
    const outcome = await store.removeVehicle(who.organizationId, id, vehicleId, clock.now());
    if (outcome === 'group-not-found') throw notFound(id);
    if (outcome === 'not-member') throw new AppError('vehicle-not-found', `No vehicle "${vehicleId}" in group "${id}".`);
    membershipChanged(who.organizationId);
  }

  return {
    create, get, update, remove, addVehicles, removeVehicle,
    list: (who: Principal, page: { limit: number; offset: number }) => store.list(who.organizationId, page, who.groupIds),
  };
}


function notFound(id: string): AppError {
  return new AppError('group-not-found', `No group "${id}" in this organization.`);
}
