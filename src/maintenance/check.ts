// The maintenance check: every so often by the service's clock (and once at start), each
// organization's service items are judged against the vehicles' meters and the date, and those
// that crossed into due soon or overdue are announced. It runs on one node at a time (the store
// decides: an advisory lock on PostgreSQL), and an announcement is written with its event only
// while the item is still as it was judged (the same cycle, nothing announced since), so each is
// made exactly once.
import type { Clock, Timer } from '../clock.ts';
import type { MaintenanceService } from './service.ts';
import type { MaintenanceStore } from './store.ts';

export function startMaintenanceChecks(deps: {
  store: MaintenanceStore;
  service: MaintenanceService;
  clock: Clock;
  log: { warn(obj: object, msg: string): void };
  intervalMs: number;
}) {
  let running: Promise<void> | undefined;
  let timer: Timer | undefined;
  let stopped = false;

  function runOnce(): Promise<void> {
    running ??= (async () => {
      try {
        await deps.store.asMaintenanceChecker(async () => {
          for (const organizationId of await deps.store.organizationsWithSchedules()) {
            // One organization whose check fails does not keep the others' announcements back.
            try {
              await deps.service.check(organizationId);
            } catch (error) {
              deps.log.warn({ err: error, organizationId }, 'maintenance: the check of an organization failed; it runs again shortly');
            }
          }
        });
      } catch (error) {
        deps.log.warn({ err: error }, 'maintenance: the check failed; it runs again shortly');
      } finally {
        running = undefined;
      }
    })();
    return running;
  }

  function arm(): void {
    if (stopped) return;
    timer = deps.clock.after(deps.intervalMs, () => {
      void runOnce().finally(arm);
    });
  }
  arm();

  return {
    runOnce,
    /** Stops the timer, and resolves once a check under way has ended. */
    async stop() {
      stopped = true;
      timer?.cancel();
      await running;
    },
  };
}
