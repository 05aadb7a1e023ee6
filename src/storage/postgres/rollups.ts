// Summary report rollups on PostgreSQL (reports/rollup.ts, docs/API.md "Summary reports"): the
// telemetry commit adds its vehicles' tallies (one statement per table for the whole commit),
// holding each vehicle's lock (rules.ts `judgeInCommit`); a replay takes the same lock, so it and a
// commit of that vehicle never interleave, and two nodes never replay one vehicle at once.
import type { Judged } from '../../rules/store.ts';
import { rollupData } from '../../history/motion-data.ts';
import { DAY_MS, HOUR_MS, type Mark, type Tallies, type Tally, type PackedTally, type TallyRow, addTally, emptyTally, feedRollup, firstDayOfMonth, initialMark, monthOfDay, replayable, unpackTally } from '../../reports/rollup.ts';
import type { RollupStore, SumsQuery, SumsRow } from '../../reports/store.ts';
import { assignmentTimeline, mergeSums, rollupReadSql, staleBatch } from '../rollup-rows.ts';
import type { Database, Queryable } from './database.ts';
import { type VehicleKey, vehicleKey } from '../../vehicles/key.ts';

type Keyed = Tally & { o: string; v: string; b: number; d: string };

/** The advisory lock a vehicle's rule state is written under (its commits, meters and rollup replays), by its key. */
export const rulesLockOf = (key: VehicleKey) => `fleet:rules:${key}`;
export const rulesLock = (organizationId: string, vehicleId: string) => rulesLockOf(vehicleKey(organizationId, vehicleId));
/** The hour a replay without a mark starts from: before any record. */
const NO_MARK = -24e6;
/** Records a replay reads at once. */
const REPLAY_PAGE = 5000;

const SUMMED = 'sum(dist), sum(drv), sum(idle), sum(eng), sum(trips), max(mx)';
const adding = (table: string, key: string) => `ON CONFLICT (organization_id, vehicle_id, ${key}, driver_id) DO UPDATE SET
  distance_m = ${table}.distance_m + excluded.distance_m, driving_s = ${table}.driving_s + excluded.driving_s, idle_s = ${table}.idle_s + excluded.idle_s,
  engine_s = ${table}.engine_s + excluded.engine_s, trips = ${table}.trips + excluded.trips, max_speed = greatest(${table}.max_speed, excluded.max_speed)`;
const COLUMNS = 'organization_id, vehicle_id, %, driver_id, distance_m, driving_s, idle_s, engine_s, trips, max_speed';
/** Hours, with their days and months summed from them, in one statement (one round trip). */
const ADD_TALLIES = `WITH t (o, v, h, dy, mo, d, dist, drv, idle, eng, trips, mx) AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::int[], $6::text[], $7::float8[], $8::float8[], $9::float8[], $10::float8[], $11::int[], $12::float8[])),
  hours AS (INSERT INTO rollup_hours (${COLUMNS.replace('%', 'hour')}) SELECT o, v, h, d, dist, drv, idle, eng, trips, mx FROM t ${adding('rollup_hours', 'hour')}),
  days AS (INSERT INTO rollup_days (${COLUMNS.replace('%', 'day')}) SELECT o, v, dy, d, ${SUMMED} FROM t GROUP BY o, v, dy, d ${adding('rollup_days', 'day')})
  INSERT INTO rollup_months (${COLUMNS.replace('%', 'month')}) SELECT o, v, mo, d, ${SUMMED} FROM t GROUP BY o, v, mo, d ${adding('rollup_months', 'month')}`;

/** Adds tallies to their hours, days and months (a key once per statement, as ON CONFLICT needs). */
async function addTallies(client: Queryable, tallies: readonly { organizationId: string; vehicleId: string; tallies: Iterable<TallyRow> }[]): Promise<void> {
  const hours = new Map<string, Keyed>();
  for (const { organizationId, vehicleId, tallies: each } of tallies) {
    for (const t of each) {
      const key = `${organizationId}\n${vehicleId}\n${t.bucket}\n${t.driver}`;
      let row = hours.get(key);
      if (row === undefined) hours.set(key, (row = { ...emptyTally(), o: organizationId, v: vehicleId, b: t.bucket, d: t.driver }));
      addTally(row, t);
    }
  }
  if (hours.size === 0) return;
  const rows = [...hours.values()];
  await client.query({
    name: 'rollups.add',
    text: ADD_TALLIES,
    values: [
      rows.map((r) => r.o), rows.map((r) => r.v), rows.map((r) => r.b), rows.map((r) => Math.floor(r.b / 24)), rows.map((r) => monthOfDay(Math.floor(r.b / 24))),
      rows.map((r) => r.d), rows.map((r) => r.distanceM), rows.map((r) => r.drivingS), rows.map((r) => r.idleS), rows.map((r) => r.engineS),
      rows.map((r) => r.trips), rows.map((r) => r.maxSpeed),
    ],
  });
}

