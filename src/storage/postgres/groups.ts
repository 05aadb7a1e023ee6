// Vehicle groups in PostgreSQL, and the memberships the vehicle store writes with a vehicle.
import type { GroupStore } from '../../groups/store.ts';
import { GROUP_COLUMNS, GROUP_READ, toGroup } from '../groups-rows.ts';
import { type Database, type Queryable, advisoryLock } from './database.ts';

/** Whether every one of `groupIds` is a group of the organization. */
export async function allGroupsExist(q: Queryable, organizationId: string, groupIds: readonly string[]): Promise<boolean> {
  if (groupIds.length === 0) return true;
  const wanted = [...new Set(groupIds)];
  const { rows } = await q.query<{ n: number }>({
    name: 'groups.count-of',
    text: 'SELECT count(*)::int AS n FROM vehicle_groups WHERE organization_id = $1 AND id = ANY($2::text[])',
    values: [organizationId, wanted],
  });
  return rows[0]!.n === wanted.length;
}

/**
 * Inside a transaction: takes the organization's group lock (the one a group's creation and
 * deletion take), then tells whether every one of `groupIds` exists. A credential that names
 * groups is written under it, so a group cannot be deleted between the check and the write.
 */
export async function groupsHeld(q: Queryable, organizationId: string, groupIds: readonly string[]): Promise<boolean> {
  await advisoryLock(q, groupLock(organizationId));
  return allGroupsExist(q, organizationId, groupIds);
}

const groupLock = (organizationId: string) => `fleet:groups:${organizationId}`;

/** Makes `groupIds` the vehicle's groups. */
export async function replaceMemberships(q: Queryable, organizationId: string, vehicleId: string, groupIds: readonly string[]): Promise<void> {
  const wanted = [...new Set(groupIds)];
  // Two statements: in one, the insert's conflict check would see the rows the delete removes.
  await q.query({
    name: 'groups.drop-memberships',
    text: 'DELETE FROM vehicle_group_members WHERE organization_id = $1 AND vehicle_id = $2 AND NOT (group_id = ANY($3::text[]))',
    values: [organizationId, vehicleId, wanted],
  });
  if (wanted.length === 0) return;
  await q.query({
    name: 'groups.add-memberships',
    text: `INSERT INTO vehicle_group_members (organization_id, group_id, vehicle_id)
           SELECT $1, g, $2 FROM unnest($3::text[]) AS g ON CONFLICT DO NOTHING`,
    values: [organizationId, vehicleId, wanted],
  });
}

