// Schemas of the history reports (docs/API.md "History: trips, stops, aggregates, exports").
import { Type, type Static } from 'typebox';
import { IsoTimestamp } from '../schema/common.ts';
import { NUMERIC_FIELDS } from '../telemetry/schema.ts';
import { Location, VehicleId } from '../vehicles/schema.ts';
import { DEFAULT_TRIP_SETTINGS } from './trips.ts';
import { named } from '../schema/named.ts';

export const MAX_TRIP_RANGE_DAYS = 31;
export const MAX_BUCKETS = 10_000;
export const EXPORT_FORMATS = ['csv', 'geojson', 'gpx'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

const range = {
  from: Type.String({ format: 'date-time', description: 'Inclusive start.', examples: ['2026-11-22T00:00:00.000Z'] }),
  to: Type.String({ format: 'date-time', description: 'Exclusive end; after `from`.', examples: ['2026-11-23T00:00:00.000Z'] }),
};

export const TripQuery = Type.Object(
  {
    ...range,
    minStopSeconds: Type.Optional(Type.Integer({
      minimum: 0, maximum: 86_400, default: DEFAULT_TRIP_SETTINGS.minStopSeconds,
      description: 'Records not moving for this long make a stop, which ends the trip before it.',
    })),
    maxGapSeconds: Type.Optional(Type.Integer({
      minimum: 1, maximum: MAX_TRIP_RANGE_DAYS * 86_400, default: DEFAULT_TRIP_SETTINGS.maxGapSeconds,
      description: 'A gap in the data longer than this ends a trip; it is neither a trip nor a stop.',
    })),
    minTripMeters: Type.Optional(Type.Number({
      minimum: 0, maximum: 10_000_000, default: DEFAULT_TRIP_SETTINGS.minTripMeters, description: 'Shorter trips are left out.',
    })),
    minTripSeconds: Type.Optional(Type.Integer({
      minimum: 0, maximum: 86_400, default: DEFAULT_TRIP_SETTINGS.minTripSeconds, description: 'Shorter trips are left out.',
    })),
  },
  { additionalProperties: false },
);
export type TripQuery = Static<typeof TripQuery>;

const Place = Type.Union([Location, Type.Null()], { description: 'Null when no record up to then had a location.' });

export const Trip = named('Trip', Type.Object(
  {
    startedAt: IsoTimestamp,
    endedAt: IsoTimestamp,
    durationSeconds: Type.Number(),
    distanceMeters: Type.Number({ description: 'The odometer\'s difference when the first and last records report it, else the great-circle sum; to the millimetre.' }),
    maxSpeed: Type.Union([Type.Number(), Type.Null()], { description: 'Highest reported speed, km/h; null if no record reports one.' }),
    averageSpeed: Type.Number({ description: 'Distance over duration, km/h, to three decimals.' }),
    start: Place,
    end: Place,
    records: Type.Integer({ description: 'Records from the first to the last moving one.' }),
    driverId: Type.Union([Type.String(), Type.Null()], { description: 'The driver assigned to the vehicle when the trip started, or null.' }),
  },
  { additionalProperties: false },
), 'A trip: the vehicle moving from one stop to the next.');

export const Trips = named('TripList', Type.Object({ vehicleId: VehicleId, trips: Type.Array(Trip) }, { additionalProperties: false }), 'A vehicle\'s trips in a time range.');

export const Stop = named('Stop', Type.Object(
  { startedAt: IsoTimestamp, endedAt: IsoTimestamp, durationSeconds: Type.Number(), location: Place },
  { additionalProperties: false },
), 'A stop: the vehicle not moving for at least the minimum stop time.');

export const Stops = named('StopList', Type.Object({ vehicleId: VehicleId, stops: Type.Array(Stop) }, { additionalProperties: false }), 'A vehicle\'s stops in a time range.');

export const AggregateQuery = Type.Object(
  {
    ...range,
    bucket: Type.Integer({ minimum: 1, maximum: 86_400, description: 'Bucket width in seconds; buckets start at multiples of it since 1970-01-01T00:00:00Z.', examples: [300] }),
    fields: Type.Optional(Type.String({
      pattern: '^[a-z]+(,[a-z]+)*$', description: `Comma-separated, of ${NUMERIC_FIELDS.join(', ')}; all of them when absent.`, examples: ['speed,battery'],
    })),
  },
  { additionalProperties: false },
);
export type AggregateQuery = Static<typeof AggregateQuery>;

const Stats = Type.Object(
  {
    min: Type.Number(),
    max: Type.Number(),
    avg: Type.Number(),
    last: Type.Number({ description: 'The value of the newest record of the bucket that has the field.' }),
  },
  { additionalProperties: false },
);

export const Aggregates = named('Aggregates', Type.Object(
  {
    vehicleId: VehicleId,
    bucket: Type.Integer({ description: 'Seconds.' }),
    buckets: Type.Array(
      Type.Object(
        {
          start: IsoTimestamp,
          count: Type.Integer({ description: 'Records in the bucket, whatever fields they carry.' }),
          ...Object.fromEntries(NUMERIC_FIELDS.map((field) => [field, Type.Optional(Stats)])),
        },
        { additionalProperties: false, description: 'A field no record of the bucket has is left out.' },
      ),
      { description: 'In time order; empty buckets are left out.' },
    ),
  },
  { additionalProperties: false },
), 'Statistics of a vehicle\'s numeric telemetry, per time bucket.');

export const ExportQuery = Type.Object(
  { ...range, format: Type.Optional(Type.Enum(EXPORT_FORMATS, { default: 'csv' })) },
  { additionalProperties: false },
);
export type ExportQuery = Static<typeof ExportQuery>;
