// The vehicle operations, each once: schema, scope and handler. routes.v2.ts and routes.v1.ts
// mount them at their paths, so both families are the same code and the same representations.
import type { FastifySchema } from 'fastify';
import { AppError } from '../errors.ts';
import { operation, type TypedOperation } from '../http/typed.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import {
  PatchVehicleBody,
  MAX_REGISTRATION_BATCH,
  RegisterVehicleBody,
  RegisterVehiclesBody,
  RegisterVehiclesResult,
  StatusChangeBody,
  StatusHistory,
  StatusHistoryQuery,
  VehicleDetails,
  VehicleIdParams,
  VehicleList,
  VehicleListQuery,
  type VehicleStatus,
  type VehicleType,
} from './schema.ts';
import type { VehicleService } from './service.ts';
import { type LatestLookup, toDetails, toHistoryEntry, toListItem } from './view.ts';


const splitList = <T extends string>(value: string | undefined): T[] | undefined =>
  value === undefined ? undefined : [...new Set(value.split(','))] as T[];

/** `detailsPath(id)` is where the created vehicle can be read in the mounting family. */
export function vehicleOperations(service: VehicleService, latestOf: LatestLookup, detailsPath: (id: string) => string) {
  const latest = (v: { organizationId: string; id: string }) => latestOf(v.organizationId, v.id);

  const list = operation({
    options: {
      config: { scope: 'fleet:read' },
      schema: {
        summary: 'List vehicles',
        description: 'Ordered by id. `status` and `type` take one value or several, comma-separated; `groupId` keeps the vehicles of one group.',
        querystring: VehicleListQuery,
        response: responses({ 200: VehicleList }),
      },
    },
    async handler(request) {
      const query = request.query;
      const { limit, offset } = pageOf(query);
      const { vehicles, total } = await service.list(request.principal, {
        statuses: splitList<VehicleStatus>(query.status),
        types: splitList<VehicleType>(query.type),
        ...(query.groupId === undefined ? {} : { groupId: query.groupId }),
        limit,
        offset,
      });
      return { vehicles: vehicles.map((v) => toListItem(v, latest(v))), total, limit, offset };
    },
  });

  const register = operation({
    options: {
      config: { scope: 'fleet:write' },
      schema: {
        summary: 'Register a vehicle',
        body: RegisterVehicleBody,
        response: responses({ 201: VehicleDetails }, { body: true, location: true, errors: [409] }),
        description: 'The vehicle starts as `registered`; its first telemetry makes it `active`. ' +
          'Answers 403 `quota-exceeded` when the organization has reached its vehicle quota.',
      },
    },
    async handler(request, reply) {
      const vehicle = await service.register(request.principal, request.body);
      return reply.code(201).header('location', detailsPath(vehicle.id)).send(toDetails(vehicle));
    },
  });

  const registerMany = operation({
    options: {
      config: { scope: 'fleet:write' },
      schema: {
        summary: 'Register many vehicles',
        body: RegisterVehiclesBody,
        response: responses({ 200: RegisterVehiclesResult }, { body: true, errors: [404] }),
        description: `Registers up to ${MAX_REGISTRATION_BATCH} vehicles in one transaction, each as \`POST /v2/fleet/vehicles\` would. ` +
          'An id already taken is not an error: its vehicle is left as it was and its outcome is `exists`, so a batch may be sent again safely. ' +
          'All or none otherwise: a bad vehicle or an id twice in the batch answers 400 naming each, a group that does not exist 404 ' +
          '`group-not-found`, and 403 `quota-exceeded` when the new vehicles would take the organization past its vehicle quota.',
      },
    },
    async handler(request) {
      return service.registerMany(request.principal, request.body.vehicles);
    },
  });

  const get = operation({
    options: {
      config: { scope: 'fleet:read' },
      schema: {
        summary: 'Read a vehicle',
        params: VehicleIdParams,
        response: responses({ 200: VehicleDetails }, { errors: [404] }),
      },
    },
    async handler(request) {
      const vehicle = await service.get(request.principal, request.params.id);
      return toDetails(vehicle, latest(vehicle));
    },
  });

  const changeStatus = operation({
    options: {
      config: { scope: 'fleet:write' },
      schema: {
        summary: 'Change a vehicle\'s status',
        description:
          'Allowed: registered → active|inactive|maintenance|retired; active → inactive|maintenance|retired; ' +
          'inactive → active|maintenance|retired; maintenance → active|inactive|retired; retired is terminal. ' +
          'Setting the current status again changes nothing and answers 200; any other transition answers 409.',
        params: VehicleIdParams,
        body: StatusChangeBody,
        response: responses({ 200: VehicleDetails }, { body: true, errors: [404, 409] }),
      },
    },
    async handler(request) {
      const { id } = request.params;
      const vehicle = await service.changeStatus(request.principal, id, request.body);
      return toDetails(vehicle, latest(vehicle));
    },
  });

  const update = operation({
    options: {
      config: { scope: 'fleet:write' },
      // `status` is refused with 409 before validation, which would call it an unknown field (400).
      preValidation: async (request) => {
        const body = request.body;
        if (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.hasOwn(body, 'status')) {
          throw new AppError('status-not-patchable', 'A vehicle\'s status changes with PUT /v2/fleet/vehicles/{id}/status.');
        }
      },
      schema: {
        summary: 'Update a vehicle',
        description: 'An RFC 7396 merge patch (`application/merge-patch+json`; `application/json` is accepted too) of ' +
          '`type`, `name` (null removes it), `configuration` (each member merged; null removes it) and `groupIds` (the whole list). ' +
          '`status` answers 409 (use PUT .../status); any other field answers 400.',
        params: VehicleIdParams,
        body: PatchVehicleBody,
        response: responses({ 200: VehicleDetails }, { body: true, errors: [404, 409] }),
      },
    },
    async handler(request) {
      const vehicle = await service.update(request.principal, request.params.id, request.body);
      return toDetails(vehicle, latest(vehicle));
    },
  });

  const remove = operation({
    options: {
      config: { scope: 'fleet:write' },
      schema: {
        summary: 'Delete a vehicle',
        description: 'Removes the vehicle and everything recorded about it. To keep its history, retire it instead.',
        params: VehicleIdParams,
        response: responses({ 204: NoContent }, { errors: [404] }),
      },
    },
    async handler(request, reply) {
      await service.remove(request.principal, request.params.id);
      return reply.code(204).send();
    },
  });

  const statusHistory = operation({
    options: {
      config: { scope: 'fleet:read' },
      schema: {
        summary: 'A vehicle\'s status history',
        description: 'Every status change, newest first, starting with the registration (`from: null`).',
        params: VehicleIdParams,
        querystring: StatusHistoryQuery,
        response: responses({ 200: StatusHistory }, { errors: [404] }),
      },
    },
    async handler(request) {
      const { id } = request.params;
      const { limit, offset } = pageOf(request.query);
      const { entries, total } = await service.statusHistory(request.principal, id, { limit, offset });
      return { vehicleId: id, history: entries.map(toHistoryEntry), total, limit, offset };
    },
  });

  return { list, register, registerMany, get, update, changeStatus, remove, statusHistory };
}

/** Mounts one operation, adding the family's own OpenAPI metadata. */
export function withMeta<S extends FastifySchema>(op: TypedOperation<S>, meta: { operationId: string; tags: string[]; deprecated?: boolean; successor?: string }) {
  return {
    ...op.options,
    config: { ...op.options.config, ...(meta.successor === undefined ? {} : { successor: meta.successor }) },
    schema: {
      ...op.options.schema,
      operationId: meta.operationId,
      tags: meta.tags,
      ...(meta.deprecated === true ? { deprecated: true } : {}),
    },
  };
}
