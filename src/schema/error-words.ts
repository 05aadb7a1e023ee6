// What a failed schema check says to a person. Two things happen to the validator's raw errors:
//
// 1. A union (`anyOf`/`oneOf`) reports every branch's errors, so an alert rule with one mistake
//    answered a dozen, most of them about the kinds of condition it is not. Only the branch the
//    value meant is kept: the one its discriminator names (a property that is a constant in every
//    branch, such as `kind` or `type`), or, without one, the branch it fits best. A discriminator
//    that names no branch is one error on that property, listing the allowed values.
// 2. Messages are sentences in words ("must be a number", "must be at most 64 characters"),
//    never a regular expression.
import type { ErrorObject } from 'ajv';

/** A raw error as the validator gives it with `verbose`: the keyword's schema and the value checked. */
export type RawError = Partial<ErrorObject> & { schema?: unknown; parentSchema?: unknown; data?: unknown };

type Resolve = (schema: unknown) => unknown;

/** The keyword of an error that stands for several, one per form the value could have had. */
const EITHER = 'either';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The branch a raw error belongs to, of the union error `union`; undefined when not one of its. An
 * error inside a branch that is a named schema (`$ref`) is reported from that schema's own path.
 */
function branchOf(error: RawError, union: RawError, branches: readonly unknown[]): number | undefined {
  if (error === union) return undefined;
  const at = union.instancePath ?? '';
  const path = error.instancePath ?? '';
  if (path !== at && !path.startsWith(`${at}/`)) return undefined;
  const schemaPath = error.schemaPath ?? '';
  const prefix = `${union.schemaPath ?? ''}/`;
  if (schemaPath.startsWith(prefix)) {
    const index = Number.parseInt(schemaPath.slice(prefix.length), 10);
    return Number.isInteger(index) ? index : undefined;
  }
  const index = branches.findIndex((b) => {
    const ref = (b as { $ref?: unknown } | null)?.$ref;
    return typeof ref === 'string' && (schemaPath.startsWith(`${ref}/`) || schemaPath.startsWith(`${ref}#`));
  });
  return index >= 0 ? index : undefined;
}

/** A property every branch fixes to a constant of its own, and those constants. */
function discriminatorOf(branches: readonly unknown[], resolve: Resolve): { property: string; values: unknown[] } | undefined {
  const objects = branches.map(resolve);
  if (objects.length < 2 || !objects.every(isObject)) return undefined;
  const first = (objects[0] as Record<string, unknown>).properties;
  if (!isObject(first)) return undefined;
  for (const property of Object.keys(first)) {
    const values = objects.map((o) => {
      const p = isObject(o.properties) ? resolve(o.properties[property]) : undefined;
      return isObject(p) && 'const' in p ? p.const : undefined;
    });
    if (values.every((v) => v !== undefined) && new Set(values).size === values.length) return { property, values };
  }
  return undefined;
}

/** How far off a branch is: errors about the value's own shape weigh more than errors deeper in. */
function misfit(errors: readonly RawError[], at: string): number {
  let score = 0;
  for (const e of errors) {
    const own = (e.instancePath ?? '') === at;
    score += own && (e.keyword === 'type' || e.keyword === 'required' || e.keyword === 'additionalProperties' || e.keyword === 'const') ? 100 : 1;
  }
  return score;
}