async function markStale(client: Queryable, organizationIds: readonly string[], vehicleIds: readonly string[], from: readonly number[]): Promise<void> {
  await client.query({
    name: 'rollups.stale',
    text: `INSERT INTO rollup_stale (organization_id, vehicle_id, from_ts) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
           ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET from_ts = least(rollup_stale.from_ts, excluded.from_ts)`,
    values: [organizationIds, vehicleIds, from],
  });
}

/** The vehicle's rollups are stale from `from` on: inside the caller's transaction (an assignment's). */
export const markStaleIn = (client: Queryable, organizationId: string, vehicleId: string, from: number) => markStale(client, [organizationId], [vehicleId], [from]);

/** Of each vehicle's marks from one hour to another, deletes those that are not the first of their day. */
async function thinMarks(client: Queryable, organizationIds: string[], vehicleIds: string[], from: number[], to: number[]): Promise<void> {
  await client.query({
    name: 'rollups.thin-marks',
    text: `DELETE FROM rollup_marks m USING unnest($1::text[], $2::text[], $3::int[], $4::int[]) AS r (o, v, f, t)
           WHERE m.organization_id = r.o AND m.vehicle_id = r.v AND m.hour >= r.f AND m.hour < r.t
           AND m.hour > (SELECT min(p.hour) FROM rollup_marks p WHERE p.organization_id = m.organization_id AND p.vehicle_id = m.vehicle_id
             AND p.hour >= m.hour / 24 * 24 AND p.hour < m.hour / 24 * 24 + 24)`,
    values: [organizationIds, vehicleIds, from, to],
  });
}

/** What a commit's judging added, inside its transaction, each vehicle's lock held. */
export async function writeRollups(client: Queryable, judged: readonly Judged[]): Promise<void> {
  await addTallies(client, judged);
  const marks = new Map<string, [string, string, number, string]>();
  for (const j of judged) for (const m of j.marks) marks.set(`${j.organizationId}\n${j.vehicleId}\n${m.hour}`, [j.organizationId, j.vehicleId, m.hour, m.state]);
  if (marks.size > 0) {
    const list = [...marks.values()];
    await client.query({
      name: 'rollups.marks',
      text: `INSERT INTO rollup_marks (organization_id, vehicle_id, hour, state) SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::json[])
             ON CONFLICT (organization_id, vehicle_id, hour) DO UPDATE SET state = excluded.state`,
      values: [list.map((m) => m[0]), list.map((m) => m[1]), list.map((m) => m[2]), list.map((m) => m[3])],
    });
    // Every hour's mark for the last two days; before that, a day's first.
    const days = list.map((m) => Math.floor(m[2] / 24));
    await thinMarks(client, list.map((m) => m[0]), list.map((m) => m[1]), days.map((d) => (d - 2) * 24), days.map((d) => (d - 1) * 24));
  }
  const late = new Map<string, Judged>();
  for (const j of judged) {
    if (j.late === null) continue;
    const key = vehicleKey(j.organizationId, j.vehicleId);
    const known = late.get(key);
    if (known === undefined || j.late < known.late!) late.set(key, j);
  }
  if (late.size > 0) {
    const list = [...late.values()];
    await markStale(client, list.map((j) => j.organizationId), list.map((j) => j.vehicleId), list.map((j) => j.late!));
  }
}

