// The one place errors become HTTP: every error, from a service's AppError to Fastify's own, is
// answered as application/problem+json (RFC 9457). A 500 never carries internal detail.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, ERRORS, type ErrorCode, type FieldError } from '../errors.ts';
import { toFieldErrors } from './validation.ts';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Fastify's own error codes that map to a problem code of ours. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload-too-large',
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed-json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed-json',
};

/**
 * What an error of Fastify or of a plugin (the static files behind /docs) means, by the HTTP
 * status it carries. Each is answered with that status: a 403 of the static plugin, say, is a
 * refusal, not an internal error to log with its stack.
 */
const BY_STATUS: Record<number, ErrorCode> = {
  400: 'bad-request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'route-not-found',
  405: 'method-not-allowed',
  408: 'request-timeout',
  412: 'precondition-failed',
  413: 'payload-too-large',
  414: 'uri-too-long',
  415: 'unsupported-media-type',
  416: 'range-not-satisfiable',
  429: 'rate-limited',
  431: 'headers-too-large',
  503: 'service-unavailable',
};

/** Headers a library error may carry that belong in the answer (the static plugin's Content-Range on a 416). */
const PASSED_HEADERS = ['allow', 'content-range', 'retry-after'];

const DETAILS: Partial<Record<ErrorCode, string>> = {
  'unsupported-media-type': 'Send the body as application/json.',
  'payload-too-large': 'The request body is larger than 1 MiB.',
  'malformed-json': 'The request body is not valid JSON.',
  'request-timeout': 'The request did not arrive in time.',
  'uri-too-long': 'The request URI is too long.',
  'headers-too-large': 'The request headers are too large.',
  'bad-request': 'The request is not well-formed HTTP.',
};

export function problemType(code: ErrorCode): string {
  return `urn:fleet:problem:${code}`;
}

/** The RFC 9457 body of a problem. */
export function problemBody(
  code: ErrorCode,
  detail: string | undefined,
  where: { instance?: string; requestId: string; errors?: FieldError[] },
) {
  const { status, title } = ERRORS[code];
  return {
    type: problemType(code),
    title,
    status,
    ...(detail === undefined ? {} : { detail }),
    code,
    ...(where.instance === undefined ? {} : { instance: where.instance }),
    requestId: where.requestId,
    ...(where.errors === undefined ? {} : { errors: where.errors }),
  };
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string | undefined,
  extra: { errors?: FieldError[]; headers?: Record<string, string> } = {},
): FastifyReply {
  const body = problemBody(code, detail, { instance: request.url.split('?')[0], requestId: request.id, errors: extra.errors });
  if (extra.headers !== undefined) void reply.headers(extra.headers);
  // Set here as well as in app/http.ts's onRequest hook: Fastify's framework errors (a URL it cannot
  // route) are answered without running any hook.
  void reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff');
  return reply
    .code(body.status)
    .type('application/problem+json')
    .serializer(JSON.stringify)
    .send(body);
}

function classify(error: FastifyError): { code: ErrorCode; detail?: string; errors?: FieldError[]; headers?: Record<string, string> } {
  if (error instanceof AppError) {
    return { code: error.code, detail: error.detail, errors: error.errors, headers: error.headers };
  }
  if (error.validation !== undefined) {
    const errors = toFieldErrors(error.validation, error.validationContext);
    return {
      code: 'validation-failed',
      detail: errors.map((e) => `${e.in === undefined ? '' : `${e.in} `}${e.path || '/'} ${e.message}`).join('; '),
      errors,
    };
  }
  const mapped = error.code === undefined ? undefined : FASTIFY_CODES[error.code];
  if (mapped !== undefined) return { code: mapped, detail: DETAILS[mapped] };
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') {
    return { code: 'malformed-json', detail: DETAILS['malformed-json'] };
  }
  const status = error.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // A client error of a library is meant for the client (http-errors calls it `expose`); one
    // with a status we have no code for is still the client's, so a 400 rather than a 500.
    const code = BY_STATUS[status] ?? 'bad-request';
    return { code, detail: error.message || DETAILS[code], headers: passedHeaders(error) };
  }
  if (status === 503) return { code: 'service-unavailable', detail: error.message, headers: passedHeaders(error) };
  return { code: 'internal-error' };
}

function passedHeaders(error: FastifyError): Record<string, string> | undefined {
  const given = (error as { headers?: Record<string, unknown> }).headers;
  if (given === undefined || given === null) return undefined;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    if (PASSED_HEADERS.includes(name.toLowerCase()) && typeof value === 'string') out[name.toLowerCase()] = value;
  }
  return out;
}

