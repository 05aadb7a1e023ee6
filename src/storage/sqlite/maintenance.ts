// Maintenance schedules, items and service records in the embedded store (maintenance/store.ts).
import type { DatabaseSync } from 'node:sqlite';
import type { MaintenanceStore } from '../../maintenance/store.ts';
import { ITEM_COLUMNS, SCHEDULE_COLUMNS, SERVICE_COLUMNS, itemOf, itemValues, metersOf, scheduleOf, serviceOf, serviceValues } from '../maintenance-rows.ts';
import type { AppendEvents } from './events.ts';
import type { WalSync } from './wal-sync.ts';

/** Writes commit through `wal` (wal-sync.ts): durable when they answer, their sync off the event loop. */
export function createSqliteMaintenanceStore(db: DatabaseSync, wal: WalSync, appendEvents: AppendEvents): MaintenanceStore {
  const count = db.prepare('SELECT count(*) AS n FROM maintenance_schedules WHERE organization_id = ?');
  const insert = db.prepare(`INSERT INTO maintenance_schedules (${SCHEDULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const one = db.prepare(`SELECT ${SCHEDULE_COLUMNS} FROM maintenance_schedules WHERE organization_id = ? AND id = ?`);
  const page = db.prepare(`SELECT ${SCHEDULE_COLUMNS} FROM maintenance_schedules WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const all = db.prepare(`SELECT ${SCHEDULE_COLUMNS} FROM maintenance_schedules WHERE organization_id = ? ORDER BY created_at, id`);
  const replace = db.prepare('UPDATE maintenance_schedules SET name = ?, vehicle_ids = ?, group_id = ?, every = ?, due_soon = ?, updated_at = ? WHERE organization_id = ? AND id = ?');
  const remove = db.prepare('DELETE FROM maintenance_schedules WHERE organization_id = ? AND id = ?');
  const dropItems = db.prepare('DELETE FROM maintenance_items WHERE organization_id = ? AND schedule_id = ? AND vehicle_id NOT IN (SELECT value FROM json_each(?))');
  const vehicles = db.prepare(
    `SELECT v.id, (SELECT json_group_array(group_id) FROM vehicle_group_members m WHERE m.organization_id = v.organization_id AND m.vehicle_id = v.id) AS groups
     FROM vehicles v WHERE v.organization_id = ? AND (? IS NULL OR v.id = ?) ORDER BY v.id`,
  );
  const meters = db.prepare('SELECT vehicle_id, meters FROM vehicle_rule_state WHERE organization_id = ? AND (? IS NULL OR vehicle_id = ?) AND meters IS NOT NULL');
  const items = db.prepare(`SELECT ${ITEM_COLUMNS} FROM maintenance_items WHERE organization_id = ? AND (? IS NULL OR vehicle_id = ?)`);
  const insertItem = db.prepare(`INSERT INTO maintenance_items (${ITEM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`);
  const insertService = db.prepare(`INSERT INTO service_records (${SERVICE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const restart = db.prepare(
    `UPDATE maintenance_items SET base_km = ?, base_hours = ?, base_at = ?, cycle = cycle + 1, notified = 'ok', last_service_id = ?
     WHERE organization_id = ? AND schedule_id = ? AND vehicle_id = ? AND (last_service_id IS NULL OR base_at <= ?)`,
  );
  const servicePage = db.prepare(`SELECT ${SERVICE_COLUMNS} FROM service_records WHERE organization_id = ? AND vehicle_id = ? ORDER BY performed_at DESC, id DESC LIMIT ? OFFSET ?`);
  const serviceTotal = db.prepare('SELECT count(*) AS n FROM service_records WHERE organization_id = ? AND vehicle_id = ?');
  const servicesById = db.prepare(`SELECT ${SERVICE_COLUMNS} FROM service_records WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?))`);
  const announce = db.prepare('UPDATE maintenance_items SET notified = ? WHERE organization_id = ? AND schedule_id = ? AND vehicle_id = ? AND cycle = ? AND notified = ?');
  const organizations = db.prepare('SELECT DISTINCT organization_id FROM maintenance_schedules');
  const json = (value: unknown) => (value === null ? null : JSON.stringify(value));

  return {
    async insertSchedule(s, newItems, max) {
      return wal.transaction(() => {
        if (Number(count.get(s.organizationId)!.n) >= max) return 'quota';
        insert.run(s.organizationId, s.id, s.name, json(s.vehicleIds), s.groupId, JSON.stringify(s.every), JSON.stringify(s.dueSoon), s.createdAt, s.updatedAt);
        for (const item of newItems) insertItem.run(...itemValues(item));
        return 'created' as const;
      });
    },
    async getSchedule(organizationId, id) {
      const row = one.get(organizationId, id);
      return row === undefined ? undefined : scheduleOf(row);
    },
    async listSchedules(organizationId, { limit, offset }) {
      return { schedules: page.all(organizationId, limit, offset).map(scheduleOf), total: Number(count.get(organizationId)!.n) };
    },
    async allSchedules(organizationId) {
      return all.all(organizationId).map(scheduleOf);
    },
    async replaceSchedule(s, keep) {
      return wal.transaction(() => {
        const changed = replace.run(s.name, json(s.vehicleIds), s.groupId, JSON.stringify(s.every), JSON.stringify(s.dueSoon), s.updatedAt, s.organizationId, s.id).changes > 0;
        if (changed) dropItems.run(s.organizationId, s.id, JSON.stringify(keep));
        return changed;
      });
    },
    async deleteSchedule(organizationId, id) {
      return wal.transaction(() => remove.run(organizationId, id).changes > 0);
    },
    async vehicles(organizationId, vehicleId) {
      const only = vehicleId ?? null;
      return vehicles.all(organizationId, only, only).map((row) => ({ id: row.id as string, groups: JSON.parse(row.groups as string) as string[] }));
    },
    async meters(organizationId, vehicleId) {
      const only = vehicleId ?? null;
      return metersOf(meters.all(organizationId, only, only));
    },
    async items(organizationId, vehicleId) {
      const only = vehicleId ?? null;
      return items.all(organizationId, only, only).map(itemOf);
    },
    async insertItems(newItems) {
      await wal.transaction(() => {
        for (const item of newItems) insertItem.run(...itemValues(item));
      });
    },
    async addServiceRecord(record, item, event) {
      await wal.transaction(() => {
        insertService.run(...serviceValues(record));
        if (item !== undefined) restart.run(item.baseKm, item.baseHours, item.baseAt, item.lastServiceId, item.organizationId, item.scheduleId, item.vehicleId, item.baseAt);
        appendEvents([event], record.createdAt);
      });
    },
    async serviceRecords(organizationId, vehicleId, { limit, offset }) {
      return { records: servicePage.all(organizationId, vehicleId, limit, offset).map(serviceOf), total: Number(serviceTotal.get(organizationId, vehicleId)!.n) };
    },
    async serviceRecordsById(organizationId, ids) {
      return ids.length === 0 ? [] : servicesById.all(organizationId, JSON.stringify(ids)).map(serviceOf);
    },
    async announce(changes, at) {
      return wal.transaction(() => {
        const written = changes.filter(({ item, state }) => announce.run(state, item.organizationId, item.scheduleId, item.vehicleId, item.cycle, item.notified).changes > 0).map((c) => c.event);
        appendEvents(written, at);
        return written;
      });
    },
    async organizationsWithSchedules() {
      return organizations.all().map((row) => row.organization_id as string);
    },
    async asMaintenanceChecker(fn) {
      await fn();
      return true;
    },
  };
}
