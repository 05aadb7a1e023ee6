// Report schedules (docs/API.md "Report schedules"): each schedule's summary report of every
// period, made once the period has ended in the schedule's time zone (and an hour more for the
// records that arrive late) by the check (check.ts), or now by `run`; reports are kept
// REPORT_KEEP_DAYS with their content and announced by `report.ready`. A schedule belongs to the
// organization, and its reports are made for the whole organization, whoever asked.
import { SCOPES, type Principal } from '../../auth/scopes.ts';
import { type Clock, iso } from '../../clock.ts';
import { AppError, invalidBody } from '../../errors.ts';
import type { EventPort } from '../../events/port.ts';
import { newEvent } from '../../events/types.ts';
import { assertWholeOrganization, unknownGroups } from '../../groups/scope.ts';
import type { GroupStore } from '../../groups/store.ts';
import { newId } from '../../ids.ts';
import { quotaExceeded } from '../../quotas.ts';
import { type SummaryReader, type SummaryRow, summaryCsv } from '../model.ts';
import { DAY_MS } from '../rollup.ts';
import { isTimeZone } from '../zone.ts';
import { type DateRange, REPORT_KEEP_DAYS, type ReportRecord, type ReportScheduleRecord, lastComplete, periodToMake } from './model.ts';
import { DEFAULT_MAX_REPORT_SCHEDULES, type ReportScheduleInput } from './schema.ts';
import type { ReportScheduleStore } from './store.ts';

export type ReportScheduleService = ReturnType<typeof createReportScheduleService>;

export function reportScheduleView(s: ReportScheduleRecord) {
  return {
    id: s.id, name: s.name, groupBy: s.groupBy, period: s.period, timezone: s.timezone, vehicleIds: s.vehicleIds, groupId: s.groupId,
    format: s.format, createdAt: iso(s.createdAt), updatedAt: iso(s.updatedAt),
  };
}

/** A report as the API gives it, and as `report.ready` carries it. */
export function reportView(r: ReportRecord) {
  return { id: r.id, scheduleId: r.scheduleId, period: { from: r.period.from, to: r.period.to }, createdAt: iso(r.createdAt), format: r.format, url: `/v2/reports/${r.id}/content` };
}

function scheduleNotFound(id: string): AppError {
  return new AppError('report-schedule-not-found', `No report schedule "${id}" in this organization.`);
}

function reportNotFound(id: string): AppError {
  return new AppError('report-not-found', `No report "${id}" in this organization (reports are kept ${REPORT_KEEP_DAYS} days).`);
}

/** Who a report is made as: the whole organization, every scope (a schedule is the organization's, not a credential's). */
export function organizationPrincipal(organizationId: string): Principal {
  return { organizationId, credentialId: 'system', name: 'report schedule', scopes: new Set(SCOPES), platform: false };
}

