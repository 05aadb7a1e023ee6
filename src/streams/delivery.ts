// Fan-out: what the services report (telemetry committed, a status changed, an event recorded)
// reaches the streams that cover the vehicle, with throttling, conflation and replay.
//
// The path of one update: `telemetry()` finds the streams of the organization that cover the
// vehicle (an index per vehicle, plus the fleet-wide streams), serializes each changed type once
// (messages.ts), appends it to the shared EventLog, and hands it to each stream: sent at once
// (interval 0), or held as "pending" under a key (type, vehicle) whose flush sends whatever is
// newest then. A stream whose consumer is behind, or that is reading a snapshot, holds updates
// the same way, so nothing queues per update. Events (the `events` type) are never conflated:
// each is sent, or waits in order in `stream.events` while the stream is not ready.
//
// A flush sends at most FLUSH_CHUNK messages, then yields to the event loop: a snapshot of
// thousands of vehicles is sent in slices, between which other sockets and requests are served.
import type { Clock } from '../clock.ts';
import type { LatestState, StoredRecord } from '../telemetry/store.ts';
import type { StatusChange } from '../vehicles/store.ts';
import type { StreamCluster } from './registry.ts';
import { EVENTS, type EventEnvelope, STATUS, TELEMETRY_TYPES, eventPart, frame, statusPart, telemetryPart, versionOf } from './messages.ts';
import type { Registry } from './registry.ts';
import type { EventLog } from './replay.ts';
import type { StreamSettings } from './settings.ts';
import { type Entry, type OrganizationIndex, SNAPSHOT, type Stream, callAt, carries, keyOf, typesTouched } from './stream.ts';

export type StatusUpdate = Pick<StatusChange, 'from' | 'to' | 'reason' | 'at'>;

/** Messages one flush sends before it yields to the event loop. */
export const FLUSH_CHUNK = 256;

export type Delivery = ReturnType<typeof createDelivery>;

