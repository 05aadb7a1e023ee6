// Telemetry over HTTP: ingestion (202 once durably committed), the latest state, and history.
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import { Type } from 'typebox';
import { iso } from '../clock.ts';
import { responses } from '../schema/common.ts';
import { validatorCompiler } from '../schema/validation.ts';
import { VehicleId } from '../vehicles/schema.ts';
import {
  FleetRecordsInput,
  History,
  HistoryQuery,
  IngestBody,
  IngestResult,
  LatestQuery,
  LatestState,
} from './schema.ts';
import type { TelemetryService } from './service.ts';
import { typed } from '../http/typed.ts';

const Params = Type.Object({ vehicleId: VehicleId }, { additionalProperties: false });

/**
 * Ingestion bodies are validated by the ingest function itself (one place for HTTP and MQTT,
 * errors named by record index and path); the route's body schema documents them. The handlers
 * pass the body on as it came: the ingest function takes `unknown`.
 */
const bodyCheckedByIngest: FastifySchemaCompiler<unknown> = (context) =>
  context.httpPart === 'body' ? () => true : validatorCompiler(context);

export async function telemetryRoutes(instance: FastifyInstance, opts: { service: TelemetryService }) {
  const app = typed(instance);
  const { service } = opts;
  const tags = ['telemetry'];

  app.post('/v2/telemetry/:vehicleId', {
    config: { scope: 'telemetry:write' },
    validatorCompiler: bodyCheckedByIngest,
    schema: {
      operationId: 'ingestVehicleTelemetry', tags, summary: 'Send telemetry for one vehicle',
      description:
        'One record `{timestamp?, data}` (timestamp defaults to the time received) or `{records: [...]}` with up to 1000. ' +
        'All or nothing: one invalid record and nothing is stored, each bad record named by index and path. ' +
        'A record with the vehicle and timestamp of a stored one is a duplicate: counted, not stored twice. ' +
        'Answered 202 only after the records are durably committed. The first telemetry of a `registered` vehicle makes it `active`; ' +
        'a `retired` vehicle refuses telemetry with 409. ' +
        'More than one record that would record more than 10,000 events (geofence entries and exits, alerts, trips) is refused with 400 at `/records`, nothing stored.',
      params: Params,
      body: IngestBody,
      response: responses({ 202: IngestResult }, { body: true, errors: [404, 409, 503] }),
    },
  }, async (request, reply) => {
    const { vehicleId } = request.params;
    const result = await service.ingestForVehicle(request.principal.organizationId, vehicleId, request.body);
    return reply.code(202).send(result);
  });

  app.post('/v2/telemetry', {
    config: { scope: 'telemetry:write' },
    validatorCompiler: bodyCheckedByIngest,
    schema: {
      operationId: 'ingestFleetTelemetry', tags, summary: 'Send telemetry for many vehicles',
      description:
        'Up to 1000 records `{vehicleId, timestamp?, data}`; all or nothing, as for one vehicle. ' +
        'Records that would record more than 10,000 events (geofence entries and exits, alerts, trips) are refused with 400 at `/records`, nothing stored.',
      body: FleetRecordsInput,
      response: responses({ 202: IngestResult }, { body: true, errors: [404, 409, 503] }),
    },
  }, async (request, reply) => {
    const result = await service.ingestForFleet(request.principal.organizationId, request.body, 'http', request.principal);
    return reply.code(202).send(result);
  });

  app.get('/v2/telemetry/:vehicleId', {
    config: { scope: 'telemetry:read' },
    schema: {
      operationId: 'getLatestTelemetry', tags, summary: 'The latest telemetry of a vehicle',
      description:
        '`timestamp` is the time of the newest record; `data` holds the last known value of each field, merged across records. ' +
        '`fields` keeps only the named ones; a field never reported is left out. 404 `no-telemetry` for a vehicle that has sent none.',
      params: Params,
      querystring: LatestQuery,
      response: responses({ 200: LatestState }, { errors: [404] }),
    },
  }, async (request) => {
    const { vehicleId } = request.params;
    const latest = await service.latestFor(request.principal.organizationId, vehicleId, request.query.fields);
    return { vehicleId, timestamp: iso(latest.timestamp), data: latest.data };
  });

  app.get('/v2/telemetry/:vehicleId/history', {
    config: { scope: 'telemetry:read' },
    schema: {
      operationId: 'getTelemetryHistory', tags, summary: 'A vehicle\'s telemetry history',
      description: 'Records in time order, `from` inclusive and `to` exclusive; follow `nextCursor` for the next page.',
      params: Params,
      querystring: HistoryQuery,
      response: responses({ 200: History }, { errors: [404] }),
    },
  }, async (request) => {
    const { vehicleId } = request.params;
    const page = await service.history(request.principal.organizationId, vehicleId, request.query);
    return { ...page, records: page.records.map((r) => ({ ...r, timestamp: iso(r.timestamp) })) };
  });
}
