// Event schemas: the envelope, the feed's query and page.
import { Type, type Static } from 'typebox';
import { IsoTimestamp, commaListPattern } from '../schema/common.ts';
import { VehicleId } from '../vehicles/schema.ts';
import { EVENT_TYPES } from './types.ts';
import { named } from '../schema/named.ts';

export const FEED_LIMIT_DEFAULT = 100;
export const FEED_LIMIT_MAX = 1000;

export const EventTypeSchema = named('EventType', Type.Enum(EVENT_TYPES, { description: 'Event type. Receivers must ignore types they do not know.' }));

export const EventEnvelope = named('Event', Type.Object(
  {
    id: Type.String({ description: 'Unique and stable: the same in the feed, every webhook attempt and streams.' }),
    type: EventTypeSchema,
    occurredAt: IsoTimestamp,
    vehicleId: Type.Optional(VehicleId),
    data: Type.Object({}, { additionalProperties: true, description: 'Depends on `type` (see the API guide).' }),
  },
  {
    additionalProperties: false,
    examples: [{
      id: 'evt_2Xb8kQ0mWc1ZrT5pLs9aHd3e', type: 'vehicle.status_changed', occurredAt: '2026-11-25T08:30:00.000Z', vehicleId: 'van-042',
      data: { from: 'active', to: 'maintenance', reason: 'Brake inspection', by: 'key_8Hq2' },
    }],
  },
), 'An event, as the feed, webhooks and streams carry it.');

export const FeedQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ maxLength: 200, description: 'The `next` of the previous page. Absent: from the oldest event kept.' })),
    types: Type.Optional(Type.String({
      pattern: commaListPattern(EVENT_TYPES.filter((t) => t !== 'webhook.test')),
      description: 'One event type or several, comma-separated.',
      examples: ['vehicle.status_changed,geofence.entered'],
    })),
    vehicleId: Type.Optional(VehicleId),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: FEED_LIMIT_MAX, default: FEED_LIMIT_DEFAULT, description: 'Page size.' })),
  },
  { additionalProperties: false },
);
export type FeedQuery = Static<typeof FeedQuery>;

export const FeedPage = named('EventPage', Type.Object(
  {
    events: Type.Array(EventEnvelope, { description: 'Oldest first, in the order the service recorded them.' }),
    next: Type.String({ description: 'Never null: pass it as `after` to continue. An empty page means nothing new yet.' }),
  },
  { additionalProperties: false },
), 'A page of the event feed.');
