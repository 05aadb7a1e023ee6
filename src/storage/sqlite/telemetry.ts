import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import type { TelemetryData } from '../../telemetry/schema.ts';
import { type BatchOutcome, type LatestState, type TelemetryStore, judgeBatch } from '../../telemetry/store.ts';
import { transaction } from './database.ts';

type Row = Record<string, SQLInputValue>;

export function createSqliteTelemetryStore(db: DatabaseSync): TelemetryStore {
  const vehicleStatus = db.prepare('SELECT status FROM vehicles WHERE organization_id = ? AND id = ?');
  const insert = db.prepare('INSERT INTO telemetry (organization_id, vehicle_id, ts, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING');
  const selectLatest = db.prepare('SELECT ts, fields FROM telemetry_latest WHERE organization_id = ? AND vehicle_id = ?');
  const upsertLatest = db.prepare(
    `INSERT INTO telemetry_latest (organization_id, vehicle_id, ts, fields) VALUES (?, ?, ?, ?)
     ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET ts = excluded.ts, fields = excluded.fields`,
  );
  const activate = db.prepare(
    `UPDATE vehicles SET status = 'active', status_changed_at = ?, updated_at = ?
     WHERE organization_id = ? AND id = ? AND status = 'registered'`,
  );
  const activation = db.prepare(
    `INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by)
     VALUES (?, ?, 'registered', 'active', 'first telemetry', ?, 'system')`,
  );
  const historyPage = db.prepare(
    `SELECT vehicle_id, ts, data FROM telemetry
     WHERE organization_id = ? AND vehicle_id = ? AND ts >= ? AND ts < ? AND ts > ?
     ORDER BY ts LIMIT ?`,
  );
  const allLatest = db.prepare('SELECT organization_id, vehicle_id, ts, fields FROM telemetry_latest');
  const pruneOldest = db.prepare(
    `DELETE FROM telemetry WHERE (organization_id, vehicle_id, ts) IN
       (SELECT organization_id, vehicle_id, ts FROM telemetry WHERE ts < ? ORDER BY ts LIMIT ?)`,
  );

  const toLatest = (organizationId: string, vehicleId: string, row: Row): LatestState => ({
    organizationId,
    vehicleId,
    timestamp: row.ts as number,
    fields: JSON.parse(row.fields as string) as LatestState['fields'],
  });

  return {
    async commit(batches, merge) {
      return transaction(db, () =>
        batches.map((batch): BatchOutcome => {
          const org = batch.organizationId;
          const judged = judgeBatch(batch, (vehicleId) => vehicleStatus.get(org, vehicleId)?.status as string | undefined);
          if (judged.refused !== undefined) return judged.refused;
          const { byVehicle, registered } = judged;

          // Refusals above are decided before any write, so a refused batch leaves nothing
          // behind; a store error fails the whole transaction and every batch in it.
          let accepted = 0;
          for (const r of batch.records) {
            accepted += Number(insert.run(org, r.vehicleId, r.timestamp, JSON.stringify(r.data)).changes);
          }
          const latest: LatestState[] = [];
          for (const [vehicleId, records] of byVehicle) {
            const row = selectLatest.get(org, vehicleId);
            const state = merge(row === undefined ? undefined : toLatest(org, vehicleId, row), org, vehicleId, records);
            upsertLatest.run(org, vehicleId, state.timestamp, JSON.stringify(state.fields));
            latest.push(state);
          }
          const activated: string[] = [];
          for (const vehicleId of registered) {
            if (Number(activate.run(batch.at, batch.at, org, vehicleId).changes) > 0) {
              activation.run(org, vehicleId, batch.at);
              activated.push(vehicleId);
            }
          }
          return { ok: true, accepted, duplicates: batch.records.length - accepted, activated, latest };
        }),
      );
    },

    async history(organizationId, vehicleId, range) {
      return historyPage
        .all(organizationId, vehicleId, range.from, range.to, range.after ?? Number.MIN_SAFE_INTEGER, range.limit)
        .map((row) => ({
          vehicleId: row.vehicle_id as string,
          timestamp: row.ts as number,
          data: JSON.parse(row.data as string) as TelemetryData,
        }));
    },

    async loadLatest() {
      return allLatest.all().map((row) => toLatest(row.organization_id as string, row.vehicle_id as string, row));
    },

    async prune(before, max) {
      return Number(pruneOldest.run(before, max).changes);
    },

    async maintain() {
      // One table, no partitions: nothing to prepare.
    },
  };
}
