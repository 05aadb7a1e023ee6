// Liveness and readiness. /healthz says the process answers; /readyz asks each backing part.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../errors.ts';
import type { ReadinessCheck } from '../readiness.ts';
import { responses } from '../schema/common.ts';
import { named } from '../schema/named.ts';

const Health = named('Health', Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false }), 'The process answers.');
const CheckValue = Type.Union([
  Type.Literal('up'),
  Type.Literal('disabled'),
  Type.String({ pattern: '^degraded: ', description: '`degraded: <what is wrong>`' }),
]);
const Ready = named('Readiness', Type.Object(
  { status: Type.Union([Type.Literal('ready'), Type.Literal('degraded')]), checks: Type.Record(Type.String(), CheckValue) },
  {
    additionalProperties: false,
    examples: [
      { status: 'ready', checks: { store: 'up', mqtt: 'up', osmand: 'up', teltonika: 'up', cluster: 'disabled' } },
      {
        status: 'degraded',
        checks: { store: 'up', mqtt: 'degraded: port 1883 is in use; MQTT ingestion is off', osmand: 'up', teltonika: 'up', cluster: 'up' },
      },
    ],
  },
), 'What each backing part reports; `degraded` while a part is impaired but the service still serves.');

export async function healthRoutes(app: FastifyInstance, opts: { checks: Record<string, ReadinessCheck> }) {
  app.get('/healthz', {
    config: { public: true, overloadExempt: true, quietRequestLog: true },
    schema: {
      tags: ['operations'], operationId: 'getHealth', summary: 'Liveness', security: [],
      description: 'Answers 200 while the process serves requests; it asks no backing part (that is `/readyz`).',
      response: responses({ 200: Health }, { authenticated: false }),
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    config: { public: true, overloadExempt: true, quietRequestLog: true },
    schema: {
      tags: ['operations'], operationId: 'getReadiness', summary: 'Readiness: every backing part answers', security: [],
      description:
        '200 `ready` when every part is up or disabled; 200 `degraded` when the service serves but a part is impaired ' +
        '(each such check reads `degraded: <detail>`); 503 when a part it cannot serve without is down.',
      response: responses({ 200: Ready }, { authenticated: false, errors: [503] }),
    },
  }, async (request) => {
    const checks: Record<string, string> = {};
    let degraded = false;
    for (const [name, check] of Object.entries(opts.checks)) {
      try {
        const state = (await check()) ?? 'up';
        if (typeof state === 'object') degraded = true;
        checks[name] = typeof state === 'object' ? `degraded: ${state.degraded}` : state;
      } catch (error) {
        request.log.warn({ err: error, check: name }, 'readiness check failed');
        throw new AppError('service-unavailable', `${name} is not available.`, { headers: { 'retry-after': '5' } });
      }
    }
    return { status: degraded ? 'degraded' : 'ready', checks };
  });
}
