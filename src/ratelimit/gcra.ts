// GCRA (the generic cell rate algorithm), in exact integer arithmetic. Per key it keeps one
// number, the debt: how far ahead of `now` the key has already spent. Each request adds the
// emission interval T = window / limit; time pays the debt back; a request is allowed while the
// debt stays within one window. That is a token bucket of `limit` tokens refilled continuously,
// without a counter that resets all at once at a window edge.
//
// T is rarely a whole number of milliseconds (60 000 ms / 7), and floating point would let the
// limit-th request of a burst fail on a rounding error. So time is counted in units of 1/b ms,
// where T = a/b in lowest terms: every quantity below is an integer. A Redis store runs the same
// steps in Lua, whose numbers are doubles: integers stay exact up to 2^53, which policyUnits checks.
import type { RateLimitDecision, RateLimitPolicy } from './store.ts';

export interface PolicyUnits {
  /** The cost of one request (T), in units. */
  cost: number;
  /** Units per millisecond. */
  perMs: number;
  /** One window, in units: the most debt a key may carry. */
  capacity: number;
}

/** Per-key state. A key whose debt has been paid back is the same as a key never seen. */
export interface GcraState {
  /** Units still owed at `at`. */
  debt: number;
  /** Epoch ms the debt was measured at. */
  at: number;
}

function gcd(x: number, y: number): number {
  while (y !== 0) [x, y] = [y, x % y];
  return x;
}

/** floor(x / y) for non-negative safe integers, immune to the rounding of `/`. */
function floorDiv(x: number, y: number): number {
  let q = Math.floor(x / y);
  if (q * y > x) q--;
  else if ((q + 1) * y <= x) q++;
  return q;
}

function ceilDiv(x: number, y: number): number {
  return x <= 0 ? 0 : floorDiv(x + y - 1, y);
}

/** Checks a policy and expresses it in integer units; throws RangeError when it cannot be exact. */
export function policyUnits(policy: RateLimitPolicy): PolicyUnits {
  const { limit, windowMs } = policy;
  if (!Number.isSafeInteger(limit) || limit < 1 || !Number.isSafeInteger(windowMs) || windowMs < 1) {
    throw new RangeError(`rate-limit policy needs whole numbers limit >= 1 and windowMs >= 1, got ${limit} per ${windowMs} ms`);
  }
  const g = gcd(windowMs, limit);
  const cost = windowMs / g;
  const perMs = limit / g;
  const capacity = windowMs * perMs;
  // + cost: a debt may briefly reach capacity + cost before the check refuses it.
  if (!Number.isSafeInteger(capacity + cost)) {
    throw new RangeError(
      `rate-limit policy ${limit} per ${windowMs} ms cannot be counted exactly; use a limit that shares more factors with the window`,
    );
  }
  return { cost, perMs, capacity };
}

/** One request at `now` against `state`; returns the decision and the state to keep. */
export function gcra(state: GcraState | undefined, units: PolicyUnits, now: number): { decision: RateLimitDecision; state: GcraState } {
  const { cost, perMs, capacity } = units;
  const t = Math.floor(now);
  let debt = 0;
  let at = t;
  if (state !== undefined) {
    // A clock that steps back never refills a budget.
    at = Math.max(state.at, t);
    const paid = (at - state.at) * perMs; // past 2^53 only when far beyond any debt: then 0 below
    debt = Math.max(0, state.debt - paid);
  }
  const allowed = debt + cost <= capacity;
  if (allowed) debt += cost;
  return {
    decision: {
      allowed,
      remaining: floorDiv(Math.max(0, capacity - debt), cost),
      resetMs: ceilDiv(debt, perMs),
      retryAfterMs: allowed ? 0 : ceilDiv(debt + cost - capacity, perMs),
    },
    state: { debt, at },
  };
}

/** When `state` is paid back in full, and so can be forgotten: epoch ms. */
export function idleAt(state: GcraState, units: PolicyUnits): number {
  return state.at + ceilDiv(state.debt, units.perMs);
}
