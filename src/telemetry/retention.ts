// Retention: history older than the configured number of days is deleted in the background, a
// small step at a time, yielding to requests between steps so a large backlog never stalls them.
// Each run first lets the store prepare what is coming (PostgreSQL: the next days' partitions).
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.ts';
import type { TelemetryStore } from './store.ts';

const STEP = 1000;
const DAY_MS = 86_400_000;

export function startRetention(deps: {
  store: TelemetryStore;
  clock: Clock;
  days: number;
  log: FastifyBaseLogger;
  intervalMs?: number;
}): { runOnce(): Promise<number>; stop(): void } {
  let running = false;
  let stopped = false;

  async function runOnce(): Promise<number> {
    if (running) return 0;
    running = true;
    let total = 0;
    try {
      try {
        await deps.store.maintain(deps.clock.now(), deps.days);
      } catch (error) {
        deps.log.error({ err: error }, 'telemetry storage maintenance failed; will retry');
      }
      const before = deps.clock.now() - deps.days * DAY_MS;
      for (;;) {
        const deleted = await deps.store.prune(before, STEP);
        total += deleted;
        if (deleted < STEP || stopped) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (total > 0) deps.log.info({ deleted: total, days: deps.days }, 'telemetry retention pruned old records');
    } catch (error) {
      deps.log.error({ err: error }, 'telemetry retention failed; will retry');
    } finally {
      running = false;
    }
    return total;
  }

  const timer = setInterval(() => void runOnce(), deps.intervalMs ?? 60_000);
  timer.unref();
  return {
    runOnce,
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
