// The failure direction of shared rate limits: when the shared store (Redis) cannot answer, each
// node counts in its own memory instead. Limits then hold per node, so a client may get up to
// nodes × limit while it lasts; the alternative, refusing or failing every request because a
// counter is out of reach, would turn a Redis outage into a whole-service outage.
//
// While degraded, at most one request at a time asks the shared store whether it is back; the
// others go straight to memory. When the connection is down that probe fails at once and the next
// request probes again, so the shared budget is used again from the first request it answers; when
// Redis hangs, only the probing request waits (up to the client's command timeout), not all of them.
import { type Clock, systemClock } from '../clock.ts';
import { isAppError } from '../errors.ts';
import { createMemoryRateLimitStore } from './memory.ts';
import type { RateLimitDecision, RateLimitPolicy, RateLimitStore } from './store.ts';

/** Pino's shape, narrowed to what is used here. */
export interface FallbackLogger {
  warn(object: Record<string, unknown>, message: string): void;
  info(object: Record<string, unknown>, message: string): void;
}

/** close() closes both stores (a Redis store leaves its client to its owner). */
export interface FallbackRateLimitStoreOptions {
  /** The store every node shares; its `service-unavailable` errors switch to `local`. */
  shared: RateLimitStore;
  /** Counters used while `shared` is unavailable (default: a memory store on `clock`). */
  local?: RateLimitStore;
  logger: FallbackLogger;
  clock?: Pick<Clock, 'now'>;
}

export interface FallbackRateLimitState {
  degraded: boolean;
  /** Epoch ms the current outage began; null when not degraded. */
  since: number | null;
}

export interface FallbackRateLimitStore extends RateLimitStore {
  /** True while decisions come from this node's memory (for /readyz and metrics). */
  degraded(): boolean;
  state(): FallbackRateLimitState;
}

export function createFallbackRateLimitStore(options: FallbackRateLimitStoreOptions): FallbackRateLimitStore {
  const { shared, logger } = options;
  const clock = options.clock ?? systemClock;
  const local = options.local ?? createMemoryRateLimitStore({ clock });
  let since: number | null = null;
  let probing = false;

  function isOutage(error: unknown): boolean {
    return isAppError(error) && error.code === 'service-unavailable';
  }

  function enterOutage(error: unknown): void {
    if (since !== null) return;
    since = clock.now();
    // Once per outage: a warning per request would flood the log exactly when it matters.
    logger.warn(
      { err: error },
      'rate limits: the shared store cannot be reached; counting on this node only (limits apply per node) until it answers again',
    );
  }

  function leaveOutage(): void {
    if (since === null) return;
    logger.info({ outageMs: clock.now() - since }, 'rate limits: the shared store answers again; counting in it');
    since = null;
  }

  return {
    async consume(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision> {
      if (since !== null && probing) return local.consume(key, policy, now);
      const probe = since !== null;
      if (probe) probing = true;
      try {
        const decision = await shared.consume(key, policy, now);
        leaveOutage();
        return decision;
      } catch (error) {
        if (!isOutage(error)) throw error;
        enterOutage(error);
        return local.consume(key, policy, now);
      } finally {
        if (probe) probing = false;
      }
    },
    degraded: () => since !== null,
    state: () => ({ degraded: since !== null, since }),
    async close() {
      await Promise.all([shared.close(), local.close()]);
    },
  };
}
