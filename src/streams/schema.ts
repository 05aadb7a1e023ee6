// Live stream schemas (docs/API.md "Telemetry", "Live streams"): they validate requests, serialize responses and make
// the OpenAPI document.
import { Type, type Static } from 'typebox';
import { IsoTimestamp } from '../schema/common.ts';
import { VehicleId } from '../vehicles/schema.ts';
import { EVENT_TYPES } from './messages.ts';
import { named } from '../schema/named.ts';

export const INTERVAL_MAX = 3_600_000;
export const INTERVAL_DEFAULT = 1000;
export const MAX_LISTED_VEHICLES = 1000;

const Events = Type.Array(Type.Enum(EVENT_TYPES), {
  minItems: 1,
  uniqueItems: true,
  description:
    'Event types: `location` (location, speed, heading), `battery`, `diagnostics` (temperature, odometer, diagnostics), ' +
    '`status` (status changes `{from, to, reason}`), `events` (each recorded event, as `{"type":"event",…,"data":<the event>}`). ' +
    'Besides `streams`, the credential needs `telemetry:read` for location, battery and diagnostics, `fleet:read` for status ' +
    'and `events:read` for events (403 `insufficient-scope` otherwise).',
  examples: [['location', 'battery']],
});

const Interval = Type.Integer({
  minimum: 0,
  maximum: INTERVAL_MAX,
  default: INTERVAL_DEFAULT,
  description: 'Throttle, ms: at most one message per vehicle and event type per interval, carrying the newest values. 0 sends every update.',
});

export const VehicleStreamBody = named('VehicleStreamRequest', Type.Object(
  { events: Events, interval: Type.Optional(Interval) },
  { additionalProperties: false, examples: [{ events: ['location', 'status'], interval: 1000 }] },
), 'A live stream of one vehicle to create.');
export type VehicleStreamBody = Static<typeof VehicleStreamBody>;

export const FleetStreamBody = named('FleetStreamRequest', Type.Object(
  {
    events: Events,
    interval: Type.Optional(Interval),
    vehicleIds: Type.Optional(
      Type.Array(VehicleId, {
        minItems: 1,
        maxItems: MAX_LISTED_VEHICLES,
        uniqueItems: true,
        description: 'Only these vehicles; without it, every vehicle of the organization, including those registered later.',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ events: ['location'], interval: 500, vehicleIds: ['van-042', 'bus-7'] }] },
), 'A live stream of the fleet to create.');
export type FleetStreamBody = Static<typeof FleetStreamBody>;

export const StreamIdParams = Type.Object(
  { streamId: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'The stream id (`str_…`).', examples: ['str_3kTq9v0bWm1xYp2Z'] }) },
  { additionalProperties: false },
);
export type StreamIdParams = Static<typeof StreamIdParams>;

export const AttachQuery = Type.Object(
  {
    ticket: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{16,128}$', description: 'Single-use ticket (WebSocket upgrade only).' })),
    lastSeq: Type.Optional(Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'WebSocket upgrade only: resume after this seq, replaying the messages the server still holds (at least the last 60 s).',
    })),
    batch: Type.Optional(Type.Boolean({
      description: 'WebSocket upgrade only: `true` sends the messages of one turn of the server in one text frame, separated by newlines ' +
        '(`\\n`; a message never contains one), for clients that receive thousands a second.',
    })),
  },
  { additionalProperties: false },
);
export type AttachQuery = Static<typeof AttachQuery>;

const Subscriptions = Type.Array(Type.Enum(EVENT_TYPES), { description: 'The event types the stream carries now.' });
const VehicleIdField = Type.Optional(VehicleId);
const VehicleIdsField = Type.Optional(
  Type.Union([Type.Array(VehicleId), Type.Null()], { description: 'Fleet streams: the vehicles listed, or null for every vehicle of the organization.' }),
);

export const CreatedStream = named('CreatedStream', Type.Object(
  {
    streamId: Type.String(),
    status: Type.Literal('connected'),
    subscriptions: Subscriptions,
    vehicleId: VehicleIdField,
    vehicleIds: VehicleIdsField,
    interval: Type.Integer(),
    url: Type.String({
      description: 'The WebSocket address with a single-use ticket: `ws(s)://{host}/v2/streams/{streamId}?ticket=…`. Shown once.',
    }),
    expiresAt: Type.String({
      format: 'date-time',
      description: 'The stream expires unless a socket attaches by then (60 s after creation); so does the ticket.',
    }),
  },
  {
    additionalProperties: false,
    examples: [{
      streamId: 'str_3kTq9v0bWm1xYp2Z', status: 'connected', subscriptions: ['location', 'status'], vehicleId: 'van-042', interval: 1000,
      url: 'wss://fleet.example.com/v2/streams/str_3kTq9v0bWm1xYp2Z?ticket=…', expiresAt: '2026-11-22T08:31:00.000Z',
    }],
  },
), 'A new live stream, with the WebSocket address to attach to.');

export const StreamDetails = named('Stream', Type.Object(
  {
    streamId: Type.String(),
    status: Type.Enum(['connected', 'closed'], { description: '`connected` while live or waiting for a socket; `closed` once ended or expired.' }),
    subscriptions: Subscriptions,
    vehicleId: VehicleIdField,
    vehicleIds: VehicleIdsField,
    interval: Type.Integer(),
    attached: Type.Boolean({ description: 'A WebSocket is attached now.' }),
    lastSeq: Type.Integer({ description: 'The seq of the last message of the stream (0: none yet).' }),
    createdAt: IsoTimestamp,
    expiresAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'When it expires unless a socket attaches; null while attached or once closed.' }),
    closedAt: Type.Union([IsoTimestamp, Type.Null()]),
    bufferedBytes: Type.Integer({ description: 'Bytes waiting to be sent to the attached socket.' }),
    conflated: Type.Integer({
      description: 'Updates held as newest values (throttled, part of a snapshot not yet sent, or the client is behind), and events waiting for a client that is behind.',
    }),
  },
  { additionalProperties: false },
), 'A live stream.');

export const StreamTicket = named('StreamTicket', Type.Object(
  {
    streamId: Type.String(),
    url: Type.String({ description: 'The WebSocket address with a new single-use ticket; add `&lastSeq=N` to resume.' }),
    expiresAt: IsoTimestamp,
  },
  { additionalProperties: false },
), 'A new ticket to attach to a stream.');
