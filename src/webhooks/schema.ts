// Webhook schemas: they validate requests, serialize responses and make the OpenAPI document.
import { Type, type Static } from 'typebox';
import { EventTypeSchema } from '../events/schema.ts';
import { EVENT_TYPES } from '../events/types.ts';
import { IsoTimestamp, Paging, PlainText } from '../schema/common.ts';
import { named } from '../schema/named.ts';

/** The types an endpoint can subscribe to: every recorded type (`webhook.test` goes to whoever is tested). */
export const SUBSCRIBABLE = EVENT_TYPES.filter((t) => t !== 'webhook.test');

const EventTypes = Type.Array(Type.Enum([...SUBSCRIBABLE, '*']), {
  minItems: 1,
  maxItems: SUBSCRIBABLE.length + 1,
  uniqueItems: true,
  description: 'Event types to receive, or `["*"]` for all.',
  examples: [['vehicle.status_changed', 'geofence.entered']],
});
const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'An `https://` or `http://` URL. Loopback, private, link-local and multicast targets are refused (at creation and at each delivery).',
  examples: ['https://hooks.example.com/fleet'],
});
const Description = PlainText({ maxLength: 500, description: 'What the endpoint is for.' });

export const WebhookIdParams = Type.Object(
  { id: Type.String({ pattern: '^wh_[A-Za-z0-9]{1,64}$', examples: ['wh_3kTq9ZbW8xYc2LmN4pRs'] }) },
  { additionalProperties: false },
);
export const DeliveryParams = Type.Object(
  { id: WebhookIdParams.properties.id, deliveryId: Type.String({ pattern: '^dlv_[A-Za-z0-9]{1,64}$', examples: ['dlv_8xY2mQ4kT9bW3cZ7nLp1'] }) },
  { additionalProperties: false },
);

export const CreateWebhookBody = named('WebhookCreation', Type.Object(
  { url: Url, eventTypes: EventTypes, description: Type.Optional(Description), enabled: Type.Optional(Type.Boolean({ default: true })) },
  { additionalProperties: false, examples: [{ url: 'https://hooks.example.com/fleet', eventTypes: ['*'], description: 'Dispatch' }] },
), 'A webhook endpoint to create.');
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const PatchWebhookBody = named('WebhookPatch', Type.Object(
  {
    url: Type.Optional(Url),
    eventTypes: Type.Optional(EventTypes),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    enabled: Type.Optional(Type.Boolean({ description: 'true enables an endpoint again, also one disabled after failing.' })),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ enabled: true }] },
), 'Changes to a webhook endpoint.');
export type PatchWebhookBody = Static<typeof PatchWebhookBody>;

const webhookProperties = {
  id: WebhookIdParams.properties.id,
  url: Type.String(),
  eventTypes: Type.Array(Type.String()),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  disabledReason: Type.Union([Type.String(), Type.Null()], { description: 'Why the service disabled it (e.g. failures for 5 days).' }),
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
};
export const Webhook = named('Webhook', Type.Object(webhookProperties, { additionalProperties: false }), 'A webhook endpoint, without its secret.');
const SecretValue = Type.String({ description: '`whsec_` + base64 of 32 random bytes. Shown only here and when rotated.' });
export const WebhookWithSecret = named('WebhookWithSecret', Type.Object(
  { ...webhookProperties, secret: SecretValue },
  { additionalProperties: false },
), 'A new webhook endpoint, with its signing secret (shown this once).');
export const WebhookList = named('WebhookList', Type.Object(
  { webhooks: Type.Array(Webhook), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { additionalProperties: false },
), 'A page of webhook endpoints.');
export const WebhookListQuery = Type.Object(Paging, { additionalProperties: false });
export type WebhookListQuery = Static<typeof WebhookListQuery>;
export const Secret = named('WebhookSecret', Type.Object({ secret: SecretValue }, { additionalProperties: false }), 'A new signing secret (shown this once).');

export const Delivery = named('WebhookDelivery', Type.Object(
  {
    id: DeliveryParams.properties.deliveryId,
    eventId: Type.String(),
    eventType: EventTypeSchema,
    attempt: Type.Integer({ description: 'Attempts made so far.' }),
    status: Type.Enum(['pending', 'succeeded', 'failed']),
    responseStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'The status the receiver answered the last attempt with.' }),
    durationMs: Type.Union([Type.Integer(), Type.Null()]),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt failed.' }),
    at: Type.Union([IsoTimestamp, Type.Null()], { description: 'When the last attempt was made; null before the first.' }),
    nextAttemptAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'When the next attempt is due, while pending.' }),
  },
  { additionalProperties: false },
), 'One event\'s delivery to an endpoint.');
export const DeliveryListQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ maxLength: 100, description: 'The `nextCursor` of the previous page.' })),
    limit: Paging.limit,
  },
  { additionalProperties: false },
);
export type DeliveryListQuery = Static<typeof DeliveryListQuery>;
export const DeliveryList = named('WebhookDeliveryList', Type.Object(
  { deliveries: Type.Array(Delivery, { description: 'Newest first.' }), nextCursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
), 'A page of deliveries.');

export const Attempt = named('WebhookAttempt', Type.Object(
  {
    attempt: Type.Integer({ minimum: 1, description: 'Its number: 1 for the first attempt.' }),
    at: IsoTimestamp,
    responseStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'The status the receiver answered; null when none came.' }),
    durationMs: Type.Integer(),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed, in words for people.' }),
    status: Type.Enum(['succeeded', 'failed']),
  },
  { additionalProperties: false },
), 'One attempt of a delivery.');
export const AttemptListQuery = DeliveryListQuery;
export type AttemptListQuery = Static<typeof AttemptListQuery>;
export const AttemptList = named('WebhookAttemptList', Type.Object(
  { attempts: Type.Array(Attempt, { description: 'Newest first.' }), nextCursor: Type.Union([Type.String(), Type.Null()]) },
  { additionalProperties: false },
), 'A page of a delivery\'s attempts.');
