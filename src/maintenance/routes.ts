// /v2/maintenance-schedules, a vehicle's service records and maintenance, and the fleet's
// maintenance list (docs/API.md "Maintenance").
import type { FastifyInstance } from 'fastify';
import { typed } from '../http/typed.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import { VehicleIdParams } from '../vehicles/schema.ts';
import {
  FleetMaintenance, FleetMaintenanceQuery, Schedule, ScheduleIdParams, ScheduleInput, ScheduleList, ScheduleListQuery,
  ServiceRecordInput, ServiceRecordList, ServiceRecordView, VehicleMaintenance,
} from './schema.ts';
import { type MaintenanceService, scheduleView, serviceRecordView } from './service.ts';

const schedules = '/v2/maintenance-schedules';
const tags = ['maintenance'];
const read = { scope: 'fleet:read' } as const;
const write = { scope: 'fleet:write' } as const;
const APPLIES = 'A schedule applies to `vehicleIds`, or to the members of `groupId`, or, with neither, to every vehicle. ' +
  'Its intervals run, for each vehicle, from the last service for it, or before any from the vehicle\'s meters and the date when the schedule first applied to it.';

export async function maintenanceRoutes(instance: FastifyInstance, opts: { service: MaintenanceService }) {
  const app = typed(instance);
  const { service } = opts;

  app.post(schedules, {
    config: write,
    schema: {
      operationId: 'createMaintenanceSchedule', tags, summary: 'Create a service schedule',
      description: `${APPLIES} A \`groupId\` that does not exist answers 404 \`group-not-found\`; past the organization's quota of schedules (FLEET_QUOTA_MAINTENANCE_SCHEDULES, default 1000), 403 \`quota-exceeded\`.`,
      body: ScheduleInput, response: responses({ 201: Schedule }, { body: true, location: true, errors: [404] }),
    },
  }, async (request, reply) => {
    const schedule = await service.createSchedule(request.principal, request.body);
    return reply.code(201).header('location', `${schedules}/${schedule.id}`).send(scheduleView(schedule));
  });

  app.get(schedules, {
    config: read,
    schema: { operationId: 'listMaintenanceSchedules', tags, summary: 'List service schedules', querystring: ScheduleListQuery, response: responses({ 200: ScheduleList }) },
  }, async (request) => {
    const page = pageOf(request.query);
    const { schedules: found, total } = await service.listSchedules(request.principal, page);
    return { schedules: found.map(scheduleView), total, ...page };
  });

  app.get(`${schedules}/:id`, {
    config: read,
    schema: { operationId: 'getMaintenanceSchedule', tags, summary: 'Read a service schedule', params: ScheduleIdParams, response: responses({ 200: Schedule }, { errors: [404] }) },
  }, async (request) => scheduleView(await service.getSchedule(request.principal, request.params.id)));

  app.put(`${schedules}/:id`, {
    config: write,
    schema: {
      operationId: 'replaceMaintenanceSchedule', tags, summary: 'Replace a service schedule',
      description: 'The vehicles it no longer applies to lose their items; those it keeps keep their baselines and what their cycle announced.',
      params: ScheduleIdParams, body: ScheduleInput, response: responses({ 200: Schedule }, { body: true, errors: [404] }),
    },
  }, async (request) => scheduleView(await service.replaceSchedule(request.principal, request.params.id, request.body)));

  app.delete(`${schedules}/:id`, {
    config: write,
    schema: {
      operationId: 'deleteMaintenanceSchedule', tags, summary: 'Delete a service schedule',
      description: 'With its items; the service records that named it keep its id.',
      params: ScheduleIdParams, response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await service.deleteSchedule(request.principal, request.params.id);
    return reply.code(204).send();
  });

  app.post('/v2/fleet/vehicles/:id/service-records', {
    config: write,
    schema: {
      operationId: 'createServiceRecord', tags, summary: 'Record a service done on a vehicle',
      description: 'Meters left out are the vehicle\'s at the time of the request. One for a schedule restarts that schedule\'s intervals from its values ' +
        '(unless a later service restarted them already) and emits `maintenance.completed`; one for a schedule that does not apply to the vehicle answers 409 `schedule-not-applicable`.',
      params: VehicleIdParams, body: ServiceRecordInput, response: responses({ 201: ServiceRecordView }, { body: true, errors: [404, 409] }),
    },
  }, async (request, reply) => reply.code(201).send(serviceRecordView(await service.addServiceRecord(request.principal, request.params.id, request.body))));

  app.get('/v2/fleet/vehicles/:id/service-records', {
    config: read,
    schema: {
      operationId: 'listServiceRecords', tags, summary: 'A vehicle\'s service records',
      params: VehicleIdParams, querystring: ScheduleListQuery, response: responses({ 200: ServiceRecordList }, { errors: [404] }),
    },
  }, async (request) => {
    const page = pageOf(request.query);
    const { records, total } = await service.serviceRecords(request.principal, request.params.id, page);
    return { serviceRecords: records.map(serviceRecordView), total, ...page };
  });

  app.get('/v2/fleet/vehicles/:id/maintenance', {
    config: read,
    schema: {
      operationId: 'getVehicleMaintenance', tags, summary: 'Where a vehicle stands with its service schedules',
      description: APPLIES, params: VehicleIdParams, response: responses({ 200: VehicleMaintenance }, { errors: [404] }),
    },
  }, async (request) => service.ofVehicle(request.principal, request.params.id));

  app.get('/v2/maintenance', {
    config: read,
    schema: {
      operationId: 'listFleetMaintenance', tags, summary: 'The service items of the whole fleet',
      description: 'Overdue first, then due soon, then ok. `state` keeps one state; `limit` (default 1000) and `offset` page through them.',
      querystring: FleetMaintenanceQuery, response: responses({ 200: FleetMaintenance }),
    },
  }, async (request) => service.ofFleet(request.principal, { ...(request.query.state === undefined ? {} : { state: request.query.state }), limit: request.query.limit ?? 1000, offset: request.query.offset ?? 0 }));
}
