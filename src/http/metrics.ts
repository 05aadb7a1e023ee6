// Prometheus metrics: requests by route, method and status, and a latency histogram. Routes are
// labelled by their pattern (/v2/fleet/vehicles/:id), never the raw URL, so label sets stay bounded.
import type { FastifyInstance } from 'fastify';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import fp from 'fastify-plugin';
import { Gauge, type Metric, Registry, collectDefaultMetrics } from 'prom-client';
import { Type } from 'typebox';
import { responses } from '../schema/common.ts';

/**
 * prom-client's defaults export three gauges whose names end in `_total`, which Prometheus keeps for
 * counters (`promtool check metrics` refuses them). Each is the sum of the by-type gauge of the
 * same name without the suffix (`sum(fleet_nodejs_active_handles)`), read from the same list at
 * the same scrape, so they are left out rather than renamed.
 */
const GAUGES_NAMED_AS_COUNTERS = ['fleet_nodejs_active_handles_total', 'fleet_nodejs_active_requests_total', 'fleet_nodejs_active_resources_total'];

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'fleet_' });
  for (const name of GAUGES_NAMED_AS_COUNTERS) registry.removeSingleMetric(name);
  liveHeap(registry);
  return registry;
}

/**
 * A counter or gauge whose value is read when the registry is scraped: for counts kept as plain
 * numbers on a hot path (a message sent on a socket, a record judged in a commit), where a
 * prom-client Counter would validate and hash labels at every increment. One registry may serve
 * several apps in turn (tests): the newest app's reading replaces the previous one.
 */
export function registerReading(registry: Registry, metric: { name: string; help: string; type: 'counter' | 'gauge' }, read: () => number): void {
  const head = { ...metric, aggregator: 'sum' };
  registry.removeSingleMetric(metric.name);
  registry.registerMetric({ ...head, get: async () => ({ ...head, values: [{ labels: {}, value: read() }] }) } as unknown as Metric);
}

/**
 * The heap used right after the latest full (mark-compact) collection: what the process keeps.
 * `fleet_nodejs_heap_size_used_bytes` also counts garbage not yet collected, which V8 lets pile up
 * further the faster the process allocates, so under load it swings by hundreds of megabytes
 * without anything being kept; a leak shows here, as a floor that keeps rising. 0 until the first
 * full collection.
 */
function liveHeap(registry: Registry): void {
  let live = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) live = getHeapStatistics().used_heap_size;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  new Gauge({
    name: 'fleet_nodejs_heap_live_bytes',
    help: 'V8 heap used right after the latest full garbage collection, bytes (0 before the first).',
    registers: [registry],
    collect() {
      this.set(live);
    },
  });
}

/** Upper bounds of the latency histogram's buckets, seconds. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface Series {
  labels: { method: string; route: string; status_code: string };
  /** Observations per bucket (not cumulative); the last counts those above every bound. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * Requests by method, route and status, and their latency, counted on every response. prom-client's
 * Histogram validates and hashes the labels of every observation, which cost a GET of the latest
 * state 6 % of the server's time; here a response costs a Map lookup and two increments, and the
 * two metrics are written in prom-client's exposition format only when scraped (the registry calls
 * their get()).
 */
export function requestMetrics(registry: Registry) {
  const series = new Map<string, Series>();
  const all = () => [...series.values()];
  /** A metric whose values are made when the registry is scraped. */
  const register = (name: string, help: string, type: 'counter' | 'histogram', values: () => object[]) => {
    const head = { name, help, type, aggregator: 'sum' };
    registry.registerMetric({ ...head, get: async () => ({ ...head, values: values() }) } as unknown as Metric);
  };
  register('fleet_http_requests_total', 'HTTP requests answered.', 'counter', () => all().map((s) => ({ labels: s.labels, value: s.count })));
  const duration = 'fleet_http_request_duration_seconds';
  register(duration, 'Time from request received to response sent.', 'histogram', () =>
    all().flatMap((s) => {
      let cumulative = 0;
      return [
        ...BUCKETS.map((le, i) => ({ metricName: `${duration}_bucket`, labels: { le, ...s.labels }, value: (cumulative += s.buckets[i]!) })),
        { metricName: `${duration}_bucket`, labels: { le: '+Inf', ...s.labels }, value: s.count },
        { metricName: `${duration}_sum`, labels: s.labels, value: s.sum },
        { metricName: `${duration}_count`, labels: s.labels, value: s.count },
      ];
    }));

  return (method: string, route: string, status: number, seconds: number): void => {
    const key = `${method} ${status} ${route}`;
    let entry = series.get(key);
    if (entry === undefined) {
      entry = { labels: { method, route, status_code: String(status) }, buckets: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 };
      series.set(key, entry);
    }
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    entry.buckets[i]!++;
    entry.sum += seconds;
    entry.count++;
  };
}

export const metricsPlugin = fp(async function metrics(app: FastifyInstance, opts: { registry: Registry }) {
  const { registry } = opts;
  const observe = requestMetrics(registry);
  app.addHook('onResponse', (request, reply, done) => {
    observe(request.method, request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched'), reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.get('/metrics', {
    // Scraped while overloaded too: that is when its figures matter most.
    config: { scope: 'metrics:read', platform: true, overloadExempt: true },
    schema: {
      tags: ['operations'],
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      description: 'Prometheus text exposition format. `admin` includes `metrics:read`.',
      produces: ['text/plain'],
      response: responses({ 200: Type.String({ description: 'Prometheus text format.' }) }),
    },
  }, async (_request, reply) => {
    const body = await registry.metrics();
    return reply.type(registry.contentType).send(body);
  });
}, { name: 'metrics' });
