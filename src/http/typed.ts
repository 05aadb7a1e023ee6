// Routes typed by their schemas: on the instance `typed(app)` returns, a handler's
// request.params, request.query and request.body have the static types of the route's
// TypeBox schemas (named ones included: named() keeps the schema's type), so no handler casts
// what validation has already checked.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyBaseLogger,
  FastifyInstance,
  FastifySchema,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
  RouteShorthandOptions,
} from 'fastify';

export type TypedApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

export function typed(app: FastifyInstance): TypedApp {
  return app.withTypeProvider<TypeBoxTypeProvider>();
}

/** A handler whose request is typed by the schema `S`. */
export type TypedHandler<S extends FastifySchema> = RouteHandlerMethod<
  RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, RouteGenericInterface, ContextConfigDefault, S, TypeBoxTypeProvider
>;

/** Route options and a handler typed by the same schema, to be mounted later (or more than once). */
export interface TypedOperation<S extends FastifySchema> {
  options: RouteShorthandOptions<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, RouteGenericInterface, ContextConfigDefault, S, TypeBoxTypeProvider> & { schema: S };
  handler: TypedHandler<S>;
}

/** An operation's options and handler, the handler typed by the options' schema. */
export function operation<const S extends FastifySchema>(op: TypedOperation<S>): TypedOperation<S> {
  return op;
}
