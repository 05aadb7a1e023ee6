import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { StatusChange, VehicleFilter, VehicleStore } from '../../vehicles/store.ts';
import { VEHICLE_COLUMNS, sqliteRows } from '../rows.ts';
import { transaction, write } from './database.ts';
import type { VehicleStatuses } from './vehicle-status.ts';

const COLUMNS = VEHICLE_COLUMNS;

/** `statuses` is told of every change of a vehicle's status (the telemetry store reads it). */
export function createSqliteVehicleStore(db: DatabaseSync, statuses: VehicleStatuses): VehicleStore {
  const insertVehicle = db.prepare(
    `INSERT INTO vehicles (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  const insertChange = db.prepare(
    'INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const selectOne = db.prepare(`SELECT ${COLUMNS} FROM vehicles WHERE organization_id = ? AND id = ?`);
  const countAll = db.prepare('SELECT count(*) AS n FROM vehicles WHERE organization_id = ?');
  const deleteOne = db.prepare('DELETE FROM vehicles WHERE organization_id = ? AND id = ?');
  const updateStatus = db.prepare(
    `UPDATE vehicles SET status = ?, status_changed_at = ?, updated_at = ?
     WHERE organization_id = ? AND id = ? AND status = ? RETURNING ${COLUMNS}`,
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

  function listStatement(statuses: number, types: number) {
    const shape = `${statuses}:${types}`;
    let statements = listStatements.get(shape);
    if (statements === undefined) {
      let where = 'organization_id = ?';
      if (statuses > 0) where += ` AND status IN (${Array(statuses).fill('?').join(',')})`;
      if (types > 0) where += ` AND type IN (${Array(types).fill('?').join(',')})`;
      statements = {
        page: db.prepare(`SELECT ${COLUMNS} FROM vehicles WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`),
        count: db.prepare(`SELECT count(*) AS n FROM vehicles WHERE ${where}`),
      };
      listStatements.set(shape, statements);
    }
    return statements;
  }

  function addChange(organizationId: string, vehicleId: string, change: StatusChange) {
    insertChange.run(organizationId, vehicleId, change.from, change.to, change.reason, change.at, change.by);
  }

  return {
    async insert(v, registration, maxVehicles) {
      return transaction(db, () => {
        if (maxVehicles !== undefined && Number(countAll.get(v.organizationId)?.n ?? 0) >= maxVehicles) {
          return selectOne.get(v.organizationId, v.id) === undefined ? 'quota' : 'exists';
        }
        const result = insertVehicle.run(
          v.organizationId, v.id, v.type, v.status, JSON.stringify(v.configuration), v.createdAt, v.updatedAt, v.statusChangedAt,
        );
        if (result.changes === 0) return 'exists';
        addChange(v.organizationId, v.id, registration);
        return 'created';
      });
    },

    async get(organizationId, id) {
      const row = selectOne.get(organizationId, id);
      return row === undefined ? undefined : sqliteRows.vehicle(row);
    },

    async list(organizationId, filter: VehicleFilter) {
      const statuses = filter.statuses ?? [];
      const types = filter.types ?? [];
      const { page, count } = listStatement(statuses.length, types.length);
      const params = [organizationId, ...statuses, ...types];
      return {
        vehicles: page.all(...params, filter.limit, filter.offset).map(sqliteRows.vehicle),
        total: Number(count.get(...params)?.n ?? 0),
      };
    },

    async delete(organizationId, id) {
      try {
        return write(db, () => deleteOne.run(organizationId, id)).changes > 0;
      } finally {
        statuses.forget(organizationId, id);
      }
    },

    async changeStatus(organizationId, id, change) {
      try {
        return transaction(db, () => {
          const row = updateStatus.get(change.to, change.at, change.at, organizationId, id, change.from);
          if (row === undefined) return undefined;
          addChange(organizationId, id, change);
          return sqliteRows.vehicle(row);
        });
      } finally {
        statuses.forget(organizationId, id);
      }
    },

    async statusHistory(organizationId, id, page) {
      return {
        entries: historyPage.all(organizationId, id, page.limit, page.offset).map(sqliteRows.change),
        total: Number(historyCount.get(organizationId, id)?.n ?? 0),
      };
    },
  };
}
