// Reports computed from a vehicle's stored telemetry: trips and stops (the trip machine fed the
// range page by page), per-bucket aggregates (computed by the store), and exports (streamed page
// by page). Knows nothing of HTTP.
import { iso } from '../clock.ts';
import { AppError } from '../errors.ts';
import { NUMERIC_FIELDS, type NumericField } from '../telemetry/schema.ts';
import type { TelemetryStore, TimeRange } from '../telemetry/store.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { AssignmentRecord, DriverStore } from '../drivers/store.ts';
import { type ExportWriter, FORMATS } from './formats.ts';
import { motionData } from './motion-data.ts';
import { type AggregateQuery, type ExportQuery, MAX_BUCKETS, MAX_TRIP_RANGE_DAYS, type TripQuery } from './schema.ts';
import { DEFAULT_TRIP_SETTINGS, type Stop, type Trip, type TripEvent, type TripSettings, advanceInPlace, finish, initialTripState } from './trips.ts';

/**
 * How a report reads the range: records per page, and per read where queries cost much before
 * their first row (PostgreSQL; one read ahead). Trips and stops read 5000 at once: fewer queries,
 * and they keep only three small objects per record, briefly. An export holds its pages' text until
 * the client takes it, and what is alive when V8 collects its young generation makes that
 * generation grow: reads of 5000 grew a fresh process's RSS by about 74 MB over a 1,000,000-record
 * CSV export on PostgreSQL; reads of 2000 by 4 to 8 MB, the export taking a fifth longer.
 */
export const SCANS = {
  report: { pageSize: 500, readSize: 5000 },
  export: { pageSize: 500, readSize: 2000 },
} as const;
const DAY_MS = 86_400_000;

export type HistoryService = ReturnType<typeof createHistoryService>;

function badQuery(path: string, message: string): AppError {
  return new AppError('validation-failed', `${path.slice(1)}: ${message}.`, { errors: [{ in: 'query', path, message }] });
}

/** `from` and `to` of the query, `from` strictly before `to`, at most `maxDays` apart when given. */
function rangeOf(query: { from: string; to: string }, maxDays?: number): TimeRange {
  const from = Date.parse(query.from);
  const to = Date.parse(query.to);
  if (from >= to) throw badQuery('/from', 'must be before to');
  if (maxDays !== undefined && to - from > maxDays * DAY_MS) throw badQuery('/to', `must be at most ${maxDays} days after from`);
  return { from, to };
}

