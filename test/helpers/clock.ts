// A clock the test moves by hand, timers included: `advance` fires every timer that falls due on
// the way, in the order of their times, each with `now()` reading its own due time.
import type { Clock, Timer } from '../../src/clock.ts';

export interface ManualClock extends Clock {
  advance(ms: number): void;
  /** Timers not yet fired or cancelled. */
  pending(): number;
}

export function manualClock(start = Date.parse('2026-11-22T08:00:00.000Z')): ManualClock {
  let now = start;
  let order = 0;
  const timers = new Set<{ at: number; order: number; fn: () => void }>();
  const nextDue = (until: number) => {
    let next: { at: number; order: number; fn: () => void } | undefined;
    for (const timer of timers) {
      if (timer.at <= until && (next === undefined || timer.at < next.at || (timer.at === next.at && timer.order < next.order))) next = timer;
    }
    return next;
  };
  return {
    now: () => now,
    after(ms: number, fn: () => void): Timer {
      const timer = { at: now + Math.max(0, ms), order: order++, fn };
      timers.add(timer);
      return { cancel: () => void timers.delete(timer) };
    },
    advance(ms: number) {
      const until = now + ms;
      for (let timer = nextDue(until); timer !== undefined; timer = nextDue(until)) {
        timers.delete(timer);
        now = Math.max(now, timer.at);
        timer.fn();
      }
      now = until;
    },
    pending: () => timers.size,
  };
}
