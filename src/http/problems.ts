// The one place errors become HTTP: every error, from a service's AppError to Fastify's own, is
// answered as application/problem+json (RFC 9457). A 500 never carries internal detail.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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

const DETAILS: Partial<Record<ErrorCode, string>> = {
  'unsupported-media-type': 'Send the body as application/json.',
  'payload-too-large': 'The request body is larger than 1 MiB.',
  'malformed-json': 'The request body is not valid JSON.',
};

export function problemType(code: ErrorCode): string {
  return `urn:fleet:problem:${code}`;
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  code: ErrorCode,
  detail: string | undefined,
  extra: { errors?: FieldError[]; headers?: Record<string, string> } = {},
): FastifyReply {
  const { status, title } = ERRORS[code];
  const body = {
    type: problemType(code),
    title,
    status,
    ...(detail === undefined ? {} : { detail }),
    code,
    instance: request.url.split('?')[0],
    requestId: request.id,
    ...(extra.errors === undefined ? {} : { errors: extra.errors }),
  };
  if (extra.headers !== undefined) void reply.headers(extra.headers);
  return reply
    .code(status)
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
  if (error.statusCode === 400) return { code: 'validation-failed', detail: error.message };
  return { code: 'internal-error' };
}

export const problemsPlugin = fp(async function problems(app: FastifyInstance) {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = classify(error);
    if (problem.code === 'internal-error') {
      request.log.error({ err: error }, 'unhandled error');
      return sendProblem(request, reply, 'internal-error', `An internal error occurred. Quote request id ${request.id} when reporting it.`);
    }
    if (problem.code === 'service-unavailable') request.log.warn({ err: error }, 'backing service unavailable');
    return sendProblem(request, reply, problem.code, problem.detail, problem);
  });

  // Unknown path: 404. Known path, other method: 405 with the methods it does allow.
  app.setNotFoundHandler((request, reply) => {
    const url = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((method) => app.findRoute({ method, url }) !== null);
    if (allowed.length > 0) {
      return sendProblem(request, reply, 'method-not-allowed', `${request.method} is not allowed here; use ${allowed.join(', ')}.`, {
        headers: { allow: allowed.join(', ') },
      });
    }
    return sendProblem(request, reply, 'route-not-found', `No route ${request.method} ${url}.`);
  });
}, { name: 'problems' });
