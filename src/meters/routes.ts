// GET and PUT /v2/fleet/vehicles/{id}/meters (docs/API.md "Meters").
import type { FastifyInstance } from 'fastify';
import { typed } from '../http/typed.ts';
import { responses } from '../schema/common.ts';
import { VehicleIdParams } from '../vehicles/schema.ts';
import { Meters, MetersSetting } from './schema.ts';
import type { MeterService } from './service.ts';

export async function meterRoutes(instance: FastifyInstance, opts: { service: MeterService }) {
  const app = typed(instance);
  const { service } = opts;
  const path = '/v2/fleet/vehicles/:id/meters';
  const tags = ['vehicles'];

  app.get(path, {
    config: { scope: 'fleet:read' },
    schema: {
      operationId: 'getVehicleMeters', tags, summary: 'A vehicle\'s odometer and engine hours',
      description: 'Kept as records are committed. Only a record newer than every record before it advances them: a record that arrives late leaves them as they are.',
      params: VehicleIdParams, response: responses({ 200: Meters }, { errors: [404] }),
    },
  }, async (request) => service.get(request.principal, request.params.id));

  app.put(path, {
    config: { scope: 'fleet:write' },
    schema: {
      operationId: 'setVehicleMeters', tags, summary: 'Set a vehicle\'s odometer or engine hours',
      description: 'Sets the current values (from a service visit, a dashboard reading); later records add to them. ' +
        'For a vehicle that reports `odometer`, the difference to the latest reported value is kept and added to later ones.',
      params: VehicleIdParams, body: MetersSetting, response: responses({ 200: Meters }, { body: true, errors: [404] }),
    },
  }, async (request) => service.set(request.principal, request.params.id, request.body));
}