/** Fastify's errors before routing (a URL it cannot decode, a path parameter too long): the `frameworkErrors` option. */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const code = BY_STATUS[error.statusCode ?? 500];
  if (code === undefined || (error.statusCode ?? 500) >= 500) {
    request.log.error({ err: error }, 'unhandled framework error');
    void sendProblem(request, reply, 'internal-error', `An internal error occurred. Quote request id ${request.id} when reporting it.`);
    return;
  }
  const detail = error.code === 'FST_ERR_BAD_URL'
    ? 'The request path is not a valid URL (a bad percent-encoding).'
    : error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path segment is longer than any identifier.' : DETAILS[code];
  void sendProblem(request, reply, code, detail);
}

/** The request line overflowed the header limit, rather than a header: the bytes parsed so far hold no line end. */
function requestLineOverflowed(error: { rawPacket?: Buffer; bytesParsed?: number }): boolean {
  const packet = error.rawPacket;
  if (packet === undefined) return false;
  const parsed = packet.subarray(0, error.bytesParsed ?? packet.length);
  // Only when this chunk starts the request: a later chunk without a line end may as well be a
  // long header sent in pieces, which is a 431.
  return /^[A-Z]{3,10} /.test(parsed.subarray(0, 11).toString('latin1')) && !parsed.includes('\r\n');
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses, and requests that did not
 * arrive within their timeout, before there is any request object. Answered as a problem written
 * on the socket, which is then closed: a parser that lost track cannot read another request there.
 */
export function clientErrorHandler(this: { log: FastifyBaseLogger }, error: Error, socket: Socket): void {
  // Node's parser errors carry the chunk it failed in and how far it got (typed loosely by Fastify).
  const parserError = error as Error & { code?: string; rawPacket?: Buffer; bytesParsed?: number };
  // A reset connection has nobody left to answer.
  if (parserError.code === 'ECONNRESET' || socket.destroyed) return;
  const code: ErrorCode = parserError.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? 'request-timeout'
    : parserError.code === 'HPE_HEADER_OVERFLOW'
      ? requestLineOverflowed(parserError) ? 'uri-too-long' : 'headers-too-large'
      : 'bad-request';
  answerOnSocket(socket, code, this.log, error);
}

/** The response in progress on an HTTP connection, if any (Node's own bookkeeping, which its default handler reads too). */
export function responseOn(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/** Writes a problem straight on a connection that has no request object to answer with, and closes it. */
export function answerOnSocket(socket: Socket, code: ErrorCode, log: FastifyBaseLogger, error?: Error): void {
  const requestId = randomUUID();
  log.debug({ err: error, reqId: requestId, code }, 'client error');
  // As Node itself does: answer only if no response to this request has begun on the socket.
  const inFlight = responseOn(socket);
  if (socket.writable && (inFlight === undefined || !inFlight.headersSent)) {
    const body = JSON.stringify(problemBody(code, DETAILS[code], { requestId }));
    const { status } = ERRORS[code];
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
      'content-type: application/problem+json',
      `content-length: ${Buffer.byteLength(body)}`,
      `x-request-id: ${requestId}`,
      'x-content-type-options: nosniff',
      'connection: close',
    ].join('\r\n');
    socket.write(`${head}\r\n\r\n${body}`, () => socket.destroy());
    // A peer that reads nothing must not keep the socket open through a full send buffer.
    setTimeout(() => socket.destroy(), 1_000).unref();
    return;
  }
  socket.destroy();
}

export const problemsPlugin = fp(async function problems(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = classify(error);
    if (problem.code === 'internal-error') {
      request.log.error({ err: error }, 'unhandled error');
      return sendProblem(request, reply, 'internal-error', `An internal error occurred. Quote request id ${request.id} when reporting it.`);
    }
    if (problem.code === 'service-unavailable' && !(error instanceof AppError && error.quiet)) request.log.warn({ err: error }, 'backing service unavailable');
    return sendProblem(request, reply, problem.code, problem.detail, problem);
  });

  // Unknown path: 404. Known path, other method: 405 with the methods it does allow.
  app.setNotFoundHandler((request, reply) => {
    const url = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((method) => {
      const found = app.findRoute({ method, url });
      // CORS's catch-all OPTIONS route (http/cors.ts) answers preflights only: no method of this path.
      return found !== null && !(method === 'OPTIONS' && '*' in found.params);
    });
    if (allowed.length > 0) {
      return sendProblem(request, reply, 'method-not-allowed', `${request.method} is not allowed here; use ${allowed.join(', ')}.`, {
        headers: { allow: allowed.join(', ') },
      });
    }
    return sendProblem(request, reply, 'route-not-found', `No route ${request.method} ${url}.`);
  });
}, { name: 'problems' });
