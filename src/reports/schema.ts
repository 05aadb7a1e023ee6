// Summary report schemas (docs/API.md "Summary reports").
import { Type } from 'typebox';
import { named } from '../schema/named.ts';
import { GROUP_ID_PATTERN } from '../vehicles/schema.ts';
import { GROUP_BY, REPORT_FORMATS } from './model.ts';

const DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';
export const ReportDate = Type.String({ pattern: DATE_PATTERN, examples: ['2026-11-01'] });
export const GroupBySchema = Type.Union(GROUP_BY.map((g) => Type.Literal(g)), {
  description: 'One row per vehicle, per driver (steps with no driver assigned left out) or per date.',
});
export const ReportFormatSchema = Type.Union(REPORT_FORMATS.map((f) => Type.Literal(f)), { description: '`json` (default) or `csv` (RFC 4180, header row, CRLF).' });
export const TimeZone = Type.String({ minLength: 1, maxLength: 64, description: 'An IANA time zone (default `UTC`).', examples: ['Europe/Berlin'] });

export const SummaryQuery = Type.Object({
  from: Type.String({ ...ReportDate, description: 'The first date counted (inclusive), in `timezone`.' }),
  to: Type.String({ ...ReportDate, description: 'The date the range ends before (exclusive); at most 366 days after `from`.' }),
  timezone: Type.Optional(TimeZone),
  groupBy: Type.Optional(GroupBySchema),
  vehicleIds: Type.Optional(Type.String({ minLength: 1, maxLength: 100_000, description: 'Only these vehicles: ids separated by commas (at most 1000).' })),
  groupId: Type.Optional(Type.String({ pattern: GROUP_ID_PATTERN, description: 'Only the vehicles of this group (not with `vehicleIds`).' })),
  format: Type.Optional(ReportFormatSchema),
}, { additionalProperties: false });

const sums = {
  distanceKm: Type.Number({ description: 'The haversine distance of the moving steps, km.' }),
  drivingSeconds: Type.Number({ description: 'The time of the moving steps.' }),
  idleSeconds: Type.Number({ description: 'The time of the steps not moving whose first record had `ignition` true.' }),
  engineHours: Type.Number({ description: 'The time of the steps whose first record had `ignition` true, hours.' }),
  trips: Type.Integer({ description: 'Trips (as the trips report finds them over the whole history) that started then.' }),
  maxSpeed: Type.Union([Type.Number(), Type.Null()], { description: 'The highest `speed` recorded, km/h; null when no record reported one.' }),
};

export const SummaryRowSchema = named('SummaryRow', Type.Object({
  vehicleId: Type.Optional(Type.String({ description: 'With `groupBy=vehicle`.' })),
  driverId: Type.Optional(Type.String({ description: 'With `groupBy=driver`.' })),
  date: Type.Optional(Type.String({ ...ReportDate, description: 'With `groupBy=day`: the date in `timezone`.' })),
  ...sums,
}, { additionalProperties: false }));

export const SummaryReport = named('SummaryReport', Type.Object({
  rows: Type.Array(SummaryRowSchema, { description: 'Ordered by their key; a key with nothing counted in the range is left out.' }),
}, { additionalProperties: false }));
