// Responses that carry a secret (a new API key, an OAuth client secret, an access token) must not
// be kept by any cache between the client and us, nor by the browser: a route says so with
// `config.secret: true`, and this plugin gives every response of such a route, errors included,
// `Cache-Control: no-store` (and `Pragma: no-cache` for HTTP/1.0 caches), as RFC 6749 §5.1 asks
// of token responses. The hook is attached to those routes only, so other routes pay nothing.
import type { FastifyInstance, onSendHookHandler } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Every response of this route may carry a secret: never to be stored by a cache. */
    secret?: boolean;
  }
}

const noStore: onSendHookHandler = (_request, reply, payload, done) => {
  void reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  done(null, payload);
};

export const secretResponsesPlugin = fp(async function secretResponses(app: FastifyInstance) {
  // Registered before the routes: onRoute sees only the routes added after it.
  app.addHook('onRoute', (route) => {
    if (route.config?.secret !== true) return;
    const given = route.onSend;
    route.onSend = given === undefined ? [noStore] : [...[given].flat(), noStore];
  });
}, { name: 'secret-responses' });
