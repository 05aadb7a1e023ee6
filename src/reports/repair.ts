// Stale rollups (a late record, a changed assignment: reports/rollup.ts) are replayed in the
// background every 10 minutes, at most 100 vehicles a run: the late records of those minutes cost
// one replay of their vehicle, however many they were (two sources reporting one vehicle send
// records out of order all the time, and a replay reads what came after the hour before them). A
// summary replays its organization's stale vehicles before it reads, so what it answers never
// waits for this; this only keeps the work a summary may find small.
import { startPeriodic } from '../periodic.ts';
import type { RollupStore } from './store.ts';

export function startRollupRepairs(deps: { store: Pick<RollupStore, 'repair'>; log: { warn(obj: object, msg: string): void }; intervalMs?: number }) {
  return startPeriodic(async () => {
    try {
      return await deps.store.repair();
    } catch (error) {
      deps.log.warn({ err: error }, 'reports: replaying stale rollups failed; will retry');
      return 0;
    }
  }, deps.intervalMs ?? 600_000);
}
