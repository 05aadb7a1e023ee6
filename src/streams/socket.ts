// The WebSocket side of live streams (docs/API.md "Live streams"): client messages, heartbeats, slow
// consumers, the lifetime of the credential a socket attached with, and closing every socket on
// shutdown. Each socket is a `Sink` of its stream.
//
// Slow consumers: after each send we look at `bufferedAmount` (bytes ws and the TCP socket hold
// for the client). Past the limit the socket stops being `ready`, so its stream holds updates as
// newest values instead of queueing them; one timer polls the sockets that are behind, resumes
// those that drained, and closes with 1013 those behind for too long. Server memory per socket
// is thus bounded by the limit plus one frame, however slowly a client reads.
//
// Batched sockets (attached with `batch=true`): the messages sent to the socket in one turn of the
// event loop go out as one text frame, separated by newlines, at the end of the turn. A client
// that receives thousands of messages a second (a browser showing a whole fleet) then handles a
// few frames a second instead: each WebSocket frame costs a browser work in its network process,
// its IPC and its page's main thread, whatever the frame holds. Bytes waiting for the end of the
// turn count as buffered for the slow-consumer limit.
//
// Client messages: each socket has a budget (budget.ts), checked before the message is even
// parsed. A subscribe needs the scopes of the types it adds (messages.ts missingScope), judged by
// the credential the socket attached with: the bearer token's, or for a ticket the stream's own.
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { TokenBucket } from './budget.ts';
import { errorMessage, missingScope, parseClientMessage } from './messages.ts';
import type { Sessions } from './sessions.ts';
import type { StreamSettings } from './settings.ts';
import { type Sink, type Stream, callAt } from './stream.ts';

/** Buffers hold JSON text: sent as text frames. */
const TEXT = { binary: false };
const NEWLINE = Buffer.from('\n');

class Connection implements Sink {
  readonly ws: WebSocket;
  readonly stream: Stream;
  readonly credentialId: string;
  readonly scopes: ReadonlySet<string>;
  readonly budget: TokenBucket;
  /** Messages refused in a row for being over the budget. */
  refused = 0;
  /** Closes the socket when its credential expires. */
  lifetime: { cancel(): void } | undefined;
  ready = true;
  closed = false;
  /** When it fell behind (0: it is not). */
  behindSince = 0;
  /** When the unanswered ping was sent (0: none is). */
  pingSentAt = 0;
  lastPingAt: number;
  closeTimer: NodeJS.Timeout | undefined;
  readonly #manager: SocketManager;
  /** Several messages a frame (see above). */
  readonly batch: boolean;
  /** A batched socket's messages of this turn, and their bytes. */
  #queue: Buffer[] = [];
  #queuedBytes = 0;

  constructor(ws: WebSocket, stream: Stream, who: Principal, manager: SocketManager, now: number, batch: boolean) {
    this.ws = ws;
    this.stream = stream;
    this.credentialId = who.credentialId;
    this.scopes = who.scopes;
    this.budget = new TokenBucket(manager.budget.burst, manager.budget.rate, now);
    this.#manager = manager;
    this.lastPingAt = now;
    this.batch = batch;
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount + this.#queuedBytes;
  }

