// What can no longer be used is deleted in the background: sessions past their end or idle too
// long, expired invitations, and failed sign-ins older than the lockout window. None of it is
// needed to refuse them (each is judged by its times when presented); this only keeps the tables
// from growing with every sign-in.
import type { Clock } from '../clock.ts';
import { startPeriodic } from '../periodic.ts';
import type { PeopleSettings } from './service.ts';
import type { PeopleStore } from './store.ts';

export function startPeopleCleanup(deps: {
  store: Pick<PeopleStore, 'deleteExpired'>;
  clock: Clock;
  settings: Pick<PeopleSettings, 'idleMs' | 'lockoutWindowMs'>;
  log: { error(obj: object, msg: string): void };
  intervalMs?: number;
}): { runOnce(): Promise<number>; stop(): void } {
  return startPeriodic(async () => {
    try {
      const now = deps.clock.now();
      return await deps.store.deleteExpired(now, now - deps.settings.idleMs, now - deps.settings.lockoutWindowMs);
    } catch (error) {
      deps.log.error({ err: error }, 'deleting ended sessions failed; will retry');
      return 0;
    }
  }, deps.intervalMs ?? 600_000);
}
