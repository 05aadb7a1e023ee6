// Request validation. Two Ajv instances: bodies are checked exactly as sent (a string where a
// number belongs is an error, unknown properties are errors, never silently stripped), while the
// query string and path, which are text by nature, are coerced to the schema's types.
import { Ajv, type ErrorObject } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import type { FieldError } from '../errors.ts';
import { isDateTime } from './date-time.ts';
import { MULTILINE_PATTERN, NAME_PATTERN } from './schema.ts';

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    coerceTypes,
    removeAdditional: false,
    useDefaults: true,
    allErrors: true,
    strict: true,
    allowUnionTypes: true,
  });
  ajv.addFormat('date-time', { type: 'string', validate: isDateTime });
  return ajv;
}

const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

/** A validator for JSON that arrives by other paths than a route body (MQTT), with the same rules. */
export function compileDataValidator<T>(schema: object) {
  return bodyAjv.compile<T>(schema);
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return bodyAjv.compile(schema as object);
  const validate = textAjv.compile(schema as object);
  // Ajv coerces the text "Infinity" (or "-Infinity") to a number, then skips `minimum` and
  // `maximum` for it, as for every number that is not finite: such a value is refused here.
  const checked = (data: unknown): boolean => {
    if (!validate(data)) {
      checked.errors = validate.errors;
      return false;
    }
    const infinite = typeof data === 'object' && data !== null
      ? Object.entries(data).filter(([, value]) => typeof value === 'number' && !Number.isFinite(value)).map(([key]) => key)
      : [];
    checked.errors = infinite.length === 0 ? null : infinite.map((key): ErrorObject => ({
      instancePath: `/${escapePointer(key)}`, schemaPath: '#', keyword: 'type', params: {}, message: 'must be a finite number',
    }));
    return infinite.length === 0;
  };
  checked.errors = null as ErrorObject[] | null | undefined;
  return checked;
};

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
