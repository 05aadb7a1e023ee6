// Summary reports (docs/API.md "Summary reports"): per vehicle, per driver or per day in a time
// zone, answered from the rollups the telemetry commit keeps (reports/rollup.ts). A zone whose
// days start on the hour (nearly all of them) reads whole UTC months, the days and then the hours
// at the range's two ends; by day, a zone whose days are not UTC's reads hours. A zone whose days start at a
// half or quarter hour (India, Nepal, parts of Australia) is answered from history, with the same
// machine: slower, and the same numbers.
import type { Principal } from '../auth/scopes.ts';
import { AppError } from '../errors.ts';
import type { AssignmentRecord, DriverStore } from '../drivers/store.ts';
import { unknownGroups } from '../groups/scope.ts';
import type { GroupStore } from '../groups/store.ts';
import { SCANS } from '../history/service.ts';
import { rollupData } from '../history/motion-data.ts';
import type { TelemetryStore } from '../telemetry/store.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { Stores } from '../storage/stores.ts';
import type { SummaryReader, SummaryRequest, SummaryRow } from './model.ts';
import { DAY_MS, HOUR_MS, STEP_GAP_MS, type Tallies, type Tally, addTally, emptyTally, feedRollup, firstDayOfMonth, initialMark, monthOfDay } from './rollup.ts';
import type { RollupStore, Span } from './store.ts';
import { assignmentTimeline } from '../storage/rollup-rows.ts';
import { addDays, daysBetween, isTimeZone, parseDate, startOfDate } from './zone.ts';

/** The longest range a summary takes, days. */
export const MAX_SUMMARY_DAYS = 366;
/** The most vehicles a summary names in `vehicleIds`. */
export const MAX_SUMMARY_VEHICLES = 1000;
/** A history summary's buckets: every zone's offset is a multiple of a quarter hour. */
const QUARTER_MS = 900_000;
/** Rounds of stale vehicles a summary replays before it reads (each of `staleBatch` vehicles). */
const REPAIR_ROUNDS = 20;

export type SummaryService = ReturnType<typeof createSummaryService>;

/** The service over a set of stores; by default every credential sees every vehicle (tests and benchmarks). */
export function summaryServiceOf(
  stores: Pick<Stores, 'rollups' | 'telemetry' | 'vehicles' | 'drivers' | 'groups'>,
  assertSees: (who: Principal, vehicleIds: readonly string[]) => Promise<void> = async () => {},
): SummaryService {
  return createSummaryService({ rollups: stores.rollups, telemetry: stores.telemetry, vehicles: stores.vehicles, drivers: stores.drivers, groups: stores.groups, assertSees });
}

function badQuery(path: string, message: string): AppError {
  return new AppError('validation-failed', `${path.slice(1)}: ${message}.`, { errors: [{ in: 'query', path, message }] });
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

/** A row from its key's member and sums. */
function rowOf(member: 'vehicleId' | 'driverId' | 'date', key: string, t: Tally): SummaryRow {
  return {
    [member]: key, distanceKm: round3(t.distanceM / 1000), drivingSeconds: round3(t.drivingS), idleSeconds: round3(t.idleS),
    engineHours: round3(t.engineS / 3600), trips: t.trips, maxSpeed: t.maxSpeed,
  };
}

/** The range checked: its days' first instants (the last one `to`'s), in the zone. */
interface Range {
  dates: string[];
  /** starts[i]: the first instant of dates[i]; starts[dates.length]: of `to`. */
  starts: number[];
  /** Every day starts at a UTC midnight: the daily rollups cut it exactly. */
  utcDays: boolean;
}

/** Sums by key, sorted by it, as rows: keys are ids, or indexes of the range's dates (by day). */
function rowsOf(sums: Map<string | number, Tally>, groupBy: SummaryRequest['groupBy'], range: Range): SummaryRow[] {
  const member = groupBy === 'vehicle' ? 'vehicleId' : groupBy === 'driver' ? 'driverId' : 'date';
  return [...sums].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([key, t]) => rowOf(member, groupBy === 'day' ? range.dates[key as number]! : key as string, t));
}

/** Adds `t` to the sums of `key`. */
function addTo(sums: Map<string | number, Tally>, key: string | number, t: Tally): void {
  const known = sums.get(key);
  if (known !== undefined) return addTally(known, t);
  const sum = emptyTally();
  addTally(sum, t);
  sums.set(key, sum);
}

