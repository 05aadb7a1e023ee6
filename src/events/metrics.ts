// Metrics of events and webhook deliveries: events recorded on this node by type, delivery
// attempts by outcome, and how long attempts took.
import type { Registry } from 'prom-client';
import { counterIn, histogramIn } from '../metric.ts';
import type { AttemptResult } from '../webhooks/store.ts';
import type { EventRecord } from './types.ts';

export function eventMetrics(registry: Registry) {
  const events = counterIn(registry, { name: 'fleet_events_total', help: 'Events recorded by this node, by type.', labelNames: ['type'] });
  const deliveries = counterIn(registry, {
    name: 'fleet_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, tried again later), failed (given up).',
    labelNames: ['outcome'],
  });
  const duration = histogramIn(registry, {
    name: 'fleet_webhook_delivery_duration_seconds',
    help: 'Time from sending a webhook delivery to its answer (or failure).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
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
