// Vehicle groups: named sets of an organization's vehicles (docs/API.md "Vehicle groups").
import type { Principal } from '../auth/scopes.ts';
import { type Clock, iso } from '../clock.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import type { GroupChange, GroupCreation } from './schema.ts';
import type { GroupRecord, GroupStore, GroupWithCount } from './store.ts';

export type GroupService = ReturnType<typeof createGroupService>;

export function toGroupView(g: GroupWithCount) {
  return { id: g.id, name: g.name, description: g.description, vehicleCount: g.vehicleCount, createdAt: iso(g.createdAt), updatedAt: iso(g.updatedAt) };
}

export function createGroupService(deps: { store: GroupStore; clock: Clock; maxGroups?: number }) {
  const { store, clock } = deps;

  async function create(who: Principal, body: GroupCreation): Promise<GroupWithCount> {
    const now = clock.now();
    const group: GroupRecord = {
      organizationId: who.organizationId, id: newId('grp'), name: body.name, description: body.description ?? null, createdAt: now, updatedAt: now,
    };
    if (!(await store.insert(group, deps.maxGroups))) throw quotaExceeded(deps.maxGroups ?? 0, 'groups');
    return { ...group, vehicleCount: 0 };
  }

  async function get(who: Principal, id: string): Promise<GroupWithCount> {
    const group = await store.get(who.organizationId, id);
    if (group === undefined) throw notFound(id);
    return group;
  }

  async function update(who: Principal, id: string, change: GroupChange): Promise<GroupWithCount> {
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
    if (!(await store.delete(who.organizationId, id))) throw notFound(id);
  }

  async function addVehicles(who: Principal, id: string, vehicleIds: readonly string[]): Promise<void> {
    const outcome = await store.addVehicles(who.organizationId, id, vehicleIds, clock.now());
    if (outcome === 'group-not-found') throw notFound(id);
    if (typeof outcome === 'object') {
      const shown = outcome.missing.slice(0, 10).map((v) => `"${v}"`).join(', ');
      throw new AppError('vehicle-not-found', `No vehicle ${shown}${outcome.missing.length > 10 ? ` and ${outcome.missing.length - 10} more` : ''} in this organization; none was added.`);
    }
  }

  async function removeVehicle(who: Principal, id: string, vehicleId: string): Promise<void> {
    const outcome = await store.removeVehicle(who.organizationId, id, vehicleId, clock.now());
    if (outcome === 'group-not-found') throw notFound(id);
    if (outcome === 'not-member') throw new AppError('vehicle-not-found', `No vehicle "${vehicleId}" in group "${id}".`);
  }

  return { create, get, list: (who: Principal, page: { limit: number; offset: number }) => store.list(who.organizationId, page), update, remove, addVehicles, removeVehicle };
}

function notFound(id: string): AppError {
  return new AppError('group-not-found', `No group "${id}" in this organization.`);
}
