// The OsmAnd port: the same route as /osmand of the main port, on the root path, where the apps
// send by default (`http://host:5055`). Its own small Fastify instance: no API, no credentials,
// but the main port's timeouts and problem answers for what arrives too slowly or malformed.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { HttpTimeoutConfig } from '../../config.ts';
import { shutdownArrivalsPlugin, timeoutOptions } from '../../http/timeouts.ts';
import type { CheckState } from '../../readiness.ts';
import { clientErrorHandler, frameworkErrorHandler, problemsPlugin } from '../../schema/problems.ts';
import { serializerCompiler } from '../../schema/serializer.ts';
import { validatorCompiler } from '../../schema/validation.ts';
import type { DeviceGuard } from '../guard.ts';
import type { ProtocolIngest } from '../ingest.ts';
import { osmandRoutes } from './routes.ts';

export interface ProtocolListener {
  start(): Promise<void>;
  stop(): Promise<void>;
  readiness(): Promise<CheckState>;
}

/** Why a listener could not start, as /readyz and the log say it. */
export function listenFailure(name: string, host: string, port: number, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const why = code === 'EADDRINUSE' ? `port ${port} on ${host} is in use` : `cannot listen on ${host}:${port} (${code ?? String(error)})`;
  return `${why}; ${name} ingestion is off`;
}

export function createOsmandListener(deps: {
  host: string;
  port: number;
  timeouts: HttpTimeoutConfig;
  ingest: ProtocolIngest;
  guard: DeviceGuard;
  log: FastifyBaseLogger;
}): ProtocolListener {
  const { host, port, log } = deps;
  let server: FastifyInstance | undefined;
  let state: CheckState = { degraded: 'starting' };

  async function start() {
    const app = Fastify({
      loggerInstance: log,
      bodyLimit: 1024 * 1024,
      // Headers, whole request and idle connection each have a deadline, as on the main port.
      ...timeoutOptions(deps.timeouts),
      frameworkErrors: frameworkErrorHandler,
      clientErrorHandler,
      genReqId: () => randomUUID(),
    });
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    app.removeContentTypeParser('text/plain');
    await app.register(problemsPlugin);
    await app.register(shutdownArrivalsPlugin, { requestMs: deps.timeouts.requestMs });
    await app.register(osmandRoutes, { path: '/', ingest: deps.ingest, guard: deps.guard });
    try {
      await app.listen({ host, port });
    } catch (error) {
      // The service runs on without this port (/osmand on the main port still works); /readyz says why.
      state = { degraded: listenFailure('OsmAnd port', host, port, error) };
      log.warn({ err: error, host, port }, `OsmAnd listener not started: ${state.degraded}.`);
      await app.close();
      return;
    }
    server = app;
    state = 'up';
    log.info({ host, port: (app.server.address() as { port: number }).port }, 'OsmAnd listener started');
  }

  async function stop() {
    state = { degraded: 'shutting down' };
    // Fastify's close answers requests in flight (their commits finish) before it resolves.
    await server?.close();
  }

  return { start, stop, readiness: async () => state };
}
