// The stream service (docs/API.md "Live streams"): the one face of src/streams/ for the routes,
// the other services and the cluster node. A route asks it about a stream by id and never learns
// which node holds it; the parts behind it are
//   registry.ts   the streams this node holds: create, quota, expiry, ending
//   tickets.ts    single-use tickets to attach
//   takeover.ts   cluster mode: streams held by other nodes, and taking one over
//   delivery.ts   fan-out of updates and events, throttling, conflation, flushing in chunks
//   snapshot.ts   the current state, sent at attach and subscribe
//   sessions.ts   a socket attaching, detaching, subscribing
//   socket.ts     the WebSocket protocol: client messages and their budget, heartbeats, slow consumers
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { Principal } from '../auth/scopes.ts';
import { type Clock, systemClock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { LatestView } from '../telemetry/latest.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { ScopeStore } from '../groups/scope.ts';
import { createDelivery } from './delivery.ts';
import type { StreamEntry } from './directory.ts';
import { type EventEnvelope, maskOf, missingScope } from './messages.ts';
import { type StreamCluster, createRegistry } from './registry.ts';
import { EventLog } from './replay.ts';
import { createSessions } from './sessions.ts';
import { DEFAULT_STREAM_SETTINGS, type StreamSettings } from './settings.ts';
import { createSnapshots } from './snapshot.ts';
import { createSocketManager } from './socket.ts';
import type { Stream } from './stream.ts';
import { type CredentialCheck, createTickets } from './tickets.ts';
import { createTakeover } from './takeover.ts';

export type { StreamCluster } from './registry.ts';
export type { EventEnvelope } from './messages.ts';

/** A stream as a reader sees it, wherever it is held. Times in ms since the epoch. */
export interface StreamView {
  id: string;
  status: 'connected' | 'closed';
  mask: number;
  vehicleId: string | undefined;
  vehicleIds: readonly string[] | null;
  interval: number;
  attached: boolean;
  lastSeq: number;
  createdAt: number;
  expiresAt: number | null;
  closedAt: number | null;
  /** Bytes waiting for its socket, and updates held as newest values (0 when another node holds it). */
  bufferedBytes: number;
  conflated: number;
}

export type StreamService = ReturnType<typeof createStreamService>;

export function createStreamService(deps: {
  vehicles: VehicleStore;
  /** Which vehicles a stream of a credential limited to groups carries. */
  groups: ScopeStore;
  latest: LatestView;
  clock?: Clock;
  maxStreams: number;
  settings?: Partial<StreamSettings> | undefined;
  cluster?: StreamCluster | undefined;
  log: FastifyBaseLogger;
  /** Asked when a ticket is redeemed: a credential revoked while the news was lost (a bus outage) opens nothing. */
  credentialLive?: CredentialCheck;
}) {
  const clock = deps.clock ?? systemClock;
  const cluster = deps.cluster;
  const settings: StreamSettings = { ...DEFAULT_STREAM_SETTINGS, ...deps.settings };
  const log = new EventLog({ windowMs: settings.replayWindowMs, maxEntries: settings.logMaxEntries, maxBytes: settings.logMaxBytes });
  const registry = createRegistry({ vehicles: deps.vehicles, groups: deps.groups, clock, settings, maxStreams: deps.maxStreams, cluster });
  const takeover = createTakeover({ registry, clock, settings, cluster });
  const tickets = createTickets({ registry, clock, settings, cluster, takeOver: takeover.takeOver, credentialLive: deps.credentialLive });
  const delivery = createDelivery({ registry, log, clock, settings, cluster });
  const snapshots = createSnapshots({ registry, delivery, vehicles: deps.vehicles, latest: deps.latest, clock, log: deps.log });
  const sessions = createSessions({ registry, delivery, snapshots, log, clock, settings, cluster });
  const sockets = createSocketManager({ sessions, settings, clock, log: deps.log });

  async function locate(organizationId: string, streamId: string): Promise<{ stream: Stream } | { entry: StreamEntry }> {
    const found = await takeover.locate(organizationId, streamId);
    if (found === undefined) throw new AppError('stream-not-found', `No stream "${streamId}" in this organization.`);
    return found;
  }

  async function locateOpen(organizationId: string, streamId: string): Promise<Stream | StreamEntry> {
    const found = await locate(organizationId, streamId);
    const closed = 'stream' in found ? found.stream.status !== 'connected' : found.entry.closedAt !== null;
    if (closed) throw streamClosed(streamId);
    return 'stream' in found ? found.stream : found.entry;
  }

  function view(stream: Stream): StreamView {
    return {
      id: stream.id, status: stream.status, mask: stream.mask, vehicleId: stream.vehicleId, vehicleIds: stream.vehicleIds,
      interval: stream.interval, attached: stream.sink !== undefined, lastSeq: stream.replay.last, createdAt: stream.createdAt,
      expiresAt: stream.expiresAt, closedAt: stream.closedAt, bufferedBytes: stream.sink?.bufferedAmount ?? 0,
      conflated: stream.pending.size + stream.events.length,
    };
  }

  /** A stream another node holds, as the directory tells it; its socket's buffer is that node's to know. */
  function remoteView(entry: StreamEntry, lastSeq: number): StreamView {
    return {
      id: entry.id, status: entry.closedAt === null ? 'connected' : 'closed', mask: entry.mask, vehicleId: entry.vehicleId ?? undefined,
      vehicleIds: entry.vehicleIds, interval: entry.interval, attached: entry.attached, lastSeq, createdAt: entry.createdAt,
      expiresAt: entry.expiresAt, closedAt: entry.closedAt, bufferedBytes: 0, conflated: 0,
    };
  }

  return {
    settings,

    /**
     * A new stream and its first ticket, which expires exactly when the unattached stream does.
     * `insufficient-scope` when `who` may not read one of the types (a stream reads what the
     * routes of its kind protect).
     */
    async create(who: Principal, spec: { vehicleId?: string; vehicleIds?: string[] | null; events: readonly string[]; interval: number }) {
      const mask = maskOf(spec.events);
      requireScopes(who, mask);
      const stream = await registry.create(who, { vehicleId: spec.vehicleId, vehicleIds: spec.vehicleIds, mask, interval: spec.interval });
      const { ticket, expiresAt } = await tickets.issue(stream, stream.expiresAt!);
      return { stream: view(stream), ticket, ticketExpiresAt: expiresAt };
    },

    /** The stream wherever it is held; `stream-not-found` for a missing one or another organization's. */
    async read(organizationId: string, streamId: string): Promise<StreamView> {
      const found = await locate(organizationId, streamId);
      return 'stream' in found ? view(found.stream) : remoteView(found.entry, await takeover.lastSeqOf(found.entry.id));
    },

    /** Ends the stream wherever it is held (its socket closed 1000); an ended one is left as it is. */
    async end(organizationId: string, streamId: string): Promise<void> {
      const found = await locate(organizationId, streamId);
      if ('stream' in found) registry.end(found.stream, 1000, 'stream ended');
      else await takeover.endElsewhere(found.entry);
    },

    /** A new single-use ticket; `stream-closed` for an ended stream. */
    async issueTicket(organizationId: string, streamId: string): Promise<{ streamId: string; ticket: string; expiresAt: number }> {
      const stream = await locateOpen(organizationId, streamId);
      return { streamId: stream.id, ...(await tickets.issue(stream)) };
    },

    redeemTicket: tickets.redeem,

    /**
     * Before a socket is accepted: the stream exists in the organization and is open, and this
     * node holds it (taking it over from another node if need be). Throws otherwise.
     */
    /**
     * Before the upgrade: the stream is open (taken over from another node if need be), and `who`
     * may read what it carries. A ticket acts as the stream's creator; a bearer token of the same
     * organization needs the scopes of the stream's types, as it would to create one.
     */
    async prepareAttach(who: Principal, streamId: string): Promise<void> {
      const found = await locateOpen(who.organizationId, streamId);
      if ('node' in found && (await takeover.takeOver(found)) === undefined) throw streamClosed(streamId);
      const stream = registry.find(who.organizationId, streamId);
      if (stream !== undefined) requireScopes(who, stream.mask);
    },

    /** The upgraded socket of `who`; closed at once (1000) if the stream ended since prepareAttach. */
    attach(who: Principal, streamId: string, ws: WebSocket, lastSeq: number | undefined, batch = false): boolean {
      const stream = registry.find(who.organizationId, streamId);
      if (stream === undefined || stream.status !== 'connected') {
        ws.close(1000, 'stream ended');
        return false;
      }
      sockets.attach(stream, ws, lastSeq, who, batch);
      return true;
    },

    // ---- what the other services report ----
    telemetry: delivery.telemetry,
    remoteTelemetry: delivery.remoteTelemetry,
    statusChanged: delivery.statusChanged,
    forgetVehicle: delivery.forgetVehicle,
    resnapshot: snapshots.resnapshot,

    /**
     * An event was recorded (on this node, or on another and heard over the cluster bus): sent to
     * the streams of its vehicle that carry `events`, as `{"type":"event",…,"data":<envelope>}`.
     */
    event(organizationId: string, envelope: EventEnvelope): void {
      delivery.event(organizationId, envelope);
    },

    /**
     * A credential was revoked or deleted (here or on another node): the streams it created end
     * (their sockets closed 1008, their tickets refused), and sockets attached with it close 1008.
     */
    /** Which vehicles are in which groups changed in the organization: streams limited to groups read theirs again. */
    membershipChanged(organizationId: string): void {
      registry.refreshScopes(organizationId);
    },

    /** News of membership changes may have been lost (the cluster bus was down): every organization's scoped streams read theirs again. */
    rescope(): void {
      for (const organizationId of new Set([...registry.all()].map((stream) => stream.organizationId))) registry.refreshScopes(organizationId);
    },

    credentialRevoked(credentialId: string): void {
      for (const stream of [...registry.all()]) {
        if (stream.status === 'connected' && stream.credentialId === credentialId) registry.end(stream, 1008, 'credential revoked');
      }
      sockets.credentialRevoked(credentialId);
    },

    /** A person's role or groups changed: the streams they opened end (they open new ones with what they may see now). */
    credentialChanged(credentialId: string): void {
      for (const stream of [...registry.all()]) {
        if (stream.status === 'connected' && stream.credentialId === credentialId) registry.end(stream, 1008, 'credential changed');
      }
    },

    /**
     * News of a revocation may have been lost (the cluster bus was down): every stream held here
     * whose credential no longer stands ends, as if the news had come.
     */
    async recheckCredentials(): Promise<void> {
      const check = deps.credentialLive;
      if (check === undefined) return;
      for (const stream of [...registry.all()]) {
        if (stream.status === 'connected' && !(await check(stream.organizationId, stream.credentialId))) {
          registry.end(stream, 1008, 'credential revoked');
        }
      }
    },

    // ---- cluster mode ----
    /** Another node took the stream over. */
    release: registry.release,
    /** Another node ended one of this node's streams. */
    endedElsewhere: takeover.endedElsewhere,

    /** Shutdown: every socket closed 1001, then every timer stopped. */
    async close(): Promise<void> {
      await sockets.closeAll(1001, 'server shutting down');
      registry.stop();
      takeover.stop();
      tickets.stop();
    },

    /** For metrics and tests: how much the service holds. */
    stats: () => ({ streams: registry.size, tickets: tickets.size, logEntries: log.size, sockets: sockets.size, messagesSent: sockets.sent }),
    /** Streams this node holds that are open (attached, or waiting for a socket); ended ones are kept a while but not counted. */
    openStreams(): number {
      let open = 0;
      for (const stream of registry.all()) if (stream.status === 'connected') open++;
      return open;
    },
  };
}

/** 403 when `who` lacks a scope that a stream of `mask`'s types needs. */
function requireScopes(who: Principal, mask: number): void {
  const missing = missingScope(mask, who.scopes);
  if (missing !== undefined) {
    throw new AppError('insufficient-scope', `A stream of ${missing.types.join(', ')} needs the "${missing.scope}" scope besides "streams".`);
  }
}

function streamClosed(streamId: string): AppError {
  return new AppError('stream-closed', `Stream "${streamId}" has ended or expired; create a new one.`);
}
