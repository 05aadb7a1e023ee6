// Schema pieces shared by every module, and the helper that gives each route its error responses.
import { Type, type TSchema } from 'typebox';
import { ERRORS } from '../errors.ts';
import { named } from './named.ts';

export const IsoTimestamp = Type.String({
  format: 'date-time',
  description: 'ISO 8601 UTC with milliseconds.',
  examples: ['2026-11-22T08:30:00.000Z'],
});

/**
 * Text a person names something with, or explains a change in: no control characters (a NUL
 * cannot be stored in PostgreSQL text, and the others only hide what a list shows). A `multiline`
 * text keeps tab, line feed and carriage return.
 */
export const NAME_PATTERN = '^[^\\u0000-\\u001f\\u007f]*$';
export const MULTILINE_PATTERN = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$';

export function PlainText(options: { minLength?: number; maxLength: number; description?: string; multiline?: boolean }) {
  const { multiline, ...rest } = options;
  return Type.String({ ...rest, pattern: multiline === true ? MULTILINE_PATTERN : NAME_PATTERN });
}

export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 1000;

/** `limit` and `offset` of every paged list. */
export const Paging = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT, description: 'Page size.' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'Items to skip.' })),
};

/** The page a paged list's query asks for, with the defaults applied. */
export function pageOf(query: { limit?: number; offset?: number }): { limit: number; offset: number } {
  return { limit: query.limit ?? LIST_LIMIT_DEFAULT, offset: query.offset ?? 0 };
}

/** A pattern that accepts one value of `values`, or several separated by commas. */
export function commaListPattern(values: readonly string[]): string {
  const one = `(${values.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`;
  return `^${one}(,${one})*$`;
}

export const FieldError = named('FieldError', Type.Object(
  {
    in: Type.Optional(Type.Enum(['body', 'query', 'path', 'header'], { description: 'The part of the request.' })),
    path: Type.String({ description: 'JSON Pointer into that part of the request.' }),
    message: Type.String(),
  },
  { description: 'What is wrong with one value of the request.' },
));

export const Problem = named('Problem', Type.Object(
  {
    type: Type.String({ description: 'URI naming the problem type.' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.Optional(Type.String()),
    code: Type.Enum(Object.keys(ERRORS), { description: 'Stable machine-readable code.' }),
    instance: Type.Optional(Type.String({ description: 'The request path.' })),
    requestId: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(FieldError, { description: 'Each invalid value, on a `validation-failed` problem.' })),
  },
  {
    description: 'RFC 9457 problem details.',
    examples: [
      {
        type: 'urn:fleet:problem:vehicle-not-found', title: 'Vehicle not found', status: 404,
        detail: 'No vehicle "van-042" in this organization.', code: 'vehicle-not-found', instance: '/v2/fleet/vehicles/van-042',
      },
    ],
  },
));

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed JSON, or a body, query or path that fails validation.',
  401: 'No credential, or one that is not valid.',
  403: 'The credential lacks the scope this operation needs.',
  404: 'No such resource in the caller\'s organization.',
  409: 'Conflicts with the current state.',
  410: 'What the cursor pointed at is no longer kept.',
  413: 'Body over 1 MiB.',
  415: 'Body is not application/json.',
  429: 'Rate limit reached.',
  500: 'Internal error.',
  503: 'A backing service is unavailable.',
};

const problemResponse = (status: number) => ({
  description: ERROR_DESCRIPTIONS[status] ?? 'Error.',
  content: { 'application/problem+json': { schema: Problem } },
});

/** Responses every authenticated route can give, whatever it does. */
const AUTHENTICATED_ERRORS = [400, 401, 403, 429, 500] as const;
const BODY_ERRORS = [413, 415] as const;

/**
 * Where a route's `response` schema lists the headers its success responses carry beyond those of
 * every response, by status (`{201: ['Location']}`); read by the OpenAPI document. A symbol, so
 * Fastify and the serializer, which walk the status codes, never see it.
 */
export const DECLARED_HEADERS = Symbol('declared response headers');

/**
 * A route's `response` schema: its success responses plus the problem responses it can give.
 * Every status gets a schema, so no field a schema does not name can leak into a response.
 * `location`: the 201 carries a `Location` header naming the created resource. `headers`: other
 * named headers (http/openapi.ts) a success response carries, by status.
 */
export function responses(
  success: Record<number, TSchema>,
  options: { errors?: number[]; body?: boolean; authenticated?: boolean; location?: boolean; headers?: Record<number, string[]> } = {},
): Record<number, unknown> {
  const out: Record<number, unknown> & { [DECLARED_HEADERS]?: Record<number, string[]> } = { ...success };
  const statuses = new Set<number>([
    ...(options.authenticated === false ? [] : AUTHENTICATED_ERRORS),
    ...(options.body ? BODY_ERRORS : []),
    ...(options.errors ?? []),
  ]);
  for (const status of [...statuses].sort()) out[status] = problemResponse(status);
  const declared: Record<number, string[]> = { ...options.headers };
  if (options.location === true) declared[201] = [...(declared[201] ?? []), 'Location'];
  if (Object.keys(declared).length > 0) out[DECLARED_HEADERS] = declared;
  return out;
}

/** The response of a 204: no body at all. */
export const NoContent = Type.Null({ description: 'No content.' });