function parseFields(fields: string | undefined): NumericField[] {
  if (fields === undefined) return [...NUMERIC_FIELDS];
  const names = fields.split(',');
  const unknown = names.filter((name) => !(NUMERIC_FIELDS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw badQuery('/fields', `unknown field ${unknown.map((n) => `"${n}"`).join(', ')}; allowed: ${NUMERIC_FIELDS.join(', ')}`);
  }
  // In one order whatever the request's, so that each set of fields is one prepared statement.
  return NUMERIC_FIELDS.filter((field) => names.includes(field));
}

/** A record's data as the store keeps it: the export formats read their fields from the text. */
const storedText = (text: string) => text;

/** `2026-11-22T08:00:00.000Z` as `20261122T080000Z`, for file names. */
const compact = (ms: number) => iso(ms).replace(/[-:]/g, '').replace('.000Z', 'Z');

/** The most assignments a trips report reads to name its trips' drivers (a driver change every 5 minutes for 31 days). */
const ASSIGNMENTS_READ = 10_000;

/**
 * The driver of the assignment ongoing at each trip's start (null when none): `assignments` are
 * the vehicle's that overlap the range, newest first.
 */
export function withDrivers<T extends { startedAt: number }>(trips: readonly T[], assignments: readonly AssignmentRecord[]): (T & { driverId: string | null })[] {
  return trips.map((trip) => {
    const a = assignments.find((x) => x.startedAt <= trip.startedAt && (x.endedAt === null || x.endedAt > trip.startedAt));
    return { ...trip, driverId: a?.driverId ?? null };
  });
}

export function createHistoryService(deps: { telemetry: TelemetryStore; vehicles: VehicleStore; drivers: Pick<DriverStore, 'assignments'> }) {
  const { telemetry } = deps;

  async function requireVehicle(organizationId: string, vehicleId: string): Promise<void> {
    if ((await deps.vehicles.get(organizationId, vehicleId)) === undefined) {
      throw new AppError('vehicle-not-found', `No vehicle "${vehicleId}" in this organization.`);
    }
  }

  /** Feeds the range to the trip machine one page at a time: only what it reports is kept. */
  async function detect(organizationId: string, vehicleId: string, query: TripQuery): Promise<{ trips: Trip[]; stops: Stop[] }> {
    const range = rangeOf(query, MAX_TRIP_RANGE_DAYS);
    const settings: TripSettings = {
      minStopSeconds: query.minStopSeconds ?? DEFAULT_TRIP_SETTINGS.minStopSeconds,
      maxGapSeconds: query.maxGapSeconds ?? DEFAULT_TRIP_SETTINGS.maxGapSeconds,
      minTripMeters: query.minTripMeters ?? DEFAULT_TRIP_SETTINGS.minTripMeters,
      minTripSeconds: query.minTripSeconds ?? DEFAULT_TRIP_SETTINGS.minTripSeconds,
    };
    await requireVehicle(organizationId, vehicleId);
    const trips: Trip[] = [];
    const stops: Stop[] = [];
    const take = (events: readonly TripEvent[]) => {
      for (const event of events) {
        if (event.type === 'trip.ended') trips.push(event.trip);
        else if (event.type === 'stop.ended') stops.push(event.stop);
      }
    };
    const state = initialTripState();
    const events: TripEvent[] = [];
    // Only the fields the machine reads are read out of each record's text.
    for await (const page of telemetry.scan(organizationId, vehicleId, range, { ...SCANS.report, decode: motionData })) {
      for (const record of page) advanceInPlace(state, record, settings, events);
      take(events.splice(0));
    }
    take(finish(state).events);
    return { trips, stops };
  }

  async function trips(organizationId: string, vehicleId: string, query: TripQuery) {
    const found = (await detect(organizationId, vehicleId, query)).trips;
    if (found.length === 0) return { vehicleId, trips: [] };
    const assignments = await deps.drivers.assignments(organizationId, {
      vehicleId, from: found[0]!.startedAt, to: found.at(-1)!.startedAt + 1, limit: ASSIGNMENTS_READ,
    });
    return { vehicleId, trips: withDrivers(found, assignments) };
  }

  async function stops(organizationId: string, vehicleId: string, query: TripQuery) {
    return { vehicleId, stops: (await detect(organizationId, vehicleId, query)).stops };
  }

  async function aggregates(organizationId: string, vehicleId: string, query: AggregateQuery) {
    const range = rangeOf(query);
    const fields = parseFields(query.fields);
    const bucketMs = query.bucket * 1000;
    const spanned = Math.floor((range.to - 1) / bucketMs) - Math.floor(range.from / bucketMs) + 1;
    if (spanned > MAX_BUCKETS) throw badQuery('/bucket', `the range spans ${spanned} buckets, more than ${MAX_BUCKETS}; use wider buckets or a shorter range`);
    await requireVehicle(organizationId, vehicleId);
    const buckets = await telemetry.aggregate(organizationId, vehicleId, { ...range, bucketMs, fields });
    return { vehicleId, bucket: query.bucket, buckets };
  }

  /**
   * Checks the query and the vehicle first (so those answer as errors), then hands back the
   * export as a generator of text that reads a page only when the one before has been taken;
   * stopping it (`return()`, as a closed connection does) stops the reads.
   */
  async function exportRange(organizationId: string, vehicleId: string, query: ExportQuery) {
    const range = rangeOf(query);
    const format = FORMATS[query.format ?? 'csv'];
    await requireVehicle(organizationId, vehicleId);
    // A store that writes the format itself spares parsing every record (and the garbage of it).
    const written = format.written === undefined ? undefined : telemetry.scanWritten?.(format.written.format, organizationId, vehicleId, range, SCANS.export.pageSize);
    return {
      contentType: format.contentType,
      filename: `${vehicleId.replaceAll(':', '_')}_${compact(range.from)}_${compact(range.to)}.${format.extension}`,
      body: written !== undefined
        ? pass(format.writer(vehicleId), written, format.written!.separator)
        : write(format.writer(vehicleId), telemetry.scan(organizationId, vehicleId, range, { ...SCANS.export, decode: storedText })),
    };
  }

  return { trips, stops, aggregates, exportRange };
}

/** The export of pieces the store wrote already: between the writer's beginning and end, `separator` between two. */
async function* pass(writer: ExportWriter, pieces: AsyncGenerator<string>, separator: string): AsyncGenerator<string> {
  try {
    yield writer.begin();
    let first = true;
    for await (const piece of pieces) {
      if (!first && separator !== '') yield separator;
      first = false;
      yield piece;
    }
    yield writer.end();
  } finally {
    await pieces.return(undefined);
  }
}

async function* write(writer: ExportWriter, pages: AsyncGenerator<Parameters<ExportWriter['page']>[0]>): AsyncGenerator<string> {
  try {
    yield writer.begin();
    for await (const page of pages) {
      const text = writer.page(page);
      if (text.length > 0) yield text;
    }
    yield writer.end();
  } finally {
    // A consumer that stops early (a client gone) ends the scan, whichever await it was at.
    await pages.return(undefined);
  }
}