export function createReportScheduleService(deps: {
  store: ReportScheduleStore; groups: Pick<GroupStore, 'get'>; summaries: SummaryReader; clock: Clock; events: EventPort;
  /** Schedules per organization (FLEET_QUOTA_REPORT_SCHEDULES). */
  maxSchedules?: number;
}) {
  const maxSchedules = deps.maxSchedules ?? DEFAULT_MAX_REPORT_SCHEDULES;
  const { store, clock } = deps;

  /** The schedule as stored from its input, after the checks a schema cannot make. */
  async function recordOf(who: Principal, input: ReportScheduleInput, id: string, createdAt: number, now: number): Promise<ReportScheduleRecord> {
    assertWholeOrganization(who, 'report schedules');
    if (!isTimeZone(input.timezone)) throw invalidBody(`"${input.timezone}" is no IANA time zone.`, '/timezone', 'must be an IANA time zone, such as Europe/Berlin');
    if (input.vehicleIds !== undefined && input.vehicleIds !== null && input.groupId !== undefined) {
      throw invalidBody('Give vehicleIds or groupId, not both.', '/groupId', 'must not be given with vehicleIds');
    }
    if (input.groupId !== undefined && (await deps.groups.get(who.organizationId, input.groupId)) === undefined) throw unknownGroups([input.groupId]);
    return {
      organizationId: who.organizationId, id, name: input.name, groupBy: input.groupBy, period: input.period, timezone: input.timezone,
      vehicleIds: input.vehicleIds ?? null, groupId: input.groupId ?? null, format: input.format, createdAt, updatedAt: now,
    };
  }

  /** Reports are made for the whole organization: a credential limited to groups does not read them. */
  function assertReadsReports(who: Principal): void {
    if (who.groupIds !== undefined) {
      throw new AppError('outside-groups', 'A credential limited to groups cannot read kept reports: they are made for the whole organization.');
    }
  }

  /** The summary of the period as the schedule asks for it, as the content of its format. */
  async function contentOf(s: ReportScheduleRecord, period: DateRange): Promise<string> {
    let rows: SummaryRow[] = [];
    // A schedule of a group deleted since reports on no vehicle.
    if (s.groupId === null || (await deps.groups.get(s.organizationId, s.groupId)) !== undefined) {
      ({ rows } = await deps.summaries.summary(organizationPrincipal(s.organizationId), {
        from: period.from, to: period.to, timezone: s.timezone, groupBy: s.groupBy,
        ...(s.vehicleIds === null ? {} : { vehicleIds: s.vehicleIds }), ...(s.groupId === null ? {} : { groupId: s.groupId }),
      }));
    }
    return s.format === 'csv' ? summaryCsv(rows, s.groupBy) : JSON.stringify({ rows });
  }

  /** Makes the schedule's report of `period` and stores it with its event; undefined when a scheduled one of that period exists already. */
  async function make(s: ReportScheduleRecord, period: DateRange, manual: boolean): Promise<ReportRecord | undefined> {
    const content = await contentOf(s, period);
    const now = clock.now();
    const report: ReportRecord = {
      organizationId: s.organizationId, id: newId('rpt'), scheduleId: s.id, period, groupBy: s.groupBy, format: s.format, manual, createdAt: now,
    };
    const event = newEvent(s.organizationId, 'report.ready', null, now, reportView(report));
    if (!(await store.insertReport(report, content, event))) return undefined;
    deps.events.emit('recorded', { events: [event] });
    return report;
  }

  return {
    async createSchedule(who: Principal, input: ReportScheduleInput) {
      const now = clock.now();
      const schedule = await recordOf(who, input, newId('rps'), now, now);
      if ((await store.insertSchedule(schedule, maxSchedules)) === 'quota') throw quotaExceeded(maxSchedules, 'report schedules');
      return schedule;
    },

    async getSchedule(who: Principal, id: string) {
      const schedule = await store.getSchedule(who.organizationId, id);
      if (schedule === undefined) throw scheduleNotFound(id);
      return schedule;
    },

    listSchedules: (who: Principal, page: { limit: number; offset: number }) => store.listSchedules(who.organizationId, page),

    async replaceSchedule(who: Principal, id: string, input: ReportScheduleInput) {
      const current = await store.getSchedule(who.organizationId, id);
      if (current === undefined) throw scheduleNotFound(id);
      const schedule = await recordOf(who, input, id, current.createdAt, Math.max(clock.now(), current.updatedAt + 1));
      if (!(await store.replaceSchedule(schedule))) throw scheduleNotFound(id);
      return schedule;
    },

    async deleteSchedule(who: Principal, id: string) {
      assertWholeOrganization(who, 'report schedules');
      if (!(await store.deleteSchedule(who.organizationId, id))) throw scheduleNotFound(id);
    },

    /** The report of the schedule's last complete period, made now: a new report each time, besides the scheduled one. */
    async run(who: Principal, id: string): Promise<ReportRecord> {
      assertWholeOrganization(who, 'report schedules');
      const schedule = await store.getSchedule(who.organizationId, id);
      if (schedule === undefined) throw scheduleNotFound(id);
      return (await make(schedule, lastComplete(clock.now(), schedule.timezone, schedule.period), true))!;
    },

    async getReport(who: Principal, id: string): Promise<ReportRecord> {
      assertReadsReports(who);
      const report = await store.getReport(who.organizationId, id);
      if (report === undefined) throw reportNotFound(id);
      return report;
    },

    async reportContent(who: Principal, id: string): Promise<{ format: ReportRecord['format']; content: string }> {
      assertReadsReports(who);
      const found = await store.reportContent(who.organizationId, id);
      if (found === undefined) throw reportNotFound(id);
      return found;
    },

    async listReports(who: Principal, query: { scheduleId?: string | undefined; limit: number; offset: number }) {
      assertReadsReports(who);
      return store.listReports(who.organizationId, query);
    },

    /**
     * One organization's check: each schedule's latest due period that ended after the schedule
     * was created is made, unless it was made already (by this node or another: the store keeps
     * one per period). A schedule whose report fails does not keep the others' back.
     */
    async check(organizationId: string): Promise<void> {
      const now = clock.now();
      const due = (await store.allSchedules(organizationId)).flatMap((schedule) => {
        const period = periodToMake(schedule, now);
        return period === undefined ? [] : [{ schedule, period }];
      });
      if (due.length === 0) return;
      const keyOf = (p: DateRange & { scheduleId: string }) => `${p.scheduleId}\n${p.from}\n${p.to}`;
      const made = new Set((await store.scheduledMade(organizationId, due.map((d) => ({ scheduleId: d.schedule.id, ...d.period })))).map(keyOf));
      const failures: unknown[] = [];
      for (const { schedule, period } of due) {
        if (made.has(keyOf({ scheduleId: schedule.id, ...period }))) continue;
        try {
          await make(schedule, period, false);
        } catch (error) {
          failures.push(error);
        }
      }
      if (failures.length > 0) throw new AggregateError(failures, `${failures.length} of ${due.length} due reports could not be made; the next check tries again`);
    },

    /** Deletes the reports older than REPORT_KEEP_DAYS, of every organization. */
    prune: () => store.deleteReportsBefore(clock.now() - REPORT_KEEP_DAYS * DAY_MS),
  };
}
