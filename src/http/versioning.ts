// /api/v1 is kept for existing clients. Every response on it says so: Deprecation (RFC 9745),
// Sunset (RFC 8594) and a Link to the /v2 equivalent. A v1 route names its successor in its
// config as a path template, e.g. `/v2/fleet/vehicles/{id}`.
import type { FastifyRequest, onSendHookHandler } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** For a deprecated route: the path template of its /v2 successor. */
    successor?: string;
  }
}

/** When /api/v1 was deprecated, and when it goes away. Part of the public contract. */
export const V1_DEPRECATED_AT = new Date('2026-01-01T00:00:00Z');
export const V1_SUNSET_AT = new Date('2027-12-31T23:59:59Z');

const deprecationValue = `@${Math.floor(V1_DEPRECATED_AT.getTime() / 1000)}`;
const sunsetValue = V1_SUNSET_AT.toUTCString();

function successorUrl(template: string, request: FastifyRequest): string {
  const params = (request.params ?? {}) as Record<string, string>;
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
}

/**
 * An onSend hook for the deprecated family's plugin only (registered inside it, so /v2 requests
 * never run it): adds the headers to every response, errors included.
 */
export const deprecationHeaders: onSendHookHandler = (request, reply, payload, done) => {
  const successor = request.routeOptions.config?.successor;
  if (successor !== undefined) {
    void reply.header('deprecation', deprecationValue);
    void reply.header('sunset', sunsetValue);
    void reply.header('link', `<${successorUrl(successor, request)}>; rel="successor-version"`);
  }
  done(null, payload);
};
