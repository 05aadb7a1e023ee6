// buildApp wires the service together: cross-cutting plugins first, then each module. This is
// the one place that knows every part; each part knows only the few interfaces it is given.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import pkg from '../package.json' with { type: 'json' };
import { createAuthService } from './auth/service.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import { authPlugin } from './http/auth.ts';
import { healthRoutes } from './http/health.ts';
import { createMetricsRegistry, metricsPlugin } from './http/metrics.ts';
import { openapiPlugin } from './http/openapi.ts';
import { problemsPlugin } from './http/problems.ts';
import { validatorCompiler } from './http/validation.ts';
import { versioningPlugin } from './http/versioning.ts';
import type { Stores } from './storage/stores.ts';
import { vehicleRoutesV1 } from './vehicles/routes.v1.ts';
import { vehicleRoutesV2 } from './vehicles/routes.v2.ts';
import { createVehicleService } from './vehicles/service.ts';

export const BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** One served route, as registered: what the security tests and the OpenAPI check walk over. */
export interface RouteEntry {
  method: string;
  url: string;
  public: boolean;
  scope: string | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: readonly RouteEntry[];
  }
}

export interface AppDeps {
  config: Config;
  stores: Stores;
  clock?: Clock;
  /** Overrides the logger built from config (tests pass a silent or capturing one). */
  logger?: FastifyServerOptions['loggerInstance'];
  metrics?: Registry;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const clock = deps.clock ?? systemClock;
  const app = Fastify({
    ...(deps.logger === undefined
      ? {
          logger: {
            level: deps.config.logLevel,
            redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
          },
        }
      : { loggerInstance: deps.logger }),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    // A caller's X-Request-Id is kept when it is a sane token, so traces join up across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });

  app.setValidatorCompiler(validatorCompiler);
  // Only JSON bodies are accepted; anything else is answered 415.
  app.removeContentTypeParser('text/plain');
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  // While shutting down, answer in-flight requests with `Connection: close`: Fastify closes only
  // connections idle at close time, and a kept-alive one would otherwise hold the process open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) void reply.header('connection', 'close');
    return payload;
  });

  const auth = createAuthService({ store: deps.stores.auth, clock });
  const vehicles = createVehicleService({ store: deps.stores.vehicles, clock });

  await app.register(problemsPlugin);
  // auth first: its onRoute check must see every route registered after it.
  await app.register(authPlugin, { auth });
  // After auth, whose onRoute hook settles each route's public/scope config first.
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      routeTable.push({ method, url: route.url, public: route.config?.public === true, scope: route.config?.scope });
    }
  });
  await app.register(openapiPlugin, { version: pkg.version });
  await app.register(metricsPlugin, { registry: deps.metrics ?? createMetricsRegistry() });
  await app.register(versioningPlugin);
  await app.register(healthRoutes, { checks: { store: () => deps.stores.ping() } });
  await app.register(vehicleRoutesV2, { service: vehicles });
  await app.register(vehicleRoutesV1, { service: vehicles });

  return app;
}
