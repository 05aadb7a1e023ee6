// A check run every so often by the service's clock (and whenever asked), one organization after
// another, on one node at a time (`exclusive`: the store decides; an advisory lock on PostgreSQL):
// the maintenance check and the report check. Never two runs at once; an organization whose check
// fails does not keep the others back, and a failed run is tried again at the next interval.
import type { Clock, Timer } from './clock.ts';

export function startClockedCheck(deps: {
  /** What the log lines call it: `maintenance`, `reports`. */
  name: string;
  clock: Clock;
  log: { warn(obj: object, msg: string): void };
  intervalMs: number;
  /** Runs `fn` while holding the cluster-wide right to run the check; false, without running it, when another node holds it. */
  exclusive(fn: () => Promise<void>): Promise<boolean>;
  organizations(): Promise<string[]>;
  check(organizationId: string): Promise<void>;
  /** After every organization: what the check does once for all (a clean-up). */
  after?(): Promise<void>;
}) {
  let running: Promise<void> | undefined;
  let timer: Timer | undefined;
  let stopped = false;

  function runOnce(): Promise<void> {
    running ??= (async () => {
      try {
        await deps.exclusive(async () => {
          for (const organizationId of await deps.organizations()) {
            try {
              await deps.check(organizationId);
            } catch (error) {
              deps.log.warn({ err: error, organizationId }, `${deps.name}: the check of an organization failed; it runs again shortly`);
            }
          }
          await deps.after?.();
        });
      } catch (error) {
        deps.log.warn({ err: error }, `${deps.name}: the check failed; it runs again shortly`);
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
