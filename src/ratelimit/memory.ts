// Rate-limit state in this process (embedded mode). Memory is bounded twice: a key whose debt is
// paid back is dropped (it is then the same as a key never seen, so dropping it changes no
// decision), and past `maxKeys` the least recently used key is forgotten. Forgetting a key that
// still owes forgives its debt; a client hammering the service keeps its own key recent, so what
// gets forgotten first is the quietest caller.
//
// consume() does all its work synchronously before it resolves, so concurrent requests in this
// process are serialized by the event loop: two cannot both take the last unit.
import { type Clock, systemClock } from '../clock.ts';
import { type GcraState, type PolicyUnits, gcra, idleAt, policyUnits } from './gcra.ts';
import type { RateLimitDecision, RateLimitPolicy, RateLimitStore } from './store.ts';

export interface MemoryRateLimitStoreOptions {
  /** Most keys held at once (default 100 000, about 15 MB). */
  maxKeys?: number;
  /** Time for the background sweep; consume() uses the `now` it is given. */
  clock?: Pick<Clock, 'now'>;
  /** How often a background sweep drops paid-back keys (default 60 s; 0: never). */
  sweepIntervalMs?: number;
}

interface Entry extends GcraState {
  /** Epoch ms from which the entry is paid back and can go. */
  idleAt: number;
}

/** Entries each consume() looks at, from the least recent end, to drop paid-back ones. */
const LAZY_SWEEP = 4;
/** When full, entries looked at for a paid-back one before forgetting the least recent. */
const FULL_SWEEP = 64;

export interface MemoryRateLimitStore extends RateLimitStore {
  /** Keys currently held. */
  size(): number;
  /** Drops every entry paid back by `now`; returns how many went. */
  sweep(now: number): number;
}

export function createMemoryRateLimitStore(options: MemoryRateLimitStoreOptions = {}): MemoryRateLimitStore {
  const maxKeys = options.maxKeys ?? 100_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new RangeError(`maxKeys must be a whole number >= 1, got ${maxKeys}`);
  const clock = options.clock ?? systemClock;
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000;

  // Insertion order is recency order: every consume() re-inserts its key at the end.
  const entries = new Map<string, Entry>();
  const unitsByPolicy = new Map<string, PolicyUnits>();

  function unitsOf(policy: RateLimitPolicy): PolicyUnits {
    const id = `${policy.limit}/${policy.windowMs}`;
    let units = unitsByPolicy.get(id);
    if (units === undefined) {
      units = policyUnits(policy);
      // Policies come from configuration: a handful. Bound it anyway.
      if (unitsByPolicy.size >= 64) unitsByPolicy.clear();
      unitsByPolicy.set(id, units);
    }
    return units;
  }

  /** Looks at the `max` least recent entries and drops those paid back: bounded work per call. */
  function dropIdleFromOldest(now: number, max: number): void {
    let n = 0;
    for (const [key, entry] of entries) {
      if (n++ >= max) return;
      if (entry.idleAt <= now) entries.delete(key);
    }
  }

  function sweep(now: number): number {
    let dropped = 0;
    for (const [key, entry] of entries) {
      if (entry.idleAt <= now) {
        entries.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  const timer = sweepIntervalMs > 0 ? setInterval(() => sweep(clock.now()), sweepIntervalMs) : undefined;
  timer?.unref();

  return {
    async consume(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision> {
      const units = unitsOf(policy);
      // The same key under another policy is another budget (see RateLimitStore).
      const id = `${policy.limit}/${policy.windowMs}\u0000${key}`;
      dropIdleFromOldest(now, LAZY_SWEEP);
      const previous = entries.get(id);
      if (previous === undefined) {
        if (entries.size >= maxKeys) dropIdleFromOldest(now, FULL_SWEEP);
        // Still full: forget the least recently used key.
        if (entries.size >= maxKeys) {
          const oldest = entries.keys().next();
          if (oldest.done !== true) entries.delete(oldest.value);
        }
      } else {
        entries.delete(id);
      }
      const { decision, state } = gcra(previous, units, now);
      entries.set(id, { ...state, idleAt: idleAt(state, units) });
      return decision;
    },
    size: () => entries.size,
    sweep,
    async close() {
      if (timer !== undefined) clearInterval(timer);
      entries.clear();
    },
  };
}
