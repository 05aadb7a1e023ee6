// Report schedule and report rows to records, for both backends (JSON arrives as text from
// SQLite; arrays decoded by PostgreSQL; bigints as strings from PostgreSQL).
import type { GroupBy, ReportFormat } from '../reports/model.ts';
import type { Period, ReportRecord, ReportScheduleRecord } from '../reports/schedules/model.ts';
import type { Row } from './rows.ts';

export const REPORT_SCHEDULE_COLUMNS = 'organization_id, id, name, group_by, period, timezone, vehicle_ids, group_id, format, created_at, updated_at';
/** A report's columns, its content aside. */
export const REPORT_COLUMNS = 'organization_id, id, schedule_id, period_from, period_to, group_by, format, manual, created_at';

export function reportScheduleOf(row: Row): ReportScheduleRecord {
  return {
    organizationId: row.organization_id as string,
    id: row.id as string,
    name: row.name as string,
    groupBy: row.group_by as GroupBy,
    period: row.period as Period,
    timezone: row.timezone as string,
    vehicleIds: row.vehicle_ids === null || row.vehicle_ids === undefined
      ? null
      : typeof row.vehicle_ids === 'string' ? JSON.parse(row.vehicle_ids) as string[] : row.vehicle_ids as string[],
    groupId: (row.group_id as string | null | undefined) ?? null,
    format: row.format as ReportFormat,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export function reportOf(row: Row): ReportRecord {
  return {
    organizationId: row.organization_id as string,
    id: row.id as string,
    scheduleId: row.schedule_id as string,
    period: { from: row.period_from as string, to: row.period_to as string },
    groupBy: row.group_by as GroupBy,
    format: row.format as ReportFormat,
    manual: row.manual === true || Number(row.manual) === 1,
    createdAt: Number(row.created_at),
  };
}
