import { MEMBERS_OF_GROUPS } from './events.ts';
import type { DatabaseSync } from 'node:sqlite';
import type { Protocol } from '../../devices/schema.ts';
import type { DeviceRecord, DeviceStore } from '../../devices/store.ts';
import type { Row } from '../rows.ts';
import { transaction, write } from './database.ts';
import type { WalSync } from './wal-sync.ts';

const COLUMNS = 'id, organization_id, vehicle_id, protocol, identifier, created_at, last_seen_at';

export function deviceOf(row: Row): DeviceRecord {
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    vehicleId: row.vehicle_id as string,
    protocol: row.protocol as Protocol,
    identifier: row.identifier as string,
    createdAt: Number(row.created_at),
    lastSeenAt: row.last_seen_at === null || row.last_seen_at === undefined ? null : Number(row.last_seen_at),
  };
}

export function createSqliteDeviceStore(db: DatabaseSync, wal: WalSync): DeviceStore {
  const vehicleExists = db.prepare('SELECT 1 FROM vehicles WHERE organization_id = ? AND id = ?');
  const insert = db.prepare(`INSERT INTO devices (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`);
  const selectOne = db.prepare(`SELECT ${COLUMNS} FROM devices WHERE organization_id = ? AND id = ?`);
  const selectByIdentifier = db.prepare(`SELECT ${COLUMNS} FROM devices WHERE protocol = ? AND identifier = ?`);
  const page = db.prepare(`SELECT ${COLUMNS} FROM devices WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const count = db.prepare('SELECT count(*) AS n FROM devices WHERE organization_id = ?');
  // `+created_at`: a vehicle has a few devices, read by its own index and sorted; without the `+`
  // SQLite walks the organization's index in order instead, every device of the organization.
  const pageOfVehicle = db.prepare(
    `SELECT ${COLUMNS} FROM devices WHERE organization_id = ? AND vehicle_id = ? ORDER BY +created_at, id LIMIT ? OFFSET ?`,
  );
  const countOfVehicle = db.prepare('SELECT count(*) AS n FROM devices WHERE organization_id = ? AND vehicle_id = ?');
  const protocolsOf = db.prepare('SELECT DISTINCT protocol FROM devices WHERE organization_id = ? AND vehicle_id = ?');
  const inGroups = `organization_id = ? AND vehicle_id IN (${MEMBERS_OF_GROUPS})`;
  const pageInGroups = db.prepare(`SELECT ${COLUMNS} FROM devices WHERE ${inGroups} ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const countInGroups = db.prepare(`SELECT count(*) AS n FROM devices WHERE ${inGroups}`);
  const deleteOne = db.prepare('DELETE FROM devices WHERE organization_id = ? AND id = ?');
  const touchOne = db.prepare('UPDATE devices SET last_seen_at = ? WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at < ?)');

  return {
    async insert(d, max = Infinity) {
      return transaction(db, () => {
        if (vehicleExists.get(d.organizationId, d.vehicleId) === undefined) return 'no-vehicle';
        if (Number(count.get(d.organizationId)!.n) >= max) return selectByIdentifier.get(d.protocol, d.identifier) === undefined ? 'quota' : 'exists';
        const result = insert.run(d.id, d.organizationId, d.vehicleId, d.protocol, d.identifier, d.createdAt, d.lastSeenAt);
        return result.changes === 0 ? 'exists' : 'created';
      });
    },

    async get(organizationId, id) {
      const row = selectOne.get(organizationId, id);
      return row === undefined ? undefined : deviceOf(row);
    },

    async list(organizationId, filter) {
      if (filter.anyOfGroups !== undefined && filter.vehicleId === undefined) {
        const groups = JSON.stringify(filter.anyOfGroups);
        return {
          devices: pageInGroups.all(organizationId, organizationId, groups, filter.limit, filter.offset).map(deviceOf),
          total: Number(countInGroups.get(organizationId, organizationId, groups)?.n ?? 0),
        };
      }
      if (filter.vehicleId !== undefined) {
        return {
          devices: pageOfVehicle.all(organizationId, filter.vehicleId, filter.limit, filter.offset).map(deviceOf),
          total: Number(countOfVehicle.get(organizationId, filter.vehicleId)?.n ?? 0),
        };
      }
      return {
        devices: page.all(organizationId, filter.limit, filter.offset).map(deviceOf),
        total: Number(count.get(organizationId)?.n ?? 0),
      };
    },

    async protocolsOf(organizationId, vehicleId) {
      return protocolsOf.all(organizationId, vehicleId).map((row) => row.protocol as Protocol);
    },

    async delete(organizationId, id) {
      return write(db, () => deleteOne.run(organizationId, id).changes > 0);
    },

    async find(protocol, identifier) {
      const row = selectByIdentifier.get(protocol, identifier);
      return row === undefined ? undefined : deviceOf(row);
    },

    async touch(seen) {
      if (seen.length === 0) return;
      // As telemetry's commits: the WAL synced off the event loop (wal-sync.ts), so that a slow
      // disk never holds every request up for a field written every 30 s.
      await wal.transaction(() => {
        for (const { id, at } of seen) touchOne.run(at, id, at);
      });
    },
  };
}
