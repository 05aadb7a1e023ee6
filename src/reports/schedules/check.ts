// The report check: every so often by the service's clock (and once at start), each organization's
// report schedules make the report of their latest period that ended (an hour ago, for the
// records that arrive late), and reports past their keeping are deleted. It runs on one node at a
// time (the store decides: an advisory lock on PostgreSQL), and a schedule's report of a period is
// stored only once with its event (a unique key), so each is made exactly once.
import type { Clock } from '../../clock.ts';
import { startClockedCheck } from '../../clocked-check.ts';
import type { ReportScheduleService } from './service.ts';
import type { ReportScheduleStore } from './store.ts';

export function startReportChecks(deps: {
  store: ReportScheduleStore;
  service: Pick<ReportScheduleService, 'check' | 'prune'>;
  clock: Clock;
  log: { warn(obj: object, msg: string): void };
  intervalMs: number;
}) {
  return startClockedCheck({
    name: 'reports', clock: deps.clock, log: deps.log, intervalMs: deps.intervalMs,
    exclusive: (fn) => deps.store.asReportChecker(fn),
    organizations: () => deps.store.organizationsWithSchedules(),
    check: (organizationId) => deps.service.check(organizationId),
    after: async () => {
      await deps.service.prune();
    },
  });
}
