// The WebSocket messages of a live stream (docs/API.md "Live streams"), and how they are built cheaply.
//
// Fan-out without per-socket JSON: an event message is
//   {"type":"location","seq":17,"vehicleId":"van-042","timestamp":"…","data":{…}}
// and only `seq` differs between the streams that receive it. So the part every stream shares,
//   "vehicleId":"van-042","timestamp":"…","data":{…}}
// is serialized once per event (`sharedPart`), and each socket's frame is the concatenation of a
// constant prefix, its own seq and that shared part (`frame`). Sending an update to 10,000
// sockets costs one JSON.stringify, not 10,000. The concatenation is done in bytes: the shared
// part is encoded to UTF-8 once, and each frame is two small copies into a buffer that goes to
// the socket as it is (sent as a text frame), with no per-socket string flattening or encoding.
import type { Scope } from '../auth/scopes.ts';
import { iso } from '../clock.ts';
import type { TelemetryField } from '../telemetry/schema.ts';
import type { LatestState } from '../telemetry/store.ts';
import type { StatusChange } from '../vehicles/store.ts';

export const EVENT_TYPES = ['location', 'battery', 'diagnostics', 'status', 'events'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Index of each event type; a stream's subscriptions are a bit mask of these. */
export const STATUS = 3;
export const EVENTS = 4;
export const TELEMETRY_TYPES = [0, 1, 2] as const;
/** The types that have a current state, sent in snapshots and conflated; `events` has neither. */
export const STATE_MASK = 0b01111;

/**
 * The scope each type needs besides `streams`: a stream reads what the routes of its kind protect
 * (telemetry by `telemetry:read`, statuses, and so the vehicle ids, by `fleet:read`).
 */
const SCOPE_OF: readonly Scope[] = ['telemetry:read', 'telemetry:read', 'telemetry:read', 'fleet:read', 'events:read'];

/** The first scope that `mask`'s types need and `scopes` lacks, with the types that need it. */
export function missingScope(mask: number, scopes: ReadonlySet<string>): { scope: Scope; types: EventType[] } | undefined {
  for (const scope of new Set(SCOPE_OF)) {
    if (scopes.has(scope)) continue;
    const types = EVENT_TYPES.filter((_, i) => (mask & (1 << i)) !== 0 && SCOPE_OF[i] === scope);
    if (types.length > 0) return { scope, types };
  }
  return undefined;
}

/** The scopes a stream of these types needs, `streams` included. */
export function scopesFor(mask: number): Scope[] {
  return ['streams', ...new Set(SCOPE_OF.filter((_, i) => (mask & (1 << i)) !== 0))];
}

/** The telemetry fields each event type carries. */
export const FIELDS_OF: readonly (readonly TelemetryField[])[] = [
  ['location', 'speed', 'heading'],
  ['battery'],
  ['temperature', 'odometer', 'diagnostics'],
];

// The `events` type's messages are each one event: `{"type":"event",…}`.
const PREFIXES = EVENT_TYPES.map((type) => Buffer.from(`{"type":"${type === 'events' ? 'event' : type}","seq":`));
const COMMA = 0x2c;

export function maskOf(events: readonly string[]): number {
  let mask = 0;
  for (const event of events) {
    const index = (EVENT_TYPES as readonly string[]).indexOf(event);
    if (index >= 0) mask |= 1 << index;
  }
  return mask;
}

export function eventsOf(mask: number): EventType[] {
  return EVENT_TYPES.filter((_, index) => (mask & (1 << index)) !== 0);
}

/** The frame one socket receives: constant prefix + its seq + "," + the shared part. No JSON work. */
export function frame(type: number, seq: number, shared: Buffer): Buffer {
  const prefix = PREFIXES[type]!;
  const digits = String(seq);
  const out = Buffer.allocUnsafe(prefix.length + digits.length + 1 + shared.length);
  prefix.copy(out, 0);
  let at = prefix.length + out.write(digits, prefix.length, 'latin1');
  out[at++] = COMMA;
  shared.copy(out, at);
  return out;
}

function sharedPart(vehicleId: string, timestamp: number | string, data: string): Buffer {
  const time = typeof timestamp === 'number' ? iso(timestamp) : timestamp;
  const text = `"vehicleId":${JSON.stringify(vehicleId)},"timestamp":${JSON.stringify(time)},"data":${data}}`;
  // Its own memory, not a slice of Node's shared 8 KiB pool: a vehicle's current values keep it
  // (stream.ts `current`) for as long as they are current, and a kept slice would keep the whole
  // pool slab (with the frames cut from it since) alive. The replay log copies it into its own slabs.
  const part = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  part.write(text);
  return part;
}

/**
 * A vehicle's state for one telemetry event type: the newest value of each of its fields, and
 * the time of the newest of them. Undefined when the vehicle never reported any of them.
 */
export function telemetryPart(state: LatestState, type: number): { shared: Buffer; version: number } | undefined {
  const data: Record<string, unknown> = {};
  let newest = -Infinity;
  let version = 0;
  for (const field of FIELDS_OF[type]!) {
    const known = state.fields[field];
    if (known === undefined) continue;
    data[field] = known.value;
    if (known.at > newest) newest = known.at;
    version += known.at;
  }
  if (newest === -Infinity) return undefined;
  return { shared: sharedPart(state.vehicleId, newest, JSON.stringify(data)), version };
}

/**
 * Identifies the values of one event type in a state, to tell a real change from a duplicate or
 * a late record that changed nothing. Each field's time only ever grows, so the sum of the times
 * grows exactly when one of the fields took a newer value.
 */
export function versionOf(state: LatestState, type: number): number {
  let version = 0;
  for (const field of FIELDS_OF[type]!) version += state.fields[field]?.at ?? 0;
  return version;
}

export function statusPart(vehicleId: string, change: Pick<StatusChange, 'from' | 'to' | 'reason' | 'at'>): Buffer {
  return sharedPart(vehicleId, change.at, JSON.stringify({ from: change.from, to: change.to, reason: change.reason }));
}

/** What the event core records: one event of a vehicle (docs/API.md "Events"). */
export interface EventEnvelope {
  id: string;
  type: string;
  /** ISO 8601. */
  occurredAt: string;
  vehicleId: string;
  data: Record<string, unknown>;
}

/**
 * An event as the `events` type sends it: `data` is the envelope, `timestamp` its `occurredAt`.
 * Only the envelope's own fields are written, in their documented order.
 */
export function eventPart(envelope: EventEnvelope): Buffer {
  const { id, type, occurredAt, vehicleId, data } = envelope;
  return sharedPart(vehicleId, occurredAt, JSON.stringify({ id, type, occurredAt, vehicleId, data }));
}

export function connectedMessage(streamId: string, mask: number, interval: number, extra: { resumed: boolean; lastSeq: number }): string {
  return JSON.stringify({ type: 'connected', streamId, subscriptions: eventsOf(mask), interval, ...extra });
}

export function subscriptionsMessage(mask: number): string {
  return JSON.stringify({ type: 'subscriptions', subscriptions: eventsOf(mask) });
}

export function errorMessage(code: string, detail: string): string {
  return JSON.stringify({ type: 'error', code, detail });
}

export type ClientMessage = { ok: true; type: 'subscribe' | 'unsubscribe'; mask: number } | { ok: false; code: string; detail: string };

/** Judges one client message: `{"type":"subscribe"|"unsubscribe","events":[...]}`, nothing else. */
export function parseClientMessage(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): ClientMessage {
  if (isBinary) return { ok: false, code: 'invalid-message', detail: 'Messages are JSON text frames.' };
  let message: unknown;
  try {
    message = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]).toString('utf8'));
  } catch {
    return { ok: false, code: 'invalid-message', detail: 'The message is not valid JSON.' };
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message)) {
    return { ok: false, code: 'invalid-message', detail: 'A message is a JSON object with a "type".' };
  }
  const { type, events, ...rest } = message as Record<string, unknown>;
  if (type !== 'subscribe' && type !== 'unsubscribe') {
    return { ok: false, code: 'unknown-type', detail: 'The "type" must be "subscribe" or "unsubscribe".' };
  }
  const extra = Object.keys(rest);
  if (extra.length > 0) {
    return { ok: false, code: 'invalid-message', detail: `Unknown field ${extra.map((k) => JSON.stringify(k)).join(', ')}; a ${type} message has "type" and "events".` };
  }
  if (
    !Array.isArray(events) || events.length === 0 ||
    !events.every((e) => typeof e === 'string' && (EVENT_TYPES as readonly string[]).includes(e)) ||
    new Set(events).size !== events.length
  ) {
    return { ok: false, code: 'invalid-events', detail: `"events" must be a non-empty array of unique values among ${EVENT_TYPES.join(', ')}.` };
  }
  return { ok: true, type, mask: maskOf(events as string[]) };
}
