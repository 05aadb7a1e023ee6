// The deprecated /api/v1 family: the same operations as /v2, at the old paths. Every response
// carries Deprecation, Sunset and a Link to its successor (see http/versioning.ts).
import type { FastifyInstance } from 'fastify';
import { deprecationHeaders } from '../http/versioning.ts';
import { typed } from '../http/typed.ts';
import { vehicleOperations, withMeta } from './routes.ts';
import type { VehicleService } from './service.ts';
import type { LatestLookup } from './view.ts';

export async function vehicleRoutesV1(instance: FastifyInstance, opts: { service: VehicleService; latest: LatestLookup }) {
  const app = typed(instance);
  app.addHook('onSend', deprecationHeaders);
  const ops = vehicleOperations(opts.service, opts.latest, (id) => `/api/v1/vehicles/${encodeURIComponent(id)}`);
  const meta = (operationId: string, successor: string) => ({ operationId, successor, tags: ['v1'], deprecated: true });
  app.get('/api/v1/fleet', withMeta(ops.list, meta('v1ListVehicles', '/v2/fleet/vehicles')), ops.list.handler);
  app.post('/api/v1/fleet', withMeta(ops.register, meta('v1RegisterVehicle', '/v2/fleet/vehicles')), ops.register.handler);
  app.get('/api/v1/vehicles/:id', withMeta(ops.get, meta('v1GetVehicle', '/v2/fleet/vehicles/{id}')), ops.get.handler);
  app.put(
    '/api/v1/vehicles/:id/status',
    withMeta(ops.changeStatus, meta('v1ChangeVehicleStatus', '/v2/fleet/vehicles/{id}/status')),
    ops.changeStatus.handler,
  );
}
