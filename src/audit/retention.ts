// Entries older than FLEET_AUDIT_RETENTION_DAYS are deleted in the background, a bounded number
// per statement, every 10 minutes.
import type { Clock } from '../clock.ts';
import { startPeriodic } from '../periodic.ts';
import type { AuditStore } from './store.ts';

const BATCH = 10_000;

export function startAuditRetention(deps: {
  store: Pick<AuditStore, 'deleteBefore'>;
  clock: Clock;
  retentionDays: number;
  log: { error(obj: object, msg: string): void };
  intervalMs?: number;
}): { runOnce(): Promise<number>; stop(): void } {
  return startPeriodic(async () => {
    const before = deps.clock.now() - deps.retentionDays * 86_400_000;
    let deleted = 0;
    try {
      for (let n = BATCH; n === BATCH; deleted += n) n = await deps.store.deleteBefore(before, BATCH);
    } catch (error) {
      deps.log.error({ err: error }, 'deleting old audit entries failed; will retry');
    }
    return deleted;
  }, deps.intervalMs ?? 600_000);
}
