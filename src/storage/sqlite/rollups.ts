// Summary report rollups in the embedded store (reports/rollup.ts, docs/API.md "Summary reports"):
// the telemetry commit adds each vehicle's tallies, inside its transaction; a late record or a
// changed assignment marks the vehicle stale, and `repair` replays its history from the mark
// before that, inside a transaction of its own (one process owns the file: no commit runs meanwhile).
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Judged } from '../../rules/store.ts';
import { rollupData } from '../../history/motion-data.ts';
import { DAY_MS, HOUR_MS, type Mark, type Tallies, type Tally, type TallyRow, feedRollup, firstDayOfMonth, initialMark, monthOfDay, replayable, unpackTally } from '../../reports/rollup.ts';
import type { RollupStore, SumsQuery, SumsRow } from '../../reports/store.ts';
import { type AssignmentTimeline, assignmentTimeline, mergeSums, rollupReadSql, staleBatch, sumInto } from '../rollup-rows.ts';
import type { WalSync } from './wal-sync.ts';
import { decodeRoll } from '../state-blobs.ts';

const TALLY_COLUMNS = 'distance_m, driving_s, idle_s, engine_s, trips, max_speed';
/** The hour a replay without a mark starts from: before any record. */
const NO_MARK = -24e6;

/** What a replay needs of the rule state: to write the vehicle's machines' states (its cache with them). */
export interface RollStates {
  /** Sets the rollup machine's state and the trip machine's (what a replay leaves). */
  setRoll(organizationId: string, vehicleId: string, state: Mark): void;
}

export function createSqliteRollupWrites(db: DatabaseSync) {
  const add = (table: 'rollup_hours' | 'rollup_days' | 'rollup_months', key: 'hour' | 'day' | 'month') => db.prepare(
    `INSERT INTO ${table} (organization_id, vehicle_id, ${key}, driver_id, ${TALLY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (organization_id, vehicle_id, ${key}, driver_id) DO UPDATE SET distance_m = distance_m + excluded.distance_m,
       driving_s = driving_s + excluded.driving_s, idle_s = idle_s + excluded.idle_s, engine_s = engine_s + excluded.engine_s,
       trips = trips + excluded.trips, max_speed = CASE WHEN max_speed IS NULL OR excluded.max_speed > max_speed THEN excluded.max_speed ELSE max_speed END`,
  );
  const addHour = add('rollup_hours', 'hour');
  const addDay = add('rollup_days', 'day');
  const addMonth = add('rollup_months', 'month');
  const putMark = db.prepare('INSERT OR REPLACE INTO rollup_marks (organization_id, vehicle_id, hour, state) VALUES (?, ?, ?, ?)');
  // Of the marks from one hour to another, those that are not the first of their day.
  const thinMarks = db.prepare(
    `DELETE FROM rollup_marks WHERE organization_id = ? AND vehicle_id = ? AND hour >= ? AND hour < ?
     AND hour > (SELECT min(p.hour) FROM rollup_marks p WHERE p.organization_id = rollup_marks.organization_id AND p.vehicle_id = rollup_marks.vehicle_id
       AND p.hour >= rollup_marks.hour / 24 * 24 AND p.hour < rollup_marks.hour / 24 * 24 + 24)`,
  );
  const stale = db.prepare(
    `INSERT INTO rollup_stale (organization_id, vehicle_id, from_ts) VALUES (?, ?, ?)
     ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET from_ts = min(from_ts, excluded.from_ts)`,
  );

  /** Adds tallies to their hours, days and months. */
  function addTallies(organizationId: string, vehicleId: string, tallies: Iterable<TallyRow>): void {
    const days = new Map<number, Map<string, Tally>>();
    for (const t of tallies) {
      addHour.run(organizationId, vehicleId, t.bucket, t.driver, t.distanceM, t.drivingS, t.idleS, t.engineS, t.trips, t.maxSpeed);
      sumInto(days, Math.floor(t.bucket / 24), t.driver, t);
    }
    const months = new Map<number, Map<string, Tally>>();
    for (const [day, drivers] of days) {
      for (const [driver, d] of drivers) {
        addDay.run(organizationId, vehicleId, day, driver, d.distanceM, d.drivingS, d.idleS, d.engineS, d.trips, d.maxSpeed);
        sumInto(months, monthOfDay(day), driver, d);
      }
    }
    for (const [month, drivers] of months) {
      for (const [driver, m] of drivers) addMonth.run(organizationId, vehicleId, month, driver, m.distanceM, m.drivingS, m.idleS, m.engineS, m.trips, m.maxSpeed);
    }
  }

  return {
    addTallies,
    putMark,
    thinMarks,
    /** What a commit's judging added: inside the commit's transaction. */
    write(judged: Judged): void {
      const { organizationId, vehicleId } = judged;
      if (judged.tallies.length > 0) addTallies(organizationId, vehicleId, judged.tallies);
      for (const m of judged.marks) {
        putMark.run(organizationId, vehicleId, m.hour, m.state);
        // Every hour's mark for the last two days; before that, a day's first.
        const day = Math.floor(m.hour / 24);
        thinMarks.run(organizationId, vehicleId, (day - 2) * 24, (day - 1) * 24);
      }
      if (judged.late !== null) stale.run(organizationId, vehicleId, judged.late);
    },
    /** The vehicle's rollups are stale from `from` (ms) on (a late record, a changed assignment). */
    markStale(organizationId: string, vehicleId: string, from: number): void {
      stale.run(organizationId, vehicleId, from);
    },
  };
}