export function createDelivery(deps: { registry: Registry; log: EventLog; clock: Clock; settings: StreamSettings; cluster: StreamCluster | undefined }) {
  const { registry, log, clock, settings, cluster } = deps;

  function currentOf(index: OrganizationIndex, vehicleId: string): (Entry | undefined)[] {
    let entries = index.current.get(vehicleId);
    if (entries === undefined) {
      entries = [undefined, undefined, undefined, undefined];
      index.current.set(vehicleId, entries);
    }
    return entries;
  }

  const ready = (stream: Stream) => stream.hold === 0 && (stream.sink === undefined || stream.sink.ready);

  /** Gives the message its seq, keeps it for replay, sends it if a socket is attached. */
  function emit(stream: Stream, entry: Entry): void {
    if (!log.has(entry.g)) entry.g = log.append(entry.type, entry.shared, clock.now());
    const seq = stream.replay.push(entry.g, log);
    const message = frame(entry.type, seq, entry.shared);
    cluster?.directory.record(stream.id, seq, message);
    stream.sink?.send(message);
  }

  function deliver(stream: Stream, vehicleId: string, entry: Entry): void {
    if (!stream.recording) return; // before the first attach: the snapshot will cover it
    if (stream.interval === 0 && stream.pending.size === 0 && ready(stream)) {
      emit(stream, entry);
      return;
    }
    const key = keyOf(entry.type, vehicleId);
    if (stream.pending.has(key)) return; // the flush sends whatever is newest then
    const now = clock.now();
    const last = stream.lastSent.get(key);
    const due = last === undefined || stream.interval === 0 ? now : last + stream.interval;
    if (due <= now && ready(stream)) {
      if (stream.interval > 0) stream.lastSent.set(key, now);
      emit(stream, entry);
      return;
    }
    stream.pending.set(key, due);
    if (due > now) armFlush(stream, due);
  }

  /** An event: sent now, or after those already waiting; never dropped for a newer one. */
  function deliverEvent(stream: Stream, entry: Entry): void {
    if (!stream.recording) return; // before the first attach: the feed has it
    if (stream.events.length === 0 && ready(stream)) {
      emit(stream, entry);
      return;
    }
    stream.events.push(entry);
    // A consumer this far behind is closed as one that stays behind would be: the events it
    // missed get seqs once it is gone (the flush after the detach), so a resume replays them.
    if (stream.events.length > settings.replayMaxMessages) stream.sink?.close(1013, 'slow consumer: too far behind');
  }

  function armFlush(stream: Stream, due: number): void {
    if (stream.flushTimer !== undefined && stream.flushAt <= due) return;
    stream.flushTimer?.cancel();
    stream.flushAt = due;
    stream.flushTimer = callAt(clock, due, () => flush(stream));
  }

  function flushSoon(stream: Stream): void {
    if (stream.flushQueued) return;
    stream.flushQueued = true;
    setImmediate(() => {
      stream.flushQueued = false;
      flush(stream);
    }).unref();
  }

  /**
   * Sends what waits and is due: events in order, then each held key with the newest value of its
   * type and vehicle. Stops while the stream is not ready (the consumer's resume or the snapshot's
   * end calls it again), and after FLUSH_CHUNK messages (it goes on in the next turn).
   */
  function flush(stream: Stream): void {
    if (stream.flushTimer !== undefined) {
      stream.flushTimer?.cancel();
      stream.flushTimer = undefined;
    }
    stream.flushAt = Infinity;
    if (stream.status !== 'connected' || !stream.recording) return;
    let budget = FLUSH_CHUNK;
    while (stream.events.length > 0) {
      if (!ready(stream)) return;
      if (budget-- === 0) return flushSoon(stream);
      emit(stream, stream.events.shift()!);
    }
    if (stream.pending.size === 0) return;
    const index = registry.organization(stream.organizationId);
    const now = clock.now();
    let next = Infinity;
    for (const [key, due] of stream.pending) {
      if (!ready(stream)) return;
      if (due > now) {
        if (due < next) next = due;
        continue;
      }
      if (budget-- === 0) return flushSoon(stream);
      stream.pending.delete(key);
      const vehicleId = key.slice(1);
      const entry = carries(stream, vehicleId) ? index?.current.get(vehicleId)?.[key.charCodeAt(0) - 48] : undefined;
      if (entry === undefined) continue;
      if (stream.interval > 0 && due !== SNAPSHOT) stream.lastSent.set(key, now);
      emit(stream, entry);
    }
    if (next !== Infinity) armFlush(stream, next);
  }

  function deliverAll(index: OrganizationIndex, vehicleId: string, entry: Entry): void {
    const bit = 1 << entry.type;
    const send = entry.type === EVENTS ? deliverEvent : (stream: Stream, e: Entry) => deliver(stream, vehicleId, e);
    const listed = index.byVehicle.get(vehicleId);
    if (listed !== undefined) for (const stream of listed) if ((stream.mask & bit) !== 0 && carries(stream, vehicleId)) send(stream, entry);
    for (const stream of index.fleet) if ((stream.mask & bit) !== 0 && carries(stream, vehicleId)) send(stream, entry);
  }

  const covers = (index: OrganizationIndex, vehicleId: string) => index.fleet.size > 0 || index.byVehicle.has(vehicleId);

  /** The entry for a vehicle's current values of one type: the cached one, or a new one if they changed. */
  function telemetryEntry(index: OrganizationIndex, state: LatestState, type: number, now: number): { entry: Entry; fresh: boolean } | undefined {
    const current = currentOf(index, state.vehicleId);
    const cached = current[type];
    if (cached !== undefined && cached.version === versionOf(state, type)) return { entry: cached, fresh: false };
    const part = telemetryPart(state, type);
    if (part === undefined) return undefined;
    const entry: Entry = { type, shared: part.shared, version: part.version, g: log.append(type, part.shared, now) };
    current[type] = entry;
    return { entry, fresh: true };
  }

  function statusEntry(index: OrganizationIndex, vehicleId: string, change: StatusUpdate, now: number): Entry {
    const current = currentOf(index, vehicleId);
    const cached = current[STATUS];
    if (cached !== undefined && cached.version === change.at) return cached;
    const shared = statusPart(vehicleId, change);
    const entry: Entry = { type: STATUS, shared, version: change.at, g: log.append(STATUS, shared, now) };
    current[STATUS] = entry;
    return entry;
  }

  /** Records were committed (telemetry service `events.telemetry`), from HTTP or MQTT alike. */
  function telemetry(organizationId: string, records: readonly StoredRecord[], states: readonly LatestState[]): void {
    const index = registry.organization(organizationId);
    if (index === undefined) return;
    let touched: Map<string, number> | undefined;
    deliverStates(index, states, (vehicleId) => (touched ??= typesTouched(records)).get(vehicleId) ?? 0);
  }

  /** Another node committed telemetry: the states it stored, with the event types each record touched. */
  function remoteTelemetry(organizationId: string, states: readonly LatestState[], touched: readonly number[]): void {
    const index = registry.organization(organizationId);
    if (index === undefined) return;
    const masks = new Map(states.map((state, i) => [state.vehicleId, touched[i] ?? 0]));
    deliverStates(index, states, (vehicleId) => masks.get(vehicleId) ?? 0);
  }

  function deliverStates(index: OrganizationIndex, states: readonly LatestState[], touchedOf: (vehicleId: string) => number): void {
    const now = clock.now();
    for (const state of states) {
      if (!covers(index, state.vehicleId)) continue;
      const mask = touchedOf(state.vehicleId);
      for (const type of TELEMETRY_TYPES) {
        if ((mask & (1 << type)) === 0) continue;
        const found = telemetryEntry(index, state, type, now);
        if (found?.fresh === true) deliverAll(index, state.vehicleId, found.entry);
      }
    }
  }

  /** A status changed (vehicle service), or the first telemetry activated a vehicle. */
  function statusChanged(organizationId: string, vehicleId: string, change: StatusUpdate): void {
    const index = registry.organization(organizationId);
    if (index === undefined || !covers(index, vehicleId)) return;
    deliverAll(index, vehicleId, statusEntry(index, vehicleId, change, clock.now()));
  }

  /** An event was recorded (the event core, on this node or another): sent to the streams of its vehicle. */
  function event(organizationId: string, envelope: EventEnvelope): void {
    const index = registry.organization(organizationId);
    // Events without a vehicle (a webhook test) belong to no stream.
    if (index === undefined || typeof envelope.vehicleId !== 'string' || !covers(index, envelope.vehicleId)) return;
    const shared = eventPart(envelope);
    deliverAll(index, envelope.vehicleId, { type: EVENTS, shared, version: 0, g: log.append(EVENTS, shared, clock.now()) });
  }

  /** A vehicle was deleted: forget its cached values. */
  function forgetVehicle(organizationId: string, vehicleId: string): void {
    registry.organization(organizationId)?.current.delete(vehicleId);
  }

  return { ready, emit, flush, telemetryEntry, statusEntry, telemetry, remoteTelemetry, statusChanged, event, forgetVehicle };
}
