import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { EventRecord } from '../../events/types.ts';
import type { VehicleFilter, VehicleStore } from '../../vehicles/store.ts';
import { VEHICLE_COLUMNS, VEHICLE_RELATIONS, sqliteRows } from '../rows.ts';
import { vehicleDriver } from '../driver-rows.ts';
import type { Memberships } from './groups.ts';
import type { AppendEvents } from './events.ts';
import type { VehicleStatuses } from './vehicle-status.ts';
import type { WalSync } from './wal-sync.ts';

const COLUMNS = VEHICLE_COLUMNS;
/** What a vehicle is read as: its columns and its groups. */
const READ = `${VEHICLE_COLUMNS}, ${VEHICLE_RELATIONS.sqlite}`;

/** Status writes go through `statuses`, which the telemetry store reads; events through `appendEvents`. */
/** `deleted` is told of each deletion (after it), so that memory kept of the vehicle elsewhere goes with it. */
export function createSqliteVehicleStore(
  db: DatabaseSync, wal: WalSync, statuses: VehicleStatuses, appendEvents: AppendEvents, memberships: Memberships,
  deleted: (organizationId: string, vehicleId: string) => void = () => {},
): VehicleStore {
  const insertVehicle = db.prepare(
    `INSERT INTO vehicles (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  const selectOne = db.prepare(`SELECT ${READ} FROM vehicles WHERE organization_id = ? AND id = ?`);
  // vehicle_counts is kept by triggers (migration 0028): a few rows, not the organization's vehicles.
  const countAll = db.prepare('SELECT coalesce(sum(n), 0) AS n FROM vehicle_counts WHERE organization_id = ?');
  const exists = db.prepare('SELECT 1 FROM vehicles WHERE organization_id = ? AND id = ?');
  const deleteOne = db.prepare('DELETE FROM vehicles WHERE organization_id = ? AND id = ?');
  const updateOne = db.prepare(
    `UPDATE vehicles SET type = ?, name = ?, configuration = ?, updated_at = ?
     WHERE organization_id = ? AND id = ? AND updated_at = ? RETURNING ${VEHICLE_COLUMNS}, ${vehicleDriver()}`,
  );
  const historyPage = db.prepare(
    `SELECT from_status, to_status, reason, at, by FROM vehicle_status_history
     WHERE organization_id = ? AND vehicle_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?`,
  );
  const historyCount = db.prepare(
    'SELECT count(*) AS n FROM vehicle_status_history WHERE organization_id = ? AND vehicle_id = ?',
  );
  // List statements differ by how many statuses and types filter them; keep one per shape.
  const listStatements = new Map<string, { page: StatementSync; count: StatementSync }>();

  function listStatement(statusCount: number, types: number, group: boolean, anyOf: boolean) {
    const shape = `${statusCount}:${types}:${group}:${anyOf}`;
    let statements = listStatements.get(shape);
    if (statements === undefined) {
      let where = 'organization_id = ?';
      if (statusCount > 0) where += ` AND status IN (${Array(statusCount).fill('?').join(',')})`;
      if (types > 0) where += ` AND type IN (${Array(types).fill('?').join(',')})`;
      if (group) {
        where += ' AND EXISTS (SELECT 1 FROM vehicle_group_members m WHERE m.organization_id = vehicles.organization_id AND m.group_id = ? AND m.vehicle_id = vehicles.id)';
      }
      // From the memberships: a scoped list reads its groups' vehicles, not the organization's.
      if (anyOf) where += ' AND id IN (SELECT vehicle_id FROM vehicle_group_members WHERE organization_id = ? AND group_id IN (SELECT value FROM json_each(?)))';
      statements = {
        page: db.prepare(`SELECT ${READ} FROM vehicles WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`),
        // Filtered by status and type alone, the counts kept by status and type answer; a group's
        // members are counted (a group is a list of vehicles of its own).
        count: group || anyOf
          ? db.prepare(`SELECT count(*) AS n FROM vehicles WHERE ${where}`)
          : db.prepare(`SELECT coalesce(sum(n), 0) AS n FROM vehicle_counts WHERE ${where}`),
      };
      listStatements.set(shape, statements);
    }
    return statements;
  }

  /**
   * A write transaction, synced to disk off the event loop (wal-sync.ts) like telemetry commits, so
   * a status change waits for the disk without holding up every other request. A failed one
   * leaves the kept statuses unsure, so they are dropped.
   */
  async function write<T>(fn: () => T): Promise<T> {
    try {
      return await wal.transaction(fn);
    } catch (error) {
      statuses.clear();
      throw error;
    }
  }

  const eventTime = (events: readonly EventRecord[], fallback: number) => events[0]?.occurredAt ?? fallback;

  const insertMany: VehicleStore['insertMany'] = async (registrations, maxVehicles) => {
    return write(() => {
      const organizationId = registrations[0]?.vehicle.organizationId;
      if (organizationId === undefined) return [];
      // Decided before anything is written, so that a refusal leaves nothing behind.
      if (!registrations.every(({ vehicle }) => memberships.allExist(organizationId, vehicle.groupIds))) return 'unknown-group';
      const taken = registrations.map(({ vehicle }) => exists.get(organizationId, vehicle.id) !== undefined);
      const adding = taken.filter((t) => !t).length;
      if (maxVehicles !== undefined && adding > 0 && Number(countAll.get(organizationId)?.n ?? 0) + adding > maxVehicles) return 'quota';
      return registrations.map(({ vehicle: v, registration, events }, i) => {
        if (taken[i]) return 'exists';
        insertVehicle.run(v.organizationId, v.id, v.type, v.name, v.status, JSON.stringify(v.configuration), v.createdAt, v.updatedAt, v.statusChangedAt);
        memberships.replace(v.organizationId, v.id, v.groupIds);
        statuses.registered(v.organizationId, v.id, registration);
        appendEvents(events, v.createdAt);
        return 'created';
      });
    });
  };

  return {
    insertMany,

    async insert(vehicle, registration, maxVehicles, events = []) {
      const outcome = await insertMany([{ vehicle, registration, events }], maxVehicles);
      return typeof outcome === 'string' ? outcome : outcome[0]!;
    },

    async get(organizationId, id) {
      const row = selectOne.get(organizationId, id);
      return row === undefined ? undefined : sqliteRows.vehicle(row);
    },

    async list(organizationId, filter: VehicleFilter) {
      const statusFilter = filter.statuses ?? [];
      const types = filter.types ?? [];
      const { page, count } = listStatement(statusFilter.length, types.length, filter.groupId !== undefined, filter.anyOfGroups !== undefined);
      const params = [
        organizationId, ...statusFilter, ...types, ...(filter.groupId === undefined ? [] : [filter.groupId]),
        ...(filter.anyOfGroups === undefined ? [] : [organizationId, JSON.stringify(filter.anyOfGroups)]),
      ];
      return {
        vehicles: page.all(...params, filter.limit, filter.offset).map(sqliteRows.vehicle),
        total: Number(count.get(...params)?.n ?? 0),
      };
    },

    async delete(organizationId, id, events = []) {
      try {
        return await write(() => {
          if (deleteOne.run(organizationId, id).changes === 0) return false;
          appendEvents(events, eventTime(events, Date.now()));
          return true;
        });
      } finally {
        statuses.forget(organizationId, id);
        deleted(organizationId, id);
      }
    },

    async update(organizationId, id, expectedUpdatedAt, next, events = []) {
      return write(() => {
        if (!memberships.allExist(organizationId, next.groupIds)) return 'unknown-group';
        const row = updateOne.get(next.type, next.name, JSON.stringify(next.configuration), next.updatedAt, organizationId, id, expectedUpdatedAt);
        if (row === undefined) return undefined;
        memberships.replace(organizationId, id, next.groupIds);
        appendEvents(events, next.updatedAt);
        return sqliteRows.vehicle({ ...row, group_ids: JSON.stringify(next.groupIds) });
      });
    },

    async changeStatus(organizationId, id, change, events = []) {
      return write(() => statuses.change(organizationId, id, change, events));
    },

    async statusHistory(organizationId, id, page) {
      return {
        entries: historyPage.all(organizationId, id, page.limit, page.offset).map(sqliteRows.change),
        total: Number(historyCount.get(organizationId, id)?.n ?? 0),
      };
    },
  };
}
