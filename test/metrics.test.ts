// The request metrics are counted without prom-client's Histogram (see src/http/metrics.ts); their
// exposition must be exactly what prom-client's own Counter and Histogram write for the same
// observations.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Counter, Histogram, Registry } from 'prom-client';
import { createMetricsRegistry, requestMetrics } from '../src/http/metrics.ts';

test('the request counter and latency histogram read as prom-client writes them', async () => {
  const ours = new Registry();
  const observe = requestMetrics(ours);
  const reference = new Registry();
  const labelNames = ['method', 'route', 'status_code'] as const;
  const requests = new Counter({ name: 'fleet_http_requests_total', help: 'HTTP requests answered.', labelNames, registers: [reference] });
  const duration = new Histogram({
    name: 'fleet_http_request_duration_seconds', help: 'Time from request received to response sent.', labelNames,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: [reference],
  });
  const cases: [string, string, number][] = [['GET', '/v2/telemetry/:vehicleId', 200], ['POST', '/v2/telemetry/:vehicleId', 202], ['GET', 'unmatched', 404]];
  // Bounds themselves (a value equal to a bound is in its bucket), values between, beyond the last.
  const seconds = [0, 0.0005, 0.0007, 0.001, 0.003, 0.01, 0.2, 0.5, 1, 2.5, 2.6, 30];
  for (const [method, route, status] of cases) {
    for (const s of seconds) {
      observe(method, route, status, s);
      const labels = { method, route, status_code: String(status) };
      requests.inc(labels);
      duration.observe(labels, s);
    }
  }
  assert.equal(await ours.metrics(), await reference.metrics());
});

test('fleet_nodejs_heap_live_bytes is the heap used right after the latest full collection', async () => {
  const registry = createMetricsRegistry();
  // A full collection on demand: the flag exposes gc() to contexts made after it is set.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options?: { type: 'major' }) => void;
  gc({ type: 'major' });
  const after = getHeapStatistics().used_heap_size;
  await sleep(50); // the GC observer's entries are delivered asynchronously
  const live = Number(/^fleet_nodejs_heap_live_bytes (\S+)$/m.exec(await registry.metrics())?.[1]);
  assert.ok(live > 0, `live heap ${live}`);
  // Read in the observer's callback, just after the collection: close to what it left.
  assert.ok(Math.abs(live - after) < after * 0.5, `live heap ${live}, heap used after gc ${after}`);
});
