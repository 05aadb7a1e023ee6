// Events: what the service noticed about a vehicle, in one envelope, recorded durably in the same
// transaction as the change that caused it (the event log), then delivered three ways: the feed,
// webhooks and live streams. See docs/API.md "Events".
import { iso } from '../clock.ts';
import { newTimeOrderedId } from '../ids.ts';
import type { EventData } from './schema.ts';

export const EVENT_TYPES = [
  'vehicle.registered',
  'vehicle.updated',
  'vehicle.status_changed',
  'vehicle.deleted',
  'geofence.entered',
  'geofence.exited',
  'alert.opened',
  'alert.acknowledged',
  'alert.resolved',
  'trip.started',
  'trip.ended',
  'command.queued',
  'command.sent',
  'command.succeeded',
  'command.failed',
  'command.timed_out',
  'command.expired',
  'command.cancelled',
  'command.delivered',
  'driver.assigned',
  'driver.unassigned',
  'driver.unknown',
  'maintenance.due_soon',
  'maintenance.overdue',
  'maintenance.completed',
  'report.ready',
  'webhook.test',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The types whose events name no vehicle: their envelope has no `vehicleId`. */
export const VEHICLE_LESS: readonly EventType[] = ['report.ready', 'webhook.test'];

/** An event as recorded. Times are ms since the epoch; `toEnvelope` gives the public form. */
export interface EventRecord {
  id: string;
  organizationId: string;
  type: EventType;
  /** Null for the types of no vehicle (VEHICLE_LESS: `report.ready`, and `webhook.test`, which is never recorded in the log). */
  vehicleId: string | null;
  /** The time of the record or change that caused it. */
  occurredAt: number;
  data: Record<string, unknown>;
}

/** The public envelope, the same in the feed, in every webhook attempt and in streams. */
export interface EventEnvelope {
  id: string;
  type: EventType;
  occurredAt: string;
  vehicleId?: string;
  data: Record<string, unknown>;
}

/** A new event of `type`, whose `data` must be of that type's schema (events/schema.ts). */
export function newEvent<T extends EventType>(
  organizationId: string,
  type: T,
  vehicleId: string | null,
  occurredAt: number,
  data: EventData<T>,
): EventRecord {
  // Stored and sent as it is: the schema's type is checked here, at the producer.
  return { id: newTimeOrderedId('evt'), organizationId, type, vehicleId, occurredAt, data: data as Record<string, unknown> };
}

export function toEnvelope(event: EventRecord): EventEnvelope {
  return {
    id: event.id,
    type: event.type,
    occurredAt: iso(event.occurredAt),
    ...(event.vehicleId === null ? {} : { vehicleId: event.vehicleId }),
    data: event.data,
  };
}

/** Whether an event of `type` is one a subscriber of `wanted` (types, or `*` for all) asked for. */
export function wants(wanted: readonly string[], type: string): boolean {
  return wanted.includes('*') || wanted.includes(type);
}

/**
 * The envelope as JSON text, written around the stored `data` text without parsing it (the feed
 * and the webhook fan-out write many events; this is `JSON.stringify(toEnvelope(event))`).
 */
export function envelopeJson(event: Pick<EventRecord, 'id' | 'type' | 'occurredAt' | 'vehicleId'> & { dataJson: string }): string {
  const vehicle = event.vehicleId === null ? '' : `,"vehicleId":${JSON.stringify(event.vehicleId)}`;
  return `{"id":${JSON.stringify(event.id)},"type":"${event.type}","occurredAt":"${iso(event.occurredAt)}"${vehicle},"data":${event.dataJson}}`;
}
