// The maintenance check: every so often by the service's clock (and once at start), each
// organization's service items are judged against the vehicles' meters and the date, and those
// that crossed into due soon or overdue are announced. It runs on one node at a time (the store
// decides: an advisory lock on PostgreSQL), and an announcement is written with its event only
// while the item is still as it was judged (the same cycle, nothing announced since), so each is
// made exactly once.
import type { Clock } from '../clock.ts';
import { startClockedCheck } from '../clocked-check.ts';
import type { MaintenanceService } from './service.ts';
import type { MaintenanceStore } from './store.ts';

export function startMaintenanceChecks(deps: {
  store: MaintenanceStore;
  service: MaintenanceService;
  clock: Clock;
  log: { warn(obj: object, msg: string): void };
  intervalMs: number;
}) {
  return startClockedCheck({
    name: 'maintenance', clock: deps.clock, log: deps.log, intervalMs: deps.intervalMs,
    exclusive: (fn) => deps.store.asMaintenanceChecker(fn),
    organizations: () => deps.store.organizationsWithSchedules(),
    check: (organizationId) => deps.service.check(organizationId),
  });
}
