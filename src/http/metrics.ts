// Prometheus metrics: requests by route, method and status, and a latency histogram. Routes are
// labelled by their pattern (/v2/fleet/vehicles/:id), never the raw URL, so label sets stay bounded.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { Type } from 'typebox';
import { responses } from './schema.ts';

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'fleet_' });
  return registry;
}

export const metricsPlugin = fp(async function metrics(app: FastifyInstance, opts: { registry: Registry }) {
  const { registry } = opts;
  const labelNames = ['method', 'route', 'status_code'] as const;
  const requests = new Counter({ name: 'fleet_http_requests_total', help: 'HTTP requests answered.', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'fleet_http_request_duration_seconds',
    help: 'Time from request received to response sent.',
    labelNames,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });

  // Labelled children are looked up once per (method, route, status), not on every request.
  const children = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched');
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let child = children.get(key);
    if (child === undefined) {
      const labels = { method: request.method, route, status_code: String(reply.statusCode) };
      child = { count: requests.labels(labels), time: duration.labels(labels) };
      children.set(key, child);
    }
    child.count.inc();
    child.time.observe(reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', {
    config: { scope: 'admin', platform: true },
    schema: {
      tags: ['operations'],
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      description: 'Text exposition format. Needs an `admin` credential of the platform organization.',
      response: responses({ 200: Type.String({ description: 'Prometheus text format.' }) }),
    },
  }, async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
}, { name: 'metrics' });