/** The errors of every union reduced to those of the branch meant (see the top of this file). */
export function resolveUnions(errors: readonly RawError[], resolve: Resolve): RawError[] {
  let out = [...errors];
  // Outer unions first: an inner union of a branch that is dropped goes with it.
  const unions = out
    .filter((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && Array.isArray(e.schema))
    .sort((a, b) => (a.instancePath ?? '').length - (b.instancePath ?? '').length);
  for (const union of unions) {
    if (!out.includes(union)) continue;
    const branches = union.schema as unknown[];
    const members = new Map<number, RawError[]>();
    for (const e of out) {
      const branch = branchOf(e, union, branches);
      if (branch === undefined) continue;
      const list = members.get(branch);
      if (list === undefined) members.set(branch, [e]);
      else list.push(e);
    }
    // oneOf failing because several branches matched reports no branch errors: keep its own.
    if (members.size === 0) continue;
    const at = union.instancePath ?? '';
    let kept: RawError[];
    const discriminator = discriminatorOf(branches, resolve);
    const value = union.data;
    if (discriminator !== undefined && isObject(value)) {
      const chosen = discriminator.values.findIndex((v) => v === value[discriminator.property]);
      if (chosen >= 0) kept = members.get(chosen) ?? [];
      else {
        const missing = !(discriminator.property in value);
        kept = [{
          instancePath: missing ? at : `${at}/${escapePointer(discriminator.property)}`,
          keyword: missing ? 'required' : 'enum',
          params: missing ? { missingProperty: discriminator.property } : { allowedValues: discriminator.values },
          schemaPath: union.schemaPath,
        }];
      }
    } else {
      const ranked = [...members.entries()].map(([branch, list]) => ({ branch, list, score: misfit(list, at) }))
        .sort((a, b) => a.score - b.score || a.branch - b.branch);
      const best = ranked[0]!;
      const tied = ranked.filter((r) => r.score === best.score);
      const single = tied.length > 1 && tied.every((r) => r.list.length === 1 && (r.list[0]!.instancePath ?? '') === at);
      if (!single) kept = best.list;
      else if (tied.every((r) => r.list[0]!.keyword === 'type')) {
        kept = [{ instancePath: at, keyword: 'type', params: { type: tied.map((r) => String((r.list[0]!.params as { type: unknown }).type)).join(',') }, schemaPath: union.schemaPath }];
      } else {
        // Each form the value could have had, one error naming them all.
        kept = [{ instancePath: at, keyword: EITHER, params: { errors: tied.map((r) => r.list[0]!) }, schemaPath: union.schemaPath }];
      }
    }
    const dropped = new Set([union, ...[...members.values()].flat()]);
    for (const e of kept) dropped.delete(e);
    out = [...out.filter((e) => !dropped.has(e)), ...kept.filter((e) => !out.includes(e))];
  }
  return out;
}

const ARTICLE: Record<string, string> = {
  number: 'a number', integer: 'an integer', string: 'a string', boolean: 'a boolean', object: 'an object', array: 'an array', null: 'null',
};

/** "a, b or c". */
export function oneOfWords(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/** A pattern's meaning, for the patterns the schemas use; undefined for one not known here. */
export type PatternWords = (pattern: string, parentSchema: Record<string, unknown>) => string | undefined;

/** The message of one raw error, in words. */
export function messageOf(error: RawError, patternWords: PatternWords): string {
  const params = (error.params ?? {}) as Record<string, unknown>;
  const parent = isObject(error.parentSchema) ? error.parentSchema : {};
  const limit = String(params.limit);
  switch (error.keyword ?? '') {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not an allowed field';
    case 'enum':
      return `must be one of: ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify(params.allowedValue)}`;
    case 'type': {
      const types = String(params.type).split(',');
      // A number is also what an integer is: "a number or an integer" says less than "a number".
      const words = types.includes('number') ? types.filter((t) => t !== 'integer') : types;
      return words.length === 1 && words[0] === 'boolean' ? 'must be true or false' : `must be ${oneOfWords(words.map((t) => ARTICLE[t] ?? t))}`;
    }
    case 'minLength':
      return params.limit === 1 ? 'must not be empty' : `must be at least ${plural(Number(params.limit), 'character')} long`;
    case 'maxLength':
      return `must be at most ${plural(Number(params.limit), 'character')} long`;
    case 'minItems':
      return params.limit === 1 ? 'must not be empty' : `must have at least ${plural(Number(params.limit), 'item')}`;
    case 'maxItems':
      return `must have at most ${plural(Number(params.limit), 'item')}`;
    case 'minProperties':
      return `must have at least ${plural(Number(params.limit), 'field')}`;
    case 'maxProperties':
      return `must have at most ${plural(Number(params.limit), 'field')}`;
    case 'uniqueItems':
      return `must not repeat an item (items ${String(params.j)} and ${String(params.i)} are the same)`;
    case 'minimum':
      return `must be at least ${limit}`;
    case 'maximum':
      return `must be at most ${limit}`;
    case 'exclusiveMinimum':
      return `must be more than ${limit}`;
    case 'exclusiveMaximum':
      return `must be less than ${limit}`;
    case 'multipleOf':
      return `must be a multiple of ${String(params.multipleOf)}`;
    case 'format':
      return params.format === 'date-time'
        ? 'must be a date and time with a time zone (RFC 3339), e.g. 2026-01-01T08:00:00Z'
        : `must be a valid ${String(params.format)}`;
    case 'pattern':
      return patternWords(String(params.pattern), parent) ?? formOf(parent);
    case 'propertyNames':
      return 'has a field name that is not allowed';
    case EITHER:
      return (params.errors as RawError[]).map((e) => messageOf(e, patternWords)).join(', or ');
    case 'anyOf':
    case 'oneOf':
      return formOf(parent, 'does not match any of the allowed forms');
    default:
      return error.message ?? 'is invalid';
  }
}

/** "is not in the expected form", with the schema's first example or its `form` description. */
function formOf(schema: Record<string, unknown>, lead = 'is not in the expected form'): string {
  const examples = schema.examples;
  if (Array.isArray(examples) && typeof examples[0] === 'string') return `${lead}, e.g. ${examples[0]}`;
  const form = typeof schema.description === 'string' ? /^`([^`]+)`$/.exec(schema.description)?.[1] : undefined;
  return form === undefined ? lead : `must have the form ${form}`;
}

export function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}
