// Live streams over HTTP (create, read, end, new tickets) and the WebSocket attach, which shares
// the read's path: `GET /v2/streams/{streamId}` with an Upgrade attaches, without one it reads.
//
// Attaching is checked entirely before the upgrade, so a refused client never gets a 101: the
// Origin (browsers), then the ticket or the bearer token (auth plugin, via
// `alternativeCredential`), then the stream (same organization, still open). Refusals are
// ordinary problem+json responses over HTTP.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import type { Principal } from '../auth/scopes.ts';
import { iso } from '../clock.ts';
import { AppError } from '../errors.ts';
import { REALM } from '../http/auth.ts';
import { NoContent, responses } from '../schema/common.ts';
import { VehicleId } from '../vehicles/schema.ts';
import { eventsOf } from './messages.ts';
import {
  AttachQuery,
  CreatedStream,
  FleetStreamBody,
  INTERVAL_DEFAULT,
  StreamDetails,
  StreamIdParams,
  StreamTicket,
  VehicleStreamBody,
} from './schema.ts';
import type { StreamService, StreamView } from './service.ts';
import { typed } from '../http/typed.ts';

export interface StreamRoutesOptions {
  service: StreamService;
  /** FLEET_PUBLIC_URL: the WebSocket URL is built on it (http → ws, https → wss). */
  publicUrl: string;
  /** Browser origins allowed to attach besides the request's own (`*`: any). */
  allowedOrigins: readonly string[];
}

const VehicleParams = Type.Object({ vehicleId: VehicleId }, { additionalProperties: false });

const PROTOCOL =
  'Server messages are JSON text: first `{"type":"connected","streamId","subscriptions","interval","resumed","lastSeq"}`; then a snapshot ' +
  '(the current state of each subscribed type of each vehicle, where it has any) unless the stream resumed; then ' +
  '`{"type":"<event>","seq":N,"vehicleId","timestamp","data"}` with `seq` +1 per message (the `events` type sends ' +
  '`{"type":"event",…,"data":<the event>}`). The client may send `{"type":"subscribe"|"unsubscribe","events":[...]}` ' +
  '(answered `{"type":"subscriptions",...}`; a subscribe needs the scopes of the types it adds); anything else gets ' +
  '`{"type":"error","code","detail"}` and the socket stays open. Client messages have a budget (20 at once, then 5 a second): ' +
  'over it, `rate-limited` errors, then close 1008. Close codes: 1000 stream ended, 1001 server shutting down, ' +
  '1008 the credential was revoked or expired, or too many client messages, 1009 client message over 64 KiB, ' +
  '1011 internal error, 1013 too slow a consumer, 4000 replaced by a newer connection.';

/**
 * A socket lives for hours; the upgrade's HTTP request need not live with it. @fastify/websocket
 * leaves the request's response object on the TCP socket and keeps the request and reply in its
 * error listener: together some kilobytes per socket (the response, Fastify's request, reply and
 * child logger). Both are let go here; socket errors need no handler of ours, since ws closes
 * the socket itself and its 'close' event does the cleaning up.
 */
function releaseUpgradeRequest(request: FastifyRequest, socket: WebSocket): void {
  const tcp = request.raw.socket as Socket & { _httpMessage?: ServerResponse | null };
  tcp._httpMessage?.detachSocket(tcp);
  socket.removeAllListeners('error');
  socket.on('error', ignoreSocketError);
}

function ignoreSocketError(): void {}

/**
 * Whether a page of `origin` is served by the host the request was sent to (its Host header):
 * same-origin, whatever FLEET_PUBLIC_URL says, so that the dashboard works through any name or
 * address that reaches the service. The scheme is not compared: behind a TLS-terminating proxy the
 * request arrives over http from an https page. A browser sends the Host of the URL it connects to
 * and the Origin of the page, so the two agree only for a page loaded through that same host name.
 */
export function isSameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined || host === '') return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed page, a file) and anything else that is not an origin
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const sent = host.toLowerCase();
  if (url.host === sent) return true;
  // A Host that spells out the scheme's default port, which an origin leaves out.
  return url.port === '' && sent === `${url.hostname}:${url.protocol === 'https:' ? '443' : '80'}`;
}

