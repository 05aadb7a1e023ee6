import type { TelemetryData } from '../../telemetry/schema.ts';
import { type BatchOutcome, type CommitBatch, type LatestState, type MergeLatest, type StoredRecord, type TelemetryStore, judgeBatch } from '../../telemetry/store.ts';
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

  async function commitOnce(batches: CommitBatch[], merge: MergeLatest, organizationIds: string[], vehicleIds: string[]): Promise<BatchOutcome[]> {
    return db.transaction(async (client) => {
      const status = new Map<Key, string>();
      const vehicles = await client.query<{ organization_id: string; id: string; status: string }>({
        name: 'telemetry.lock-vehicles',
        text: `SELECT organization_id, id, status FROM vehicles
               WHERE (organization_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
               ORDER BY organization_id, id FOR KEY SHARE`,
        values: [organizationIds, vehicleIds],
      });
      for (const row of vehicles.rows) status.set(keyOf(row.organization_id, row.id), row.status);

      const accepted: { batch: CommitBatch; byVehicle: Map<string, StoredRecord[]>; outcome: BatchOutcome & { ok: true } }[] = [];
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
        const stored = inserted.rowCount ?? 0;

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
        const outcome = { ok: true as const, accepted: stored, duplicates: n - stored, activated, latest: [] as LatestState[] };
        outcomes.push(outcome);
        accepted.push({ batch, byVehicle, outcome });
      }
      if (accepted.length === 0) return outcomes;

      // Last, the contended part: the latest states of the accepted batches' vehicles.
      const touched = new Set<Key>();
      for (const { batch, byVehicle } of accepted) for (const vehicleId of byVehicle.keys()) touched.add(keyOf(batch.organizationId, vehicleId));
      const [touchedOrganizations, touchedVehicles] = pairs(touched);
      // A vehicle's first latest state has no row to lock: an empty one is made first, so that two
      // commits of a vehicle's first telemetry merge in turn instead of the second overwriting.
      await client.query({
        name: 'telemetry.latest-rows',
        text: `INSERT INTO telemetry_latest (organization_id, vehicle_id, ts, fields)
               SELECT o, v, 0, '{}' FROM unnest($1::text[], $2::text[]) AS r (o, v) ON CONFLICT DO NOTHING`,
        values: [touchedOrganizations, touchedVehicles],
      });
      const latest = new Map<Key, LatestState>();
      const previous = await client.query<{ organization_id: string; vehicle_id: string; ts: number; fields: LatestState['fields'] }>({
        name: 'telemetry.lock-latest',
        text: `SELECT organization_id, vehicle_id, ts, fields FROM telemetry_latest
               WHERE (organization_id, vehicle_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
               ORDER BY organization_id, vehicle_id FOR UPDATE`,
        values: [touchedOrganizations, touchedVehicles],
      });
      for (const row of previous.rows) {
        if (Object.keys(row.fields).length === 0) continue; // the empty row made above
        latest.set(keyOf(row.organization_id, row.vehicle_id), {
          organizationId: row.organization_id, vehicleId: row.vehicle_id, timestamp: row.ts, fields: row.fields,
        });
      }
      for (const { batch, byVehicle, outcome } of accepted) {
        const org = batch.organizationId;
        for (const [vehicleId, records] of byVehicle) {
          const key = keyOf(org, vehicleId);
          const state = merge(latest.get(key), org, vehicleId, records);
          latest.set(key, state);
          outcome.latest.push(state);
        }
      }

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
      return outcomes;
    });
  }

  return {
    /**
     * The whole group in one transaction, in a fixed number of round trips plus one per batch:
     * read the status of every vehicle named; per accepted batch one multi-row insert whose row
     * count is exactly the records that were new, and activations if any; then lock and read the
     * latest states, merge, and write them in one upsert; commit. Refusals are decided before any
     * write of their batch.
     *
     * Locks are what let several nodes commit at once. The vehicles are only key-share locked (a
     * concurrent deletion waits for this commit; status changes and other commits do not), and
     * the latest states, which every commit naming a vehicle must update in turn, are locked last
     * (in one sorted order, so commits cannot deadlock over them): another node's commit waits only
     * for this one's final upsert and COMMIT, not for its inserts. A status change racing a commit
     * may land just after it (telemetry accepted for a vehicle being retired that moment).
     */
    async commit(batches, merge) {
      const named = new Set<Key>();
      for (const batch of batches) for (const r of batch.records) named.add(keyOf(batch.organizationId, r.vehicleId));
      const [organizationIds, vehicleIds] = pairs(named);

      // Two commits inserting the same records (one device's retry reaching two nodes at once) can
      // wait on each other's inserts and latest states: PostgreSQL ends one with a deadlock error,
      // and that one starts over.
      for (let attempt = 1; ; attempt++) {
        try {
          return await commitOnce(batches, merge, organizationIds, vehicleIds);
        } catch (error) {
          if (attempt === 3 || (error as { code?: unknown }).code !== '40P01') throw error;
        }
      }
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
