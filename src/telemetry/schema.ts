// Telemetry schemas (docs/API.md "Telemetry"). The record schema is the single definition of a valid
// record: the ingest function validates every record with it, whatever path it came by.
import { Type, type Static } from 'typebox';
import { IsoTimestamp } from '../schema/common.ts';
import { Location, VehicleId } from '../vehicles/schema.ts';
import { named } from '../schema/named.ts';

/** An identifier a vehicle reads from its driver: an iButton's 16 hex digits or an RFID tag's 1 to 32 letters and digits. */
export const DRIVER_IDENTIFIER_PATTERN = '^[A-Za-z0-9]{1,32}$';

export const TELEMETRY_FIELDS = ['location', 'speed', 'heading', 'battery', 'temperature', 'odometer', 'diagnostics', 'ignition', 'driverIdentifier'] as const;
export type TelemetryField = (typeof TELEMETRY_FIELDS)[number];
/** The fields holding one number, which history aggregates summarize. */
export const NUMERIC_FIELDS = ['speed', 'battery', 'temperature', 'odometer', 'heading'] as const;
export type NumericField = (typeof NUMERIC_FIELDS)[number];

export const MAX_BATCH = 1000;
/** Records stamped further ahead than this are refused: a device clock that far off is wrong. */
export const MAX_FUTURE_MS = 5 * 60_000;

const Diagnostics = Type.Object(
  {},
  {
    additionalProperties: Type.Union([Type.Number(), Type.String({ maxLength: 256 }), Type.Boolean()]),
    propertyNames: { pattern: '^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$' },
    maxProperties: 64,
    description: 'Up to 64 diagnostic values (number, string up to 256 characters, or boolean), e.g. fault codes.',
    examples: [{ dtc: 'P0420', tirePressureLow: false, cabinCo2ppm: 612 }],
  },
);

export const TelemetryData = named('TelemetryData', Type.Object(
  {
    location: Type.Optional(Location),
    speed: Type.Optional(Type.Number({ minimum: 0, maximum: 1000, description: 'km/h' })),
    heading: Type.Optional(Type.Number({ minimum: 0, exclusiveMaximum: 360, description: 'Degrees clockwise from true north.' })),
    battery: Type.Optional(Type.Number({ minimum: 0, maximum: 100, description: 'State of charge, percent.' })),
    temperature: Type.Optional(Type.Number({ minimum: -100, maximum: 200, description: 'Degrees Celsius.' })),
    odometer: Type.Optional(Type.Number({ minimum: 0, description: 'km' })),
    diagnostics: Type.Optional(Diagnostics),
    ignition: Type.Optional(Type.Boolean({
      description: 'Whether the engine is on. Counts toward engine hours and idle time only on the records that carry it (it is not carried forward).',
    })),
    driverIdentifier: Type.Optional(Type.String({
      pattern: DRIVER_IDENTIFIER_PATTERN,
      description: 'The identifier the vehicle read from its driver (an iButton\'s 16 hex digits, an RFID tag\'s 1 to 32 letters and digits): ' +
        'a driver\'s identifier starts that driver\'s assignment to the vehicle; one no driver has emits `driver.unknown`.',
      examples: ['01A2B3C4D5E6F708'],
    })),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ location: { lat: 52.52, lng: 13.405 }, speed: 42.5, heading: 87, battery: 76.5, temperature: 21.3 }],
  },
), 'The values of one record: at least one field.');
export type TelemetryData = Static<typeof TelemetryData>;

const InputTimestamp = Type.String({
  format: 'date-time',
  description:
    'RFC 3339 (ISO 8601) with a time zone (`Z` or an offset); stored and returned in UTC with milliseconds. Defaults to the time received. ' +
    'A leap second (`:60`) and impossible dates are refused; so is a time more than 5 minutes ahead of the server.',
  examples: ['2026-11-22T08:30:00.000Z'],
});

