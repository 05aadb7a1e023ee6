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
    // A statement per table, whatever the batch's size (a round trip per vehicle held the lock for
    // seconds with a thousand). Taken meanwhile by a registration without the lock (no quota): the
    // conflict leaves it out, as taken.
    const fresh = registrations.filter(({ vehicle }) => !taken.has(vehicle.id));
    const column = <T>(of: (r: (typeof fresh)[number]) => T) => fresh.map(of);
    const { rows: insertedRows } = fresh.length === 0 ? { rows: [] } : await client.query<{ id: string }>({
      name: 'vehicles.insert-many',
      text: `INSERT INTO vehicles (${COLUMNS})
             SELECT $1, id, type, name, status, configuration::json, created_at, updated_at, status_changed_at
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[])
               AS v (id, type, name, status, configuration, created_at, updated_at, status_changed_at)
             ON CONFLICT DO NOTHING RETURNING id`,
      values: [
        organizationId, column((r) => r.vehicle.id), column((r) => r.vehicle.type), column((r) => r.vehicle.name), column((r) => r.vehicle.status),
        column((r) => JSON.stringify(r.vehicle.configuration)), column((r) => r.vehicle.createdAt), column((r) => r.vehicle.updatedAt),
        column((r) => r.vehicle.statusChangedAt),
      ],
    });
    const inserted = new Set(insertedRows.map((r) => r.id));
    const created = fresh.filter(({ vehicle }) => inserted.has(vehicle.id));
    const members = created.flatMap(({ vehicle }) => [...new Set(vehicle.groupIds)].map((g) => [g, vehicle.id] as const));
    if (members.length > 0) {
      await client.query({
        name: 'vehicles.insert-memberships',
        text: `INSERT INTO vehicle_group_members (organization_id, group_id, vehicle_id)
               SELECT $1, g, v FROM unnest($2::text[], $3::text[]) AS m (g, v) ON CONFLICT DO NOTHING`,
        values: [organizationId, members.map((m) => m[0]), members.map((m) => m[1])],
      });
    }
    if (created.length > 0) {
      const entry = <T>(of: (r: (typeof created)[number]) => T) => created.map(of);
      await client.query({
        name: 'vehicles.insert-changes',
        text: `INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by)
               SELECT $1, v, f, t, r, a, b FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
                 WITH ORDINALITY AS c (v, f, t, r, a, b, n) ORDER BY n`,
        values: [
          organizationId, entry((r) => r.vehicle.id), entry((r) => r.registration.from), entry((r) => r.registration.to),
          entry((r) => r.registration.reason), entry((r) => r.registration.at), entry((r) => r.registration.by),
        ],
      });
      await appendEvents(client, created.flatMap((r) => r.events), created[0]!.vehicle.createdAt);
    }
    const outcomes = registrations.map(({ vehicle }): 'created' | 'exists' => (inserted.has(vehicle.id) && !taken.has(vehicle.id) ? 'created' : 'exists'));
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
