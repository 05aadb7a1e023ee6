// Where report schedules and their reports are kept (docs/API.md "Report schedules"). Every call
// names the organization, but for the check's own (the organizations it visits, the age past which
// reports go). A report is written with its `report.ready` event in one transaction, and a
// schedule's report of a period only once, whichever node makes it.
import type { EventRecord } from '../../events/types.ts';
import type { ReportFormat } from '../model.ts';
import type { DateRange, ReportRecord, ReportScheduleRecord } from './model.ts';

export interface ReportScheduleStore {
  /** `quota` (nothing stored) past `max` schedules. */
  insertSchedule(schedule: ReportScheduleRecord, max: number): Promise<'created' | 'quota'>;
  getSchedule(organizationId: string, id: string): Promise<ReportScheduleRecord | undefined>;
  /** Oldest first. */
  listSchedules(organizationId: string, page: { limit: number; offset: number }): Promise<{ schedules: ReportScheduleRecord[]; total: number }>;
  allSchedules(organizationId: string): Promise<ReportScheduleRecord[]>;
  /** False when there is none. */
  replaceSchedule(schedule: ReportScheduleRecord): Promise<boolean>;
  /** Its reports are kept (until they are REPORT_KEEP_DAYS old). False when there is none. */
  deleteSchedule(organizationId: string, id: string): Promise<boolean>;

  /**
   * Stores a report, its content and its event. A scheduled one (not `manual`) whose schedule has
   * a scheduled report of the same period already is not stored, nor is its event: false.
   */
  insertReport(report: ReportRecord, content: string, event: EventRecord): Promise<boolean>;
  getReport(organizationId: string, id: string): Promise<ReportRecord | undefined>;
  reportContent(organizationId: string, id: string): Promise<{ format: ReportFormat; content: string } | undefined>;
  /** Newest first, and how many there are (of `scheduleId` only, when given). */
  listReports(organizationId: string, query: { scheduleId?: string | undefined; limit: number; offset: number }): Promise<{ reports: ReportRecord[]; total: number }>;
  /** Of these schedules' periods, those whose scheduled report (not `manual`) is kept. */
  scheduledMade(organizationId: string, periods: readonly (DateRange & { scheduleId: string })[]): Promise<(DateRange & { scheduleId: string })[]>;
  /** Deletes the reports made before `before` (ms), of every organization; how many. */
  deleteReportsBefore(before: number): Promise<number>;
  /** Organizations that have schedules (the check visits them). */
  organizationsWithSchedules(): Promise<string[]>;
  /** Runs `fn` while holding the cluster-wide right to run the report check; false, without running it, when another node holds it. */
  asReportChecker(fn: () => Promise<void>): Promise<boolean>;
}
