// Stale rollups (a late record, a changed assignment: reports/rollup.ts) are replayed in the
// background once a minute, a bounded number of vehicles per run: the late records of a minute
// cost one replay of their vehicle, however many they were (two sources reporting one vehicle
// send records out of order all the time). A summary replays its organization's before it reads,
// so what it answers never waits for this.
import { startPeriodic } from '../periodic.ts';
import type { RollupStore } from './store.ts';

const ROUNDS = 10;

export function startRollupRepairs(deps: { store: Pick<RollupStore, 'repair'>; log: { warn(obj: object, msg: string): void }; intervalMs?: number }) {
  return startPeriodic(async () => {
    let replayed = 0;
    try {
      for (let round = 0, n = -1; round < ROUNDS && n !== 0; round++) replayed += n = await deps.store.repair();
    } catch (error) {
      deps.log.warn({ err: error }, 'reports: replaying stale rollups failed; will retry');
    }
    return replayed;
  }, deps.intervalMs ?? 60_000);
}
