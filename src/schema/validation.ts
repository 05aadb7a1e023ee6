// Request validation. Bodies are checked exactly as sent (a string where a number belongs is an
// error, unknown properties are errors, never silently stripped). The query string and path are
// text by nature: a property their schema declares an integer, a number or a boolean is converted
// here first, from plain decimal text (or `true`/`false`) only, and then checked by the same rules.
//
// Ajv's own coercion is not used for them: it converts whatever `Number()` reads, so `Infinity`,
// `1e309`, `0x10`, `1e3` and ` 5` became numbers, and an infinite one passed `maximum` (it is
// coerced after the type check) to reach the store as a value SQLite refuses: a 500.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from '../errors.ts';
import { MULTILINE_PATTERN, NAME_PATTERN } from './common.ts';
import { isDateTime } from './date-time.ts';
import { namedSchemas } from './named.ts';

// `strict` includes strictNumbers: NaN and Infinity (JSON's 1e309) are not numbers.
const ajv = new Ajv({
  coerceTypes: false,
  removeAdditional: false,
  useDefaults: true,
  allErrors: true,
  strict: true,
  allowUnionTypes: true,
});
ajv.addFormat('date-time', { type: 'string', validate: isDateTime });

const known = new Set<string>();

/** Compiles `schema` after teaching the validator every named schema it may reference. */
function compile<T = unknown>(schema: object): ValidateFunction<T> {
  for (const named of namedSchemas()) {
    if (known.has(named.$id)) continue;
    ajv.addSchema(named);
    known.add(named.$id);
  }
  return ajv.compile<T>(schema);
}

/** A validator for JSON that arrives by other paths than a route body (MQTT), with the same rules. */
export function compileDataValidator<T>(schema: object) {
  return compile<T>(schema);
}

const INTEGER_TEXT = /^-?[0-9]+$/;
const NUMBER_TEXT = /^-?[0-9]+(\.[0-9]+)?$/;

type Convert = (text: string) => unknown;

/**
 * How text becomes the type a property's schema declares; undefined for strings (and anything
 * else, which is then checked as the text it is). Text that does not convert is left as it is, so
 * the check that follows reports it as "must be integer" with its pointer.
 */
function converterFor(schema: unknown): Convert | undefined {
  const type = (schema as { type?: unknown } | null)?.type;
  const finite = (text: string) => {
    const value = Number(text);
    // Forty digits are still "decimal text", but a value too large for a double is no number.
    return Number.isFinite(value) ? value : text;
  };
  switch (type) {
    case 'integer':
      return (text) => (INTEGER_TEXT.test(text) ? finite(text) : text);
    case 'number':
      return (text) => (NUMBER_TEXT.test(text) ? finite(text) : text);
    case 'boolean':
      return (text) => (text === 'true' ? true : text === 'false' ? false : text);
    default:
      return undefined;
  }
}

/** The query or path validator: the strict conversions above, then the schema's own check. */
function textValidator(schema: object): ValidateFunction {
  const validate = compile(schema);
  const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
  const converters = Object.entries(properties).flatMap(([name, property]) => {
    const convert = converterFor(property);
    return convert === undefined ? [] : [[name, convert] as const];
  });
  if (converters.length === 0) return validate;
  const converting = ((data: unknown) => {
    if (typeof data === 'object' && data !== null) {
      const values = data as Record<string, unknown>;
      for (const [name, convert] of converters) {
        const value = values[name];
        // A repeated parameter arrives as an array and stays one: the type check refuses it.
        if (typeof value === 'string') values[name] = convert(value);
      }
    }
    return validate(data);
  }) as ValidateFunction;
  // Fastify reads the errors of a failed check from the function it was given.
  Object.defineProperty(converting, 'errors', { get: () => validate.errors });
  return converting;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  httpPart === 'body' ? compile(schema as object) : textValidator(schema as object);

const PARTS: Record<string, FieldError['in']> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** Ajv's errors as `{in, path, message}`, the pointer naming the offending property itself. */
export function toFieldErrors(errors: readonly Partial<ErrorObject>[], context: string | undefined): FieldError[] {
  const where = context === undefined ? undefined : PARTS[context];
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of errors) {
    let path = error.instancePath ?? '';
    let message = error.message ?? 'is invalid';
    const params = (error.params ?? {}) as Record<string, unknown>;
    switch (error.keyword ?? '') {
      case 'required':
        path += `/${escapePointer(String(params.missingProperty))}`;
        message = 'is required';
        break;
      case 'additionalProperties':
        path += `/${escapePointer(String(params.additionalProperty))}`;
        message = 'is not an allowed field';
        break;
      case 'enum':
        message = `must be one of: ${(params.allowedValues as unknown[]).join(', ')}`;
        break;
      case 'pattern':
        if (params.pattern === NAME_PATTERN) message = 'must not contain control characters';
        else if (params.pattern === MULTILINE_PATTERN) message = 'must not contain control characters other than tab and line breaks';
        break;
      default:
        break;
    }
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(where === undefined ? { path, message } : { in: where, path, message });
  }
  return out;
}

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
