// The streams this node holds: creating them (vehicles checked, a place in the quota taken), the
// index of an organization's streams by vehicle, and how a stream ends (DELETE, expiry, its
// credential revoked or expired, another node taking it over). In cluster mode every change is
// also written to the directory, so that any node can find the stream.
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { EventPort } from '../events/port.ts';
import { newId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import type { ScopeStore } from '../groups/scope.ts';
import type { StreamDirectory, StreamEntry } from './directory.ts';
import type { StreamSettings } from './settings.ts';
import { type NewStream, type OrganizationIndex, type Stream, callAt, newStream } from './stream.ts';

/** Cluster mode: where the other nodes find this node's streams, and how they hear of a change. */
export interface StreamCluster {
  directory: StreamDirectory;
  /** This node's name. */
  node: string;
  /** Told when this node took a stream over (`streamTaken`: the node that held it lets go), or ended one held elsewhere (`streamEnded`). */
  events: EventPort;
  log: { debug(obj: object, msg: string): void };
}

/** How long the directory keeps an attached stream's entry unless it is written again. */
export const ATTACHED_TTL_MS = 3_600_000;

export type Registry = ReturnType<typeof createRegistry>;

export function createRegistry(deps: {
  vehicles: VehicleStore;
  /** Which vehicles a stream limited to groups carries (groups/scope.ts). */
  groups: ScopeStore;
  clock: Clock;
  settings: StreamSettings;
  maxStreams: number;
  cluster: StreamCluster | undefined;
}) {
  const { clock, settings, cluster } = deps;
  const streams = new Map<string, Stream>();
  const organizations = new Map<string, OrganizationIndex>();
  let stopped = false;

  function indexOf(organizationId: string): OrganizationIndex {
    let index = organizations.get(organizationId);
    if (index === undefined) {
      index = { fleet: new Set(), byVehicle: new Map(), current: new Map(), open: 0 };
      organizations.set(organizationId, index);
    }
    return index;
  }

  async function create(who: Principal, spec: NewStream): Promise<Stream> {
    const ids = spec.vehicleId !== undefined ? [spec.vehicleId] : spec.vehicleIds ?? null;
    if (ids !== null) {
      const [found, inScope] = await Promise.all([
        Promise.all(ids.map((id) => deps.vehicles.get(who.organizationId, id))),
        who.groupIds === undefined ? undefined : deps.groups.inGroups(who.organizationId, who.groupIds, ids).then((seen) => new Set(seen)),
      ]);
      // A vehicle outside a scoped credential's groups is missing, as another organization's.
      const missing = ids.filter((id, i) => found[i] === undefined || (inScope !== undefined && !inScope.has(id)));
      if (missing.length > 0) {
        throw new AppError('vehicle-not-found', `No vehicle ${missing.map((id) => `"${id}"`).join(', ')} in this organization.`);
      }
    }
    const id = newId('str');
    await claimOpen(who.organizationId, id, true);
    const now = clock.now();
    const stream = newStream({
      id, organizationId: who.organizationId, credentialId: who.credentialId, credentialExpiresAt: who.expiresAt ?? null,
      vehicleId: spec.vehicleId, vehicleIds: ids, interval: spec.interval, mask: spec.mask, createdAt: now,
      groupIds: who.groupIds === undefined ? null : [...who.groupIds],
    }, settings, [...who.scopes]);
    try {
      await loadVisible(stream);
    } catch (error) {
      releaseOpen(who.organizationId, id);
      throw error;
    }
    register(stream);
    expireAt(stream, now + settings.attachWindowMs);
    // Written before the answer, so that any node can find the stream as soon as its creator can.
    await publish(stream);
    return stream;
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

  /** Holds the stream here: indexed by vehicle, counted, and ended when its credential expires. */
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
    if (stream.credentialExpiresAt !== null) {
      stream.lifetimeTimer = callAt(clock, stream.credentialExpiresAt, () => end(stream, 1008, 'credential expired'));
    }
  }

  /** Per organization: how many times its memberships changed, and a reading of them in progress. */
  const scopeChanges = new Map<string, number>();
  const refreshing = new Map<string, Promise<void>>();

  /** A stream limited to groups reads the vehicles in them now (before it is registered). */
  async function loadVisible(stream: Stream): Promise<void> {
    if (stream.groupIds === null) return;
    const seen = scopeChanges.get(stream.organizationId) ?? 0;
    stream.visible = new Set(await deps.groups.membersOf(stream.organizationId, stream.groupIds));
    // Memberships changed while they were read: read them again once the stream is registered.
    if ((scopeChanges.get(stream.organizationId) ?? 0) !== seen) queueMicrotask(() => refreshScopes(stream.organizationId));
  }

  /**
   * Memberships changed in the organization (on any node): each of its streams limited to groups
   * reads its vehicles again, one query per distinct set of groups. Changes heard meanwhile are
   * read in one more pass.
   */
  function refreshScopes(organizationId: string): void {
    scopeChanges.set(organizationId, (scopeChanges.get(organizationId) ?? 0) + 1);
    if (refreshing.has(organizationId)) return;
    const pass = async (): Promise<void> => {
      let seen: number;
      do {
        seen = scopeChanges.get(organizationId) ?? 0;
        const index = organizations.get(organizationId);
        if (index === undefined) break;
        const scoped = new Map<string, Stream[]>();
        const add = (stream: Stream) => {
          if (stream.groupIds === null || stream.status !== 'connected') return;
          const key = stream.groupIds.join(' ');
          const list = scoped.get(key);
          if (list === undefined) scoped.set(key, [stream]);
          else if (!list.includes(stream)) list.push(stream);
        };
        for (const stream of index.fleet) add(stream);
        for (const set of index.byVehicle.values()) for (const stream of set) add(stream);
        for (const list of scoped.values()) {
          const members = new Set(await deps.groups.membersOf(organizationId, list[0]!.groupIds!));
          for (const stream of list) stream.visible = members;
        }
      } while ((scopeChanges.get(organizationId) ?? 0) !== seen);
    };
    const running = pass().catch(() => {
      // The store is away: the streams keep the vehicles they had until the next change is heard.
    }).finally(() => refreshing.delete(organizationId));
    refreshing.set(organizationId, running);
  }

  /** Takes the stream out of the organization's index (it ended, or another node took it). */
  function unregister(stream: Stream): void {
    stream.lifetimeTimer?.cancel();
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

  function entryOf(stream: Stream): StreamEntry {
    return {
      id: stream.id, organizationId: stream.organizationId, credentialId: stream.credentialId, vehicleId: stream.vehicleId,
      vehicleIds: stream.vehicleIds === null ? null : [...stream.vehicleIds], interval: stream.interval, mask: stream.mask,
      createdAt: stream.createdAt, scopes: [...stream.scopes], credentialExpiresAt: stream.credentialExpiresAt,
      ...(stream.groupIds === null ? {} : { groupIds: [...stream.groupIds] }),
      node: cluster?.node ?? '', attached: stream.sink !== undefined, expiresAt: stream.expiresAt, closedAt: stream.closedAt,
    };
  }

  /**
   * Tells the directory how the stream stands. Best effort: while the directory (Redis) is away,
   * streams work on their own node, and only a reconnection to another node fails.
   */
  function publish(stream: Stream): Promise<void> {
    if (cluster === undefined) return Promise.resolve();
    // An attached stream is kept an hour, written again at every attach and by a refresher
    // (takeover.ts); otherwise as long as it may wait.
    const ttl = stream.status === 'closed' ? settings.closedRetentionMs
      : stream.expiresAt === null ? ATTACHED_TTL_MS : stream.expiresAt - clock.now() + settings.attachWindowMs;
    return cluster.directory.put(entryOf(stream), ttl).catch((error: unknown) => {
      cluster.log.debug({ err: error, streamId: stream.id }, 'live stream: the directory is unavailable');
    });
  }

  /** The stream, if it exists and belongs to the organization (closed ones included, for a while). */
  function find(organizationId: string, streamId: string): Stream | undefined {
    const stream = streams.get(streamId);
    return stream?.organizationId === organizationId ? stream : undefined;
  }

  function expireAt(stream: Stream, at: number): void {
    stream.timer?.cancel();
    stream.expiresAt = at;
    stream.timer = callAt(clock, at, () => void expire(stream));
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
    forgetSending(stream);
    stream.replay.clear();
    const sink = stream.sink;
    stream.sink = undefined;
    sink?.close(code, reason);
    stream.timer?.cancel();
    stream.timer = clock.after(settings.closedRetentionMs, () => streams.delete(stream.id));
  }

  /** Another node took the stream over: its socket here, if any, is closed, and this node forgets it. */
  function release(streamId: string): void {
    const stream = streams.get(streamId);
    if (stream === undefined || stream.status !== 'connected') return;
    unregister(stream);
    streams.delete(streamId);
    stream.timer?.cancel();
    forgetSending(stream);
    const sink = stream.sink;
    stream.sink = undefined;
    sink?.close(4000, 'replaced by a newer connection');
  }

  function forgetSending(stream: Stream): void {
    stream.flushTimer?.cancel();
    stream.pending.clear();
    stream.lastSent.clear();
    stream.events = [];
  }

  /** Stops every timer; streams end with the process. */
  function stop(): void {
    stopped = true;
    for (const stream of streams.values()) {
      stream.timer?.cancel();
      stream.flushTimer?.cancel();
      stream.lifetimeTimer?.cancel();
    }
  }

  return {
    create, claimOpen, register, publish, find, expireAt, end, release, stop, loadVisible, refreshScopes,
    /** Any stream held here (closed ones for a while), whatever its organization. */
    get: (streamId: string) => streams.get(streamId),
    /** Every stream held here, closed ones included. */
    all: () => streams.values(),
    organization: (organizationId: string) => organizations.get(organizationId),
    get stopped() {
      return stopped;
    },
    get size() {
      return streams.size;
    },
  };
}
