// Metrics of events and webhook deliveries: events recorded on this node by type, delivery
// attempts by outcome, and how long attempts took.
import { Counter, Histogram, type Registry } from 'prom-client';
import type { AttemptResult } from '../webhooks/store.ts';
import type { EventRecord } from './types.ts';

/** One registry may serve several apps (tests, a restart in place): reuse the metric it holds. */
function reuse<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

export function eventMetrics(registry: Registry) {
  const events = reuse(registry, 'fleet_events_total', () => new Counter({
    name: 'fleet_events_total', help: 'Events recorded by this node, by type.', labelNames: ['type'], registers: [registry],
  }));
  const deliveries = reuse(registry, 'fleet_webhook_deliveries_total', () => new Counter({
    name: 'fleet_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, tried again later), failed (given up).',
    labelNames: ['outcome'],
    registers: [registry],
  }));
  const duration = reuse(registry, 'fleet_webhook_delivery_duration_seconds', () => new Histogram({
    name: 'fleet_webhook_delivery_duration_seconds',
    help: 'Time from sending a webhook delivery to its answer (or failure).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  }));
  return {
    recorded(recorded: readonly EventRecord[]): void {
      for (const event of recorded) events.inc({ type: event.type });
    },
    attempted(result: AttemptResult): void {
      deliveries.inc({ outcome: result.ok ? 'succeeded' : result.nextAt === null ? 'failed' : 'retrying' });
      duration.observe(result.durationMs / 1000);
    },
  };
}
