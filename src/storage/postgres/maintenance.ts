// Maintenance schedules, items and service records on PostgreSQL (maintenance/store.ts). Items are
// inserted with ON CONFLICT DO NOTHING, so two nodes making the same one keep the first; an
// announcement and a restart each name the item's state they change, so a check that read an item
// before a service restarted it announces nothing.
import type { MaintenanceStore } from '../../maintenance/store.ts';
import { ITEM_COLUMNS, SCHEDULE_COLUMNS, SERVICE_COLUMNS, itemOf, itemValues, metersOf, scheduleOf, serviceOf, serviceValues } from '../maintenance-rows.ts';
import type { Database, Queryable } from './database.ts';
import { appendEvents } from './events.ts';
import type { ItemRecord } from '../../maintenance/model.ts';

async function insertItems(client: Queryable, items: readonly ItemRecord[]): Promise<void> {
  if (items.length === 0) return;
  const columns = items.map((i) => itemValues(i));
  await client.query({
    name: 'maintenance.insert-items',
    text: `INSERT INTO maintenance_items (${ITEM_COLUMNS})
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::bigint[], $7::int[], $8::text[], $9::text[])
           ON CONFLICT DO NOTHING`,
    values: Array.from({ length: 9 }, (_, c) => columns.map((row) => row[c])),
  });
}

