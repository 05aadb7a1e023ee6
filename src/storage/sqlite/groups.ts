// Vehicle groups in the embedded store, and the memberships the vehicle store writes with a vehicle.
import type { DatabaseSync } from 'node:sqlite';
import type { GroupStore } from '../../groups/store.ts';
import { GROUP_COLUMNS, GROUP_READ, toGroup } from '../groups-rows.ts';
import { transaction } from './database.ts';

/** A vehicle's memberships, written inside the vehicle store's transactions. */
export interface Memberships {
  /** Whether every one of `groupIds` is a group of the organization. */
  allExist(organizationId: string, groupIds: readonly string[]): boolean;
  /** Makes `groupIds` the vehicle's groups. */
  replace(organizationId: string, vehicleId: string, groupIds: readonly string[]): void;
}

export function createSqliteMemberships(db: DatabaseSync): Memberships {
  const countGroups = db.prepare('SELECT count(*) AS n FROM vehicle_groups WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?))');
  const clear = db.prepare('DELETE FROM vehicle_group_members WHERE organization_id = ? AND vehicle_id = ?');
  const add = db.prepare('INSERT OR IGNORE INTO vehicle_group_members (organization_id, group_id, vehicle_id) VALUES (?, ?, ?)');
  return {
    allExist(organizationId, groupIds) {
      if (groupIds.length === 0) return true;
      return Number(countGroups.get(organizationId, JSON.stringify([...new Set(groupIds)]))!.n) === new Set(groupIds).size;
    },
    replace(organizationId, vehicleId, groupIds) {
      clear.run(organizationId, vehicleId);
      for (const groupId of groupIds) add.run(organizationId, groupId, vehicleId);
    },
  };
}

