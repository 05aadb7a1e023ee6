// /v2/drivers and /v2/driver-assignments: drivers and who drives what (docs/API.md "Drivers").
import type { FastifyInstance } from 'fastify';
import { typed } from '../http/typed.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import {
  Assignment, AssignmentCreation, AssignmentEnd, AssignmentIdParams, AssignmentList, AssignmentListQuery, Driver, DriverCreation, DriverIdParams,
  DriverList, DriverListQuery, DriverPatch,
} from './schema.ts';
import { type DriverService, toDriverView } from './service.ts';
import { toAssignmentView } from './events.ts';

const base = '/v2/drivers';
const assignments = '/v2/driver-assignments';
const tags = ['drivers'];
const read = { scope: 'fleet:read' } as const;
const write = { scope: 'fleet:write' } as const;
const dispatch = { scope: 'dispatch' } as const;

export async function driverRoutes(instance: FastifyInstance, opts: { service: DriverService }) {
  const app = typed(instance);
  const { service } = opts;
  // PATCH takes RFC 7396 merge patches, which are JSON under their own media type.
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));

  app.post(base, {
    config: write,
    schema: {
      operationId: 'createDriver', tags, summary: 'Create a driver',
      description: 'An identifier another driver of the organization has answers 409 `identifier-taken`; past `FLEET_QUOTA_DRIVERS` drivers, 403 `quota-exceeded`.',
      body: DriverCreation, response: responses({ 201: Driver }, { body: true, location: true, errors: [409] }),
    },
  }, async (request, reply) => {
    const driver = await service.create(request.principal, request.body);
    return reply.code(201).header('location', `${base}/${driver.id}`).send(toDriverView(driver));
  });

  app.get(base, {
    config: read,
    schema: { operationId: 'listDrivers', tags, summary: 'List drivers', querystring: DriverListQuery, response: responses({ 200: DriverList }) },
  }, async (request) => {
    const page = pageOf(request.query);
    const { drivers, total } = await service.list(request.principal, { ...page, ...(request.query.q === undefined ? {} : { q: request.query.q }) });
    return { drivers: drivers.map(toDriverView), total, ...page };
  });

  app.get(`${base}/:id`, {
    config: read,
    schema: { operationId: 'getDriver', tags, summary: 'Read a driver', params: DriverIdParams, response: responses({ 200: Driver }, { errors: [404] }) },
  }, async (request) => toDriverView(await service.get(request.principal, request.params.id)));

  app.patch(`${base}/:id`, {
    config: write,
    schema: {
      operationId: 'updateDriver', tags, summary: 'Change a driver',
      description: 'An RFC 7396 merge patch (`application/merge-patch+json`; `application/json` is accepted too).',
      params: DriverIdParams, body: DriverPatch, response: responses({ 200: Driver }, { body: true, errors: [404, 409] }),
    },
  }, async (request) => toDriverView(await service.update(request.principal, request.params.id, request.body)));

  app.delete(`${base}/:id`, {
    config: write,
    schema: {
      operationId: 'deleteDriver', tags, summary: 'Delete a driver',
      description: 'Its ongoing assignment ends now (`driver.unassigned`); its assignments stay in the record, naming its id.',
      params: DriverIdParams, response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await service.remove(request.principal, request.params.id);
    return reply.code(204).send();
  });

  app.post(assignments, {
    config: dispatch,
    schema: {
      operationId: 'assignDriver', tags, summary: 'Assign a driver to a vehicle',
      description: 'Ends, at `startedAt`, the driver\'s ongoing assignment and the vehicle\'s (`driver.unassigned` for each), then starts this one ' +
        '(`driver.assigned`). When that driver already drives that vehicle, answers 200 with the ongoing assignment and changes nothing. ' +
        'A `startedAt` before the start of an assignment it would end answers 409 `assignment-conflict`.',
      body: AssignmentCreation, response: responses({ 200: Assignment, 201: Assignment }, { body: true, location: true, errors: [404, 409] }),
    },
  }, async (request, reply) => {
    const { assignment, created } = await service.assign(request.principal, request.body);
    return reply.code(created ? 201 : 200).header('location', `${assignments}/${assignment.id}`).send(toAssignmentView(assignment));
  });

  app.get(assignments, {
    config: read,
    schema: {
      operationId: 'listDriverAssignments', tags, summary: 'List driver assignments',
      description: 'Newest start first. `from` and `to` select the assignments that overlap the range. A credential limited to groups passes `vehicleId`.',
      querystring: AssignmentListQuery, response: responses({ 200: AssignmentList }),
    },
  }, async (request) => {
    const page = await service.assignments(request.principal, request.query);
    return { assignments: page.assignments.map(toAssignmentView), nextCursor: page.nextCursor };
  });

  app.get(`${assignments}/:id`, {
    config: read,
    schema: {
      operationId: 'getDriverAssignment', tags, summary: 'Read a driver assignment',
      params: AssignmentIdParams, response: responses({ 200: Assignment }, { errors: [404] }),
    },
  }, async (request) => toAssignmentView(await service.getAssignment(request.principal, request.params.id)));

  app.post(`${assignments}/:id/end`, {
    config: dispatch,
    schema: {
      operationId: 'endDriverAssignment', tags, summary: 'End a driver assignment',
      description: 'Answers the ended assignment (`driver.unassigned`). One that had ended already is answered as it is.',
      params: AssignmentIdParams, body: AssignmentEnd, response: responses({ 200: Assignment }, { body: true, errors: [404] }),
    },
  }, async (request) => toAssignmentView(await service.end(request.principal, request.params.id, request.body.endedAt)));
}