/** Replays one vehicle's history from the last mark before `from` on (its lock held). */
async function replay(client: Queryable, organizationId: string, vehicleId: string, from: number): Promise<void> {
  const markBefore = async (hour: number) => (await client.query<{ hour: number; state: Mark }>({
    name: 'rollups.mark-before',
    text: 'SELECT hour, state FROM rollup_marks WHERE organization_id = $1 AND vehicle_id = $2 AND hour < $3 ORDER BY hour DESC LIMIT 1',
    values: [organizationId, vehicleId, hour],
  })).rows[0];
  let mark = await markBefore(Math.floor(from / HOUR_MS));
  // A trip in progress at the mark and not yet counted would be counted twice: start before it began.
  while (mark !== undefined && !replayable(mark.state)) mark = await markBefore(Math.floor(mark.state.trip.trip!.startedAt / HOUR_MS) + 1);
  const hour = mark?.hour ?? NO_MARK;
  const day = Math.floor(hour / 24);
  const machine = mark?.state ?? initialMark();
  const roll = machine.roll;
  // What the mark held back is of the hour before, written since.
  roll.pend = [];
  await client.query({ name: 'rollups.drop-hours', text: 'DELETE FROM rollup_hours WHERE organization_id = $1 AND vehicle_id = $2 AND hour >= $3', values: [organizationId, vehicleId, hour] });
  await client.query({ name: 'rollups.drop-days', text: 'DELETE FROM rollup_days WHERE organization_id = $1 AND vehicle_id = $2 AND day >= $3', values: [organizationId, vehicleId, day] });
  const month = monthOfDay(Math.max(day, 0));
  await client.query({ name: 'rollups.drop-months', text: 'DELETE FROM rollup_months WHERE organization_id = $1 AND vehicle_id = $2 AND month >= $3', values: [organizationId, vehicleId, month] });
  // The mark's day again from its hours before the mark, and its month from its days: what is not replayed.
  await client.query({
    name: 'rollups.day-from-hours',
    text: `INSERT INTO rollup_days (${COLUMNS.replace('%', 'day')})
           SELECT organization_id, vehicle_id, $3, driver_id, sum(distance_m), sum(driving_s), sum(idle_s), sum(engine_s), sum(trips), max(max_speed)
           FROM rollup_hours WHERE organization_id = $1 AND vehicle_id = $2 AND hour >= $4 AND hour < $5 GROUP BY organization_id, vehicle_id, driver_id`,
    values: [organizationId, vehicleId, day, day * 24, hour],
  });
  await client.query({
    name: 'rollups.month-from-days',
    text: `INSERT INTO rollup_months (${COLUMNS.replace('%', 'month')})
           SELECT organization_id, vehicle_id, $3, driver_id, sum(distance_m), sum(driving_s), sum(idle_s), sum(engine_s), sum(trips), max(max_speed)
           FROM rollup_days WHERE organization_id = $1 AND vehicle_id = $2 AND day >= $4 AND day < $5 GROUP BY organization_id, vehicle_id, driver_id`,
    values: [organizationId, vehicleId, month, firstDayOfMonth(month), day + 1],
  });
  await client.query({ name: 'rollups.drop-marks', text: 'DELETE FROM rollup_marks WHERE organization_id = $1 AND vehicle_id = $2 AND hour > $3', values: [organizationId, vehicleId, hour] });
  const { rows: assigned } = await client.query<{ driver_id: string; started_at: string; ended_at: string | null }>({
    name: 'rollups.assignments',
    text: 'SELECT driver_id, started_at, ended_at FROM driver_assignments WHERE organization_id = $1 AND vehicle_id = $2 ORDER BY started_at, id',
    values: [organizationId, vehicleId],
  });
  const timeline = assignmentTimeline(assigned);
  const tallies: Tallies = new Map();
  const marks: [number, string][] = [];
  for (;;) {
    const { rows } = await client.query<{ ts: string; data: string }>({
      name: 'rollups.records',
      text: 'SELECT ts, data::text AS data FROM telemetry WHERE organization_id = $1 AND vehicle_id = $2 AND ts > $3 ORDER BY ts LIMIT $4',
      values: [organizationId, vehicleId, roll.t ?? -1, REPLAY_PAGE],
    });
    for (const row of rows) {
      const t = Number(row.ts);
      if (roll.t !== null && Math.floor(t / HOUR_MS) > Math.floor(roll.t / HOUR_MS)) marks.push([Math.floor(t / HOUR_MS), JSON.stringify(machine)]);
      feedRollup(machine, { timestamp: t, data: rollupData(row.data) }, timeline.at(t), HOUR_MS, tallies);
    }
    if (rows.length < REPLAY_PAGE) break;
  }
  // The step into the mark's hour, and what came before it, were counted already and have not changed.
  for (const [key, t] of tallies) if (t.bucket < hour) tallies.delete(key);
  await addTallies(client, [{ organizationId, vehicleId, tallies: tallies.values() }]);
  if (marks.length > 0) {
    await client.query({
      name: 'rollups.replay-marks',
      text: `INSERT INTO rollup_marks (organization_id, vehicle_id, hour, state) SELECT $1, $2, h, s FROM unnest($3::int[], $4::json[]) AS m (h, s)
             ON CONFLICT (organization_id, vehicle_id, hour) DO UPDATE SET state = excluded.state`,
      values: [organizationId, vehicleId, marks.map((m) => m[0]), marks.map((m) => m[1])],
    });
  }
  if (roll.t !== null) await thinMarks(client, [organizationId], [vehicleId], [hour], [(Math.floor(roll.t / DAY_MS) - 1) * 24]);
  roll.cur = timeline.ongoing();
  // Every tally was written, the last hour's too.
  roll.pend = [];
  await client.query({
    name: 'rollups.set-state', text: 'UPDATE vehicle_rule_state SET rollup = $3::json, trip = $4::json WHERE organization_id = $1 AND vehicle_id = $2',
    values: [organizationId, vehicleId, JSON.stringify(roll), JSON.stringify(machine.trip)],
  });
}

