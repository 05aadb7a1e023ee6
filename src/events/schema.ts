// Event schemas: each type's data, the envelope (one schema per type, told apart by `type`), the
// feed's query and page.
import { Type, type Static, type TSchema } from 'typebox';
import { Command } from '../commands/schema.ts';
import { Assignment } from '../drivers/schema.ts';
import { MaintenanceEventData } from '../maintenance/schema.ts';
import { ReportView } from '../reports/schedules/schema.ts';
import { Trip } from '../history/schema.ts';
import { AlertEventData } from '../rules/schema.ts';
import { IsoTimestamp, commaListPattern } from '../schema/common.ts';
import { Location, Status, VehicleDetails, VehicleId } from '../vehicles/schema.ts';
import { EVENT_TYPES, type EventType, VEHICLE_LESS } from './types.ts';
import { named } from '../schema/named.ts';

export const FEED_LIMIT_DEFAULT = 100;
export const FEED_LIMIT_MAX = 1000;

export const EventTypeSchema = named('EventType', Type.Enum(EVENT_TYPES, { description: 'Event type. Receivers must ignore types they do not know.' }));

const GeofenceCrossingData = named('GeofenceCrossingData', Type.Object(
  { geofenceId: Type.String(), name: Type.String({ description: 'The geofence\'s name at that moment.' }), location: Location },
  { additionalProperties: false },
), 'The geofence crossed, and where the record that crossed it was.');
const NoData = named('EmptyEventData', Type.Object({}, { additionalProperties: false }), 'Nothing: the type says all.');

/** Each event type's `data`: the contract of docs/API.md "Events", and the type producers must give. */
export const EVENT_DATA = {
  'vehicle.registered': VehicleDetails,
  'vehicle.updated': VehicleDetails,
  'vehicle.status_changed': named('VehicleStatusChangedData', Type.Object(
    {
      from: Type.Union([Status, Type.Null()]),
      to: Status,
      reason: Type.Union([Type.String(), Type.Null()]),
      by: Type.String({ description: 'Id of the credential that made the change, or `system` (the activation by the first telemetry).' }),
    },
    { additionalProperties: false },
  ), 'A change of the vehicle\'s status.'),
  'vehicle.deleted': NoData,
  'geofence.entered': GeofenceCrossingData,
  'geofence.exited': GeofenceCrossingData,
  'alert.opened': AlertEventData,
  'alert.acknowledged': AlertEventData,
  'alert.resolved': AlertEventData,
  'trip.started': named('TripStartedData', Type.Object(
    {
      startedAt: IsoTimestamp,
      start: Type.Union([Location, Type.Null()], { description: 'The location at the first moving record, or null.' }),
      driverId: Type.Union([Type.String(), Type.Null()], { description: 'The driver assigned to the vehicle when the trip started, or null.' }),
    },
    { additionalProperties: false },
  ), 'What is known of a trip once it qualifies, and will not change.'),
  'trip.ended': Trip,
  'command.queued': Command,
  'command.sent': Command,
  'command.succeeded': Command,
  'command.failed': Command,
  'command.timed_out': Command,
  'command.expired': Command,
  'command.cancelled': Command,
  'command.delivered': Command,
  'driver.assigned': Assignment,
  'driver.unassigned': Assignment,
  'driver.unknown': named('DriverUnknownData', Type.Object(
    { identifier: Type.String({ description: 'The `driverIdentifier` the record carried, which no driver of the organization has.' }) },
    { additionalProperties: false },
  ), 'A vehicle read an identifier no driver has (emitted again whenever the identifier carried changes).'),
  'maintenance.due_soon': MaintenanceEventData,
  'maintenance.overdue': MaintenanceEventData,
  'maintenance.completed': MaintenanceEventData,
  'report.ready': ReportView,
  'webhook.test': NoData,
} satisfies Record<EventType, TSchema>;

/** The `data` of an event of type `T`. */
export type EventData<T extends EventType> = Static<(typeof EVENT_DATA)[T]>;

/** `vehicle.status_changed` → `VehicleStatusChangedEvent`. */
const variantName = (type: EventType) => `${type.split(/[._]/).map((word) => word[0]!.toUpperCase() + word.slice(1)).join('')}Event`;

const EXAMPLE = {
  id: 'evt_2Xb8kQ0mWc1ZrT5pLs9aHd3e', type: 'vehicle.status_changed', occurredAt: '2026-11-25T08:30:00.000Z', vehicleId: 'van-042',
  data: { from: 'active', to: 'maintenance', reason: 'Brake inspection', by: 'key_8Hq2' },
};

/** One schema per event type: its `type`, and its `data`. `report.ready` and `webhook.test` have no vehicle. */
const variants = EVENT_TYPES.map((type) => named(variantName(type), Type.Object(
  {
    id: Type.String({ description: 'Unique and stable: the same in the feed, every webhook attempt and streams.' }),
    type: Type.Literal(type),
    occurredAt: IsoTimestamp,
    ...(VEHICLE_LESS.includes(type) ? {} : { vehicleId: VehicleId }),
    data: EVENT_DATA[type],
  },
  { additionalProperties: false },
), `An event of type \`${type}\`.`));

export const EventEnvelope = named('Event', Type.Unsafe<{ [T in EventType]: EventEnvelopeOf<T> }[EventType]>({
  oneOf: variants,
  discriminator: { propertyName: 'type', mapping: Object.fromEntries(EVENT_TYPES.map((type) => [type, `#/components/schemas/${variantName(type)}`])) },
  examples: [EXAMPLE],
}), 'An event, as the feed, webhooks and streams carry it: one of the types below, told apart by `type`. ' +
  'More types may be added: receivers must ignore types they do not know.');

interface EventEnvelopeOf<T extends EventType> {
  id: string;
  type: T;
  occurredAt: string;
  vehicleId?: string;
  data: EventData<T>;
}

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
