// Liveness and readiness. /healthz says the process answers; /readyz asks each backing part.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../errors.ts';
import { responses } from './schema.ts';

export type ReadinessCheck = () => Promise<void>;

const Health = Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false });
const Ready = Type.Object(
  { status: Type.Literal('ready'), checks: Type.Record(Type.String(), Type.Literal('up')) },
  { additionalProperties: false, examples: [{ status: 'ready', checks: { store: 'up' } }] },
);

export async function healthRoutes(app: FastifyInstance, opts: { checks: Record<string, ReadinessCheck> }) {
  app.get('/healthz', {
    config: { public: true },
    schema: {
      tags: ['operations'], operationId: 'getHealth', summary: 'Liveness', security: [],
      response: responses({ 200: Health }, { authenticated: false }),
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    config: { public: true },
    schema: {
      tags: ['operations'], operationId: 'getReadiness', summary: 'Readiness: every backing part answers', security: [],
      response: responses({ 200: Ready }, { authenticated: false, errors: [503] }),
    },
  }, async (request) => {
    const checks: Record<string, 'up'> = {};
    for (const [name, check] of Object.entries(opts.checks)) {
      try {
        await check();
        checks[name] = 'up';
      } catch (error) {
        request.log.warn({ err: error, check: name }, 'readiness check failed');
        throw new AppError('service-unavailable', `${name} is not available.`, { headers: { 'retry-after': '5' } });
      }
    }
    return { status: 'ready' as const, checks };
  });
}
