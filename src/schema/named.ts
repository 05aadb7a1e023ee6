// Named schemas: each shared shape is defined once, under its `$id`, and used everywhere else as a
// `$ref` to that name. The validator, the response serializer and the OpenAPI document all read
// the same definitions: the document lists them under `components.schemas`, so a client generator
// gets one type per name instead of the same shape inlined in every operation.
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';

const definitions = new Map<string, Record<string, unknown> & { $id: string }>();

/**
 * Names `schema` `id` and returns a reference to it, typed as the schema itself (so request types
 * and handlers still see its fields). Names are PascalCase and unique; `description` is used when
 * the schema has none of its own.
 */
export function named<T extends TSchema>(id: string, schema: T, description?: string): TUnsafe<Static<T>> {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(id)) throw new Error(`schema name ${id} is not PascalCase`);
  if (definitions.has(id)) throw new Error(`schema ${id} is named twice`);
  // A plain copy: the JSON Schema keywords, with the name as its `$id`.
  const copy: Record<string, unknown> = { ...(schema as unknown as Record<string, unknown>) };
  if (description !== undefined && copy.description === undefined) copy.description = description;
  definitions.set(id, { ...copy, $id: id });
  return Type.Unsafe<Static<T>>(Type.Ref(id));
}

/** Every named schema defined so far (each module names its own as it loads). */
export function namedSchemas(): ReadonlyArray<Record<string, unknown> & { $id: string }> {
  return [...definitions.values()];
}

/** Adds the named schemas a Fastify instance does not know yet, for its serializer and its OpenAPI document. */
export function addNamedSchemas(app: { addSchema(schema: unknown): unknown; getSchema(id: string): unknown }): void {
  for (const schema of namedSchemas()) if (app.getSchema(schema.$id) === undefined) app.addSchema(schema);
}

/**
 * `schema` with every reference to a named schema replaced by the schema itself (named schemas
 * never refer to themselves, so this ends). What the response serializer compiles.
 */
export function inlineNamed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(inlineNamed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const { $ref, ...siblings } = schema as Record<string, unknown>;
  const definition = typeof $ref === 'string' ? definitions.get($ref) : undefined;
  if (definition !== undefined) {
    const body: Record<string, unknown> = { ...definition, ...siblings };
    delete body.$id;
    return inlineNamed(body);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inlineNamed(value)]));
}
