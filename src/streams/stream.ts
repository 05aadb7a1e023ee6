// A live stream as this node holds it, and the small shapes the parts of src/streams/ share:
// what a socket looks like to them (`Sink`), one serialized update (`Entry`), and the index of
// an organization's streams by vehicle.
//
// Who changes which fields: registry.ts the lifecycle (status, expiry, the socket), delivery.ts
// the sending state (pending, lastSent, events, the flush), snapshot.ts the snapshot in progress.
import type { Clock, Timer } from '../clock.ts';
import type { StoredRecord } from '../telemetry/store.ts';
import type { StreamDefinition } from './directory.ts';
import { FIELDS_OF, TELEMETRY_TYPES } from './messages.ts';
import { SeqRing } from './replay.ts';
import type { StreamSettings } from './settings.ts';

/** Where a stream's messages go: its socket, seen through the few things the streams need. */
export interface Sink {
  /** False while the consumer is behind: updates are then held as newest values. */
  readonly ready: boolean;
  readonly bufferedAmount: number;
  /** The credential the socket attached with (the stream's own, for a ticket). */
  readonly credentialId: string;
  /** A text frame (a JSON message, as a string or its UTF-8 bytes). */
  send(frame: string | Buffer): void;
  close(code: number, reason: string): void;
}

/** One update serialized once: the current value of one type of one vehicle, or one event. */
export interface Entry {
  type: number;
  /** UTF-8 of `"vehicleId":…,"timestamp":…,"data":{…}}` (messages.ts). */
  shared: Buffer;
  /** Tells a changed value from the same one (see messages.ts versionOf). */
  version: number;
  /** Its number in the EventLog (renewed if it outlives the log's window). */
  g: number;
}

export interface Stream {
  readonly id: string;
  readonly organizationId: string;
  /** The credential that created it; a ticket acts as that credential, and the stream ends with it. */
  readonly credentialId: string;
  /** That credential's scopes at creation: what a ticket's socket may subscribe to. */
  readonly scopes: readonly string[];
  /** When that credential expires (null: never); the stream ends then. */
  readonly credentialExpiresAt: number | null;
  /** The vehicle groups that credential was limited to; null: the whole organization. */
  readonly groupIds: readonly string[] | null;
  /**
   * For a stream limited to groups: the vehicles in them now, read again whenever memberships
   * change (registry.refreshScopes); nothing of another vehicle is sent. null: no limit.
   */
  visible: Set<string> | null;
  /** Set when created on one vehicle's path. */
  readonly vehicleId: string | undefined;
  /** The vehicles it covers; null: every vehicle of the organization, present and future. */
  readonly vehicleIds: readonly string[] | null;
  readonly interval: number;
  readonly createdAt: number;
  mask: number;
  status: 'connected' | 'closed';
  /** When it expires unless a socket attaches; null while attached or once closed. */
  expiresAt: number | null;
  closedAt: number | null;
  sink: Sink | undefined;
  /** From the first attach on, messages get seqs and are kept for replay, attached or not. */
  recording: boolean;
  replay: SeqRing;
  /** Work in progress that updates must wait for (a snapshot being read, a replay being fetched). */
  hold: number;
  /** key (type digit + vehicle id) → when it may be sent (SNAPSHOT: at once, unthrottled). */
  pending: Map<string, number>;
  /** key → when the last message for it was sent (throttled streams only). */
  lastSent: Map<string, number>;
  /** Events (the `events` type) waiting while the stream is not ready: never conflated. */
  events: Entry[];
  flushAt: number;
  flushTimer: Timer | undefined;
  /** A flush is scheduled for the next turn of the event loop (sending in chunks). */
  flushQueued: boolean;
  /** A snapshot is being read; `snapshotWanted` holds the types asked for meanwhile. */
  snapshotRunning: boolean;
  snapshotWanted: number;
  /** The expiry (unattached, detached) or, once closed, when it is forgotten. */
  timer: Timer | undefined;
  /** Ends the stream when its credential expires. */
  lifetimeTimer: Timer | undefined;
}

/** A pending key's due time meaning "part of a snapshot": sent at once, not counted as a throttled send. */
export const SNAPSHOT = -1;

export interface OrganizationIndex {
  /** Streams on every vehicle of the organization. */
  fleet: Set<Stream>;
  /** Streams on listed vehicles, by vehicle. */
  byVehicle: Map<string, Set<Stream>>;
  /** The newest entry of each state type of each vehicle some stream covers. */
  current: Map<string, (Entry | undefined)[]>;
  open: number;
}

export interface NewStream {
  vehicleId?: string | undefined;
  vehicleIds?: string[] | null | undefined;
  mask: number;
  interval: number;
}

/** Calls `fn` at `at` by the clock. */
export function callAt(clock: Clock, at: number, fn: () => void): Timer {
  return clock.after(at - clock.now(), fn);
}

export const keyOf = (type: number, vehicleId: string) => String.fromCharCode(48 + type) + vehicleId;

/** Whether the stream may carry the vehicle: always, unless it is limited to groups the vehicle is in none of. */
export const carries = (stream: Stream, vehicleId: string) => stream.visible === null || stream.visible.has(vehicleId);

/** A stream in its first state: open, unattached, nothing sent. */
export function newStream(definition: StreamDefinition, settings: StreamSettings, scopes: readonly string[]): Stream {
  return {
    id: definition.id,
    organizationId: definition.organizationId,
    credentialId: definition.credentialId,
    scopes,
    credentialExpiresAt: definition.credentialExpiresAt ?? null,
    groupIds: definition.groupIds ?? null,
    visible: definition.groupIds === undefined || definition.groupIds === null ? null : new Set(),
    vehicleId: definition.vehicleId ?? undefined,
    vehicleIds: definition.vehicleIds,
    interval: definition.interval,
    createdAt: definition.createdAt,
    mask: definition.mask,
    status: 'connected',
    expiresAt: null,
    closedAt: null,
    sink: undefined,
    recording: false,
    replay: new SeqRing(settings.replayMaxMessages),
    hold: 0,
    pending: new Map(),
    lastSent: new Map(),
    events: [],
    flushAt: Infinity,
    flushTimer: undefined,
    flushQueued: false,
    snapshotRunning: false,
    snapshotWanted: 0,
    timer: undefined,
    lifetimeTimer: undefined,
  };
}

/** For each vehicle in the records, the event types their fields belong to (a bit mask). */
export function typesTouched(records: readonly StoredRecord[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const record of records) {
    let mask = out.get(record.vehicleId) ?? 0;
    for (const type of TELEMETRY_TYPES) {
      if ((mask & (1 << type)) !== 0) continue;
      for (const field of FIELDS_OF[type]!) {
        if (record.data[field] !== undefined) {
          mask |= 1 << type;
          break;
        }
      }
    }
    out.set(record.vehicleId, mask);
  }
  return out;
}
