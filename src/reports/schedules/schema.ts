// Report schedule schemas (docs/API.md "Report schedules").
import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging, PlainText } from '../../schema/common.ts';
import { named } from '../../schema/named.ts';
import { GroupId } from '../../groups/schema.ts';
import { VehicleId } from '../../vehicles/schema.ts';
import { VehicleIds } from '../../geofences/schema.ts';
import { GROUP_BY, REPORT_FORMATS } from '../model.ts';
import { ReportDate, TimeZone } from '../schema.ts';
import { PERIODS } from './model.ts';

export const REPORT_SCHEDULE_ID_PATTERN = '^rps_[A-Za-z0-9]{20}$';
export const REPORT_ID_PATTERN = '^rpt_[A-Za-z0-9]{20}$';
const ReportScheduleId = Type.String({ pattern: REPORT_SCHEDULE_ID_PATTERN, examples: ['rps_5Hn2Wq8ZkT3mXc1Lp9Rs'] });
const ReportId = Type.String({ pattern: REPORT_ID_PATTERN, examples: ['rpt_8Kd3Vx1QmZ7bTc4Np2Ls'] });

/** Report schedules per organization unless FLEET_QUOTA_REPORT_SCHEDULES says otherwise. */
export const DEFAULT_MAX_REPORT_SCHEDULES = 100;

const GroupBy = Type.Enum(GROUP_BY, {
  description: 'One row per vehicle, per driver (steps with no driver assigned left out) or per date, as the summary report has them.',
});
const Format = Type.Enum(REPORT_FORMATS, { description: 'The content\'s format: `json` (`{rows}`) or `csv` (RFC 4180, header row, CRLF).' });
const PeriodSchema = Type.Enum(PERIODS, {
  description: 'What each report covers, in `timezone`: a `day`, an ISO `week` (Monday to Monday) or a calendar `month` (the 1st to the 1st).',
});
const Zone = Type.String({ ...TimeZone, description: 'The IANA time zone whose dates the periods are (`Europe/Berlin`, `UTC`).' });

export const ReportScheduleInput = named('ReportScheduleInput', Type.Object({
  name: PlainText({ minLength: 1, maxLength: 200, description: 'e.g. "Weekly distance".' }),
  groupBy: GroupBy,
  period: PeriodSchema,
  timezone: Zone,
  vehicleIds: Type.Optional(VehicleIds),
  groupId: Type.Optional(GroupId),
  format: Format,
}, {
  additionalProperties: false,
  examples: [{ name: 'Weekly distance', groupBy: 'vehicle', period: 'week', timezone: 'Europe/Berlin', format: 'csv' }],
}), 'A report schedule: the summary report of each period, made once the period has ended; `vehicleIds` or `groupId` (not both), without either every vehicle.');
export type ReportScheduleInput = Static<typeof ReportScheduleInput>;

export const ReportSchedule = named('ReportSchedule', Type.Object({
  id: ReportScheduleId,
  name: Type.String(),
  groupBy: GroupBy,
  period: PeriodSchema,
  timezone: Type.String(),
  vehicleIds: Type.Union([Type.Array(VehicleId), Type.Null()]),
  groupId: Type.Union([GroupId, Type.Null()]),
  format: Format,
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
}, { additionalProperties: false }), 'A report schedule.');

export const ReportScheduleIdParams = Type.Object({ id: ReportScheduleId }, { additionalProperties: false });
export const ReportScheduleListQuery = Type.Object(Paging, { additionalProperties: false });
export const ReportScheduleList = named('ReportScheduleList', Type.Object({
  schedules: Type.Array(ReportSchedule, { description: 'Oldest first.' }),
  total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(),
}, { additionalProperties: false }), 'A page of report schedules.');

export const ReportView = named('Report', Type.Object({
  id: ReportId,
  scheduleId: ReportScheduleId,
  period: Type.Object({
    from: Type.String({ ...ReportDate, description: 'The first date reported on (inclusive), in the schedule\'s time zone.' }),
    to: Type.String({ ...ReportDate, description: 'The date the period ends before (exclusive).' }),
  }, { additionalProperties: false }),
  createdAt: IsoTimestamp,
  format: Format,
  url: Type.String({ description: 'Where its content is: `/v2/reports/{id}/content`.', examples: ['/v2/reports/rpt_8Kd3Vx1QmZ7bTc4Np2Ls/content'] }),
}, { additionalProperties: false }), 'A kept report: the summary of one period of a schedule, kept 90 days.');

export const ReportIdParams = Type.Object({ id: ReportId }, { additionalProperties: false });
export const ReportListQuery = Type.Object({
  scheduleId: Type.Optional(Type.String({ pattern: REPORT_SCHEDULE_ID_PATTERN, description: 'Only this schedule\'s reports.' })),
  ...Paging,
}, { additionalProperties: false });
export const ReportList = named('ReportList', Type.Object({
  reports: Type.Array(ReportView, { description: 'Newest first.' }),
  total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(),
}, { additionalProperties: false }), 'A page of kept reports.');
