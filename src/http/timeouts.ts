// How long a client may take over a request. Node's defaults let a client send a body at a byte a
// minute for five minutes, and check even that only every 30 s; Fastify's leave the whole request
// unbounded. A connection held that way costs little to the client and a socket to us, and kept a
// graceful shutdown waiting past its deadline.
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import fp from 'fastify-plugin';
import type { Socket } from 'node:net';
import type { HttpTimeoutConfig } from '../config.ts';
import { answerOnSocket, responseOn } from '../schema/problems.ts';

/** How often Node looks for requests past their headers or request timeout (its default: 30 s). */
const CHECK_INTERVAL_MS = 1_000;
/**
 * At shutdown Node stops checking those timeouts; a request still arriving then gets this long
 * (or its own request timeout, if shorter) before it is answered 408 and its connection closed,
 * so that shutdown keeps within its 10 s.
 */
export const SHUTDOWN_ARRIVAL_GRACE_MS = 5_000;

/** The Fastify options that set the timeouts on the HTTP server it creates. */
export function timeoutOptions(timeouts: HttpTimeoutConfig): Pick<FastifyServerOptions, 'connectionTimeout' | 'requestTimeout'> & {
  http: { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number };
} {
  return {
    // Inactivity in both directions while a request is in progress (Node gives idle keep-alive
    // connections its keepAliveTimeout instead): an answer that keeps moving is never cut.
    connectionTimeout: timeouts.idleMs,
    // Fastify sets the server's requestTimeout after creating it, so it is given twice.
    requestTimeout: timeouts.requestMs,
    http: { headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: CHECK_INTERVAL_MS },
  };
}

/**
 * At shutdown, after the grace period, answers 408 on every connection still sending a request
 * (its headers, or a body not yet complete) and closes it. Requests whose body has arrived run on
 * to their answer; idle connections are closed by Fastify; WebSockets by their own plugin.
 */
export const shutdownArrivalsPlugin = fp(async function shutdownArrivals(app: FastifyInstance, opts: { requestMs: number; webSockets?: boolean }) {
  const sockets = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // An upgraded socket speaks WebSocket now; the streams plugin closes it at shutdown. But Fastify
  // answers a request arriving once it is closing with 503 and none of its hooks, so the WebSocket
  // plugin's hook that ends an upgrade socket after an HTTP answer does not run: the socket would
  // stay open, and the close wait for the client to go (a page's live view reconnecting, for one).
  // Routing is synchronous then; a socket answered by the next turn is ended here. And once that
  // plugin has stopped listening for upgrades, this listener is the only one (Node hands the socket
  // to whoever listens): such a socket is answered 503 and closed.
  // Without WebSockets, no listener: Node then serves a request asking for an upgrade as any other.
  const onUpgrade = (_request: unknown, socket: Socket) => {
    sockets.delete(socket);
    if (app.server.listenerCount('upgrade') === 1) {
      answerOnSocket(socket, 'service-unavailable', app.log);
      return;
    }
    setImmediate(() => {
      if (responseOn(socket)?.writableEnded === true && !socket.destroyed) socket.end();
    });
  };
  if (opts.webSockets === true) app.server.on('upgrade', onUpgrade);

  let timer: NodeJS.Timeout | undefined;
  app.addHook('preClose', (done) => {
    timer = setTimeout(() => {
      for (const socket of sockets) {
        const response = responseOn(socket);
        if (response !== undefined && response.req.complete) continue;
        answerOnSocket(socket, 'request-timeout', app.log);
      }
    }, Math.min(opts.requestMs, SHUTDOWN_ARRIVAL_GRACE_MS));
    // The process may end sooner (every connection done): the timer must not hold it.
    timer.unref();
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    clearTimeout(timer);
    done();
  });
}, { name: 'shutdown-arrivals' });