/** One record for a vehicle named by the path (HTTP) or the topic (MQTT). */
export const VehicleRecordInput = named('TelemetryRecordInput', Type.Object(
  { timestamp: Type.Optional(InputTimestamp), data: TelemetryData },
  { additionalProperties: false },
), 'One record for the vehicle the path or topic names.');
export type VehicleRecordInput = Static<typeof VehicleRecordInput>;

export const VehicleRecordsInput = named('TelemetryBatchInput', Type.Object(
  { records: Type.Array(VehicleRecordInput, { minItems: 1, maxItems: MAX_BATCH }) },
  { additionalProperties: false },
), 'Up to 1000 records for the vehicle the path or topic names.');

/** One record of a batch for many vehicles. */
export const FleetRecordInput = named('FleetTelemetryRecordInput', Type.Object(
  { vehicleId: VehicleId, timestamp: Type.Optional(InputTimestamp), data: TelemetryData },
  { additionalProperties: false },
), 'One record of a batch for many vehicles.');
export type FleetRecordInput = Static<typeof FleetRecordInput>;

export const FleetRecordsInput = named('FleetTelemetryBatchInput', Type.Object(
  { records: Type.Array(FleetRecordInput, { minItems: 1, maxItems: MAX_BATCH }) },
  { additionalProperties: false, examples: [{ records: [{ vehicleId: 'van-042', timestamp: '2026-11-22T08:30:00.000Z', data: { speed: 40 } }] }] },
), 'Up to 1000 records for any vehicles of the organization.');
export type FleetRecordsInput = Static<typeof FleetRecordsInput>;

export const IngestBody = Type.Union([VehicleRecordInput, VehicleRecordsInput], {
  description: 'One record `{timestamp?, data}`, or `{records: [...]}` with up to 1000.',
  examples: [{ timestamp: '2026-11-22T08:30:00.000Z', data: { location: { lat: 52.52, lng: 13.405 }, speed: 42.5, battery: 76.5 } }],
});

export const IngestResult = named('IngestResult', Type.Object(
  {
    accepted: Type.Integer({ description: 'Records stored by this request.' }),
    duplicates: Type.Integer({ description: 'Records already stored (same vehicle and timestamp); not stored twice.' }),
  },
  { additionalProperties: false, examples: [{ accepted: 1, duplicates: 0 }] },
), 'What a request stored.');

export const TelemetryRecord = named('TelemetryRecord', Type.Object(
  { vehicleId: VehicleId, timestamp: IsoTimestamp, data: TelemetryData },
  { additionalProperties: false },
), 'One stored telemetry record.');

export const LatestState = named('LatestState', Type.Object(
  {
    vehicleId: VehicleId,
    timestamp: { ...IsoTimestamp, description: 'The time of the newest record.' },
    data: TelemetryData,
  },
  { additionalProperties: false },
), 'A vehicle\'s latest state: the last known value of each field, merged across its records.');

export const Fields = Type.String({
  pattern: '^[a-zA-Z]+(,[a-zA-Z]+)*$',
  description: `Comma-separated telemetry fields to keep: ${TELEMETRY_FIELDS.join(', ')}.`,
  examples: ['speed,battery'],
});

export const LatestQuery = Type.Object({ fields: Type.Optional(Fields) }, { additionalProperties: false });
export type LatestQuery = Static<typeof LatestQuery>;

export const HISTORY_LIMIT_DEFAULT = 100;
export const HISTORY_LIMIT_MAX = 10_000;

export const HistoryQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive start.' })),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'Exclusive end.' })),
    fields: Type.Optional(Fields),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: HISTORY_LIMIT_MAX, default: HISTORY_LIMIT_DEFAULT })),
    cursor: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,200}$', description: 'From `nextCursor` of the previous page.' })),
  },
  { additionalProperties: false },
);
export type HistoryQuery = Static<typeof HistoryQuery>;

export const History = named('TelemetryHistory', Type.Object(
  {
    vehicleId: VehicleId,
    records: Type.Array(TelemetryRecord, { description: 'In time order.' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Null on the last page.' }),
  },
  { additionalProperties: false },
), 'A page of a vehicle\'s stored telemetry.');
