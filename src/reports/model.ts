// Summary reports (docs/API.md "Summary reports"): what a summary asks and answers. The rows come
// from daily rollups kept as records are committed (reports/rollup.ts), per vehicle, per driver or
// per day in the asked time zone.
import type { Principal } from '../auth/scopes.ts';

export const GROUP_BY = ['vehicle', 'driver', 'day'] as const;
export type GroupBy = (typeof GROUP_BY)[number];
export const REPORT_FORMATS = ['json', 'csv'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/** What a summary is asked for: `from` (inclusive) and `to` (exclusive) are dates in `timezone`. */
export interface SummaryRequest {
  from: string;
  to: string;
  timezone: string;
  groupBy: GroupBy;
  /** At most one of the two: only these vehicles, or only the group's. */
  vehicleIds?: readonly string[] | undefined;
  groupId?: string | undefined;
}

/** A row: its key (`vehicleId`, `driverId` or `date`) and the sums over its steps. */
export interface SummaryRow {
  vehicleId?: string;
  driverId?: string;
  date?: string;
  distanceKm: number;
  drivingSeconds: number;
  idleSeconds: number;
  engineHours: number;
  trips: number;
  maxSpeed: number | null;
}

/** The columns of a report in CSV, after its key's. */
export const SUMMARY_COLUMNS = ['distanceKm', 'drivingSeconds', 'idleSeconds', 'engineHours', 'trips', 'maxSpeed'] as const;

export interface SummaryReader {
  /** The rows, ordered by their key; the principal's vehicle groups limit the vehicles counted. */
  summary(who: Principal, request: SummaryRequest): Promise<{ rows: SummaryRow[] }>;
}

/** A report's rows as CSV (RFC 4180, CRLF): a header row, then one line per row. */
export function summaryCsv(rows: readonly SummaryRow[], groupBy: GroupBy): string {
  const key = groupBy === 'vehicle' ? 'vehicleId' : groupBy === 'driver' ? 'driverId' : 'date';
  const lines = [[key, ...SUMMARY_COLUMNS].join(',')];
  for (const row of rows) {
    const cells = [String(row[key] ?? ''), ...SUMMARY_COLUMNS.map((c) => (row[c] === null ? '' : String(row[c])))];
    lines.push(cells.map((cell) => (/[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell)).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}