/** The index of the date whose day holds `t` (starts ascending), or -1 outside the range. */
function dateIndex(starts: readonly number[], t: number): number {
  if (t < starts[0]! || t >= starts.at(-1)!) return -1;
  let lo = 0;
  let hi = starts.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (starts[mid]! <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * The hours `start` to `end` (hour numbers) as whole UTC months, whole days at their two ends, and
 * hours at the ends of those: the fewest rows that cover them.
 */
export function spansOf(start: number, end: number): { months: Span[]; days: Span[]; hours: Span[] } {
  const firstDay = Math.ceil(start / 24);
  const lastDay = Math.floor(end / 24);
  if (firstDay >= lastDay) return { months: [], days: [], hours: [[start, end]] };
  const hours: Span[] = [[start, firstDay * 24], [lastDay * 24, end]];
  let firstMonth = monthOfDay(firstDay);
  if (firstDayOfMonth(firstMonth) < firstDay) firstMonth++;
  const lastMonth = monthOfDay(lastDay);
  if (firstMonth >= lastMonth) return { months: [], days: [[firstDay, lastDay]], hours };
  return { months: [[firstMonth, lastMonth]], days: [[firstDay, firstDayOfMonth(firstMonth)], [firstDayOfMonth(lastMonth), lastDay]], hours };
}

export function createSummaryService(deps: {
  rollups: RollupStore; telemetry: TelemetryStore; vehicles: Pick<VehicleStore, 'list'>; drivers: Pick<DriverStore, 'assignments'>;
  groups: Pick<GroupStore, 'get' | 'membersOf'>; assertSees: (who: Principal, vehicleIds: readonly string[]) => Promise<void>;
}) {
  function rangeOf(request: SummaryRequest): Range {
    if (parseDate(request.from) === undefined) throw badQuery('/from', 'must be a date (YYYY-MM-DD)');
    if (parseDate(request.to) === undefined) throw badQuery('/to', 'must be a date (YYYY-MM-DD)');
    if (!isTimeZone(request.timezone)) throw badQuery('/timezone', `"${request.timezone}" is no IANA time zone`);
    const days = daysBetween(request.from, request.to);
    if (days <= 0) throw badQuery('/from', 'must be before to');
    if (days > MAX_SUMMARY_DAYS) throw badQuery('/to', `must be at most ${MAX_SUMMARY_DAYS} days after from`);
    const dates = Array.from({ length: days }, (_, i) => addDays(request.from, i));
    const starts = [...dates, request.to].map((d) => startOfDate(d, request.timezone));
    return { dates, starts, utcDays: starts.every((t) => t % DAY_MS === 0) };
  }

  /** The vehicles counted: null for the whole organization. */
  async function vehiclesOf(who: Principal, request: SummaryRequest): Promise<readonly string[] | null> {
    const { organizationId } = who;
    if (request.vehicleIds !== undefined && request.groupId !== undefined) throw badQuery('/groupId', 'must not be given with vehicleIds');
    let chosen: readonly string[] | null = null;
    if (request.vehicleIds !== undefined) {
      if (request.vehicleIds.length > MAX_SUMMARY_VEHICLES) throw badQuery('/vehicleIds', `must name at most ${MAX_SUMMARY_VEHICLES} vehicles`);
      await deps.assertSees(who, request.vehicleIds);
      return [...new Set(request.vehicleIds)];
    }
    if (request.groupId !== undefined) {
      if ((await deps.groups.get(organizationId, request.groupId)) === undefined) throw unknownGroups([request.groupId]);
      chosen = await deps.groups.membersOf(organizationId, [request.groupId]);
    }
    if (who.groupIds === undefined) return chosen;
    const own = new Set(await deps.groups.membersOf(organizationId, who.groupIds));
    return chosen === null ? [...own] : chosen.filter((id) => own.has(id));
  }

  /** Whether every day of the range starts on the hour (UTC): the hourly rollups then cut it exactly. */
  const onTheHour = (range: Range) => range.starts.every((t) => t % HOUR_MS === 0);

  async function fromRollups(organizationId: string, request: SummaryRequest, range: Range, vehicles: readonly string[] | null): Promise<SummaryRow[]> {
    const start = range.starts[0]! / HOUR_MS;
    const end = range.starts.at(-1)! / HOUR_MS;
    const { groupBy } = request;
    /** By day, the unit of the rows' keys: days where the zone's days are UTC's, else hours. */
    const unit = range.utcDays ? DAY_MS : HOUR_MS;
    const [rows, pending] = await Promise.all([
      groupBy !== 'day' ? deps.rollups.sums(organizationId, { vehicles, by: groupBy, ...spansOf(start, end) })
      : range.utcDays ? deps.rollups.sums(organizationId, { vehicles, by: 'day', months: [], days: [[start / 24, end / 24]], hours: [] })
      : deps.rollups.sums(organizationId, { vehicles, by: 'hour', months: [], days: [], hours: [[start, end]] }),
      deps.rollups.pending(organizationId, vehicles),
    ]);
    const sums = new Map<string | number, Tally>();
    for (const r of rows) addTo(sums, groupBy !== 'day' ? String(r.key) : dateIndex(range.starts, Number(r.key) * unit), r);
    // The last hour of each vehicle, not written to the rollups yet.
    for (const { vehicleId, tallies } of pending) {
      for (const t of tallies) {
        if (t.bucket < start || t.bucket >= end || (groupBy === 'driver' && t.driver === '')) continue;
        addTo(sums, groupBy === 'vehicle' ? vehicleId : groupBy === 'driver' ? t.driver : dateIndex(range.starts, t.bucket * HOUR_MS), t);
      }
    }
    return rowsOf(sums, groupBy, range);
  }

  /** Every vehicle of the organization (a history summary of the whole fleet). */
  async function allVehicles(organizationId: string): Promise<string[]> {
    const ids: string[] = [];
    for (let offset = 0; ; offset += 1000) {
      const { vehicles } = await deps.vehicles.list(organizationId, { limit: 1000, offset });
      for (const v of vehicles) ids.push(v.id);
      if (vehicles.length < 1000) return ids;
    }
  }

  /** The same rows, computed from each vehicle's whole history up to (a little past) the range's end. */
  async function fromHistory(organizationId: string, request: SummaryRequest, range: Range, vehicles: readonly string[] | null): Promise<SummaryRow[]> {
    const start = range.starts[0]!;
    const end = range.starts.at(-1)!;
    const sums = new Map<string | number, Tally>();
    for (const vehicleId of vehicles ?? (await allVehicles(organizationId))) {
      const assigned: AssignmentRecord[] = await deps.drivers.assignments(organizationId, { vehicleId, limit: 1_000_000 });
      const timeline = assignmentTimeline(assigned.reverse().map((a) => ({ driver_id: a.driverId, started_at: a.startedAt, ended_at: a.endedAt })));
      const machine = initialMark();
      const tallies: Tallies = new Map();
      // Past the end, until the last step that starts before it is complete and no trip begun before it waits to be counted.
      const scan = deps.telemetry.scan(organizationId, vehicleId, { from: 0, to: Number.MAX_SAFE_INTEGER }, { ...SCANS.report, decode: rollupData });
      try {
        reading: for await (const page of scan) {
          for (const record of page) {
            const open = machine.trip.trip;
            if (record.timestamp > end + STEP_GAP_MS && (open === null || open.announced || open.startedAt >= end)) break reading;
            feedRollup(machine, record, timeline.at(record.timestamp), QUARTER_MS, tallies);
          }
        }
      } finally {
        await scan.return(undefined);
      }
      for (const t of tallies.values()) {
        const at = t.bucket * QUARTER_MS;
        if (at < start || at >= end) continue;
        if (request.groupBy === 'driver' && t.driver === '') continue;
        addTo(sums, request.groupBy === 'vehicle' ? vehicleId : request.groupBy === 'driver' ? t.driver : dateIndex(range.starts, at), t);
      }
    }
    return rowsOf(sums, request.groupBy, range);
  }

  /** Brings the organization's stale rollups up to date (late records, changed assignments). */
  async function repair(organizationId: string): Promise<void> {
    for (let round = 0; round < REPAIR_ROUNDS; round++) if ((await deps.rollups.repair(organizationId)) === 0) return;
  }

  const reader: SummaryReader & {
    /** The same rows from history, whatever the zone: what the rollups must agree with (and the benchmark's baseline). */
    fromHistory(who: Principal, request: SummaryRequest): Promise<{ rows: SummaryRow[] }>;
  } = {
    async summary(who, request) {
      const range = rangeOf(request);
      const vehicles = await vehiclesOf(who, request);
      if (vehicles !== null && vehicles.length === 0) return { rows: [] };
      if (!onTheHour(range)) return { rows: await fromHistory(who.organizationId, request, range, vehicles) };
      await repair(who.organizationId);
      return { rows: await fromRollups(who.organizationId, request, range, vehicles) };
    },
    async fromHistory(who, request) {
      const range = rangeOf(request);
      const vehicles = await vehiclesOf(who, request);
      if (vehicles !== null && vehicles.length === 0) return { rows: [] };
      return { rows: await fromHistory(who.organizationId, request, range, vehicles) };
    },
  };
  return reader;
}
