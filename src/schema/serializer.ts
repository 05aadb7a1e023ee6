// The response serializer: fast-json-stringify, as Fastify's default, but compiled from the
// route's schema with its named schemas written out in place. Given the named schemas as
// external schemas instead, fast-json-stringify prepares all of them again for every status of
// every route, which made start-up ten times slower; what it compiles is the same either way.
import build from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify';
import { inlineNamed } from './named.ts';

export const serializerCompiler: FastifySerializerCompiler<unknown> = ({ schema }) =>
  build(inlineNamed(schema) as Parameters<typeof build>[0]);
