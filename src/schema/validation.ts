// Request validation. Bodies are checked exactly as sent (a string where a number belongs is an
// error, unknown properties are errors, never silently stripped). The query string and path are
// text by nature: a property their schema declares an integer, a number or a boolean is converted
// here first, from plain decimal text (or `true`/`false`) only, and then checked by the same rules.
//
// Ajv's own coercion is not used for them: it converts whatever `Number()` reads, so `Infinity`,
// `1e309`, `0x10`, `1e3` and ` 5` became numbers, and an infinite one passed `maximum` (it is
// coerced after the type check) to reach the store as a value SQLite refuses: a 500.
import { Ajv, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from '../errors.ts';
import { MULTILINE_PATTERN, NAME_PATTERN } from './common.ts';
import { type RawError, escapePointer, messageOf, oneOfWords, resolveUnions } from './error-words.ts';
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
  // Errors carry the schema and value they concern: a union's errors are reduced to the branch
  // meant, and patterns explained in words (error-words.ts). Only failed checks pay for it.
  verbose: true,
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

/** A named schema a `$ref` points at; any other schema as it is. */
function resolveRef(schema: unknown): unknown {
  const ref = (schema as { $ref?: unknown } | null)?.$ref;
  return typeof ref === 'string' ? (ajv.getSchema(ref)?.schema ?? schema) : schema;
}

const SIMPLE_CLASS = /^\^([a-z]+_)?\[([^\]]+)\]\{(\d+),(\d+)\}\$$/;
const COMMA_LIST = /^\^\(([^()]+)\)\(,\(\1\)\)\*\$$/;

/** The characters of a simple character class, as a person reads them: "A-Z a-z 0-9 . _ : -". */
function classWords(cls: string): string {
  const parts = cls.match(/.-.(?!$)|\\.|./g) ?? [];
  return parts.map((p) => (p.startsWith('\\') ? p.slice(1) : p)).join(' ');
}

/** The patterns the schemas use, in words; undefined for one of another shape (see messageOf). */
function patternWords(pattern: string): string | undefined {
  if (pattern === NAME_PATTERN) return 'must not contain control characters';
  if (pattern === MULTILINE_PATTERN) return 'must not contain control characters other than tab and line breaks';
  const list = COMMA_LIST.exec(pattern);
  if (list !== null) return `must be one or more of ${oneOfWords(list[1]!.split('|').map((v) => v.replace(/\\(.)/g, '$1')))}, separated by commas`;
  if (pattern === '^[a-z]+(,[a-z]+)*$') return 'must be one or more names in lower case, separated by commas';
  const simple = SIMPLE_CLASS.exec(pattern);
  if (simple !== null) {
    const [, prefix, cls, min, max] = simple;
    const count = min === max ? `${min}` : `${min} to ${max}`;
    return `must be ${prefix === undefined ? '' : `${prefix} followed by `}${count} characters of ${classWords(cls!)}`;
  }
  return undefined;
}

/** Ajv's errors as `{in, path, message}`, the pointer naming the offending property itself. */
export function toFieldErrors(errors: readonly RawError[], context: string | undefined): FieldError[] {
  const where = context === undefined ? undefined : PARTS[context];
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of resolveUnions(errors, resolveRef)) {
    let path = error.instancePath ?? '';
    const params = (error.params ?? {}) as Record<string, unknown>;
    if (error.keyword === 'required') path += `/${escapePointer(String(params.missingProperty))}`;
    else if (error.keyword === 'additionalProperties') path += `/${escapePointer(String(params.additionalProperty))}`;
    const message = messageOf(error, patternWords);
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(where === undefined ? { path, message } : { in: where, path, message });
  }
  return out;
}
