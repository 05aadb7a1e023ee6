import type { Protocol } from '../../devices/schema.ts';
import type { DeviceRecord, DeviceStore } from '../../devices/store.ts';
import type { Row } from '../rows.ts';
import type { Database } from './database.ts';

const COLUMNS = 'id, organization_id, vehicle_id, protocol, identifier, created_at, last_seen_at';

function deviceOf(row: Row): DeviceRecord {
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    vehicleId: row.vehicle_id as string,
    protocol: row.protocol as Protocol,
    identifier: row.identifier as string,
    createdAt: row.created_at as number,
    lastSeenAt: (row.last_seen_at as number | null | undefined) ?? null,
  };
}

export function createPostgresDeviceStore(db: Database): DeviceStore {
  return {
    async insert(d, max = Infinity) {
      return db.transaction(async (client) => {
        // The vehicle row is key-share locked, so a deletion of it waits for this insert (and then
        // cascades to the device) instead of leaving a device without a vehicle.
        const vehicle = await client.query({
          name: 'devices.vehicle',
          text: 'SELECT 1 FROM vehicles WHERE organization_id = $1 AND id = $2 FOR KEY SHARE',
          values: [d.organizationId, d.vehicleId],
        });
        if (vehicle.rowCount === 0) return 'no-vehicle';
        if (max !== Infinity) {
          // Counted under a lock per organization: two nodes cannot both take the last place.
          await client.query({ name: 'advisory-lock', text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', values: [`fleet:devices:${d.organizationId}`] });
          const { rows } = await client.query<{ n: number }>('SELECT count(*) AS n FROM devices WHERE organization_id = $1', [d.organizationId]);
          if (rows[0]!.n >= max) {
            const taken = await client.query('SELECT 1 FROM devices WHERE protocol = $1 AND identifier = $2', [d.protocol, d.identifier]);
            return taken.rowCount === 0 ? 'quota' : 'exists';
          }
        }
        const inserted = await client.query({
          name: 'devices.insert',
          text: `INSERT INTO devices (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
          values: [d.id, d.organizationId, d.vehicleId, d.protocol, d.identifier, d.createdAt, d.lastSeenAt],
        });
        return inserted.rowCount === 0 ? 'exists' : 'created';
      });
    },

    async get(organizationId, id) {
      const { rows } = await db.query({
        name: 'devices.get', text: `SELECT ${COLUMNS} FROM devices WHERE organization_id = $1 AND id = $2`, values: [organizationId, id],
      });
      return rows[0] === undefined ? undefined : deviceOf(rows[0]);
    },

    async list(organizationId, filter) {
      const byVehicle = filter.vehicleId !== undefined;
      let where = byVehicle ? 'organization_id = $1 AND vehicle_id = $2' : 'organization_id = $1';
      const values: unknown[] = byVehicle ? [organizationId, filter.vehicleId] : [organizationId];
      const inGroups = filter.anyOfGroups !== undefined && !byVehicle;
      if (inGroups) {
        where += ` AND vehicle_id IN (SELECT vehicle_id FROM vehicle_group_members WHERE organization_id = $1 AND group_id = ANY($${values.push(filter.anyOfGroups)}::text[]))`;
      }
      const [page, count] = await Promise.all([
        db.query({
          name: `devices.list${byVehicle ? '-vehicle' : ''}${inGroups ? '-groups' : ''}`,
          text: `SELECT ${COLUMNS} FROM devices WHERE ${where} ORDER BY created_at, id LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
          values: [...values, filter.limit, filter.offset],
        }),
        db.query<{ n: number }>({
          name: `devices.count${byVehicle ? '-vehicle' : ''}${inGroups ? '-groups' : ''}`, text: `SELECT count(*) AS n FROM devices WHERE ${where}`, values,
        }),
      ]);
      return { devices: page.rows.map(deviceOf), total: count.rows[0]!.n };
    },

    async protocolsOf(organizationId, vehicleId) {
      const result = await db.query<{ protocol: Protocol }>({
        name: 'devices.protocols', text: 'SELECT DISTINCT protocol FROM devices WHERE organization_id = $1 AND vehicle_id = $2', values: [organizationId, vehicleId],
      });
      return result.rows.map((row) => row.protocol);
    },

    async delete(organizationId, id) {
      const result = await db.query({ name: 'devices.delete', text: 'DELETE FROM devices WHERE organization_id = $1 AND id = $2', values: [organizationId, id] });
      return (result.rowCount ?? 0) > 0;
    },

    async find(protocol, identifier) {
      const { rows } = await db.query({
        name: 'devices.find', text: `SELECT ${COLUMNS} FROM devices WHERE protocol = $1 AND identifier = $2`, values: [protocol, identifier],
      });
      return rows[0] === undefined ? undefined : deviceOf(rows[0]);
    },

    async touch(seen) {
      if (seen.length === 0) return;
      // One statement for all. Two nodes flushing the same devices at once may deadlock; the loser's
      // flush fails and the service keeps its times for the next one.
      await db.query({
        name: 'devices.touch',
        text: `UPDATE devices AS d SET last_seen_at = s.at
               FROM unnest($1::text[], $2::bigint[]) AS s(id, at)
               WHERE d.id = s.id AND (d.last_seen_at IS NULL OR d.last_seen_at < s.at)`,
        values: [seen.map((s) => s.id), seen.map((s) => s.at)],
      });
    },
  };
}
