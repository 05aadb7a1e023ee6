// History over HTTP: trips and stops of a vehicle, per-bucket aggregates, and exports streamed
// to the client as it reads them.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { iso } from '../clock.ts';
import { responses } from '../schema/common.ts';
import { VehicleId, VehicleIdParams } from '../vehicles/schema.ts';
import { FORMATS } from './formats.ts';
import {
  AggregateQuery, Aggregates, EXPORT_FORMATS, ExportQuery, MAX_BUCKETS, MAX_TRIP_RANGE_DAYS, Stops, TripQuery, Trips,
} from './schema.ts';
import type { HistoryService } from './service.ts';
import { type Stop, tripView } from './trips.ts';
import { typed } from '../http/typed.ts';

const TelemetryParams = Type.Object({ vehicleId: VehicleId }, { additionalProperties: false });

const stopView = (stop: Stop) => ({ ...stop, startedAt: iso(stop.startedAt), endedAt: iso(stop.endedAt) });

const MOVING = 'A record is moving when its speed is at least 3 km/h or, without speed, when it is more than 50 m from the last known location.';

export async function historyRoutes(instance: FastifyInstance, opts: { service: HistoryService }) {
  const app = typed(instance);
  const { service } = opts;

  app.get('/v2/fleet/vehicles/:id/trips', {
    config: { scope: 'telemetry:read' },
    schema: {
      operationId: 'getVehicleTrips', tags: ['vehicles'], summary: 'Trips of a vehicle, from its stored telemetry',
      description: `${MOVING} A trip runs from the first moving record to the last one before a stop of at least \`minStopSeconds\` ` +
        `or a gap in the data of more than \`maxGapSeconds\`; trips shorter than \`minTripMeters\` or \`minTripSeconds\` are left out. ` +
        `A trip crossing \`from\` or \`to\` is cut there. At most ${MAX_TRIP_RANGE_DAYS} days per request.`,
      params: VehicleIdParams,
      querystring: TripQuery,
      response: responses({ 200: Trips }, { errors: [404, 503] }),
    },
  }, async (request) => {
    const { id } = request.params;
    const report = await service.trips(request.principal.organizationId, id, request.query);
    return { vehicleId: report.vehicleId, trips: report.trips.map(tripView) };
  });

  app.get('/v2/fleet/vehicles/:id/stops', {
    config: { scope: 'telemetry:read' },
    schema: {
      operationId: 'getVehicleStops', tags: ['vehicles'], summary: 'Stops of a vehicle, from its stored telemetry',
      description: `${MOVING} A stop is a run of records not moving lasting at least \`minStopSeconds\` from its first to its last record; ` +
        `a gap of more than \`maxGapSeconds\` ends it. At most ${MAX_TRIP_RANGE_DAYS} days per request.`,
      params: VehicleIdParams,
      querystring: TripQuery,
      response: responses({ 200: Stops }, { errors: [404, 503] }),
    },
  }, async (request) => {
    const { id } = request.params;
    const report = await service.stops(request.principal.organizationId, id, request.query);
    return { vehicleId: report.vehicleId, stops: report.stops.map(stopView) };
  });

  app.get('/v2/telemetry/:vehicleId/aggregates', {
    config: { scope: 'telemetry:read' },
    schema: {
      operationId: 'getTelemetryAggregates', tags: ['telemetry'], summary: 'Per-bucket statistics of a vehicle\'s numeric telemetry',
      description: `Buckets of \`bucket\` seconds aligned to multiples of it since the epoch; empty buckets are left out. ` +
        `\`count\` counts every record of the bucket. At most ${MAX_BUCKETS} buckets per request.`,
      params: TelemetryParams,
      querystring: AggregateQuery,
      response: responses({ 200: Aggregates }, { errors: [404, 503] }),
    },
  }, async (request) => {
    const { vehicleId } = request.params;
    const report = await service.aggregates(request.principal.organizationId, vehicleId, request.query);
    return {
      ...report,
      buckets: report.buckets.map((b) => ({ start: iso(b.start), count: b.count, ...b.fields })),
    };
  });

  app.get('/v2/telemetry/:vehicleId/export', {
    config: { scope: 'telemetry:read' },
    schema: {
      operationId: 'exportTelemetry', tags: ['telemetry'], summary: 'A vehicle\'s telemetry of a range, as a file',
      description: 'The whole range in time order, streamed as it is read (any size). `csv` (RFC 4180, header row, CRLF), ' +
        '`geojson` (a FeatureCollection of one Point per located record) or `gpx` (GPX 1.1, one track; speed in m/s in the ' +
        'Garmin TrackPointExtension). Sent as an attachment.',
      params: TelemetryParams,
      querystring: ExportQuery,
      response: responses({
        200: {
          description: 'The export file.',
          headers: { 'content-disposition': Type.String({ description: '`attachment; filename="…"`' }) },
          content: Object.fromEntries(EXPORT_FORMATS.map((format) => [
            FORMATS[format].contentType.split(';')[0]!,
            { schema: Type.String({ description: `format=${format}` }) },
          ])),
        },
      }, { errors: [404, 503] }),
    },
  }, async (request, reply) => {
    const { vehicleId } = request.params;
    const file = await service.exportRange(request.principal.organizationId, vehicleId, request.query);
    // Readable.from pulls the next piece only when the socket has taken the last (backpressure),
    // and Fastify destroys it when the connection closes, which ends the generator and its scan.
    // The pieces go to the socket as the strings they are, one held ahead: a socket writes a
    // string from memory it frees once written, where a stream of bytes would first copy each
    // into a Buffer whose memory V8 frees only when it next collects.
    return reply
      .header('content-type', file.contentType)
      .header('content-disposition', `attachment; filename="${file.filename}"`)
      .send(Readable.from(file.body, { objectMode: true, highWaterMark: 1 }));
  });
}
