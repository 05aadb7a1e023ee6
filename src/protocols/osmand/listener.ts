// The OsmAnd port: the same route as /osmand of the main port, on the root path, where the apps
// send by default (`http://host:5055`). Its own small Fastify instance: no API, no credentials,
// but the main port's timeouts and problem answers for what arrives too slowly or malformed.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { HttpTimeoutConfig } from '../../config.ts';
import { shutdownArrivalsPlugin, timeoutOptions } from '../../http/timeouts.ts';
import { clientErrorHandler, frameworkErrorHandler, problemsPlugin } from '../../schema/problems.ts';
import { serializerCompiler } from '../../schema/serializer.ts';
import { validatorCompiler } from '../../schema/validation.ts';
import type { CommandLink } from '../../commands/channel.ts';
import type { ProtocolIngest } from '../ingest.ts';
import { type ProtocolListener, createProtocolListener } from '../listener.ts';
import { osmandRoutes } from './routes.ts';

export function createOsmandListener(deps: {
  host: string;
  port: number;
  timeouts: HttpTimeoutConfig;
  ingest: ProtocolIngest;
  commands?: CommandLink;
  log: FastifyBaseLogger;
}): ProtocolListener {
  const { host, port, log } = deps;
  let server: FastifyInstance | undefined;

  async function listen(): Promise<number> {
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
    await app.register(osmandRoutes, { path: '/', ingest: deps.ingest, ...(deps.commands === undefined ? {} : { commands: deps.commands }) });
    try {
      await app.listen({ host, port });
    } catch (error) {
      // The service runs on without this port (/osmand on the main port still works); /readyz says why.
      await app.close();
      throw error;
    }
    server = app;
    return (app.server.address() as { port: number }).port;
  }

  return createProtocolListener({
    name: 'OsmAnd', ingestion: 'OsmAnd port', host, port, log, listen,
    // Fastify's close answers requests in flight (their commits finish) before it resolves.
    close: async () => {
      await server?.close();
    },
  });
}
