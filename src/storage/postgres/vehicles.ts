import type { VehicleFilter, VehicleStore } from '../../vehicles/store.ts';
import { VEHICLE_COLUMNS, VEHICLE_RELATIONS, postgresRows } from '../rows.ts';
import { vehicleDriver } from '../driver-rows.ts';
import { type Database, type Queryable, advisoryLock } from './database.ts';
import { appendEvents } from './events.ts';
import { allGroupsExist, replaceMemberships } from './groups.ts';

const COLUMNS = VEHICLE_COLUMNS;
/** What a vehicle is read as: its columns and its groups. */
const READ = `${VEHICLE_COLUMNS}, ${VEHICLE_RELATIONS.postgres}`;

const SELECT_ONE = `SELECT ${READ} FROM vehicles WHERE organization_id = $1 AND id = $2`;

export function createPostgresVehicleStore(db: Database): VehicleStore {
  async function selectOne(q: Queryable, organizationId: string, id: string) {
    const { rows } = await q.query({ name: 'vehicles.get', text: SELECT_ONE, values: [organizationId, id] });
    return rows[0];
  }

  const insertMany: VehicleStore['insertMany'] = (registrations, maxVehicles) => db.transaction(async (client) => {
    const organizationId = registrations[0]?.vehicle.organizationId;
    if (organizationId === undefined) return [];
    // Decided before anything is written, so that a refusal leaves nothing behind.
    if (!(await allGroupsExist(client, organizationId, [...new Set(registrations.flatMap(({ vehicle }) => vehicle.groupIds))]))) return 'unknown-group';
    // Counted and inserted under one lock per organization: concurrent registrations on any node
    // cannot both take the last place.
    if (maxVehicles !== undefined) await advisoryLock(client, `fleet:vehicles:${organizationId}`);
    const { rows: takenRows } = await client.query<{ id: string }>({
      name: 'vehicles.taken',
      text: 'SELECT id FROM vehicles WHERE organization_id = $1 AND id = ANY($2::text[])',
      values: [organizationId, registrations.map(({ vehicle }) => vehicle.id)],
    });
    const taken = new Set(takenRows.map((r) => r.id));
    const adding = registrations.length - taken.size;
    if (maxVehicles !== undefined && adding > 0) {
      const { rows } = await client.query<{ n: number }>({
        name: 'vehicles.count',
        text: 'SELECT count(*) AS n FROM vehicles WHERE organization_id = $1',
        values: [organizationId],
      });
      if (rows[0]!.n + adding > maxVehicles) return 'quota';
    }
    const outcomes: ('created' | 'exists')[] = [];
    for (const { vehicle: v, registration, events } of registrations) {
      // Taken meanwhile by a registration without the lock (no quota): as taken before.
      const inserted = taken.has(v.id) ? { rowCount: 0 } : await client.query({
        name: 'vehicles.insert',
        text: `INSERT INTO vehicles (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
        values: [v.organizationId, v.id, v.type, v.name, v.status, JSON.stringify(v.configuration), v.createdAt, v.updatedAt, v.statusChangedAt],
      });
      if (inserted.rowCount === 0) {
        outcomes.push('exists');
        continue;
      }
      await replaceMemberships(client, v.organizationId, v.id, v.groupIds);
      await client.query({
        name: 'vehicles.insert-change',
        text: `INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by)
               VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        values: [v.organizationId, v.id, registration.from, registration.to, registration.reason, registration.at, registration.by],
      });
      await appendEvents(client, events, v.createdAt);
      outcomes.push('created');
    }
    return outcomes;
  });

  return {
    insertMany,

    async insert(vehicle, registration, maxVehicles, events = []) {
      const outcome = await insertMany([{ vehicle, registration, events }], maxVehicles);
      return typeof outcome === 'string' ? outcome : outcome[0]!;
    },

    async get(organizationId, id) {
      const row = await selectOne(db, organizationId, id);
      return row === undefined ? undefined : postgresRows.vehicle(row);
    },

    async list(organizationId, filter: VehicleFilter) {
      const statuses = filter.statuses ?? [];
      const types = filter.types ?? [];
      let where = 'organization_id = $1';
      const params: unknown[] = [organizationId];
      if (statuses.length > 0) where += ` AND status = ANY($${params.push(statuses)}::text[])`;
      if (types.length > 0) where += ` AND type = ANY($${params.push(types)}::text[])`;
      if (filter.groupId !== undefined) {
        where += ` AND EXISTS (SELECT 1 FROM vehicle_group_members m WHERE m.organization_id = vehicles.organization_id AND m.group_id = $${params.push(filter.groupId)} AND m.vehicle_id = vehicles.id)`;
      }
      if (filter.anyOfGroups !== undefined) {
        // From the memberships: a scoped list reads its groups' vehicles, not the organization's.
        where += ` AND id IN (SELECT vehicle_id FROM vehicle_group_members WHERE organization_id = $1 AND group_id = ANY($${params.push(filter.anyOfGroups)}::text[]))`;
      }
      const shape = `${statuses.length > 0 ? 's' : ''}${types.length > 0 ? 't' : ''}${filter.groupId === undefined ? '' : 'g'}${filter.anyOfGroups === undefined ? '' : 'a'}`;
      const [page, count] = await Promise.all([
        db.query({
          name: `vehicles.page.${shape}`,
          text: `SELECT ${READ} FROM vehicles WHERE ${where} ORDER BY id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
          values: [...params, filter.limit, filter.offset],
        }),
        db.query<{ n: number }>({ name: `vehicles.count.${shape}`, text: `SELECT count(*) AS n FROM vehicles WHERE ${where}`, values: params }),
      ]);
      return { vehicles: page.rows.map(postgresRows.vehicle), total: count.rows[0]!.n };
    },

    async delete(organizationId, id, events = []) {
      return db.transaction(async (client) => {
        const deleted = await client.query({
          name: 'vehicles.delete',
          text: 'DELETE FROM vehicles WHERE organization_id = $1 AND id = $2',
          values: [organizationId, id],
        });
        if (deleted.rowCount === 0) return false;
        // A second statement, not a CTE of the first: it must see telemetry that a commit holding
        // the vehicle's row lock wrote before the DELETE above could proceed (a new snapshot).
        await client.query({
          name: 'vehicles.delete-telemetry',
          text: 'DELETE FROM telemetry WHERE organization_id = $1 AND vehicle_id = $2',
          values: [organizationId, id],
        });
        await appendEvents(client, events, events[0]?.occurredAt ?? Date.now());
        return true;
      });
    },

    async update(organizationId, id, expectedUpdatedAt, next, events = []) {
      return db.transaction(async (client) => {
        if (!(await allGroupsExist(client, organizationId, next.groupIds))) return 'unknown-group' as const;
        const { rows } = await client.query({
          name: 'vehicles.update',
          text: `UPDATE vehicles SET type = $3, name = $4, configuration = $5, updated_at = $6
                 WHERE organization_id = $1 AND id = $2 AND updated_at = $7 RETURNING ${COLUMNS}, ${vehicleDriver()}`,
          values: [organizationId, id, next.type, next.name, JSON.stringify(next.configuration), next.updatedAt, expectedUpdatedAt],
        });
        if (rows[0] === undefined) return undefined;
        await replaceMemberships(client, organizationId, id, next.groupIds);
        await appendEvents(client, events, next.updatedAt);
        return postgresRows.vehicle({ ...rows[0], group_ids: next.groupIds });
      });
    },

    async changeStatus(organizationId, id, change, events = []) {
      // Compare-and-set and the history entry in one statement. A concurrent change of the same
      // vehicle makes this one wait for its row lock, then re-check `status = from` on the new row.
      return db.transaction(async (client) => {
      const { rows } = await client.query({
        name: 'vehicles.change-status',
        text: `WITH changed AS (
                 UPDATE vehicles SET status = $3, status_changed_at = $4, updated_at = $4
                 WHERE organization_id = $1 AND id = $2 AND status = $5
                 RETURNING ${COLUMNS}
               ), logged AS (
                 INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by)
                 SELECT organization_id, id, $5, $3, $6, $4, $7 FROM changed
               )
               SELECT changed.*, (SELECT coalesce(json_agg(m.group_id ORDER BY m.group_id), '[]'::json) FROM vehicle_group_members m
                 WHERE m.organization_id = changed.organization_id AND m.vehicle_id = changed.id) AS group_ids,
               ${vehicleDriver('changed')}
               FROM changed`,
        values: [organizationId, id, change.to, change.at, change.from, change.reason, change.by],
      });
      if (rows[0] === undefined) return undefined;
      await appendEvents(client, events, change.at);
      return postgresRows.vehicle(rows[0]);
      });
    },

    async statusHistory(organizationId, id, page) {
      const [entries, count] = await Promise.all([
        db.query({
          name: 'vehicles.history-page',
          text: `SELECT from_status, to_status, reason, at, by FROM vehicle_status_history
                 WHERE organization_id = $1 AND vehicle_id = $2 ORDER BY seq DESC LIMIT $3 OFFSET $4`,
          values: [organizationId, id, page.limit, page.offset],
        }),
        db.query<{ n: number }>({
          name: 'vehicles.history-count',
          text: 'SELECT count(*) AS n FROM vehicle_status_history WHERE organization_id = $1 AND vehicle_id = $2',
          values: [organizationId, id],
        }),
      ]);
      return { entries: entries.rows.map(postgresRows.change), total: count.rows[0]!.n };
    },
  };
}