export function createSqliteGroupStore(db: DatabaseSync): GroupStore {
  const count = db.prepare('SELECT count(*) AS n FROM vehicle_groups WHERE organization_id = ?');
  const insert = db.prepare(`INSERT INTO vehicle_groups (${GROUP_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`);
  const selectOne = db.prepare(`SELECT ${GROUP_READ} FROM vehicle_groups WHERE organization_id = ? AND id = ?`);
  const page = db.prepare(`SELECT ${GROUP_READ} FROM vehicle_groups WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const onlyPage = db.prepare(
    `SELECT ${GROUP_READ} FROM vehicle_groups WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY created_at, id LIMIT ? OFFSET ?`,
  );
  const onlyCount = db.prepare('SELECT count(*) AS n FROM vehicle_groups WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?))');
  const inUse = db.prepare(
    `SELECT EXISTS (SELECT 1 FROM users, json_each(users.group_ids) g WHERE users.organization_id = ?1 AND g.value = ?2)
         OR EXISTS (SELECT 1 FROM api_keys, json_each(api_keys.group_ids) g WHERE api_keys.organization_id = ?1 AND api_keys.revoked_at IS NULL AND g.value = ?2)
         OR EXISTS (SELECT 1 FROM oauth_clients, json_each(oauth_clients.group_ids) g WHERE oauth_clients.organization_id = ?1 AND g.value = ?2) AS used`,
  );
  const inGroups = db.prepare(
    `SELECT DISTINCT vehicle_id FROM vehicle_group_members
     WHERE organization_id = ? AND group_id IN (SELECT value FROM json_each(?)) AND vehicle_id IN (SELECT value FROM json_each(?))`,
  );
  const membersOf = db.prepare(
    'SELECT DISTINCT vehicle_id FROM vehicle_group_members WHERE organization_id = ? AND group_id IN (SELECT value FROM json_each(?))',
  );
  const groupsOfVehicle = db.prepare('SELECT group_id FROM vehicle_group_members WHERE organization_id = ? AND vehicle_id = ?');
  for (const statement of [inGroups, membersOf, groupsOfVehicle]) statement.setReturnArrays(true);
  const groupsOf = (organizationId: string, vehicleId: string) =>
    (groupsOfVehicle.all(organizationId, vehicleId) as unknown as [string][]).map((row) => row[0]);
  const update = db.prepare('UPDATE vehicle_groups SET name = ?, description = ?, updated_at = ? WHERE organization_id = ? AND id = ?');
  const touch = db.prepare('UPDATE vehicle_groups SET updated_at = ? WHERE organization_id = ? AND id = ?');
  const remove = db.prepare('DELETE FROM vehicle_groups WHERE organization_id = ? AND id = ?');
  const existing = db.prepare('SELECT id FROM vehicles WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?))');
  const add = db.prepare('INSERT OR IGNORE INTO vehicle_group_members (organization_id, group_id, vehicle_id) VALUES (?, ?, ?)');
  const removeMember = db.prepare('DELETE FROM vehicle_group_members WHERE organization_id = ? AND group_id = ? AND vehicle_id = ?');

  return {
    async insert(g, maxGroups) {
      return transaction(db, () => {
        if (maxGroups !== undefined && Number(count.get(g.organizationId)!.n) >= maxGroups) return false;
        insert.run(g.organizationId, g.id, g.name, g.description, g.createdAt, g.updatedAt);
        return true;
      });
    },
    async get(organizationId, id) {
      const row = selectOne.get(organizationId, id);
      return row === undefined ? undefined : toGroup(row);
    },
    async list(organizationId, p, only) {
      if (only !== undefined) {
        const ids = JSON.stringify(only);
        return { groups: onlyPage.all(organizationId, ids, p.limit, p.offset).map(toGroup), total: Number(onlyCount.get(organizationId, ids)!.n) };
      }
      return {
        groups: page.all(organizationId, p.limit, p.offset).map(toGroup),
        total: Number(count.get(organizationId)!.n),
      };
    },
    async update(organizationId, id, change) {
      return transaction(db, () => {
        if (update.run(change.name, change.description, change.updatedAt, organizationId, id).changes === 0) return undefined;
        return toGroup(selectOne.get(organizationId, id)!);
      });
    },
    async delete(organizationId, id) {
      return transaction(db, () => {
        if (inUse.get(organizationId, id)!.used === 1) return selectOne.get(organizationId, id) === undefined ? false : 'in-use' as const;
        return remove.run(organizationId, id).changes > 0;
      });
    },
    async inGroups(organizationId, groupIds, vehicleIds) {
      return (inGroups.all(organizationId, JSON.stringify(groupIds), JSON.stringify(vehicleIds)) as unknown as [string][]).map((row) => row[0]);
    },
    async membersOf(organizationId, groupIds) {
      return (membersOf.all(organizationId, JSON.stringify(groupIds)) as unknown as [string][]).map((row) => row[0]);
    },
    async groupsOfVehicle(organizationId, vehicleId) {
      return groupsOf(organizationId, vehicleId);
    },
    groupsOfVehicleNow: groupsOf,
    async addVehicles(organizationId, id, vehicleIds, at) {
      return transaction(db, () => {
        if (selectOne.get(organizationId, id) === undefined) return 'group-not-found' as const;
        const wanted = [...new Set(vehicleIds)];
        const found = new Set(existing.all(organizationId, JSON.stringify(wanted)).map((row) => row.id as string));
        const missing = wanted.filter((v) => !found.has(v));
        if (missing.length > 0) return { missing };
        for (const vehicleId of wanted) add.run(organizationId, id, vehicleId);
        touch.run(at, organizationId, id);
        return 'added' as const;
      });
    },
    async removeVehicle(organizationId, id, vehicleId, at) {
      return transaction(db, () => {
        if (selectOne.get(organizationId, id) === undefined) return 'group-not-found' as const;
        if (removeMember.run(organizationId, id, vehicleId).changes === 0) return 'not-member' as const;
        touch.run(at, organizationId, id);
        return 'removed' as const;
      });
    },
  };
}