export async function streamRoutes(instance: FastifyInstance, opts: StreamRoutesOptions) {
  const app = typed(instance);
  const { service } = opts;
  const tags = ['streams'];
  const wsBase = opts.publicUrl.replace(/^http/, 'ws');
  const attachUrl = (stream: { id: string }, ticket: string) => `${wsBase}/v2/streams/${stream.id}?ticket=${ticket}`;
  const anyOrigin = opts.allowedOrigins.includes('*');
  const origins = new Set(opts.allowedOrigins);

  /** Only requests Node routed to its 'upgrade' event can become WebSockets. */
  const isUpgrade = (request: FastifyRequest) => (request.raw as { upgrade?: boolean }).upgrade === true;

  /** The ticket of a WebSocket upgrade (after the Origin check), or undefined: use the bearer token. */
  // Called by the auth hook, before validation: the query and path are whatever was sent.
  async function ticketCredential(request: FastifyRequest): Promise<Principal | undefined> {
    if (!isUpgrade(request)) return undefined;
    // Cross-site WebSocket hijacking: a browser page from another origin cannot attach, unless
    // that origin is allowed; a page of the very origin the request was sent to always may.
    const origin = request.headers.origin;
    if (origin !== undefined && !anyOrigin && !origins.has(origin.toLowerCase()) && !isSameOrigin(origin, request.headers.host)) {
      throw new AppError('origin-not-allowed', `WebSocket connections from origin "${origin.slice(0, 200)}" are not allowed.`);
    }
    const { query, params } = request;
    const ticket = typeof query === 'object' && query !== null && 'ticket' in query ? query.ticket : undefined;
    const streamId = typeof params === 'object' && params !== null && 'streamId' in params ? params.streamId : undefined;
    if (typeof ticket !== 'string' || ticket === '' || typeof streamId !== 'string') return undefined;
    const principal = await service.redeemTicket(streamId, ticket);
    if (principal === undefined) {
      throw new AppError('invalid-token', 'The ticket is unknown, expired, already used or for another stream; ask for a new one.', {
        headers: { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"` },
      });
    }
    return principal;
  }

  const vehicleFields = (stream: Pick<StreamView, 'vehicleId' | 'vehicleIds'>) =>
    stream.vehicleId !== undefined ? { vehicleId: stream.vehicleId } : { vehicleIds: stream.vehicleIds === null ? null : [...stream.vehicleIds] };

  async function created(request: FastifyRequest, body: { events: string[]; interval?: number }, where: { vehicleId?: string; vehicleIds?: string[] | null }) {
    const interval = body.interval ?? INTERVAL_DEFAULT;
    const { stream, ticket, ticketExpiresAt } = await service.create(request.principal, { ...where, events: body.events, interval });
    return {
      stream,
      body: {
        streamId: stream.id,
        status: 'connected' as const,
        subscriptions: eventsOf(stream.mask),
        ...vehicleFields(stream),
        interval,
        url: attachUrl(stream, ticket),
        expiresAt: iso(ticketExpiresAt),
      },
    };
  }

  const createDescription =
    'Answers the stream with its WebSocket `url`, which carries a single-use ticket (browsers cannot send an Authorization header); ' +
    'non-browser clients may instead connect to the URL without the ticket and with `Authorization: Bearer` of the same organization. ' +
    'A stream not attached within 60 s expires. 403 `quota-exceeded` when the organization has its quota of open streams. ';

  app.post('/v2/telemetry/:vehicleId/stream', {
    config: { scope: 'streams' },
    schema: {
      operationId: 'createVehicleStream', tags, summary: 'Create a live stream of one vehicle',
      description: createDescription + 'Another organization\'s vehicle answers 404, as a missing one does.',
      params: VehicleParams,
      body: VehicleStreamBody,
      response: responses({ 201: CreatedStream }, { body: true, location: true, errors: [404] }),
    },
  }, async (request, reply) => {
    const { vehicleId } = request.params;
    const { stream, body } = await created(request, request.body, { vehicleId });
    return reply.code(201).header('location', `/v2/streams/${stream.id}`).send(body);
  });

  app.post('/v2/telemetry/stream', {
    config: { scope: 'streams' },
    schema: {
      operationId: 'createFleetStream', tags, summary: 'Create a live stream of the fleet, or of listed vehicles',
      description:
        createDescription + 'Without `vehicleIds`, the stream covers every vehicle of the organization, including those registered later; ' +
        'with it, exactly those (404 naming any that does not exist). A vehicle whose id is `stream` sends telemetry with `POST /v2/telemetry`: ' +
        'this path is the stream\'s.',
      body: FleetStreamBody,
      response: responses({ 201: CreatedStream }, { body: true, location: true, errors: [404] }),
    },
  }, async (request, reply) => {
    const input = request.body;
    const { stream, body } = await created(request, input, { vehicleIds: input.vehicleIds ?? null });
    return reply.code(201).header('location', `/v2/streams/${stream.id}`).send(body);
  });

  app.route({
    method: 'GET',
    url: '/v2/streams/:streamId',
    config: { scope: 'streams', alternativeCredential: ticketCredential },
    schema: {
      operationId: 'getStream', tags, summary: 'Read a live stream, or attach a WebSocket to it',
      description:
        'Without an Upgrade header: the stream\'s state. With `Upgrade: websocket`: attaches a WebSocket (101), authenticated by the ' +
        '`ticket` query parameter or by `Authorization: Bearer` of the stream\'s organization with the `streams` scope and the scopes ' +
          'of the stream\'s types (as for creating it). Everything is ' +
        'checked before the upgrade: a bad, expired or reused ticket answers 401, a browser `Origin` not allowed 403 `origin-not-allowed`, ' +
        'another organization\'s or an unknown stream 404, an ended one 409 `stream-closed`. `lastSeq=N` resumes after seq N, replaying ' +
        'the messages still held (at least the last 60 s); when some are gone, a snapshot follows instead. `batch=true` sends the messages ' +
        'of one turn of the server in one text frame, separated by newlines. ' + PROTOCOL,
      params: StreamIdParams,
      querystring: AttachQuery,
      response: responses({ 200: StreamDetails }, { errors: [404, 409] }),
    },
    preHandler: async (request) => {
      // Checked before the upgrade; a stream held by another node (cluster mode) is taken over here.
      if (isUpgrade(request)) await service.prepareAttach(request.principal, request.params.streamId);
    },
    handler: async (request) => details(await service.read(request.principal.organizationId, request.params.streamId)),
    wsHandler: (socket, request) => {
      releaseUpgradeRequest(request, socket);
      service.attach(request.principal, request.params.streamId, socket, request.query.lastSeq, request.query.batch === true);
    },
  });

  app.delete('/v2/streams/:streamId', {
    config: { scope: 'streams' },
    schema: {
      operationId: 'deleteStream', tags, summary: 'End a live stream',
      description: 'Its socket, if any, is closed with 1000. Ending an ended stream is a no-op (204).',
      params: StreamIdParams,
      response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await service.end(request.principal.organizationId, request.params.streamId);
    return reply.code(204).send();
  });

  app.post('/v2/streams/:streamId/tickets', {
    config: { scope: 'streams' },
    schema: {
      operationId: 'createStreamTicket', tags, summary: 'A new single-use ticket to (re)attach to a stream',
      description:
        'For browsers reconnecting to a stream (add `&lastSeq=N` to the `url` to resume). The ticket expires in 60 s. ' +
        'An ended or expired stream answers 409 `stream-closed`.',
      params: StreamIdParams,
      response: responses({ 200: StreamTicket }, { errors: [404, 409] }),
    },
  }, async (request) => {
    const { streamId, ticket, expiresAt } = await service.issueTicket(request.principal.organizationId, request.params.streamId);
    return { streamId, url: attachUrl({ id: streamId }, ticket), expiresAt: iso(expiresAt) };
  });

  function details(stream: StreamView) {
    return {
      streamId: stream.id,
      status: stream.status,
      subscriptions: eventsOf(stream.mask),
      ...vehicleFields(stream),
      interval: stream.interval,
      attached: stream.attached,
      lastSeq: stream.lastSeq,
      createdAt: iso(stream.createdAt),
      expiresAt: stream.expiresAt === null ? null : iso(stream.expiresAt),
      closedAt: stream.closedAt === null ? null : iso(stream.closedAt),
      bufferedBytes: stream.bufferedBytes,
      conflated: stream.conflated,
    };
  }
}
