// Report schedules and kept reports on PostgreSQL (reports/schedules/store.ts). A scheduled report
// is inserted with ON CONFLICT DO NOTHING over the unique index of a schedule's scheduled periods,
// and its `report.ready` appended in the same transaction only when the row went in: two nodes
// making the same period's report store one, and announce it once.
import type { ReportFormat } from '../../reports/model.ts';
import type { ReportScheduleStore } from '../../reports/schedules/store.ts';
import { REPORT_COLUMNS, REPORT_SCHEDULE_COLUMNS, reportOf, reportScheduleOf } from '../report-schedule-rows.ts';
import type { Database } from './database.ts';
import { appendEvents } from './events.ts';

export function createPostgresReportScheduleStore(db: Database): ReportScheduleStore {
  return {
    async insertSchedule(s, max) {
      return db.transaction(async (client) => {
        // Two creations at once in one organization count one after the other.
        await client.query({ name: 'report-schedules.lock-org', text: 'SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', values: [s.organizationId] });
        const { rows } = await client.query<{ n: number }>({
          name: 'report-schedules.count', text: 'SELECT count(*)::int AS n FROM report_schedules WHERE organization_id = $1', values: [s.organizationId],
        });
        if (rows[0]!.n >= max) return 'quota';
        await client.query({
          name: 'report-schedules.insert',
          text: `INSERT INTO report_schedules (${REPORT_SCHEDULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          values: [s.organizationId, s.id, s.name, s.groupBy, s.period, s.timezone, s.vehicleIds, s.groupId, s.format, s.createdAt, s.updatedAt],
        });
        return 'created' as const;
      });
    },
    async getSchedule(organizationId, id) {
      const { rows } = await db.query({
        name: 'report-schedules.get', text: `SELECT ${REPORT_SCHEDULE_COLUMNS} FROM report_schedules WHERE organization_id = $1 AND id = $2`, values: [organizationId, id],
      });
      return rows[0] === undefined ? undefined : reportScheduleOf(rows[0]);
    },
    async listSchedules(organizationId, { limit, offset }) {
      const [page, count] = await Promise.all([
        db.query({
          name: 'report-schedules.page',
          text: `SELECT ${REPORT_SCHEDULE_COLUMNS} FROM report_schedules WHERE organization_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
          values: [organizationId, limit, offset],
        }),
        db.query<{ n: number }>({ name: 'report-schedules.count', text: 'SELECT count(*)::int AS n FROM report_schedules WHERE organization_id = $1', values: [organizationId] }),
      ]);
      return { schedules: page.rows.map(reportScheduleOf), total: count.rows[0]!.n };
    },
    async allSchedules(organizationId) {
      const { rows } = await db.query({
        name: 'report-schedules.all', text: `SELECT ${REPORT_SCHEDULE_COLUMNS} FROM report_schedules WHERE organization_id = $1 ORDER BY created_at, id`, values: [organizationId],
      });
      return rows.map(reportScheduleOf);
    },
    async replaceSchedule(s) {
      const { rowCount } = await db.query({
        name: 'report-schedules.replace',
        text: `UPDATE report_schedules SET name = $3, group_by = $4, period = $5, timezone = $6, vehicle_ids = $7, group_id = $8, format = $9, updated_at = $10
               WHERE organization_id = $1 AND id = $2`,
        values: [s.organizationId, s.id, s.name, s.groupBy, s.period, s.timezone, s.vehicleIds, s.groupId, s.format, s.updatedAt],
      });
      return rowCount === 1;
    },
    async deleteSchedule(organizationId, id) {
      const { rowCount } = await db.query({ name: 'report-schedules.delete', text: 'DELETE FROM report_schedules WHERE organization_id = $1 AND id = $2', values: [organizationId, id] });
      return rowCount === 1;
    },
    async insertReport(r, content, event) {
      return db.transaction(async (client) => {
        const { rowCount } = await client.query({
          name: 'reports.insert',
          text: `INSERT INTO reports (${REPORT_COLUMNS}, content) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
          values: [r.organizationId, r.id, r.scheduleId, r.period.from, r.period.to, r.groupBy, r.format, r.manual, r.createdAt, content],
        });
        if (rowCount !== 1) return false;
        await appendEvents(client, [event], r.createdAt);
        return true;
      });
    },
    async getReport(organizationId, id) {
      const { rows } = await db.query({ name: 'reports.get', text: `SELECT ${REPORT_COLUMNS} FROM reports WHERE organization_id = $1 AND id = $2`, values: [organizationId, id] });
      return rows[0] === undefined ? undefined : reportOf(rows[0]);
    },
    async reportContent(organizationId, id) {
      const { rows } = await db.query<{ format: ReportFormat; content: string }>({
        name: 'reports.content', text: 'SELECT format, content FROM reports WHERE organization_id = $1 AND id = $2', values: [organizationId, id],
      });
      return rows[0];
    },
    async listReports(organizationId, { scheduleId, limit, offset }) {
      // The organization's reports (reports_listing), or one schedule's (reports_of_schedule).
      const [page, count] = await Promise.all(scheduleId === undefined
        ? [
            db.query({
              name: 'reports.page',
              text: `SELECT ${REPORT_COLUMNS} FROM reports WHERE organization_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
              values: [organizationId, limit, offset],
            }),
            db.query<{ n: number }>({ name: 'reports.count', text: 'SELECT count(*)::int AS n FROM reports WHERE organization_id = $1', values: [organizationId] }),
          ]
        : [
            db.query({
              name: 'reports.schedule-page',
              text: `SELECT ${REPORT_COLUMNS} FROM reports WHERE organization_id = $1 AND schedule_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
              values: [organizationId, scheduleId, limit, offset],
            }),
            db.query<{ n: number }>({
              name: 'reports.schedule-count', text: 'SELECT count(*)::int AS n FROM reports WHERE organization_id = $1 AND schedule_id = $2', values: [organizationId, scheduleId],
            }),
          ]);
      return { reports: page.rows.map(reportOf), total: count.rows[0]!.n };
    },
    async scheduledMade(organizationId, periods) {
      if (periods.length === 0) return [];
      // Each period looked up in the unique index of the scheduled reports.
      const { rows } = await db.query<{ schedule_id: string; period_from: string; period_to: string }>({
        name: 'reports.scheduled-made',
        text: `SELECT r.schedule_id, r.period_from, r.period_to FROM unnest($2::text[], $3::text[], $4::text[]) AS k(schedule_id, period_from, period_to)
               JOIN reports r ON r.organization_id = $1 AND NOT r.manual AND r.schedule_id = k.schedule_id AND r.period_from = k.period_from AND r.period_to = k.period_to`,
        values: [organizationId, periods.map((p) => p.scheduleId), periods.map((p) => p.from), periods.map((p) => p.to)],
      });
      return rows.map((row) => ({ scheduleId: row.schedule_id, from: row.period_from, to: row.period_to }));
    },
    async deleteReportsBefore(before) {
      const { rowCount } = await db.query({ name: 'reports.prune', text: 'DELETE FROM reports WHERE created_at < $1', values: [before] });
      return rowCount ?? 0;
    },
    async organizationsWithSchedules() {
      const { rows } = await db.query<{ organization_id: string }>('SELECT DISTINCT organization_id FROM report_schedules');
      return rows.map((row) => row.organization_id);
    },
    async asReportChecker(fn) {
      // One node at a time runs the check: the lock lives as long as this transaction.
      return db.transaction(async (client) => {
        const { rows } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtextextended('fleet:report-check', 0)) AS ok");
        if (rows[0]?.ok !== true) return false;
        await fn();
        return true;
      });
    },
  };
}
