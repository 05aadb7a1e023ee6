// Webhook work gives way to requests. On the embedded store, the delivery worker's store work
// (fan-out, claims, records) and its attempts' signing run on the event loop that serves requests
// and takes in telemetry. While other work keeps that loop busy (at least `saturatedAt` of a
// window, not counting the worker's own time), the worker takes at most `share` of each window
// and waits for the next one; otherwise it takes what it needs. Nothing is lost by waiting: the
// events are in the log, and what is not fanned out or attempted in one window is in a later one.
// A saturating burst of writes thus costs those writes little, and the deliveries it made go out
// as it ends; at any lower load, and for a backlog with no requests waiting, nothing is held back.
//
// Only the embedded store is paced (the store's `onEventLoop`): on PostgreSQL the work is the
// database's, the worker's own time on the loop (handling query results) could not be told from
// other work, and a cluster that is short of capacity adds nodes.
import { type EventLoopUtilization, performance } from 'node:perf_hooks';

export interface Pacing {
  /** Whether the worker may do more now. */
  allowed(): boolean;
  /** Whether other work saturated the loop over the last window. */
  saturated(): boolean;
  /** Milliseconds of the event loop the worker just spent. */
  spent(ms: number): void;
  /** Milliseconds until the next window, when the worker's share is renewed. */
  renewsIn(): number;
  close(): void;
}

export interface PacingOptions {
  /** The most of each window the worker takes while the loop is saturated (0 to 1). */
  share: number;
  /** The loop counts as saturated when other work kept it busy this much of the last window (0 to 1). */
  saturatedAt: number;
  windowMs: number;
  /** The loop's utilization so far (`performance.eventLoopUtilization`); a test passes its own. */
  utilization?: (current?: EventLoopUtilization, previous?: EventLoopUtilization) => EventLoopUtilization;
  /** No timer: the caller ends each window with `endWindow` (a test). */
  manual?: boolean;
}

export const DEFAULT_PACING = { share: 0.1, saturatedAt: 0.8, windowMs: 100 } as const;

/** Never paced: every step allowed (a worker built without pacing). */
export const UNPACED: Pacing = { allowed: () => true, saturated: () => false, spent: () => {}, renewsIn: () => 0, close: () => {} };

export function createPacing(options: PacingOptions): Pacing & { endWindow(): void } {
  const utilization = options.utilization ?? ((current, previous) => performance.eventLoopUtilization(current, previous));
  let previous = utilization();
  let windowStart = performance.now();
  let spentInWindow = 0;
  let saturated = false;
  /** Ends a window: judges it, and renews the worker's share. */
  function endWindow(): void {
    const current = utilization();
    const { active, idle } = utilization(current, previous);
    previous = current;
    saturated = active + idle > 0 && (active - spentInWindow) / (active + idle) >= options.saturatedAt;
    spentInWindow = 0;
    windowStart = performance.now();
  }
  const timer = options.manual === true ? undefined : setInterval(endWindow, options.windowMs);
  timer?.unref();
  return {
    endWindow,
    allowed: () => !saturated || spentInWindow < options.share * options.windowMs,
    saturated: () => saturated,
    spent(ms) {
      spentInWindow += ms;
    },
    renewsIn: () => Math.max(1, Math.ceil(windowStart + options.windowMs - performance.now())),
    close: () => clearInterval(timer),
  };
}
