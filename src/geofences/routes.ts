// Geofence routes (docs/API.md "Geofences"), over the geofence service. Writing one takes the
// `rules` scope, as alert rules do: a geofence exists to be judged.
import type { FastifyInstance } from 'fastify';
import { iso } from '../clock.ts';
import { typed } from '../http/typed.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import { VehicleIdParams } from '../vehicles/schema.ts';
import type { VehicleService } from '../vehicles/service.ts';
import type { GeofenceRecord } from './model.ts';
import { Geofence, GeofenceBody, GeofenceIdParams, GeofenceList, GeofencesOfVehicle, PageQuery, VehiclesInside } from './schema.ts';
import type { GeofenceService } from './service.ts';

const read = { scope: 'fleet:read' } as const;
const write = { scope: 'rules' } as const;

const geofenceView = (g: GeofenceRecord) => ({ ...g, organizationId: undefined, createdAt: iso(g.createdAt), updatedAt: iso(g.updatedAt) });

export async function geofenceRoutes(instance: FastifyInstance, opts: { service: GeofenceService; vehicles: VehicleService }) {
  const app = typed(instance);
  const { service } = opts;

  const geofences = { tags: ['geofences'] };
  app.post('/v2/geofences', {
    config: write,
    schema: {
      ...geofences, operationId: 'createGeofence', summary: 'Create a geofence',
      description: 'A GeoJSON Polygon or MultiPolygon ([longitude, latitude] positions, closed rings) or a circle. Invalid geometry answers 400 naming the problem.',
      body: GeofenceBody, response: responses({ 201: Geofence }, { body: true, location: true }),
    },
  }, async (request, reply) => {
    const g = await service.createGeofence(request.principal, request.body);
    return reply.code(201).header('location', `/v2/geofences/${g.id}`).send(geofenceView(g));
  });
  app.get('/v2/geofences', {
    config: read,
    schema: { ...geofences, operationId: 'listGeofences', summary: 'List geofences', querystring: PageQuery, response: responses({ 200: GeofenceList }) },
  }, async (request) => {
    const page = pageOf(request.query);
    const { geofences: list, total } = await service.listGeofences(request.principal, page);
    const next = page.offset + list.length;
    return { geofences: list.map(geofenceView), total, ...page, nextOffset: list.length > 0 && next < total ? next : null };
  });
  app.get('/v2/geofences/:id', {
    config: read,
    schema: { ...geofences, operationId: 'getGeofence', summary: 'Read a geofence', params: GeofenceIdParams, response: responses({ 200: Geofence }, { errors: [404] }) },
  }, async (request) => geofenceView(await service.geofence(request.principal, request.params.id)));
  app.put('/v2/geofences/:id', {
    config: write,
    schema: {
      ...geofences, operationId: 'replaceGeofence', summary: 'Replace a geofence',
      description: 'Changes no vehicle\'s membership by itself: each vehicle\'s next located record is judged against the new shape.',
      params: GeofenceIdParams, body: GeofenceBody, response: responses({ 200: Geofence }, { body: true, errors: [404] }),
    },
  }, async (request) => geofenceView(await service.replaceGeofence(request.principal, request.params.id, request.body)));
  app.delete('/v2/geofences/:id', {
    config: write,
    schema: {
      ...geofences, operationId: 'deleteGeofence', summary: 'Delete a geofence',
      description: 'Vehicles inside leave it without an exit event. A geofence an alert rule uses answers 409.',
      params: GeofenceIdParams, response: responses({ 204: NoContent }, { errors: [404, 409] }),
    },
  }, async (request, reply) => {
    await service.deleteGeofence(request.principal, request.params.id);
    return reply.code(204).send();
  });
  app.get('/v2/geofences/:id/vehicles', {
    config: read,
    schema: { ...geofences, operationId: 'listVehiclesInGeofence', summary: 'The vehicles inside now', params: GeofenceIdParams, response: responses({ 200: VehiclesInside }, { errors: [404] }) },
  }, async (request) => ({ vehicleIds: await service.vehiclesInside(request.principal, request.params.id) }));
  app.get('/v2/fleet/vehicles/:id/geofences', {
    config: read,
    schema: { ...geofences, operationId: 'listGeofencesOfVehicle', summary: 'The geofences a vehicle is inside now', params: VehicleIdParams, response: responses({ 200: GeofencesOfVehicle }, { errors: [404] }) },
  }, async (request) => {
    const { id } = request.params;
    const exists = async () => (await opts.vehicles.get(request.principal, id).then(() => true, () => false));
    return { geofences: await service.insideOf(request.principal, id, exists) };
  });
}
