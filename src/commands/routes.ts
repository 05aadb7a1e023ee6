// Device commands: /v2/fleet/vehicles/{id}/commands to send and list, /v2/commands/{id} to read
// and cancel. A vehicle the credential does not see answers 404 (http/vehicle-scope.ts).
import type { FastifyInstance } from 'fastify';
import { typed } from '../http/typed.ts';
import { responses } from '../schema/common.ts';
import { VehicleIdParams } from '../vehicles/schema.ts';
import { Command, CommandBody, CommandIdParams, CommandList, CommandListQuery, CommandTypes } from './schema.ts';
import { type CommandService, toCommandView } from './service.ts';

const vehicleBase = '/v2/fleet/vehicles/:id';

export async function commandRoutes(instance: FastifyInstance, opts: { service: CommandService }) {
  const app = typed(instance);
  const { service } = opts;
  const tags = ['commands'];

  app.post(`${vehicleBase}/commands`, {
    config: { scope: 'commands' },
    schema: {
      operationId: 'sendCommand', tags, summary: 'Send a command to a vehicle\'s device',
      description:
        'Answered 202 with the command, `queued`: it goes out as soon as a device of the vehicle is connected, and its status moves on ' +
        '(`command.<status>` events in the feed, webhooks and streams). `channel` defaults to the vehicle\'s Teltonika device, else its OsmAnd device, else MQTT. ' +
        'A type the channel cannot carry, or params that do not fit the type, answer 400; a retired vehicle 409 `vehicle-retired`; ' +
        '100 commands queued or sent already 409 `command-queue-full`; `queue: false` with no device connected 409 `device-offline`.',
      params: VehicleIdParams,
      body: CommandBody,
      response: responses({ 202: Command }, { body: true, location: true, errors: [404, 409] }),
    },
  }, async (request, reply) => {
    const command = await service.create(request.principal, request.params.id, request.body);
    return reply.code(202).header('location', `/v2/commands/${command.id}`).send(toCommandView(command));
  });

  app.get(`${vehicleBase}/commands`, {
    config: { scope: 'fleet:read' },
    schema: {
      operationId: 'listVehicleCommands', tags, summary: 'List a vehicle\'s commands',
      description: 'Newest first; `status` keeps those in the statuses given (`queued,sent`: the unfinished ones).',
      params: VehicleIdParams,
      querystring: CommandListQuery,
      response: responses({ 200: CommandList }, { errors: [404] }),
    },
  }, async (request) => {
    const page = await service.list(request.principal, request.params.id, request.query);
    return { commands: page.commands.map(toCommandView), nextCursor: page.nextCursor };
  });

  app.get(`${vehicleBase}/command-types`, {
    config: { scope: 'fleet:read' },
    schema: {
      operationId: 'getVehicleCommandTypes', tags, summary: 'The command types a vehicle can be sent',
      description: 'The channel a command takes by default (the vehicle\'s Teltonika device, else its OsmAnd device, else MQTT) and the types it carries.',
      params: VehicleIdParams,
      response: responses({ 200: CommandTypes }, { errors: [404] }),
    },
  }, async (request) => service.types(request.principal, request.params.id));

  app.get('/v2/commands/:id', {
    config: { scope: 'fleet:read' },
    schema: {
      operationId: 'getCommand', tags, summary: 'Read a command',
      params: CommandIdParams,
      response: responses({ 200: Command }, { errors: [404] }),
    },
  }, async (request) => toCommandView(await service.get(request.principal, request.params.id)));

  app.delete('/v2/commands/:id', {
    config: { scope: 'commands' },
    schema: {
      operationId: 'cancelCommand', tags, summary: 'Cancel a queued command',
      description: 'Answered 200 with the command, `cancelled` (also when it was cancelled already); 409 `command-not-queued` once it has been sent, delivered, or has expired.',
      params: CommandIdParams,
      response: responses({ 200: Command }, { errors: [404, 409] }),
    },
  }, async (request) => toCommandView(await service.cancel(request.principal, request.params.id)));
}