export function createPostgresGroupStore(db: Database): GroupStore {
  const selectOne = (q: Queryable, organizationId: string, id: string) => q.query({
    name: 'groups.get', text: `SELECT ${GROUP_READ} FROM vehicle_groups WHERE organization_id = $1 AND id = $2`, values: [organizationId, id],
  });
  /** The group's row locked (a deletion on another node waits, or has happened); false when there is none. */
  const lockGroup = async (q: Queryable, organizationId: string, id: string) => (await q.query({
    name: 'groups.lock', text: 'SELECT 1 FROM vehicle_groups WHERE organization_id = $1 AND id = $2 FOR UPDATE', values: [organizationId, id],
  })).rows.length > 0;
  const touch = (q: Queryable, organizationId: string, id: string, at: number) => q.query({
    name: 'groups.touch', text: 'UPDATE vehicle_groups SET updated_at = $3 WHERE organization_id = $1 AND id = $2', values: [organizationId, id, at],
  });

  return {
    async insert(g, maxGroups) {
      return db.transaction(async (client) => {
        if (maxGroups !== undefined) {
          // Counted and inserted under one lock per organization, on any node.
          await advisoryLock(client, groupLock(g.organizationId));
          const { rows } = await client.query<{ n: number }>({
            name: 'groups.count', text: 'SELECT count(*)::int AS n FROM vehicle_groups WHERE organization_id = $1', values: [g.organizationId],
          });
          if (rows[0]!.n >= maxGroups) return false;
        }
        await client.query({
          name: 'groups.insert',
          text: `INSERT INTO vehicle_groups (${GROUP_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)`,
          values: [g.organizationId, g.id, g.name, g.description, g.createdAt, g.updatedAt],
        });
        return true;
      });
    },
    async get(organizationId, id) {
      const { rows } = await selectOne(db, organizationId, id);
      return rows[0] === undefined ? undefined : toGroup(rows[0]);
    },
    async list(organizationId, page, only) {
      const filter = only === undefined ? '' : ' AND id = ANY($2::text[])';
      const params: unknown[] = only === undefined ? [organizationId] : [organizationId, only];
      const shape = only === undefined ? '' : '.only';
      const [rows, count] = await Promise.all([
        db.query({
          name: `groups.page${shape}`,
          text: `SELECT ${GROUP_READ} FROM vehicle_groups WHERE organization_id = $1${filter} ORDER BY created_at, id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
          values: [...params, page.limit, page.offset],
        }),
        db.query<{ n: number }>({ name: `groups.count${shape}`, text: `SELECT count(*)::int AS n FROM vehicle_groups WHERE organization_id = $1${filter}`, values: params }),
      ]);
      return { groups: rows.rows.map(toGroup), total: count.rows[0]!.n };
    },
    async inGroups(organizationId, groupIds, vehicleIds) {
      const { rows } = await db.query<{ vehicle_id: string }>({
        name: 'groups.in-groups',
        text: `SELECT DISTINCT vehicle_id FROM vehicle_group_members
               WHERE organization_id = $1 AND group_id = ANY($2::text[]) AND vehicle_id = ANY($3::text[])`,
        values: [organizationId, groupIds, vehicleIds],
      });
      return rows.map((row) => row.vehicle_id);
    },
    async groupsOfVehicle(organizationId, vehicleId) {
      const { rows } = await db.query<{ group_id: string }>({
        name: 'groups.of-vehicle',
        text: 'SELECT group_id FROM vehicle_group_members WHERE organization_id = $1 AND vehicle_id = $2',
        values: [organizationId, vehicleId],
      });
      return rows.map((row) => row.group_id);
    },
    async membersOf(organizationId, groupIds) {
      const { rows } = await db.query<{ vehicle_id: string }>({
        name: 'groups.members-of',
        text: 'SELECT DISTINCT vehicle_id FROM vehicle_group_members WHERE organization_id = $1 AND group_id = ANY($2::text[])',
        values: [organizationId, groupIds],
      });
      return rows.map((row) => row.vehicle_id);
    },
    async update(organizationId, id, change) {
      return db.transaction(async (client) => {
        const updated = await client.query({
          name: 'groups.update',
          text: 'UPDATE vehicle_groups SET name = $3, description = $4, updated_at = $5 WHERE organization_id = $1 AND id = $2',
          values: [organizationId, id, change.name, change.description, change.updatedAt],
        });
        if (updated.rowCount === 0) return undefined;
        return toGroup((await selectOne(client, organizationId, id)).rows[0]!);
      });
    },
    async delete(organizationId, id) {
      return db.transaction(async (client) => {
        // Under the lock a credential naming groups is written under (groupsHeld).
        await advisoryLock(client, groupLock(organizationId));
        const { rows } = await client.query<{ used: boolean }>({
          name: 'groups.in-use',
          text: `SELECT EXISTS (SELECT 1 FROM users WHERE organization_id = $1 AND $2 = ANY(group_ids))
                     OR EXISTS (SELECT 1 FROM api_keys WHERE organization_id = $1 AND revoked_at IS NULL AND $2 = ANY(group_ids))
                     OR EXISTS (SELECT 1 FROM oauth_clients WHERE organization_id = $1 AND $2 = ANY(group_ids)) AS used`,
          values: [organizationId, id],
        });
        if (rows[0]!.used) return (await selectOne(client, organizationId, id)).rows.length === 0 ? false : 'in-use' as const;
        const { rowCount } = await client.query({ name: 'groups.delete', text: 'DELETE FROM vehicle_groups WHERE organization_id = $1 AND id = $2', values: [organizationId, id] });
        return (rowCount ?? 0) > 0;
      });
    },
    async addVehicles(organizationId, id, vehicleIds, at) {
      return db.transaction(async (client) => {
        if (!(await lockGroup(client, organizationId, id))) return 'group-not-found' as const;
        const wanted = [...new Set(vehicleIds)];
        const { rows } = await client.query<{ id: string }>({
          name: 'groups.vehicles-of', text: 'SELECT id FROM vehicles WHERE organization_id = $1 AND id = ANY($2::text[]) FOR KEY SHARE', values: [organizationId, wanted],
        });
        const found = new Set(rows.map((r) => r.id));
        const missing = wanted.filter((v) => !found.has(v));
        if (missing.length > 0) return { missing };
        await client.query({
          name: 'groups.add',
          text: `INSERT INTO vehicle_group_members (organization_id, group_id, vehicle_id)
                 SELECT $1, $2, v FROM unnest($3::text[]) AS v ON CONFLICT DO NOTHING`,
          values: [organizationId, id, wanted],
        });
        await touch(client, organizationId, id, at);
        return 'added' as const;
      });
    },
    async removeVehicle(organizationId, id, vehicleId, at) {
      return db.transaction(async (client) => {
        if (!(await lockGroup(client, organizationId, id))) return 'group-not-found' as const;
        const removed = await client.query({
          name: 'groups.remove',
          text: 'DELETE FROM vehicle_group_members WHERE organization_id = $1 AND group_id = $2 AND vehicle_id = $3',
          values: [organizationId, id, vehicleId],
        });
        if (removed.rowCount === 0) return 'not-member' as const;
        await touch(client, organizationId, id, at);
        return 'removed' as const;
      });
    },
  };
}
