// The WebSocket side of live streams (docs/API.md "Live streams"): client messages, heartbeats, slow
// consumers, and closing every socket on shutdown. Each socket is a `Sink` of the hub.
//
// Slow consumers: after each send we look at `bufferedAmount` (bytes ws and the TCP socket hold
// for the client). Past the limit the socket stops being `ready`, so the hub holds updates as
// newest values instead of queueing them; one timer polls the sockets that are behind, resumes
// those that drained, and closes with 1013 those behind for too long. Server memory per socket
// is thus bounded by the limit plus one frame, however slowly a client reads.
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { Clock } from '../clock.ts';
import type { Stream, StreamHub, Sink } from './hub.ts';
import { errorMessage, parseClientMessage } from './messages.ts';

/** Buffers hold JSON text: sent as text frames. */
const TEXT = { binary: false };

class Connection implements Sink {
  readonly ws: WebSocket;
  readonly stream: Stream;
  ready = true;
  closed = false;
  /** When it fell behind (0: it is not). */
  behindSince = 0;
  /** When the unanswered ping was sent (0: none is). */
  pingSentAt = 0;
  lastPingAt: number;
  closeTimer: NodeJS.Timeout | undefined;
  readonly #manager: SocketManager;

  constructor(ws: WebSocket, stream: Stream, manager: SocketManager, now: number) {
    this.ws = ws;
    this.stream = stream;
    this.#manager = manager;
    this.lastPingAt = now;
  }

  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  send(frame: string | Buffer): void {
    if (this.closed) return;
    this.ws.send(frame, TEXT);
    if (this.ready && this.ws.bufferedAmount > this.#manager.limit) this.#manager.fellBehind(this);
  }

  /** Replies that are not part of the stream (errors, subscription changes): dropped while behind. */
  reply(message: string): void {
    if (!this.closed && this.ready) this.send(message);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.ws.close(code, reason);
    this.#manager.closing(this);
  }
}

export type SocketManager = ReturnType<typeof createSocketManager>;

export function createSocketManager(deps: { hub: StreamHub; clock: Clock; log: FastifyBaseLogger }) {
  const { hub, clock } = deps;
  const { pingIntervalMs, pongTimeoutMs, slowConsumerBytes, slowConsumerMs, closeGraceMs } = hub.settings;
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
        hub.resume(connection.stream);
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

  const manager = {
    limit: slowConsumerBytes,

    fellBehind(connection: Connection): void {
      connection.ready = false;
      connection.behindSince = clock.now();
      behind.add(connection);
      if (behindTimer === undefined) {
        behindTimer = setInterval(pollBehind, Math.max(10, Math.min(100, slowConsumerMs / 10)));
        behindTimer.unref();
      }
    },

    /** We closed it: the hub stops sending at once; a peer that never completes the close is cut. */
    closing(connection: Connection): void {
      hub.detach(connection.stream, connection);
      connection.closeTimer = setTimeout(() => connection.ws.terminate(), closeGraceMs);
      connection.closeTimer.unref();
    },

    /** A socket upgraded for `stream`; the credentials and the stream were checked before the upgrade. */
    attach(stream: Stream, ws: WebSocket, lastSeq: number | undefined): void {
      const connection = new Connection(ws, stream, manager, clock.now());
      sockets.add(connection);
      ws.on('pong', () => {
        connection.pingSentAt = 0;
      });
      ws.on('message', (data, isBinary) => {
        if (connection.closed) return;
        const message = parseClientMessage(data, isBinary);
        if (!message.ok) connection.reply(errorMessage(message.code, message.detail));
        else if (message.type === 'subscribe') hub.subscribe(stream, message.mask);
        else hub.unsubscribe(stream, message.mask);
      });
      ws.on('close', () => {
        connection.closed = true;
        clearTimeout(connection.closeTimer);
        sockets.delete(connection);
        behind.delete(connection);
        hub.detach(stream, connection);
      });
      hub.attach(stream, connection, lastSeq);
    },

    /** Shutdown: every socket is closed with 1001; those that do not finish in time are cut. */
    async closeAll(code = 1001, reason = 'server shutting down', waitMs = 1_000): Promise<void> {
      clearInterval(heartbeat);
      clearInterval(behindTimer);
      const open = [...sockets];
      for (const connection of open) {
        connection.closed = true;
        connection.ws.close(code, reason);
      }
      const deadline = Date.now() + waitMs;
      while (sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      for (const connection of sockets) connection.ws.terminate();
    },

    get size(): number {
      return sockets.size;
    },
  };
  return manager;
}
