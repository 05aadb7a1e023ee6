import type { FastifyInstance } from 'fastify';
import { iso } from '../clock.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import { VehicleIdParams } from '../vehicles/schema.ts';
import type { VehicleService } from '../vehicles/service.ts';
import { alertView } from './engine.ts';
import type { AlertRuleRecord, GeofenceRecord } from './model.ts';
import {
  Alert, AlertActionBody, AlertIdParams, AlertList, AlertListQuery, Geofence, GeofenceBody, GeofenceIdParams, GeofenceList,
  GeofencesOfVehicle, PageQuery, Rule, RuleBody, RuleIdParams, RuleList, VehiclesInside,
} from './schema.ts';
import type { RulesService } from './service.ts';
import { typed } from '../http/typed.ts';

const read = { scope: 'fleet:read' } as const;
const write = { scope: 'rules' } as const;

const geofenceView = (g: GeofenceRecord) => ({ ...g, organizationId: undefined, createdAt: iso(g.createdAt), updatedAt: iso(g.updatedAt) });
const ruleView = (r: AlertRuleRecord) => ({ ...r, organizationId: undefined, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) });

export async function rulesRoutes(instance: FastifyInstance, opts: { service: RulesService; vehicles: VehicleService }) {
  const app = typed(instance);
  const { service } = opts;

  // Geofences.
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

  // Alert rules.
  const rules = { tags: ['alerts'] };
  app.post('/v2/alert-rules', {
    config: write,
    schema: {
      ...rules, operationId: 'createAlertRule', summary: 'Create an alert rule',
      description: 'A threshold on a field, no telemetry for a while (offline), or inside/outside a geofence; `forSeconds` in record time.',
      body: RuleBody, response: responses({ 201: Rule }, { body: true, location: true }),
    },
  }, async (request, reply) => {
    const r = await service.createRule(request.principal, request.body);
    return reply.code(201).header('location', `/v2/alert-rules/${r.id}`).send(ruleView(r));
  });
  app.get('/v2/alert-rules', {
    config: read,
    schema: { ...rules, operationId: 'listAlertRules', summary: 'List alert rules', querystring: PageQuery, response: responses({ 200: RuleList }) },
  }, async (request) => {
    const page = pageOf(request.query);
    const { rules: list, total } = await service.listRules(request.principal, page);
    return { alertRules: list.map(ruleView), total, ...page };
  });
  app.get('/v2/alert-rules/:id', {
    config: read,
    schema: { ...rules, operationId: 'getAlertRule', summary: 'Read an alert rule', params: RuleIdParams, response: responses({ 200: Rule }, { errors: [404] }) },
  }, async (request) => ruleView(await service.rule(request.principal, request.params.id)));
  app.put('/v2/alert-rules/:id', {
    config: write,
    schema: { ...rules, operationId: 'replaceAlertRule', summary: 'Replace an alert rule', params: RuleIdParams, body: RuleBody, response: responses({ 200: Rule }, { body: true, errors: [404] }) },
  }, async (request) => ruleView(await service.replaceRule(request.principal, request.params.id, request.body)));
  app.delete('/v2/alert-rules/:id', {
    config: write,
    schema: { ...rules, operationId: 'deleteAlertRule', summary: 'Delete an alert rule', params: RuleIdParams, response: responses({ 204: NoContent }, { errors: [404] }) },
  }, async (request, reply) => {
    await service.deleteRule(request.principal, request.params.id);
    return reply.code(204).send();
  });

  // Alerts.
  app.get('/v2/alerts', {
    config: { scope: 'events:read' },
    schema: { ...rules, operationId: 'listAlerts', summary: 'List alerts, newest first', querystring: AlertListQuery, response: responses({ 200: AlertList }) },
  }, async (request) => {
    const page = await service.listAlerts(request.principal, request.query);
    return { alerts: page.alerts.map(alertView), nextCursor: page.nextCursor };
  });
  app.get('/v2/alerts/:id', {
    config: { scope: 'events:read' },
    schema: { ...rules, operationId: 'getAlert', summary: 'Read an alert', params: AlertIdParams, response: responses({ 200: Alert }, { errors: [404] }) },
  }, async (request) => alertView(await service.alert(request.principal, request.params.id)));
  for (const [action, status] of [['acknowledge', 'acknowledged'], ['resolve', 'resolved']] as const) {
    app.post(`/v2/alerts/:id/${action}`, {
      config: write,
      schema: {
        ...rules, operationId: `${action}Alert`, summary: `${action === 'resolve' ? 'Resolve' : 'Acknowledge'} an alert`,
        description: action === 'resolve'
          ? 'Resolves an open or acknowledged alert by hand. If the condition still holds, the next record opens a new one.'
          : 'Marks an open alert as seen. Acknowledging again changes nothing; a resolved alert answers 409.',
        params: AlertIdParams, body: AlertActionBody, response: responses({ 200: Alert }, { body: true, errors: [404, 409] }),
      },
    }, async (request) => {
      const body = request.body;
      return alertView(await service.act(request.principal, request.params.id, status, body?.note));
    });
  }
}
