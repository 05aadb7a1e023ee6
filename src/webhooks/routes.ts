import type { FastifyInstance } from 'fastify';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import {
  AttemptList, AttemptListQuery, CreateWebhookBody, Delivery, DeliveryList, DeliveryListQuery, DeliveryParams, PatchWebhookBody, Secret, Webhook, WebhookIdParams,
  WebhookList, WebhookListQuery, WebhookWithSecret,
} from './schema.ts';
import { type WebhookService, toAttemptView, toDeliveryView, toWebhookView } from './service.ts';
import { typed } from '../http/typed.ts';

const base = '/v2/webhooks';
const tags = ['webhooks'];
const config = { scope: 'webhooks' } as const;
// Responses that carry a secret are never kept by a cache on the way (http/secrets.ts).
const withSecret = { scope: 'webhooks', secret: true } as const;

export async function webhookRoutes(instance: FastifyInstance, opts: { service: WebhookService }) {
  const app = typed(instance);
  const { service } = opts;

  app.post(base, {
    config: withSecret,
    schema: {
      operationId: 'createWebhook', tags, summary: 'Create a webhook endpoint',
      description: 'Events of the listed types are POSTed to `url`, signed per the Standard Webhooks specification. ' +
        'The `secret` is shown only in this response and when rotated.',
      body: CreateWebhookBody,
      response: responses({ 201: WebhookWithSecret }, { body: true, location: true }),
    },
  }, async (request, reply) => {
    const webhook = await service.create(request.principal, request.body);
    return reply.code(201).header('location', `${base}/${webhook.id}`).send({ ...toWebhookView(webhook), secret: webhook.secret });
  });

  app.get(base, {
    config,
    schema: { operationId: 'listWebhooks', tags, summary: 'List webhook endpoints', querystring: WebhookListQuery, response: responses({ 200: WebhookList }) },
  }, async (request) => {
    const page = pageOf(request.query);
    const { webhooks, total } = await service.list(request.principal, page);
    return { webhooks: webhooks.map(toWebhookView), total, ...page };
  });

  app.get(`${base}/:id`, {
    config,
    schema: { operationId: 'getWebhook', tags, summary: 'Read a webhook endpoint', params: WebhookIdParams, response: responses({ 200: Webhook }, { errors: [404] }) },
  }, async (request) => toWebhookView(await service.get(request.principal, request.params.id)));

  app.patch(`${base}/:id`, {
    config,
    schema: {
      operationId: 'updateWebhook', tags, summary: 'Change a webhook endpoint',
      description: '`enabled: true` enables an endpoint again, also one the service disabled after 5 days of failures.',
      params: WebhookIdParams, body: PatchWebhookBody, response: responses({ 200: Webhook }, { body: true, errors: [404] }),
    },
  }, async (request) => toWebhookView(await service.update(request.principal, request.params.id, request.body)));

  app.delete(`${base}/:id`, {
    config,
    schema: { operationId: 'deleteWebhook', tags, summary: 'Delete a webhook endpoint', params: WebhookIdParams, response: responses({ 204: NoContent }, { errors: [404] }) },
  }, async (request, reply) => {
    await service.remove(request.principal, request.params.id);
    return reply.code(204).send();
  });

  app.post(`${base}/:id/rotate-secret`, {
    config: withSecret,
    schema: {
      operationId: 'rotateWebhookSecret', tags, summary: 'Rotate the signing secret',
      description: 'For 24 hours every delivery carries a signature with the old secret and one with the new.',
      params: WebhookIdParams, response: responses({ 200: Secret }, { errors: [404] }),
    },
  }, async (request) => ({ secret: await service.rotateSecret(request.principal, request.params.id) }));

  app.post(`${base}/:id/test`, {
    config,
    schema: {
      operationId: 'testWebhook', tags, summary: 'Send a test event',
      description: 'Sends a `webhook.test` event (data `{}`, no vehicleId) to this endpoint only; answers the pending delivery.',
      params: WebhookIdParams, response: responses({ 202: Delivery }, { errors: [404] }),
    },
  }, async (request, reply) => reply.code(202).send(toDeliveryView(await service.test(request.principal, request.params.id))));

  app.get(`${base}/:id/deliveries`, {
    config,
    schema: {
      operationId: 'listWebhookDeliveries', tags, summary: 'Recent deliveries, newest first',
      params: WebhookIdParams, querystring: DeliveryListQuery, response: responses({ 200: DeliveryList }, { errors: [404] }),
    },
  }, async (request) => {
    const query = request.query;
    const page = await service.deliveries(request.principal, request.params.id, query.after, query.limit ?? 50);
    return { deliveries: page.deliveries.map(toDeliveryView), nextCursor: page.nextCursor };
  });

  app.get(`${base}/:id/deliveries/:deliveryId/attempts`, {
    config,
    schema: {
      operationId: 'listWebhookDeliveryAttempts', tags, summary: 'Every attempt of a delivery, newest first',
      description: 'Attempts are kept as long as their delivery.',
      params: DeliveryParams, querystring: AttemptListQuery, response: responses({ 200: AttemptList }, { errors: [404] }),
    },
  }, async (request) => {
    const { id, deliveryId } = request.params;
    const page = await service.attempts(request.principal, id, deliveryId, request.query.after, request.query.limit ?? 50);
    return { attempts: page.attempts.map(toAttemptView), nextCursor: page.nextCursor };
  });

  app.post(`${base}/:id/deliveries/:deliveryId/retry`, {
    config,
    schema: {
      operationId: 'retryWebhookDelivery', tags, summary: 'Send a delivery again now',
      params: DeliveryParams, response: responses({ 202: Delivery }, { errors: [404] }),
    },
  }, async (request, reply) => {
    const { id, deliveryId } = request.params;
    return reply.code(202).send(toDeliveryView(await service.retry(request.principal, id, deliveryId)));
  });
}
