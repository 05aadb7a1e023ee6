import type { FastifyInstance } from 'fastify';
import { iso } from '../clock.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import { alertView } from './engine.ts';
import type { AlertRuleRecord } from './model.ts';
import { Alert, AlertActionBody, AlertIdParams, AlertList, AlertListQuery, PageQuery, Rule, RuleBody, RuleIdParams, RuleList } from './schema.ts';
import type { RulesService } from './service.ts';
import { typed } from '../http/typed.ts';

const read = { scope: 'fleet:read' } as const;
const write = { scope: 'rules' } as const;

const ruleView = (r: AlertRuleRecord) => ({ ...r, organizationId: undefined, createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt) });

export async function rulesRoutes(instance: FastifyInstance, opts: { service: RulesService }) {
  const app = typed(instance);
  const { service } = opts;

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
      config: { scope: 'alerts:write' },
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