export type SqliteRollupWrites = ReturnType<typeof createSqliteRollupWrites>;

export function createSqliteRollupStore(db: DatabaseSync, reader: DatabaseSync, wal: WalSync, writes: SqliteRollupWrites, states: RollStates): RollupStore {
  const staleOf = db.prepare('SELECT organization_id, vehicle_id, from_ts FROM rollup_stale WHERE (? IS NULL OR organization_id = ?) LIMIT ?');
  const staleOne = db.prepare('SELECT from_ts FROM rollup_stale WHERE organization_id = ? AND vehicle_id = ?');
  const fresh = db.prepare('DELETE FROM rollup_stale WHERE organization_id = ? AND vehicle_id = ?');
  const markBefore = db.prepare('SELECT hour, state FROM rollup_marks WHERE organization_id = ? AND vehicle_id = ? AND hour < ? ORDER BY hour DESC LIMIT 1');
  const dropHours = db.prepare('DELETE FROM rollup_hours WHERE organization_id = ? AND vehicle_id = ? AND hour >= ?');
  const dropDays = db.prepare('DELETE FROM rollup_days WHERE organization_id = ? AND vehicle_id = ? AND day >= ?');
  const dropMonths = db.prepare('DELETE FROM rollup_months WHERE organization_id = ? AND vehicle_id = ? AND month >= ?');
  // The mark's day again from its hours before the mark, and its month from its days: what is not replayed.
  const dayFromHours = db.prepare(
    `INSERT INTO rollup_days (organization_id, vehicle_id, day, driver_id, ${TALLY_COLUMNS})
     SELECT organization_id, vehicle_id, ?, driver_id, sum(distance_m), sum(driving_s), sum(idle_s), sum(engine_s), sum(trips), max(max_speed)
     FROM rollup_hours WHERE organization_id = ? AND vehicle_id = ? AND hour >= ? AND hour < ? GROUP BY driver_id`,
  );
  const monthFromDays = db.prepare(
    `INSERT INTO rollup_months (organization_id, vehicle_id, month, driver_id, ${TALLY_COLUMNS})
     SELECT organization_id, vehicle_id, ?, driver_id, sum(distance_m), sum(driving_s), sum(idle_s), sum(engine_s), sum(trips), max(max_speed)
     FROM rollup_days WHERE organization_id = ? AND vehicle_id = ? AND day >= ? AND day < ? GROUP BY driver_id`,
  );
  const dropMarks = db.prepare('DELETE FROM rollup_marks WHERE organization_id = ? AND vehicle_id = ? AND hour > ?');
  const { putMark, thinMarks } = writes;
  const records = db.prepare(
    `SELECT ts, data FROM telemetry WHERE organization_id = ? AND vehicle_id = ? AND ts > ?
     UNION ALL SELECT ts, data FROM telemetry_recent WHERE organization_id = ? AND vehicle_id = ? AND ts > ? ORDER BY ts`,
  );
  const assignments = db.prepare(
    'SELECT driver_id, started_at, ended_at FROM driver_assignments WHERE organization_id = ? AND vehicle_id = ? ORDER BY started_at, id',
  );

  /** Replays one vehicle's history from the last mark before `from` on (inside the caller's transaction). */
  function replay(organizationId: string, vehicleId: string, from: number): void {
    const markOf = (before: number) => {
      const row = markBefore.get(organizationId, vehicleId, before) as { hour: number; state: string } | undefined;
      return row === undefined ? undefined : { hour: row.hour, state: JSON.parse(row.state) as Mark };
    };
    let mark = markOf(Math.floor(from / HOUR_MS));
    // A trip in progress at the mark and not yet counted would be counted twice: start before it began.
    while (mark !== undefined && !replayable(mark.state)) mark = markOf(Math.floor(mark.state.trip.trip!.startedAt / HOUR_MS) + 1);
    const hour = mark?.hour ?? NO_MARK;
    const day = Math.floor(hour / 24);
    const machine = mark?.state ?? initialMark();
    const roll = machine.roll;
    // What the mark held back is of the hour before, written since.
    roll.pend = [];
    dropHours.run(organizationId, vehicleId, hour);
    dropDays.run(organizationId, vehicleId, day);
    dayFromHours.run(day, organizationId, vehicleId, day * 24, hour);
    const month = monthOfDay(Math.max(day, 0));
    dropMonths.run(organizationId, vehicleId, month);
    monthFromDays.run(month, organizationId, vehicleId, firstDayOfMonth(month), day + 1);
    dropMarks.run(organizationId, vehicleId, hour);
    const timeline: AssignmentTimeline = assignmentTimeline(assignments.all(organizationId, vehicleId) as { driver_id: string; started_at: number; ended_at: number | null }[]);
    const tallies: Tallies = new Map();
    const after = roll.t ?? -1;
    for (const row of records.iterate(organizationId, vehicleId, after, organizationId, vehicleId, after) as Iterable<{ ts: number; data: string }>) {
      const t = row.ts;
      if (roll.t !== null && Math.floor(t / HOUR_MS) > Math.floor(roll.t / HOUR_MS)) putMark.run(organizationId, vehicleId, Math.floor(t / HOUR_MS), JSON.stringify(machine));
      feedRollup(machine, { timestamp: t, data: rollupData(row.data) }, timeline.at(t), HOUR_MS, tallies);
    }
    // The step into the mark's hour, and what came before it, were counted already and have not changed.
    for (const [key, t] of tallies) if (t.bucket < hour) tallies.delete(key);
    writes.addTallies(organizationId, vehicleId, tallies.values());
    if (roll.t !== null) thinMarks.run(organizationId, vehicleId, hour, (Math.floor(roll.t / DAY_MS) - 1) * 24);
    roll.cur = timeline.ongoing();
    // Every tally was written, the last hour's too.
    roll.pend = [];
    states.setRoll(organizationId, vehicleId, machine);
  }

  async function repairAll(organizationId: string | null, limit: number): Promise<number> {
    const rows = staleOf.all(organizationId, organizationId, limit) as { organization_id: string; vehicle_id: string; from_ts: number }[];
    for (const [i, r] of rows.entries()) {
      // Each in a transaction of its own and a turn of the event loop between two: commits and
      // requests go on between them.
      if (i > 0) await nextTurn();
      wal.unsynced(() => {
        const current = staleOne.get(r.organization_id, r.vehicle_id) as { from_ts: number } | undefined;
        if (current === undefined) return;
        replay(r.organization_id, r.vehicle_id, current.from_ts);
        fresh.run(r.organization_id, r.vehicle_id);
      });
    }
    return rows.length;
  }

  const reads = rollupReadSql('sqlite');
  // A few shapes of statement (per table, with or without a vehicle filter), each prepared once.
  const statements = new Map<string, StatementSync>();
  const statement = (sql: string) => {
    let prepared = statements.get(sql);
    if (prepared === undefined) statements.set(sql, (prepared = reader.prepare(sql)));
    return prepared;
  };
  const pending = reader.prepare('SELECT vehicle_id, rollup FROM vehicle_rule_state WHERE organization_id = ? AND rollup IS NOT NULL');
  return {
    repair(organizationId, limit = staleBatch) {
      return repairAll(organizationId ?? null, limit);
    },
    async markStale(organizationId, vehicleId, from) {
      await wal.transaction(() => writes.markStale(organizationId, vehicleId, from));
    },
    async pending(organizationId, vehicles) {
      const wanted = vehicles === null ? undefined : new Set(vehicles);
      return (pending.all(organizationId) as { vehicle_id: string; rollup: unknown }[])
        .filter((r) => wanted === undefined || wanted.has(r.vehicle_id))
        .map((r) => ({ vehicleId: r.vehicle_id, tallies: decodeRoll(r.rollup).pend.map(unpackTally) }))
        .filter((p) => p.tallies.length > 0);
    },
    async sums(organizationId: string, query: SumsQuery): Promise<SumsRow[]> {
      return mergeSums(reads(organizationId, query).map(({ sql, params }) => statement(sql).all(...(params as (string | number | null)[])) as unknown as SumsRow[]));
    },
  };
}