/** `readDb` takes the reads of reports, which may be a little behind (a replica's, see replica.ts). */
export function createPostgresRollupStore(db: Database, readDb: Queryable = db): RollupStore {
  const reads = rollupReadSql('postgres');
  return {
    async repair(organizationId, limit = staleBatch) {
      const { rows } = await db.query<{ organization_id: string; vehicle_id: string }>(
        'SELECT organization_id, vehicle_id FROM rollup_stale WHERE ($1::text IS NULL OR organization_id = $1) LIMIT $2', [organizationId ?? null, limit]);
      for (const r of rows) {
        await db.transaction(async (client) => {
          await client.query({ name: 'rollups.lock', text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 1))', values: [rulesLock(r.organization_id, r.vehicle_id)] });
          const { rows: stale } = await client.query<{ from_ts: string }>({
            name: 'rollups.stale-of', text: 'SELECT from_ts FROM rollup_stale WHERE organization_id = $1 AND vehicle_id = $2 FOR UPDATE', values: [r.organization_id, r.vehicle_id],
          });
          // Another node replayed it meanwhile.
          if (stale[0] === undefined) return;
          await replay(client, r.organization_id, r.vehicle_id, Number(stale[0].from_ts));
          await client.query({ name: 'rollups.fresh', text: 'DELETE FROM rollup_stale WHERE organization_id = $1 AND vehicle_id = $2', values: [r.organization_id, r.vehicle_id] });
        });
      }
      return rows.length;
    },
    async markStale(organizationId, vehicleId, from) {
      await markStaleIn(db, organizationId, vehicleId, from);
    },
    async pending(organizationId, vehicles) {
      const { rows } = await readDb.query<{ vehicle_id: string; pend: PackedTally[] }>({
        name: 'rollups.pending',
        text: `SELECT vehicle_id, rollup->'pend' AS pend FROM vehicle_rule_state
               WHERE organization_id = $1 AND ($2::text[] IS NULL OR vehicle_id = ANY($2::text[])) AND json_array_length(rollup->'pend') > 0`,
        values: [organizationId, vehicles],
      });
      return rows.map((r) => ({ vehicleId: r.vehicle_id, tallies: r.pend.map(unpackTally) }));
    },
    async sums(organizationId: string, query: SumsQuery): Promise<SumsRow[]> {
      const parts = await Promise.all(reads(organizationId, query).map(async ({ sql, params }) => (await readDb.query(sql, params)).rows.map((r): SumsRow => ({
        key: r.key as string | number, distanceM: Number(r.distanceM), drivingS: Number(r.drivingS), idleS: Number(r.idleS), engineS: Number(r.engineS),
        trips: Number(r.trips), maxSpeed: r.maxSpeed === null ? null : Number(r.maxSpeed),
      }))));
      return mergeSums(parts);
    },
  };
}
