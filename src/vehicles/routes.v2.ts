import type { FastifyInstance } from 'fastify';
import { typed } from '../http/typed.ts';
import { vehicleOperations, withMeta } from './routes.ts';
import type { VehicleService } from './service.ts';
import type { LatestLookup } from './view.ts';

const base = '/v2/fleet/vehicles';

export async function vehicleRoutesV2(instance: FastifyInstance, opts: { service: VehicleService; latest: LatestLookup }) {
  const app = typed(instance);
  const ops = vehicleOperations(opts.service, opts.latest, (id) => `${base}/${encodeURIComponent(id)}`);
  const tags = ['vehicles'];
  // PATCH takes RFC 7396 merge patches, which are JSON under their own media type.
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));
  app.get(base, withMeta(ops.list, { operationId: 'listVehicles', tags }), ops.list.handler);
  app.post(base, withMeta(ops.register, { operationId: 'registerVehicle', tags }), ops.register.handler);
  app.post(`${base}/batch`, withMeta(ops.registerMany, { operationId: 'registerVehicles', tags }), ops.registerMany.handler);
  app.get(`${base}/:id`, withMeta(ops.get, { operationId: 'getVehicle', tags }), ops.get.handler);
  app.patch(`${base}/:id`, withMeta(ops.update, { operationId: 'updateVehicle', tags }), ops.update.handler);
  app.delete(`${base}/:id`, withMeta(ops.remove, { operationId: 'deleteVehicle', tags }), ops.remove.handler);
  app.put(`${base}/:id/status`, withMeta(ops.changeStatus, { operationId: 'changeVehicleStatus', tags }), ops.changeStatus.handler);
  app.get(`${base}/:id/status-history`, withMeta(ops.statusHistory, { operationId: 'getVehicleStatusHistory', tags }), ops.statusHistory.handler);
}