export function createPostgresMaintenanceStore(db: Database): MaintenanceStore {
  return {
    async insertSchedule(s, items, max) {
      return db.transaction(async (client) => {
        // Two creations at once in one organization count one after the other.
        await client.query({ name: 'maintenance.lock-org', text: 'SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', values: [s.organizationId] });
        const { rows } = await client.query<{ n: number }>({
          name: 'maintenance.count', text: 'SELECT count(*)::int AS n FROM maintenance_schedules WHERE organization_id = $1', values: [s.organizationId],
        });
        if (rows[0]!.n >= max) return 'quota';
        await client.query({
          name: 'maintenance.insert-schedule',
          text: `INSERT INTO maintenance_schedules (${SCHEDULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          values: [s.organizationId, s.id, s.name, s.vehicleIds, s.groupId, JSON.stringify(s.every), JSON.stringify(s.dueSoon), s.createdAt, s.updatedAt],
        });
        await insertItems(client, items);
        return 'created' as const;
      });
    },
    async getSchedule(organizationId, id) {
      const { rows } = await db.query({ name: 'maintenance.get', text: `SELECT ${SCHEDULE_COLUMNS} FROM maintenance_schedules WHERE organization_id = $1 AND id = $2`, values: [organizationId, id] });
      return rows[0] === undefined ? undefined : scheduleOf(rows[0]);
    },
    async listSchedules(organizationId, { limit, offset }) {
      const [page, count] = await Promise.all([
        db.query({
          name: 'maintenance.page',
          text: `SELECT ${SCHEDULE_COLUMNS} FROM maintenance_schedules WHERE organization_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
          values: [organizationId, limit, offset],
        }),
        db.query<{ n: number }>({ name: 'maintenance.count', text: 'SELECT count(*)::int AS n FROM maintenance_schedules WHERE organization_id = $1', values: [organizationId] }),
      ]);
      return { schedules: page.rows.map(scheduleOf), total: count.rows[0]!.n };
    },
    async allSchedules(organizationId) {
      const { rows } = await db.query({
        name: 'maintenance.all', text: `SELECT ${SCHEDULE_COLUMNS} FROM maintenance_schedules WHERE organization_id = $1 ORDER BY created_at, id`, values: [organizationId],
      });
      return rows.map(scheduleOf);
    },
    async replaceSchedule(s, keep) {
      return db.transaction(async (client) => {
        const { rowCount } = await client.query({
          name: 'maintenance.replace',
          text: 'UPDATE maintenance_schedules SET name = $3, vehicle_ids = $4, group_id = $5, every = $6, due_soon = $7, updated_at = $8 WHERE organization_id = $1 AND id = $2',
          values: [s.organizationId, s.id, s.name, s.vehicleIds, s.groupId, JSON.stringify(s.every), JSON.stringify(s.dueSoon), s.updatedAt],
        });
        if (rowCount !== 1) return false;
        await client.query({
          name: 'maintenance.drop-items',
          text: 'DELETE FROM maintenance_items WHERE organization_id = $1 AND schedule_id = $2 AND NOT (vehicle_id = ANY($3::text[]))',
          values: [s.organizationId, s.id, keep],
        });
        return true;
      });
    },
    async deleteSchedule(organizationId, id) {
      const { rowCount } = await db.query({ name: 'maintenance.delete', text: 'DELETE FROM maintenance_schedules WHERE organization_id = $1 AND id = $2', values: [organizationId, id] });
      return rowCount === 1;
    },
    async vehicles(organizationId, vehicleId) {
      const { rows } = await db.query<{ id: string; groups: string[] }>({
        name: 'maintenance.vehicles',
        text: `SELECT v.id, coalesce((SELECT array_agg(group_id) FROM vehicle_group_members m WHERE m.organization_id = v.organization_id AND m.vehicle_id = v.id), '{}') AS groups
               FROM vehicles v WHERE v.organization_id = $1 AND ($2::text IS NULL OR v.id = $2) ORDER BY v.id`,
        values: [organizationId, vehicleId ?? null],
      });
      return rows;
    },
    async meters(organizationId, vehicleId) {
      const { rows } = await db.query({
        name: 'maintenance.meters',
        text: 'SELECT vehicle_id, meters FROM vehicle_rule_state WHERE organization_id = $1 AND ($2::text IS NULL OR vehicle_id = $2) AND meters IS NOT NULL',
        values: [organizationId, vehicleId ?? null],
      });
      return metersOf(rows);
    },
    async items(organizationId, vehicleId) {
      const { rows } = await db.query({
        name: 'maintenance.items',
        text: `SELECT ${ITEM_COLUMNS} FROM maintenance_items WHERE organization_id = $1 AND ($2::text IS NULL OR vehicle_id = $2)`,
        values: [organizationId, vehicleId ?? null],
      });
      return rows.map(itemOf);
    },
    async insertItems(items) {
      await insertItems(db, items);
    },
    async addServiceRecord(record, item, event) {
      await db.transaction(async (client) => {
        await client.query({
          name: 'maintenance.insert-service',
          text: `INSERT INTO service_records (${SERVICE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          values: serviceValues(record),
        });
        if (item !== undefined) {
          await client.query({
            name: 'maintenance.restart',
            text: `UPDATE maintenance_items SET base_km = $4, base_hours = $5, base_at = $6, cycle = cycle + 1, notified = 'ok', last_service_id = $7
                   WHERE organization_id = $1 AND schedule_id = $2 AND vehicle_id = $3 AND (last_service_id IS NULL OR base_at <= $6)`,
            values: [item.organizationId, item.scheduleId, item.vehicleId, item.baseKm, item.baseHours, item.baseAt, item.lastServiceId],
          });
        }
        await appendEvents(client, [event], record.createdAt);
      });
    },
    async serviceRecords(organizationId, vehicleId, { limit, offset }) {
      const [page, count] = await Promise.all([
        db.query({
          name: 'maintenance.services',
          text: `SELECT ${SERVICE_COLUMNS} FROM service_records WHERE organization_id = $1 AND vehicle_id = $2 ORDER BY performed_at DESC, id DESC LIMIT $3 OFFSET $4`,
          values: [organizationId, vehicleId, limit, offset],
        }),
        db.query<{ n: number }>({
          name: 'maintenance.services-count', text: 'SELECT count(*)::int AS n FROM service_records WHERE organization_id = $1 AND vehicle_id = $2', values: [organizationId, vehicleId],
        }),
      ]);
      return { records: page.rows.map(serviceOf), total: count.rows[0]!.n };
    },
    async serviceRecordsById(organizationId, ids) {
      if (ids.length === 0) return [];
      const { rows } = await db.query({
        name: 'maintenance.services-by-id', text: `SELECT ${SERVICE_COLUMNS} FROM service_records WHERE organization_id = $1 AND id = ANY($2::text[])`, values: [organizationId, ids],
      });
      return rows.map(serviceOf);
    },
    async announce(changes, at) {
      return db.transaction(async (client) => {
        const written = [];
        for (const { item, state, event } of changes) {
          const { rowCount } = await client.query({
            name: 'maintenance.announce',
            text: 'UPDATE maintenance_items SET notified = $5 WHERE organization_id = $1 AND schedule_id = $2 AND vehicle_id = $3 AND cycle = $4 AND notified = $6',
            values: [item.organizationId, item.scheduleId, item.vehicleId, item.cycle, state, item.notified],
          });
          if (rowCount === 1) written.push(event);
        }
        await appendEvents(client, written, at);
        return written;
      });
    },
    async organizationsWithSchedules() {
      const { rows } = await db.query<{ organization_id: string }>('SELECT DISTINCT organization_id FROM maintenance_schedules');
      return rows.map((row) => row.organization_id);
    },
    async asMaintenanceChecker(fn) {
      // One node at a time runs the check: the lock lives as long as this transaction.
      return db.transaction(async (client) => {
        const { rows } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtextextended('fleet:maintenance-check', 0)) AS ok");
        if (rows[0]?.ok !== true) return false;
        await fn();
        return true;
      });
    },
  };
}
