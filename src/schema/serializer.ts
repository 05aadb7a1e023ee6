// The response serializer: fast-json-stringify, as Fastify's default, but compiled from the
// route's schema with its named schemas written out in place. Given the named schemas as
// external schemas instead, fast-json-stringify prepares all of them again for every status of
// every route, which made start-up ten times slower; what it compiles is the same either way.
//
// Each schema is compiled once per process: the routes share their response schemas (the problem
// responses above all), so an app asks for about 800 serializers of about 60 schemas, and an app
// built again (tests build many) asks for the same ones. A route's schema is not changed once the
// route has it, so the serializer compiled from it stays right.
import build from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify';
import { inlineNamed } from './named.ts';

type Serializer = ReturnType<typeof build>;
const compiled = new WeakMap<object, Serializer>();

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) => {
  if (typeof schema !== 'object' || schema === null) return build(inlineNamed(schema) as Parameters<typeof build>[0]);
  let serialize = compiled.get(schema);
  if (serialize === undefined) {
    serialize = build(inlineNamed(schema) as Parameters<typeof build>[0]);
    compiled.set(schema, serialize);
  }
  return serialize;
};
