// A stream's socket: attaching (connected, then a replay or a snapshot, then live updates),
// detaching, catching up after falling behind, and the client's subscription changes.
import type { Clock } from '../clock.ts';
import type { Delivery } from './delivery.ts';
import { EVENTS, connectedMessage, frame, subscriptionsMessage } from './messages.ts';
import type { Registry, StreamCluster } from './registry.ts';
import type { EventLog } from './replay.ts';
import type { StreamSettings } from './settings.ts';
import type { Snapshots } from './snapshot.ts';
import type { Sink, Stream } from './stream.ts';

export type Sessions = ReturnType<typeof createSessions>;

export function createSessions(deps: {
  registry: Registry;
  delivery: Delivery;
  snapshots: Snapshots;
  log: EventLog;
  clock: Clock;
  settings: StreamSettings;
  cluster: StreamCluster | undefined;
}) {
  const { registry, delivery, snapshots, log, clock, settings, cluster } = deps;

  /**
   * A socket attaches: `connected`, then the messages after `lastSeq` if they are all still held
   * (a resumed stream), else a snapshot of the current state; then live updates. A socket already
   * attached is replaced (the client reconnected before the server noticed the old one drop).
   */
  function attach(stream: Stream, sink: Sink, lastSeq: number | undefined): void {
    if (stream.status !== 'connected' || registry.stopped) {
      sink.close(registry.stopped ? 1001 : 1000, registry.stopped ? 'server shutting down' : 'stream ended');
      return;
    }
    const previous = stream.sink;
    stream.sink = sink;
    previous?.close(4000, 'replaced by a newer connection');
    stream.timer?.cancel();
    stream.timer = undefined;
    stream.expiresAt = null;
    void registry.publish(stream);

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
    if (replayed === undefined) snapshots.request(stream, stream.mask);
    else for (const message of replayed) sink.send(message);
    delivery.flush(stream);
  }

  /** The socket is gone; the stream waits for another, and expires if none comes. */
  function detach(stream: Stream, sink: Sink): void {
    if (stream.sink !== sink) return;
    stream.sink = undefined;
    if (stream.status === 'connected' && !registry.stopped) {
      registry.expireAt(stream, clock.now() + settings.detachedTtlMs);
      void registry.publish(stream);
      // What waited for the socket gets its seqs now, kept for a resume with lastSeq.
      delivery.flush(stream);
    }
  }

  function subscribe(stream: Stream, mask: number): void {
    const added = mask & ~stream.mask;
    stream.mask |= mask;
    stream.sink?.send(subscriptionsMessage(stream.mask));
    if (added !== 0) snapshots.request(stream, added);
  }

  function unsubscribe(stream: Stream, mask: number): void {
    stream.mask &= ~mask;
    for (const key of stream.pending.keys()) {
      if ((mask & (1 << (key.charCodeAt(0) - 48))) !== 0) stream.pending.delete(key);
    }
    if ((mask & (1 << EVENTS)) !== 0) stream.events = [];
    stream.sink?.send(subscriptionsMessage(stream.mask));
  }

  return {
    attach, detach, subscribe, unsubscribe,
    /** The consumer caught up: what was held goes out, newest values only. */
    resume: (stream: Stream) => delivery.flush(stream),
  };
}
