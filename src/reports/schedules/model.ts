// Report schedules as the service keeps them (docs/API.md "Report schedules"): a schedule, the
// reports it keeps, and the pure rules of its periods. A period is a range of dates in the
// schedule's time zone, `from` inclusive and `to` exclusive: a day, an ISO week (Monday to
// Monday) or a calendar month (the 1st to the 1st). Times are ms since the epoch.
import { type GroupBy, type ReportFormat } from '../model.ts';
import { addDays, localDate, parseDate, startOfDate } from '../zone.ts';

export const PERIODS = ['day', 'week', 'month'] as const;
export type Period = (typeof PERIODS)[number];

/** Reports are kept this many days after they were made. */
export const REPORT_KEEP_DAYS = 90;
/** A period's report is made this long after the period ended: records that arrive late are counted. */
export const LATE_MS = 3_600_000;

export interface ReportScheduleRecord {
  organizationId: string;
  id: string;
  name: string;
  groupBy: GroupBy;
  period: Period;
  timezone: string;
  /** Only these vehicles; with `groupId` null too, every vehicle. */
  vehicleIds: string[] | null;
  groupId: string | null;
  format: ReportFormat;
  createdAt: number;
  updatedAt: number;
}

/** A range of dates (`YYYY-MM-DD`) in a time zone, `to` exclusive. */
export interface DateRange {
  from: string;
  to: string;
}

/** A kept report; its content is kept beside it (the summary's rows as JSON, or CSV). */
export interface ReportRecord {
  organizationId: string;
  id: string;
  scheduleId: string;
  period: DateRange;
  groupBy: GroupBy;
  format: ReportFormat;
  /** Made by `run` (any number per period), not by the schedule (once per period). */
  manual: boolean;
  createdAt: number;
}

/** The first date of the period that holds `date`. */
export function periodStart(date: string, period: Period): string {
  if (period === 'day') return date;
  const [y, m, d] = parseDate(date)!;
  if (period === 'month') return `${date.slice(0, 8)}01`;
  // ISO weeks start on Monday: getUTCDay is 0 for Sunday.
  const weekday = (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7;
  return addDays(date, -weekday);
}

/** The first date of the period after the one starting on `start`. */
export function nextStart(start: string, period: Period): string {
  if (period === 'day') return addDays(start, 1);
  if (period === 'week') return addDays(start, 7);
  const [y, m] = parseDate(start)!;
  return new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10);
}

/** The first date of the period before the one starting on `start`. */
export function previousStart(start: string, period: Period): string {
  if (period === 'day') return addDays(start, -1);
  if (period === 'week') return addDays(start, -7);
  const [y, m] = parseDate(start)!;
  return new Date(Date.UTC(y, m - 2, 1)).toISOString().slice(0, 10);
}

/** When the period ends: the first instant of its `to` date in the zone. */
export const endOf = (range: DateRange, timeZone: string): number => startOfDate(range.to, timeZone);

/** The latest period whose end (local midnight in the zone) is at or before `now`. */
export function lastComplete(now: number, timeZone: string, period: Period): DateRange {
  const current = periodStart(localDate(now, timeZone), period);
  return { from: previousStart(current, period), to: current };
}

/**
 * The latest period due for its scheduled report at `now`: one whose end, plus LATE_MS for the
 * records that arrive late, has passed. Every period before it is due too; only the latest is
 * made (a service that was down does not catch up with a storm of old reports).
 */
export function latestDue(now: number, timeZone: string, period: Period): DateRange {
  const last = lastComplete(now, timeZone, period);
  if (now >= endOf(last, timeZone) + LATE_MS) return last;
  return { from: previousStart(last.from, period), to: last.from };
}

/** The period a schedule's check makes now, if any: the latest due, when it ended after the schedule was created. */
export function periodToMake(schedule: Pick<ReportScheduleRecord, 'timezone' | 'period' | 'createdAt'>, now: number): DateRange | undefined {
  const due = latestDue(now, schedule.timezone, schedule.period);
  return endOf(due, schedule.timezone) > schedule.createdAt ? due : undefined;
}