  send(frame: string | Buffer): void {
    if (this.closed) return;
    this.#manager.sent++;
    if (this.batch) {
      if (this.#queue.length === 0) setImmediate(() => this.flushBatch());
      const bytes = typeof frame === 'string' ? Buffer.from(frame) : frame;
      this.#queue.push(bytes);
      this.#queuedBytes += bytes.length;
    } else {
      this.ws.send(frame, TEXT);
    }
    if (this.ready && this.bufferedAmount > this.#manager.limit) this.#manager.fellBehind(this);
  }

  /** Sends a batched socket's waiting messages as one frame. */
  flushBatch(): void {
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    this.#queuedBytes = 0;
    if (this.closed) return;
    const parts: Buffer[] = [];
    for (const message of queue) {
      if (parts.length > 0) parts.push(NEWLINE);
      parts.push(message);
    }
    this.ws.send(parts.length === 1 ? parts[0]! : Buffer.concat(parts), TEXT);
  }

  /** Replies that are not part of the stream (errors, subscription changes): dropped while behind. */
  reply(message: string): void {
    if (!this.closed && this.ready) this.send(message);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    // What was sent before the close goes before it.
    this.flushBatch();
    this.closed = true;
    this.lifetime?.cancel();
    this.ws.close(code, reason);
    this.#manager.closing(this);
  }
}

export type SocketManager = ReturnType<typeof createSocketManager>;

export function createSocketManager(deps: { sessions: Sessions; settings: StreamSettings; clock: Clock; log: FastifyBaseLogger }) {
  const { sessions, clock } = deps;
  const { pingIntervalMs, pongTimeoutMs, slowConsumerBytes, slowConsumerMs, closeGraceMs } = deps.settings;
  const sockets = new Set<Connection>();
  const behind = new Set<Connection>();
  let behindTimer: NodeJS.Timeout | undefined;

  // Heartbeats: one timer for every socket. A ping goes out `pingIntervalMs` after the last one;
  // a socket that has not answered within `pongTimeoutMs` is terminated (its peer is gone). Each
  // tick pings at most its share of the sockets (twice the even share), so 10,000 sockets that
  // attached together are not all pinged in one turn of the event loop, holding up their events.
  const tickMs = Math.max(10, Math.min(pingIntervalMs, pongTimeoutMs) / 30);
  const heartbeat = setInterval(() => {
    const now = clock.now();
    let budget = 2 * Math.ceil((sockets.size * tickMs) / pingIntervalMs);
    for (const connection of sockets) {
      if (connection.pingSentAt !== 0) {
        if (now - connection.pingSentAt >= pongTimeoutMs) {
          deps.log.debug({ streamId: connection.stream.id }, 'live stream: no pong, terminating the socket');
          connection.closed = true;
          connection.ws.terminate();
        }
      } else if (budget > 0 && now - connection.lastPingAt >= pingIntervalMs) {
        budget--;
        connection.pingSentAt = now;
        connection.lastPingAt = now;
        connection.ws.ping();
      }
    }
  }, tickMs);
  heartbeat.unref();

  function pollBehind(): void {
    const now = clock.now();
    for (const connection of behind) {
      if (connection.closed) {
        behind.delete(connection);
      } else if (connection.ws.bufferedAmount <= slowConsumerBytes / 2) {
        behind.delete(connection);
        connection.ready = true;
        connection.behindSince = 0;
        sessions.resume(connection.stream);
      } else if (now - connection.behindSince >= slowConsumerMs) {
        behind.delete(connection);
        deps.log.info({ streamId: connection.stream.id, buffered: connection.ws.bufferedAmount }, 'live stream: slow consumer, closing 1013');
        connection.close(1013, 'slow consumer: too far behind');
      }
    }
    if (behind.size === 0) {
      clearInterval(behindTimer);
      behindTimer = undefined;
    }
  }

  /** One client message, within the budget or not. */
  function received(connection: Connection, data: Parameters<typeof parseClientMessage>[0], isBinary: boolean): void {
    if (!connection.budget.take(clock.now())) {
      if (++connection.refused > deps.settings.clientMessageBurst) {
        deps.log.info({ streamId: connection.stream.id }, 'live stream: client messages over the budget, closing 1008');
        connection.close(1008, 'too many messages');
      } else {
        const rate = deps.settings.clientMessageRate;
        connection.reply(errorMessage('rate-limited', `Too many messages: at most ${deps.settings.clientMessageBurst} at once and ${rate} a second; this one was ignored.`));
      }
      return;
    }
    connection.refused = 0;
    const message = parseClientMessage(data, isBinary);
    if (!message.ok) {
      connection.reply(errorMessage(message.code, message.detail));
      return;
    }
    if (message.type === 'unsubscribe') {
      sessions.unsubscribe(connection.stream, message.mask);
      return;
    }
    const missing = missingScope(message.mask & ~connection.stream.mask, connection.scopes);
    if (missing !== undefined) {
      connection.reply(errorMessage('insufficient-scope', `Subscribing to ${missing.types.join(', ')} needs the "${missing.scope}" scope; nothing was subscribed.`));
      return;
    }
    sessions.subscribe(connection.stream, message.mask);
  }

  const manager = {
    limit: slowConsumerBytes,
    budget: { burst: deps.settings.clientMessageBurst, rate: deps.settings.clientMessageRate },

    fellBehind(connection: Connection): void {
      connection.ready = false;
      connection.behindSince = clock.now();
      behind.add(connection);
      if (behindTimer === undefined) {
        behindTimer = setInterval(pollBehind, Math.max(10, Math.min(100, slowConsumerMs / 10)));
        behindTimer.unref();
      }
    },

    /** We closed it: its stream stops sending at once; a peer that never completes the close is cut. */
    closing(connection: Connection): void {
      sessions.detach(connection.stream, connection);
      connection.closeTimer = setTimeout(() => connection.ws.terminate(), closeGraceMs);
      connection.closeTimer.unref();
    },

    /**
     * A socket upgraded for `stream` by `who`; the credentials and the stream were checked before
     * the upgrade. It lives no longer than `who`'s credential.
     */
    attach(stream: Stream, ws: WebSocket, lastSeq: number | undefined, who: Principal, batch = false): void {
      const connection = new Connection(ws, stream, who, manager, clock.now(), batch);
      sockets.add(connection);
      ws.on('pong', () => {
        connection.pingSentAt = 0;
      });
      ws.on('message', (data, isBinary) => {
        if (!connection.closed) received(connection, data, isBinary);
      });
      ws.on('close', () => {
        connection.closed = true;
        connection.lifetime?.cancel();
        clearTimeout(connection.closeTimer);
        sockets.delete(connection);
        behind.delete(connection);
        sessions.detach(stream, connection);
      });
      // A credential that expires before the stream's own closes this socket alone then. One that
      // expires with it or later leaves it to the stream's own timer, which ends the stream and its
      // sockets together: a client told 1008 must find the stream closed, not still connected.
      if (who.expiresAt !== undefined && (stream.credentialExpiresAt === null || who.expiresAt < stream.credentialExpiresAt)) {
        connection.lifetime = callAt(clock, who.expiresAt, () => connection.close(1008, 'credential expired'));
      }
      sessions.attach(stream, connection, lastSeq);
    },

    /** The credential is revoked: every socket attached with it is closed with 1008. */
    credentialRevoked(credentialId: string): void {
      for (const connection of sockets) if (connection.credentialId === credentialId) connection.close(1008, 'credential revoked');
    },

    /** Shutdown: every socket is closed with 1001; those that do not finish in time are cut. */
    async closeAll(code = 1001, reason = 'server shutting down', waitMs = 1_000): Promise<void> {
      clearInterval(heartbeat);
      clearInterval(behindTimer);
      const open = [...sockets];
      for (const connection of open) {
        connection.flushBatch();
        connection.closed = true;
        connection.lifetime?.cancel();
        connection.ws.close(code, reason);
      }
      const deadline = Date.now() + waitMs;
      while (sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      for (const connection of sockets) connection.ws.terminate();
    },

    get size(): number {
      return sockets.size;
    },
    /** Messages sent on every socket since start (fleet_stream_messages_sent_total); a plain number, kept on the send path. */
    sent: 0,
  };
  return manager;
}
