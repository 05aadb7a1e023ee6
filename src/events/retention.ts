// Events and webhook deliveries older than FLEET_EVENT_RETENTION_DAYS are deleted in the
// background, a step at a time, yielding between steps. A feed cursor from before the oldest kept
// event then answers 410 (the log remembers how far it pruned).
import type { Clock } from '../clock.ts';
import { startPeriodic } from '../periodic.ts';
import type { EventStore } from './store.ts';

const STEP = 1000;
const DAY_MS = 86_400_000;

export function startEventRetention(deps: {
  events: Pick<EventStore, 'prune'>;
  deliveries: { prune(before: number, max: number): Promise<number> };
  clock: Clock;
  days: number;
  log: { error(obj: object, msg: string): void };
  intervalMs?: number;
}): { runOnce(): Promise<number>; stop(): void } {
  return startPeriodic(async () => {
    let total = 0;
    try {
      const before = deps.clock.now() - deps.days * DAY_MS;
      for (const prune of [(b: number, m: number) => deps.events.prune(b, m), (b: number, m: number) => deps.deliveries.prune(b, m)]) {
        for (let deleted = STEP; deleted === STEP; total += deleted) {
          deleted = await prune(before, STEP);
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    } catch (error) {
      deps.log.error({ err: error }, 'event retention failed; will retry');
    }
    return total;
  }, deps.intervalMs ?? 600_000);
}
