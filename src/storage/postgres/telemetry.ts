import type { TelemetryData } from '../../telemetry/schema.ts';
import { type BatchOutcome, type LatestState, type TelemetryStore, judgeBatch } from '../../telemetry/store.ts';
import type { Database } from './database.ts';
import { AHEAD_DAYS, DAY_MS, dayOf, ensurePartitions, prunePartitions } from './partitions.ts';

type Key = string; // `${organizationId}\n${vehicleId}`: ids never hold a newline
const keyOf = (organizationId: string, vehicleId: string): Key => `${organizationId}\n${vehicleId}`;

/** (organization, vehicle) pairs as two parallel arrays, in byte order (COLLATE "C", as the SQL sorts). */
function pairs(keys: Iterable<Key>): [string[], string[]] {
  const organizations: string[] = [];
  const vehicles: string[] = [];
  for (const key of [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
    const split = key.indexOf('\n');
    organizations.push(key.slice(0, split));
    vehicles.push(key.slice(split + 1));
  }
  return [organizations, vehicles];
}

export function createPostgresTelemetryStore(db: Database): TelemetryStore {
  /** Partitions are known to exist up to this day (per process; the catalog is asked again past it). */
  let coveredUntil = -Infinity;
  let coveredFrom = Infinity;

  return {
    /**
     * The whole group in one transaction, in a fixed number of round trips plus one per batch:
     * lock every vehicle named (in one sorted order, so two nodes' commits cannot deadlock) and read
     * its status; lock and read their latest states; per accepted batch one multi-row insert whose
     * row count is exactly the records that were new; activations if any; one upsert of the merged
     * latest states; commit. Refusals are decided before any write of their batch.
     */
    async commit(batches, merge) {
      const named = new Set<Key>();
      for (const batch of batches) for (const r of batch.records) named.add(keyOf(batch.organizationId, r.vehicleId));
      const [organizationIds, vehicleIds] = pairs(named);

      return db.transaction(async (client) => {
        const status = new Map<Key, string>();
        const vehicles = await client.query<{ organization_id: string; id: string; status: string }>({
          name: 'telemetry.lock-vehicles',
          text: `SELECT organization_id, id, status FROM vehicles
                 WHERE (organization_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
                 ORDER BY organization_id, id FOR NO KEY UPDATE`,
          values: [organizationIds, vehicleIds],
        });
        for (const row of vehicles.rows) status.set(keyOf(row.organization_id, row.id), row.status);

        const latest = new Map<Key, LatestState>();
        const previous = await client.query<{ organization_id: string; vehicle_id: string; ts: number; fields: LatestState['fields'] }>({
          name: 'telemetry.lock-latest',
          text: `SELECT organization_id, vehicle_id, ts, fields FROM telemetry_latest
                 WHERE (organization_id, vehicle_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
                 ORDER BY organization_id, vehicle_id FOR UPDATE`,
          values: [organizationIds, vehicleIds],
        });
        for (const row of previous.rows) {
          latest.set(keyOf(row.organization_id, row.vehicle_id), {
            organizationId: row.organization_id, vehicleId: row.vehicle_id, timestamp: row.ts, fields: row.fields,
          });
        }

        const touched = new Set<Key>();
        const outcomes: BatchOutcome[] = [];
        for (const batch of batches) {
          const org = batch.organizationId;
          const judged = judgeBatch(batch, (vehicleId) => status.get(keyOf(org, vehicleId)));
          if (judged.refused !== undefined) {
            outcomes.push(judged.refused);
            continue;
          }
          const { byVehicle, registered } = judged;

          const n = batch.records.length;
          const ids = new Array<string>(n);
          const times = new Array<number>(n);
          const data = new Array<string>(n);
          batch.records.forEach((r, i) => {
            ids[i] = r.vehicleId;
            times[i] = r.timestamp;
            data[i] = JSON.stringify(r.data);
          });
          // A record already stored (same vehicle and time), or twice in this batch, is a duplicate:
          // the first one stays, as in SQLite.
          const inserted = await client.query({
            name: 'telemetry.insert',
            text: `INSERT INTO telemetry (organization_id, vehicle_id, ts, data)
                   SELECT $1, v, t, d FROM unnest($2::text[], $3::bigint[], $4::json[]) AS r (v, t, d)
                   ON CONFLICT DO NOTHING`,
            values: [org, ids, times, data],
          });
          const accepted = inserted.rowCount ?? 0;

          const states: LatestState[] = [];
          for (const [vehicleId, records] of byVehicle) {
            const key = keyOf(org, vehicleId);
            const state = merge(latest.get(key), org, vehicleId, records);
            latest.set(key, state);
            touched.add(key);
            states.push(state);
          }

          let activated: string[] = [];
          if (registered.length > 0) {
            const { rows } = await client.query<{ vehicle_id: string }>({
              name: 'telemetry.activate',
              text: `WITH activated AS (
                       UPDATE vehicles SET status = 'active', status_changed_at = $3, updated_at = $3
                       WHERE organization_id = $1 AND id = ANY($2::text[]) AND status = 'registered'
                       RETURNING organization_id, id
                     )
                     INSERT INTO vehicle_status_history (organization_id, vehicle_id, from_status, to_status, reason, at, by)
                     SELECT organization_id, id, 'registered', 'active', 'first telemetry', $3, 'system' FROM activated
                     RETURNING vehicle_id`,
              values: [org, registered, batch.at],
            });
            activated = registered.filter((id) => rows.some((row) => row.vehicle_id === id));
            for (const vehicleId of activated) status.set(keyOf(org, vehicleId), 'active');
          }
          outcomes.push({ ok: true, accepted, duplicates: n - accepted, activated, latest: states });
        }

        if (touched.size > 0) {
          const states = [...touched].map((key) => latest.get(key)!);
          await client.query({
            name: 'telemetry.upsert-latest',
            text: `INSERT INTO telemetry_latest (organization_id, vehicle_id, ts, fields)
                   SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::json[])
                   ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET ts = excluded.ts, fields = excluded.fields`,
            values: [
              states.map((s) => s.organizationId),
              states.map((s) => s.vehicleId),
              states.map((s) => s.timestamp),
              states.map((s) => JSON.stringify(s.fields)),
            ],
          });
        }
        return outcomes;
      });
    },

    async history(organizationId, vehicleId, range) {
      const { rows } = await db.query<{ vehicle_id: string; ts: number; data: TelemetryData }>({
        name: 'telemetry.history',
        text: `SELECT vehicle_id, ts, data FROM telemetry
               WHERE organization_id = $1 AND vehicle_id = $2 AND ts >= $3 AND ts < $4 AND ts > $5
               ORDER BY ts LIMIT $6`,
        values: [organizationId, vehicleId, range.from, range.to, range.after ?? Number.MIN_SAFE_INTEGER, range.limit],
      });
      return rows.map((row) => ({ vehicleId: row.vehicle_id, timestamp: row.ts, data: row.data }));
    },

    async loadLatest() {
      const { rows } = await db.query<{ organization_id: string; vehicle_id: string; ts: number; fields: LatestState['fields'] }>(
        'SELECT organization_id, vehicle_id, ts, fields FROM telemetry_latest',
      );
      return rows.map((row) => ({ organizationId: row.organization_id, vehicleId: row.vehicle_id, timestamp: row.ts, fields: row.fields }));
    },

    async prune(before, max) {
      return prunePartitions(db, before, max);
    },

    async maintain(now, keepDays) {
      const from = dayOf(now - keepDays * DAY_MS);
      // Asking the catalog once a day per node is enough: partitions exist a week ahead.
      if (from >= coveredFrom && now + (AHEAD_DAYS - 1) * DAY_MS < coveredUntil) return;
      const until = dayOf(now + AHEAD_DAYS * DAY_MS);
      await ensurePartitions(db, from, until);
      coveredFrom = from;
      coveredUntil = until + DAY_MS;
    },
  };
}
