// /v2/devices: the trackers and apps that send telemetry for a vehicle in a protocol of their own.
import type { FastifyInstance } from 'fastify';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import { Device, DeviceIdParams, DeviceList, DeviceListQuery, RegisterDeviceBody } from './schema.ts';
import type { DeviceService } from './service.ts';
import { toDevice } from './view.ts';
import { typed } from '../http/typed.ts';

const base = '/v2/devices';

export async function deviceRoutes(instance: FastifyInstance, opts: { service: DeviceService }) {
  const app = typed(instance);
  const { service } = opts;
  const tags = ['devices'];

  app.post(base, {
    config: { scope: 'fleet:write' },
    schema: {
      operationId: 'registerDevice', tags, summary: 'Register a device for a vehicle',
      description:
        'The identifier is unique per protocol across the whole service: a taken one answers 409, whoever holds it. ' +
        '`teltonika` identifiers are 15-digit IMEIs. An unknown `vehicleId` answers 404. Deleting the vehicle deletes its devices.',
      body: RegisterDeviceBody,
      response: responses({ 201: Device }, { body: true, location: true, errors: [404, 409] }),
    },
  }, async (request, reply) => {
    const device = await service.register(request.principal, request.body);
    return reply.code(201).header('location', `${base}/${device.id}`).send(toDevice(device));
  });

  app.get(base, {
    config: { scope: 'fleet:read' },
    schema: {
      operationId: 'listDevices', tags, summary: 'List devices',
      description: 'Oldest first. `vehicleId` keeps one vehicle\'s devices.',
      querystring: DeviceListQuery,
      response: responses({ 200: DeviceList }),
    },
  }, async (request) => {
    const query = request.query;
    const { limit, offset } = pageOf(query);
    const filter = { limit, offset, ...(query.vehicleId === undefined ? {} : { vehicleId: query.vehicleId }) };
    const { devices, total } = await service.list(request.principal, filter);
    return { devices: devices.map(toDevice), total, limit, offset };
  });

  app.get(`${base}/:id`, {
    config: { scope: 'fleet:read' },
    schema: {
      operationId: 'getDevice', tags, summary: 'Read a device',
      params: DeviceIdParams,
      response: responses({ 200: Device }, { errors: [404] }),
    },
  }, async (request) => toDevice(await service.get(request.principal, request.params.id)));

  app.delete(`${base}/:id`, {
    config: { scope: 'fleet:write' },
    schema: {
      operationId: 'deleteDevice', tags, summary: 'Delete a device',
      description: 'The device can no longer send; what it sent stays in the vehicle\'s history. A tracker still connected is disconnected at its next packet.',
      params: DeviceIdParams,
      response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await service.remove(request.principal, request.params.id);
    return reply.code(204).send();
  });
}
