// Live streams (docs/API.md "Live streams"): the registry (create, tickets, expiry, quota), and the fan-out of
// telemetry and status events to the streams that want them, with throttling, conflation and
// replay. Knows nothing of HTTP or of the WebSocket library: a socket is a `Sink`.
//
// The path of one event: the telemetry service commits records → `telemetry()` finds the streams
// of the organization that cover the vehicle (an index per vehicle, plus the fleet-wide streams),
// serializes each changed event type once (messages.ts), appends it to the shared EventLog, and
// hands it to each stream: sent at once (interval 0), or held as "pending" under a key
// (type, vehicle) whose flush sends whatever is newest then. A stream whose consumer is behind
// (or that is sending its snapshot) holds updates the same way, so nothing queues per update.
import { createHash, randomBytes } from 'node:crypto';
import type { Principal } from '../auth/scopes.ts';
import { type Clock, systemClock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { quotaExceeded } from '../quotas.ts';
import type { LatestView } from '../telemetry/latest.ts';
import type { LatestState, StoredRecord } from '../telemetry/store.ts';
import type { StatusChange, VehicleRecord, VehicleStore } from '../vehicles/store.ts';
import { FIELDS_OF, STATUS, TELEMETRY_TYPES, connectedMessage, frame, statusPart, subscriptionsMessage, telemetryPart, versionOf } from './messages.ts';
import type { StreamDirectory, StreamEntry } from './directory.ts';
import { EventLog, SeqRing } from './replay.ts';
import { DEFAULT_STREAM_SETTINGS, type StreamSettings } from './settings.ts';

/** Where a stream's messages go: its socket, seen through the few things the hub needs. */
export interface Sink {
  /** False while the consumer is behind: updates are then held as newest values. */
  readonly ready: boolean;
  readonly bufferedAmount: number;
  /** A text frame (a JSON message, as a string or its UTF-8 bytes). */
  send(frame: string | Buffer): void;
  close(code: number, reason: string): void;
}

/** One event serialized once: the current value of one event type of one vehicle. */
interface Entry {
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
  /** The credential that created it; a ticket acts as that credential. */
  readonly credentialId: string;
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
  /** Snapshots in progress: updates are held until they are sent. */
  hold: number;
  /** key (type digit + vehicle id) → when it may be sent. */
  pending: Map<string, number>;
  /** key → when the last message for it was sent (throttled streams only). */
  lastSent: Map<string, number>;
  flushAt: number;
  flushTimer: NodeJS.Timeout | undefined;
  timer: NodeJS.Timeout | undefined;
}

interface OrganizationIndex {
  /** Streams on every vehicle of the organization. */
  fleet: Set<Stream>;
  /** Streams on listed vehicles, by vehicle. */
  byVehicle: Map<string, Set<Stream>>;
  /** The newest entry of each event type of each vehicle some stream covers. */
  current: Map<string, (Entry | undefined)[]>;
  open: number;
}

export interface NewStream {
  vehicleId?: string | undefined;
  vehicleIds?: string[] | null | undefined;
  events: string[];
  mask: number;
  interval: number;
}

export type StreamHub = ReturnType<typeof createStreamHub>;

/** How long the directory keeps an attached stream's entry unless it is written again. */
const ATTACHED_TTL_MS = 3_600_000;

const keyOf = (type: number, vehicleId: string) => String.fromCharCode(48 + type) + vehicleId;
const hashTicket = (ticket: string) => createHash('sha256').update(ticket).digest('base64url');

/** Cluster mode: where the other nodes find this node's streams, and how they hear of a change. */
export interface StreamCluster {
  directory: StreamDirectory;
  /** This node's name. */
  node: string;
  /** This node took a stream over (the node that held it lets go), or ended one held elsewhere. */
  announce(event: 'taken' | 'ended', streamId: string): void;
  log: { debug(obj: object, msg: string): void };
}

export function createStreamHub(deps: {
  vehicles: VehicleStore;
  latest: LatestView;
  clock?: Clock;
  maxStreams: number;
  settings?: Partial<StreamSettings>;
  cluster?: StreamCluster;
}) {
  const cluster = deps.cluster;
  const clock = deps.clock ?? systemClock;
  const settings: StreamSettings = { ...DEFAULT_STREAM_SETTINGS, ...deps.settings };
  const log = new EventLog({ windowMs: settings.replayWindowMs, maxEntries: settings.logMaxEntries, maxBytes: settings.logMaxBytes });
  const streams = new Map<string, Stream>();
  const organizations = new Map<string, OrganizationIndex>();
  const tickets = new Map<string, { streamId: string; expiresAt: number }>();
  let stopped = false;

  // Tickets nobody redeemed leave once expired.
  const sweeper = setInterval(() => {
    const now = clock.now();
    for (const [hash, ticket] of tickets) {
      if (ticket.expiresAt <= now) tickets.delete(hash);
    }
  }, Math.min(settings.attachWindowMs, 30_000));
  sweeper.unref();

  // Cluster mode: an attached stream's directory entry lives an hour (ATTACHED_TTL_MS) and is
  // written again every ten minutes, so a stream attached for days stays reachable from every node.
  const refresher = cluster === undefined ? undefined : setInterval(() => {
    for (const stream of streams.values()) if (stream.status === 'connected' && stream.sink !== undefined) void publish(stream);
  }, ATTACHED_TTL_MS / 6);
  refresher?.unref();
  // Cluster mode: the streams held here keep their places in their organizations' quotas.
  const leases = cluster === undefined ? undefined : setInterval(() => {
    const held = [...streams.values()].filter((stream) => stream.status === 'connected');
    if (held.length === 0) return;
    cluster.directory.renewOpen(held, settings.openLeaseMs).catch((error: unknown) => {
      cluster.log.debug({ err: error }, 'live stream: the directory is unavailable; quota leases not renewed');
    });
  }, settings.openLeaseMs / 3);
  leases?.unref();

  function indexOf(organizationId: string): OrganizationIndex {
    let index = organizations.get(organizationId);
    if (index === undefined) {
      index = { fleet: new Set(), byVehicle: new Map(), current: new Map(), open: 0 };
      organizations.set(organizationId, index);
    }
    return index;
  }

  function currentOf(index: OrganizationIndex, vehicleId: string): (Entry | undefined)[] {
    let entries = index.current.get(vehicleId);
    if (entries === undefined) {
      entries = [undefined, undefined, undefined, undefined];
      index.current.set(vehicleId, entries);
    }
    return entries;
  }

  // ---- registry -------------------------------------------------------------------------------

  async function create(who: Principal, spec: NewStream): Promise<{ stream: Stream; ticket: string; ticketExpiresAt: number }> {
    const ids = spec.vehicleId !== undefined ? [spec.vehicleId] : spec.vehicleIds ?? null;
    if (ids !== null) {
      const found = await Promise.all(ids.map((id) => deps.vehicles.get(who.organizationId, id)));
      const missing = ids.filter((_, i) => found[i] === undefined);
      if (missing.length > 0) {
        throw new AppError('vehicle-not-found', `No vehicle ${missing.map((id) => `"${id}"`).join(', ')} in this organization.`);
      }
    }
    const id = `str_${randomBytes(12).toString('base64url')}`;
    await claimOpen(who.organizationId, id, true);
    const now = clock.now();
    const stream: Stream = {
      id,
      organizationId: who.organizationId,
      credentialId: who.credentialId,
      vehicleId: spec.vehicleId,
      vehicleIds: ids,
      interval: spec.interval,
      createdAt: now,
      mask: spec.mask,
      status: 'connected',
      expiresAt: now + settings.attachWindowMs,
      closedAt: null,
      sink: undefined,
      recording: false,
      replay: new SeqRing(settings.replayMaxMessages),
      hold: 0,
      pending: new Map(),
      lastSent: new Map(),
      flushAt: Infinity,
      flushTimer: undefined,
      timer: undefined,
    };
    register(stream);
    expireAt(stream, stream.expiresAt!);
    // Written before the answer, so that any node can find the stream as soon as its creator can.
    await publish(stream);
    // The first ticket expires exactly when the unattached stream does.
    const { ticket, expiresAt } = await issueTicket(stream, stream.expiresAt!);
    return { stream, ticket, ticketExpiresAt: expiresAt };
  }

  /**
   * Takes a place in the organization's quota of open streams for the stream, or refuses with
   * `quota-exceeded`: among this node's streams, and in cluster mode the whole cluster's (the
   * directory's count). While the directory is away, this node's count is all there is. `fresh`:
   * a new stream, whose place is given back if refused after all (one taken over keeps the place
   * its holder has).
   */
  async function claimOpen(organizationId: string, streamId: string, fresh: boolean): Promise<void> {
    const full = () => (organizations.get(organizationId)?.open ?? 0) >= deps.maxStreams;
    if (full()) throw quotaExceeded(deps.maxStreams, 'open streams');
    if (cluster === undefined) return;
    const counted = await cluster.directory.claimOpen(organizationId, streamId, deps.maxStreams, settings.openLeaseMs).catch((error: unknown) => {
      cluster.log.debug({ err: error, streamId }, 'live stream: the directory is unavailable; the quota counts this node\'s streams only');
      return true;
    });
    if (!counted) throw quotaExceeded(deps.maxStreams, 'open streams');
    // This node's count again: another request may have taken the last place meanwhile.
    if (full()) {
      if (fresh) releaseOpen(organizationId, streamId);
      throw quotaExceeded(deps.maxStreams, 'open streams');
    }
  }

  /** The stream no longer counts in its organization's quota anywhere (cluster mode). */
  function releaseOpen(organizationId: string, streamId: string): void {
    cluster?.directory.releaseOpen(organizationId, streamId).catch((error: unknown) => {
      cluster.log.debug({ err: error, streamId }, 'live stream: the directory is unavailable; its quota lease runs out by itself');
    });
  }

  function register(stream: Stream): void {
    const index = indexOf(stream.organizationId);
    streams.set(stream.id, stream);
    index.open++;
    if (stream.vehicleIds === null) index.fleet.add(stream);
    else {
      for (const id of stream.vehicleIds) {
        let set = index.byVehicle.get(id);
        if (set === undefined) index.byVehicle.set(id, (set = new Set()));
        set.add(stream);
      }
    }
  }

  /** Takes the stream out of the organization's index (it ended, or another node took it). */
  function unregister(stream: Stream): void {
    const index = organizations.get(stream.organizationId);
    if (index === undefined) return;
    index.open--;
    index.fleet.delete(stream);
    for (const id of stream.vehicleIds ?? []) {
      const set = index.byVehicle.get(id);
      set?.delete(stream);
      if (set?.size === 0) {
        index.byVehicle.delete(id);
        if (index.fleet.size === 0) index.current.delete(id);
      }
    }
    if (index.open === 0) organizations.delete(stream.organizationId);
  }

  // ---- cluster: the directory ------------------------------------------------------------------

  function entryOf(stream: Stream): StreamEntry {
    return {
      id: stream.id, organizationId: stream.organizationId, credentialId: stream.credentialId, vehicleId: stream.vehicleId,
      vehicleIds: stream.vehicleIds === null ? null : [...stream.vehicleIds], interval: stream.interval, mask: stream.mask,
      createdAt: stream.createdAt, node: cluster?.node ?? '', attached: stream.sink !== undefined, expiresAt: stream.expiresAt,
      closedAt: stream.closedAt,
    };
  }

  /**
   * Tells the directory how the stream stands. Best effort: while the directory (Redis) is away,
   * streams work on their own node, and only a reconnection to another node fails.
   */
  function publish(stream: Stream): Promise<void> {
    if (cluster === undefined) return Promise.resolve();
    // An attached stream is kept an hour, written again at every attach and by the refresher;
    // otherwise as long as it may wait.
    const ttl = stream.status === 'closed' ? settings.closedRetentionMs
      : stream.expiresAt === null ? ATTACHED_TTL_MS : stream.expiresAt - clock.now() + settings.attachWindowMs;
    return cluster.directory.put(entryOf(stream), ttl).catch((error: unknown) => {
      cluster.log.debug({ err: error, streamId: stream.id }, 'live stream: the directory is unavailable');
    });
  }

  /** A stream another node held: this node takes it over (a client reconnected here). */
  async function takeOver(entry: StreamEntry): Promise<Stream | undefined> {
    const held = streams.get(entry.id);
    if (held !== undefined) return held;
    if (entry.closedAt !== null || stopped) return undefined;
    await claimOpen(entry.organizationId, entry.id, false);
    // Taken over here by a concurrent attach meanwhile: one stream, counted once.
    const taken = streams.get(entry.id);
    if (taken !== undefined) return taken;
    const stream: Stream = {
      id: entry.id, organizationId: entry.organizationId, credentialId: entry.credentialId, vehicleId: entry.vehicleId ?? undefined,
      vehicleIds: entry.vehicleIds, interval: entry.interval, createdAt: entry.createdAt, mask: entry.mask,
      status: 'connected', expiresAt: null, closedAt: null, sink: undefined, recording: false,
      replay: new SeqRing(settings.replayMaxMessages), hold: 0, pending: new Map(), lastSent: new Map(),
      flushAt: Infinity, flushTimer: undefined, timer: undefined,
    };
    register(stream);
    expireAt(stream, clock.now() + settings.attachWindowMs);
    cluster?.announce('taken', stream.id);
    return stream;
  }

  /** Another node took the stream over: its socket here, if any, is closed, and this node forgets it. */
  function release(streamId: string): void {
    const stream = streams.get(streamId);
    if (stream === undefined || stream.status !== 'connected') return;
    unregister(stream);
    streams.delete(streamId);
    clearTimeout(stream.timer);
    clearTimeout(stream.flushTimer);
    const sink = stream.sink;
    stream.sink = undefined;
    sink?.close(4000, 'replaced by a newer connection');
  }

  /**
   * The stream wherever it is: held here, or (cluster mode) known to the directory. Another
   * organization's is undefined, as a missing one.
   */
  async function locate(organizationId: string, streamId: string): Promise<{ stream: Stream } | { entry: StreamEntry } | undefined> {
    const local = find(organizationId, streamId);
    if (local !== undefined || cluster === undefined) return local === undefined ? undefined : { stream: local };
    const entry = await cluster.directory.get(streamId).catch(() => undefined);
    return entry?.organizationId === organizationId ? { entry } : undefined;
  }

  /** The last seq a stream held elsewhere has sent, for its details. */
  async function lastSeqOf(streamId: string): Promise<number> {
    return cluster === undefined ? 0 : cluster.directory.lastSeq(streamId).catch(() => 0);
  }

  /** Ends a stream held by another node: the directory marks it closed, and its node ends it. */
  async function endElsewhere(entry: StreamEntry): Promise<void> {
    if (cluster === undefined || entry.closedAt !== null) return;
    const now = clock.now();
    await cluster.directory.put({ ...entry, attached: false, expiresAt: null, closedAt: now }, settings.closedRetentionMs);
    releaseOpen(entry.organizationId, entry.id);
    cluster.announce('ended', entry.id);
  }

  /** Another node ended one of this node's streams (DELETE there). */
  function endedElsewhere(streamId: string): void {
    const stream = streams.get(streamId);
    if (stream !== undefined) end(stream, 1000, 'stream ended', false);
  }

  /** The stream, if it exists and belongs to the organization (closed ones included, for a while). */
  function find(organizationId: string, streamId: string): Stream | undefined {
    const stream = streams.get(streamId);
    return stream?.organizationId === organizationId ? stream : undefined;
  }

  /**
   * A single-use ticket to attach a socket, valid for the attach window. In cluster mode the
   * directory holds it too, so that it works on any node, once.
   */
  async function issueTicket(stream: Stream | StreamEntry, expiresAt = clock.now() + settings.attachWindowMs): Promise<{ ticket: string; expiresAt: number }> {
    const ticket = randomBytes(32).toString('base64url');
    const hash = hashTicket(ticket);
    if (streams.has(stream.id)) tickets.set(hash, { streamId: stream.id, expiresAt });
    if (cluster !== undefined) {
      const stored = cluster.directory.putTicket(hash, stream.id, expiresAt);
      // A ticket for a stream held elsewhere exists only in the directory: it must be there.
      if (!streams.has(stream.id)) await stored;
      else await stored.catch(() => undefined);
    }
    return { ticket, expiresAt };
  }

  /**
   * The principal a ticket stands for, or undefined when it is unknown, expired, used, or for
   * another stream. Presented once, it is gone: it cannot be tried again, even on a refusal.
   */
  async function redeemTicket(streamId: string, ticket: string): Promise<Principal | undefined> {
    const hash = hashTicket(ticket);
    let found = tickets.get(hash);
    tickets.delete(hash);
    if (cluster !== undefined) {
      // The directory decides, so that a ticket is redeemed once in the whole cluster. While it is
      // away, this node's own tickets still work here (a reconnection elsewhere waits for it).
      try {
        const id = await cluster.directory.takeTicket(hash);
        found = id === undefined ? undefined : { streamId: id, expiresAt: found?.expiresAt ?? Infinity };
      } catch {
        // found stays this node's own record, if any
      }
    }
    if (found === undefined || found.streamId !== streamId || found.expiresAt <= clock.now()) return undefined;
    let stream = streams.get(found.streamId);
    if (stream === undefined && cluster !== undefined) {
      const entry = await cluster.directory.get(found.streamId).catch(() => undefined);
      if (entry !== undefined) stream = await takeOver(entry);
    }
    if (stream === undefined || stream.status !== 'connected') return undefined;
    return { organizationId: stream.organizationId, credentialId: stream.credentialId, scopes: new Set(['streams']), platform: false };
  }

  function expireAt(stream: Stream, at: number): void {
    clearTimeout(stream.timer);
    stream.expiresAt = at;
    stream.timer = setTimeout(() => void expire(stream), Math.max(0, at - clock.now()));
    stream.timer.unref();
  }

  async function expire(stream: Stream): Promise<void> {
    // In a cluster, another node may have taken it over just now: then it is not this node's to end.
    const entry = cluster === undefined ? undefined : await cluster.directory.get(stream.id).catch(() => undefined);
    if (entry !== undefined && entry.node !== cluster!.node && entry.closedAt === null) {
      release(stream.id);
      return;
    }
    end(stream, 1000, 'stream expired');
  }

  /**
   * Ends a stream: its socket is closed with `code`, it stays readable as `closed` for a while.
   * `announce`: tell the other nodes (false when one of them ended it).
   */
  function end(stream: Stream, code = 1000, reason = 'stream ended', announce = true): void {
    if (stream.status === 'closed') return;
    stream.status = 'closed';
    stream.closedAt = clock.now();
    stream.expiresAt = null;
    unregister(stream);
    // Ended elsewhere (announce false): that node has given its place back.
    if (announce) {
      releaseOpen(stream.organizationId, stream.id);
      void publish(stream);
    }
    // Its unused tickets are refused from now on (the stream is closed) and swept once expired.
    clearTimeout(stream.flushTimer);
    stream.pending.clear();
    stream.lastSent.clear();
    stream.replay.clear();
    const sink = stream.sink;
    stream.sink = undefined;
    sink?.close(code, reason);
    clearTimeout(stream.timer);
    stream.timer = setTimeout(() => streams.delete(stream.id), settings.closedRetentionMs);
    stream.timer.unref();
  }

  // ---- sockets --------------------------------------------------------------------------------

  /**
   * A socket attaches: `connected`, then the messages after `lastSeq` if they are all still held
   * (a resumed stream), else a snapshot of the current state; then live updates. A socket already
   * attached is replaced (the client reconnected before the server noticed the old one drop).
   */
  function attach(stream: Stream, sink: Sink, lastSeq: number | undefined): void {
    if (stream.status !== 'connected' || stopped) {
      sink.close(stopped ? 1001 : 1000, stopped ? 'server shutting down' : 'stream ended');
      return;
    }
    const previous = stream.sink;
    stream.sink = sink;
    previous?.close(4000, 'replaced by a newer connection');
    clearTimeout(stream.timer);
    stream.timer = undefined;
    stream.expiresAt = null;
    void publish(stream);

    const replayed = lastSeq !== undefined && stream.recording ? stream.replay.after(lastSeq, log) : undefined;
    if (replayed === undefined && lastSeq !== undefined && cluster !== undefined) {
      // The messages after lastSeq may have been sent by another node: the directory has them.
      stream.hold++;
      void cluster.directory.recorded(stream.id, lastSeq)
        .catch(() => ({ frames: undefined, last: 0 }))
        .then((recorded) => {
          stream.hold--;
          if (stream.sink !== sink || stream.status !== 'connected') return;
          // Numbering goes on after the newest seq anyone sent, even when a snapshot replaces the replay.
          stream.replay.restart(Math.max(stream.replay.last, recorded.last, recorded.frames === undefined ? lastSeq : 0));
          begin(stream, sink, recorded.frames);
        });
      return;
    }
    begin(stream, sink, replayed?.map((g, i) => frame(log.type(g), lastSeq! + 1 + i, log.shared(g))));
  }

  /** `connected`, then the replayed messages (resumed) or else a snapshot, then live updates. */
  function begin(stream: Stream, sink: Sink, replayed: Buffer[] | undefined): void {
    sink.send(connectedMessage(stream.id, stream.mask, stream.interval, { resumed: replayed !== undefined, lastSeq: stream.replay.last }));
    stream.recording = true;
    if (replayed === undefined) {
      void snapshot(stream, stream.mask);
      return;
    }
    for (const message of replayed) sink.send(message);
    flush(stream);
  }

  /** The socket is gone; the stream waits for another, and expires if none comes. */
  function detach(stream: Stream, sink: Sink): void {
    if (stream.sink !== sink) return;
    stream.sink = undefined;
    if (stream.status === 'connected' && !stopped) {
      expireAt(stream, clock.now() + settings.detachedTtlMs);
      void publish(stream);
    }
  }

  /** The consumer caught up: what was held goes out, newest values only. */
  function resume(stream: Stream): void {
    flush(stream);
  }

  function subscribe(stream: Stream, mask: number): void {
    const added = mask & ~stream.mask;
    stream.mask |= mask;
    stream.sink?.send(subscriptionsMessage(stream.mask));
    if (added !== 0) void snapshot(stream, added);
  }

  function unsubscribe(stream: Stream, mask: number): void {
    stream.mask &= ~mask;
    for (const key of stream.pending.keys()) {
      if ((mask & (1 << (key.charCodeAt(0) - 48))) !== 0) stream.pending.delete(key);
    }
    stream.sink?.send(subscriptionsMessage(stream.mask));
  }

  // ---- delivery -------------------------------------------------------------------------------

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

  function armFlush(stream: Stream, due: number): void {
    if (stream.flushTimer !== undefined && stream.flushAt <= due) return;
    clearTimeout(stream.flushTimer);
    stream.flushAt = due;
    stream.flushTimer = setTimeout(() => flush(stream), Math.max(0, due - clock.now()));
    stream.flushTimer.unref();
  }

  /** Sends each held update that is due, with the newest value of its type and vehicle. */
  function flush(stream: Stream): void {
    if (stream.flushTimer !== undefined) {
      clearTimeout(stream.flushTimer);
      stream.flushTimer = undefined;
    }
    stream.flushAt = Infinity;
    if (stream.status !== 'connected' || !stream.recording || stream.pending.size === 0) return;
    const index = organizations.get(stream.organizationId);
    const now = clock.now();
    let next = Infinity;
    for (const [key, due] of stream.pending) {
      if (!ready(stream)) return; // resumed later by resume() or the end of the snapshot
      if (due > now) {
        if (due < next) next = due;
        continue;
      }
      stream.pending.delete(key);
      const entry = index?.current.get(key.slice(1))?.[key.charCodeAt(0) - 48];
      if (entry === undefined) continue;
      if (stream.interval > 0) stream.lastSent.set(key, now);
      emit(stream, entry);
    }
    if (next !== Infinity) armFlush(stream, next);
  }

  function deliverAll(index: OrganizationIndex, vehicleId: string, entry: Entry): void {
    const bit = 1 << entry.type;
    const listed = index.byVehicle.get(vehicleId);
    if (listed !== undefined) for (const stream of listed) if ((stream.mask & bit) !== 0) deliver(stream, vehicleId, entry);
    for (const stream of index.fleet) if ((stream.mask & bit) !== 0) deliver(stream, vehicleId, entry);
  }

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

  function statusEntry(index: OrganizationIndex, vehicleId: string, change: Pick<StatusChange, 'from' | 'to' | 'reason' | 'at'>, now: number): Entry {
    const current = currentOf(index, vehicleId);
    const cached = current[STATUS];
    if (cached !== undefined && cached.version === change.at) return cached;
    const shared = statusPart(vehicleId, change);
    const entry: Entry = { type: STATUS, shared, version: change.at, g: log.append(STATUS, shared, now) };
    current[STATUS] = entry;
    return entry;
  }

  // ---- events from the services ---------------------------------------------------------------

  /** Records were committed (telemetry service `events.telemetry`), from HTTP or MQTT alike. */
  function telemetry(organizationId: string, records: readonly StoredRecord[], states: readonly LatestState[]): void {
    const index = organizations.get(organizationId);
    if (index === undefined) return;
    let touched: Map<string, number> | undefined;
    deliverStates(index, states, (vehicleId) => (touched ??= typesTouched(records)).get(vehicleId) ?? 0);
  }

  /** Another node committed telemetry: the states it stored, with the event types each record touched. */
  function remoteTelemetry(organizationId: string, states: readonly LatestState[], touched: readonly number[]): void {
    const index = organizations.get(organizationId);
    if (index === undefined) return;
    const masks = new Map(states.map((state, i) => [state.vehicleId, touched[i] ?? 0]));
    deliverStates(index, states, (vehicleId) => masks.get(vehicleId) ?? 0);
  }

  function deliverStates(index: OrganizationIndex, states: readonly LatestState[], touchedOf: (vehicleId: string) => number): void {
    const now = clock.now();
    for (const state of states) {
      if (index.fleet.size === 0 && !index.byVehicle.has(state.vehicleId)) continue;
      const mask = touchedOf(state.vehicleId);
      for (const type of TELEMETRY_TYPES) {
        if ((mask & (1 << type)) === 0) continue;
        const found = telemetryEntry(index, state, type, now);
        if (found?.fresh === true) deliverAll(index, state.vehicleId, found.entry);
      }
    }
  }

  /** A status changed (vehicle service), or the first telemetry activated a vehicle. */
  function statusChanged(organizationId: string, vehicleId: string, change: Pick<StatusChange, 'from' | 'to' | 'reason' | 'at'>): void {
    const index = organizations.get(organizationId);
    if (index === undefined || (index.fleet.size === 0 && !index.byVehicle.has(vehicleId))) return;
    deliverAll(index, vehicleId, statusEntry(index, vehicleId, change, clock.now()));
  }

  /** A vehicle was deleted: forget its cached values. */
  function forgetVehicle(organizationId: string, vehicleId: string): void {
    organizations.get(organizationId)?.current.delete(vehicleId);
  }

  // ---- snapshot -------------------------------------------------------------------------------

  /** For each vehicle of the stream, its current state of each type in `mask`, where it has any. */
  async function snapshot(stream: Stream, mask: number): Promise<void> {
    stream.hold++;
    try {
      const vehicles = await vehiclesOf(stream);
      const changes = new Map<string, StatusChange>();
      if ((mask & (1 << STATUS)) !== 0) {
        const cached = organizations.get(stream.organizationId)?.current;
        for (const vehicle of vehicles) {
          if (cached?.get(vehicle.id)?.[STATUS]?.version === vehicle.statusChangedAt) continue;
          const newest = (await deps.vehicles.statusHistory(stream.organizationId, vehicle.id, { limit: 1, offset: 0 })).entries[0];
          if (newest !== undefined) changes.set(vehicle.id, newest);
        }
      }
      // From here on, synchronous: nothing can slip in between the state read and its sending.
      const index = organizations.get(stream.organizationId);
      if (stream.status !== 'connected' || index === undefined) return;
      const now = clock.now();
      for (const vehicle of vehicles) {
        const state = deps.latest.get(stream.organizationId, vehicle.id);
        for (const type of TELEMETRY_TYPES) {
          if ((mask & (1 << type)) === 0 || state === undefined) continue;
          const found = telemetryEntry(index, state, type, now);
          if (found === undefined) continue;
          // Held updates of this type are older than (or equal to) what the snapshot sends.
          stream.pending.delete(keyOf(type, vehicle.id));
          emit(stream, found.entry);
        }
        if ((mask & (1 << STATUS)) !== 0 && !stream.pending.has(keyOf(STATUS, vehicle.id))) {
          const change = changes.get(vehicle.id);
          const entry = change === undefined ? index.current.get(vehicle.id)?.[STATUS] : statusEntry(index, vehicle.id, change, now);
          if (entry !== undefined) emit(stream, entry);
        }
      }
    } finally {
      stream.hold--;
      if (stream.hold === 0) flush(stream);
    }
  }

  async function vehiclesOf(stream: Stream): Promise<VehicleRecord[]> {
    if (stream.vehicleIds !== null) {
      const found = await Promise.all(stream.vehicleIds.map((id) => deps.vehicles.get(stream.organizationId, id)));
      return found.filter((v): v is VehicleRecord => v !== undefined);
    }
    const all: VehicleRecord[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await deps.vehicles.list(stream.organizationId, { limit: 1000, offset });
      all.push(...page.vehicles);
      if (page.vehicles.length < 1000) return all;
    }
  }

  /**
   * Events may have been missed (the cluster bus was down): every attached stream gets a fresh
   * snapshot of the current state, read after the latest view was reloaded.
   */
  function resnapshot(): void {
    for (const stream of streams.values()) {
      if (stream.status === 'connected' && stream.recording) void snapshot(stream, stream.mask);
    }
  }

  /** Stops every timer; streams end with the process. */
  function stop(): void {
    stopped = true;
    clearInterval(sweeper);
    clearInterval(refresher);
    clearInterval(leases);
    for (const stream of streams.values()) {
      clearTimeout(stream.timer);
      clearTimeout(stream.flushTimer);
    }
  }

  return {
    settings,
    create, find, locate, lastSeqOf, takeOver, issueTicket, redeemTicket, end, endElsewhere, endedElsewhere, release,
    attach, detach, resume, subscribe, unsubscribe,
    telemetry, remoteTelemetry, statusChanged, forgetVehicle, resnapshot,
    stop,
    /** For metrics and tests: how much the hub holds. */
    stats: () => ({ streams: streams.size, tickets: tickets.size, logEntries: log.size }),
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
