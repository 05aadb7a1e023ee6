// Cluster mode: a stream can be read, ended, given a ticket and attached through any node. One
// node holds it at a time (the one its socket is on); the directory (directory.ts) says which, and
// a node that gets a socket for a stream held elsewhere takes it over: it registers the stream
// from its directory entry and announces it, and the node that held it lets go (registry.release).
import type { Clock } from '../clock.ts';
import type { StreamEntry } from './directory.ts';
import { scopesFor } from './messages.ts';
import { ATTACHED_TTL_MS, type Registry, type StreamCluster } from './registry.ts';
import type { StreamSettings } from './settings.ts';
import { type Stream, newStream } from './stream.ts';

export type Takeover = ReturnType<typeof createTakeover>;

export function createTakeover(deps: { registry: Registry; clock: Clock; settings: StreamSettings; cluster: StreamCluster | undefined }) {
  const { registry, clock, settings, cluster } = deps;

  // An attached stream's directory entry lives an hour (ATTACHED_TTL_MS) and is written again
  // every ten minutes, so a stream attached for days stays reachable from every node.
  const refresher = cluster === undefined ? undefined : setInterval(() => {
    for (const stream of registry.all()) if (stream.status === 'connected' && stream.sink !== undefined) void registry.publish(stream);
  }, ATTACHED_TTL_MS / 6);
  refresher?.unref();
  // The streams held here keep their places in their organizations' quotas.
  const leases = cluster === undefined ? undefined : setInterval(() => {
    const held = [...registry.all()].filter((stream) => stream.status === 'connected');
    if (held.length === 0) return;
    cluster.directory.renewOpen(held, settings.openLeaseMs).catch((error: unknown) => {
      cluster.log.debug({ err: error }, 'live stream: the directory is unavailable; quota leases not renewed');
    });
  }, settings.openLeaseMs / 3);
  leases?.unref();

  /** A stream another node held: this node takes it over (a client reconnected here). */
  async function takeOver(entry: StreamEntry): Promise<Stream | undefined> {
    const held = registry.get(entry.id);
    if (held !== undefined) return held;
    if (entry.closedAt !== null || registry.stopped) return undefined;
    await registry.claimOpen(entry.organizationId, entry.id, false);
    // Taken over here by a concurrent attach meanwhile: one stream, counted once.
    const taken = registry.get(entry.id);
    if (taken !== undefined) return taken;
    const stream = newStream(entry, settings, entry.scopes ?? scopesFor(entry.mask));
    await registry.loadVisible(stream);
    const meanwhile = registry.get(entry.id);
    if (meanwhile !== undefined) return meanwhile;
    registry.register(stream);
    registry.expireAt(stream, clock.now() + settings.attachWindowMs);
    cluster?.events.emit('streamTaken', { streamId: stream.id, node: cluster.node });
    return stream;
  }

  /**
   * The stream wherever it is: held here, or (cluster mode) known to the directory. Another
   * organization's is undefined, as a missing one.
   */
  async function locate(organizationId: string, streamId: string): Promise<{ stream: Stream } | { entry: StreamEntry } | undefined> {
    const local = registry.find(organizationId, streamId);
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
    cluster.directory.releaseOpen(entry.organizationId, entry.id).catch((error: unknown) => {
      cluster.log.debug({ err: error, streamId: entry.id }, 'live stream: the directory is unavailable; its quota lease runs out by itself');
    });
    cluster.events.emit('streamEnded', { streamId: entry.id });
  }

  /** Another node ended one of this node's streams (DELETE there). */
  function endedElsewhere(streamId: string): void {
    const stream = registry.get(streamId);
    if (stream !== undefined) registry.end(stream, 1000, 'stream ended', false);
  }

  function stop(): void {
    clearInterval(refresher);
    clearInterval(leases);
  }

  return { takeOver, locate, lastSeqOf, endElsewhere, endedElsewhere, stop };
}
