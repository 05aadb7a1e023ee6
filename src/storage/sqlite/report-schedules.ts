// Report schedules and kept reports in the embedded store (reports/schedules/store.ts).
import type { DatabaseSync } from 'node:sqlite';
import type { ReportFormat } from '../../reports/model.ts';
import type { ReportScheduleStore } from '../../reports/schedules/store.ts';
import { REPORT_COLUMNS, REPORT_SCHEDULE_COLUMNS, reportOf, reportScheduleOf } from '../report-schedule-rows.ts';
import type { AppendEvents } from './events.ts';
import type { WalSync } from './wal-sync.ts';

/** Writes commit through `wal` (wal-sync.ts): durable when they answer, their sync off the event loop. */
export function createSqliteReportScheduleStore(db: DatabaseSync, wal: WalSync, appendEvents: AppendEvents): ReportScheduleStore {
  const count = db.prepare('SELECT count(*) AS n FROM report_schedules WHERE organization_id = ?');
  const insert = db.prepare(`INSERT INTO report_schedules (${REPORT_SCHEDULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const one = db.prepare(`SELECT ${REPORT_SCHEDULE_COLUMNS} FROM report_schedules WHERE organization_id = ? AND id = ?`);
  const page = db.prepare(`SELECT ${REPORT_SCHEDULE_COLUMNS} FROM report_schedules WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const all = db.prepare(`SELECT ${REPORT_SCHEDULE_COLUMNS} FROM report_schedules WHERE organization_id = ? ORDER BY created_at, id`);
  const replace = db.prepare(
    'UPDATE report_schedules SET name = ?, group_by = ?, period = ?, timezone = ?, vehicle_ids = ?, group_id = ?, format = ?, updated_at = ? WHERE organization_id = ? AND id = ?',
  );
  const remove = db.prepare('DELETE FROM report_schedules WHERE organization_id = ? AND id = ?');
  const insertReport = db.prepare(`INSERT INTO reports (${REPORT_COLUMNS}, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`);
  const report = db.prepare(`SELECT ${REPORT_COLUMNS} FROM reports WHERE organization_id = ? AND id = ?`);
  const content = db.prepare('SELECT format, content FROM reports WHERE organization_id = ? AND id = ?');
  // The organization's reports (reports_listing), or one schedule's (reports_of_schedule).
  const reports = db.prepare(`SELECT ${REPORT_COLUMNS} FROM reports WHERE organization_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`);
  const reportCount = db.prepare('SELECT count(*) AS n FROM reports WHERE organization_id = ?');
  const scheduleReports = db.prepare(
    `SELECT ${REPORT_COLUMNS} FROM reports WHERE organization_id = ? AND schedule_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
  );
  const scheduleReportCount = db.prepare('SELECT count(*) AS n FROM reports WHERE organization_id = ? AND schedule_id = ?');
  // Each period looked up in the unique index of the scheduled reports.
  const made = db.prepare(
    `SELECT r.schedule_id, r.period_from, r.period_to FROM json_each(?) k CROSS JOIN reports r
     ON r.organization_id = ? AND r.manual = 0 AND r.schedule_id = k.value ->> 0 AND r.period_from = k.value ->> 1 AND r.period_to = k.value ->> 2`,
  );
  const prune = db.prepare('DELETE FROM reports WHERE created_at < ?');
  const organizations = db.prepare('SELECT DISTINCT organization_id FROM report_schedules');
  const json = (value: unknown) => (value === null ? null : JSON.stringify(value));

  return {
    async insertSchedule(s, max) {
      return wal.transaction(() => {
        if (Number(count.get(s.organizationId)!.n) >= max) return 'quota';
        insert.run(s.organizationId, s.id, s.name, s.groupBy, s.period, s.timezone, json(s.vehicleIds), s.groupId, s.format, s.createdAt, s.updatedAt);
        return 'created' as const;
      });
    },
    async getSchedule(organizationId, id) {
      const row = one.get(organizationId, id);
      return row === undefined ? undefined : reportScheduleOf(row);
    },
    async listSchedules(organizationId, { limit, offset }) {
      return { schedules: page.all(organizationId, limit, offset).map(reportScheduleOf), total: Number(count.get(organizationId)!.n) };
    },
    async allSchedules(organizationId) {
      return all.all(organizationId).map(reportScheduleOf);
    },
    async replaceSchedule(s) {
      return wal.transaction(() => replace.run(
        s.name, s.groupBy, s.period, s.timezone, json(s.vehicleIds), s.groupId, s.format, s.updatedAt, s.organizationId, s.id,
      ).changes > 0);
    },
    async deleteSchedule(organizationId, id) {
      return wal.transaction(() => remove.run(organizationId, id).changes > 0);
    },
    async insertReport(r, text, event) {
      return wal.transaction(() => {
        const inserted = insertReport.run(
          r.organizationId, r.id, r.scheduleId, r.period.from, r.period.to, r.groupBy, r.format, r.manual ? 1 : 0, r.createdAt, text,
        ).changes > 0;
        if (inserted) appendEvents([event], r.createdAt);
        return inserted;
      });
    },
    async getReport(organizationId, id) {
      const row = report.get(organizationId, id);
      return row === undefined ? undefined : reportOf(row);
    },
    async reportContent(organizationId, id) {
      const row = content.get(organizationId, id);
      return row === undefined ? undefined : { format: row.format as ReportFormat, content: row.content as string };
    },
    async listReports(organizationId, { scheduleId, limit, offset }) {
      if (scheduleId === undefined) {
        return { reports: reports.all(organizationId, limit, offset).map(reportOf), total: Number(reportCount.get(organizationId)!.n) };
      }
      return {
        reports: scheduleReports.all(organizationId, scheduleId, limit, offset).map(reportOf), total: Number(scheduleReportCount.get(organizationId, scheduleId)!.n),
      };
    },
    async scheduledMade(organizationId, periods) {
      if (periods.length === 0) return [];
      return made.all(JSON.stringify(periods.map((p) => [p.scheduleId, p.from, p.to])), organizationId)
        .map((row) => ({ scheduleId: row.schedule_id as string, from: row.period_from as string, to: row.period_to as string }));
    },
    async deleteReportsBefore(before) {
      // Bookkeeping that may be redone: a deletion lost to a crash is made again by the next check.
      return wal.unsynced(() => Number(prune.run(before).changes));
    },
    async organizationsWithSchedules() {
      return organizations.all().map((row) => row.organization_id as string);
    },
    async asReportChecker(fn) {
      await fn();
      return true;
    },
  };
}
