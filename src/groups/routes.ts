// /v2/groups: vehicle groups and their members (docs/API.md "Vehicle groups").
import type { FastifyInstance } from 'fastify';
import { typed } from '../http/typed.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import { Group, GroupChange, GroupCreation, GroupIdParams, GroupList, GroupListQuery, GroupMembersBody, GroupVehicleParams } from './schema.ts';
import { type GroupService, toGroupView } from './service.ts';

const base = '/v2/groups';
const tags = ['groups'];
const read = { scope: 'fleet:read' } as const;
const write = { scope: 'fleet:write' } as const;

export async function groupRoutes(instance: FastifyInstance, opts: { service: GroupService }) {
  const app = typed(instance);
  const { service } = opts;

  app.post(base, {
    config: write,
    schema: {
      operationId: 'createGroup', tags, summary: 'Create a vehicle group',
      description: 'Answers 403 `quota-exceeded` past `FLEET_QUOTA_GROUPS` groups.',
      body: GroupCreation, response: responses({ 201: Group }, { body: true, location: true }),
    },
  }, async (request, reply) => {
    const group = await service.create(request.principal, request.body);
    return reply.code(201).header('location', `${base}/${group.id}`).send(toGroupView(group));
  });

  app.get(base, {
    config: read,
    schema: { operationId: 'listGroups', tags, summary: 'List vehicle groups', querystring: GroupListQuery, response: responses({ 200: GroupList }) },
  }, async (request) => {
    const page = pageOf(request.query);
    const { groups, total } = await service.list(request.principal, page);
    return { groups: groups.map(toGroupView), total, ...page };
  });

  app.get(`${base}/:id`, {
    config: read,
    schema: { operationId: 'getGroup', tags, summary: 'Read a vehicle group', params: GroupIdParams, response: responses({ 200: Group }, { errors: [404] }) },
  }, async (request) => toGroupView(await service.get(request.principal, request.params.id)));

  app.patch(`${base}/:id`, {
    config: write,
    schema: {
      operationId: 'updateGroup', tags, summary: 'Rename or describe a vehicle group',
      params: GroupIdParams, body: GroupChange, response: responses({ 200: Group }, { body: true, errors: [404] }),
    },
  }, async (request) => toGroupView(await service.update(request.principal, request.params.id, request.body)));

  app.delete(`${base}/:id`, {
    config: write,
    schema: {
      operationId: 'deleteGroup', tags, summary: 'Delete a vehicle group',
      description: 'Its vehicles stay; they are no longer in it. While a user, an API key or an OAuth client is limited to the group, answers 409 `group-in-use`.',
      params: GroupIdParams, response: responses({ 204: NoContent }, { errors: [404, 409] }),
    },
  }, async (request, reply) => {
    await service.remove(request.principal, request.params.id);
    return reply.code(204).send();
  });

  app.post(`${base}/:id/vehicles`, {
    config: write,
    schema: {
      operationId: 'addGroupVehicles', tags, summary: 'Put vehicles in a group',
      description: 'All or none: a vehicle that does not exist answers 404 `vehicle-not-found` and adds nothing. Those in the group already stay.',
      params: GroupIdParams, body: GroupMembersBody, response: responses({ 204: NoContent }, { body: true, errors: [404] }),
    },
  }, async (request, reply) => {
    await service.addVehicles(request.principal, request.params.id, request.body.vehicleIds);
    return reply.code(204).send();
  });

  app.delete(`${base}/:id/vehicles/:vehicleId`, {
    config: write,
    schema: {
      operationId: 'removeGroupVehicle', tags, summary: 'Take a vehicle out of a group',
      description: '404 when the group does not exist or the vehicle is not in it.',
      params: GroupVehicleParams, response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await service.removeVehicle(request.principal, request.params.id, request.params.vehicleId);
    return reply.code(204).send();
  });
}
