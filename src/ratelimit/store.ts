// Where rate-limit state lives. Embedded mode keeps it in the process (memory.ts); cluster mode
// will keep it in Redis so every node shares one budget per key. Both run the same algorithm
// (gcra.ts) and the same contract suite (test/contract/ratelimit-store.ts).

/** `limit` requests per `windowMs`: a burst of up to `limit`, refilled at `limit / windowMs`. */
export interface RateLimitPolicy {
  readonly limit: number;
  readonly windowMs: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  /** Requests that would be allowed right now, after this one. */
  remaining: number;
  /** Milliseconds until the whole quota is available again. */
  resetMs: number;
  /** When refused: milliseconds until one request would be allowed. 0 when allowed. */
  retryAfterMs: number;
}

export interface RateLimitStore {
  /**
   * Counts one request against `key` if `policy` allows it at `now` (epoch ms). Atomic per key: two
   * concurrent calls never both take the last unit. A refused request changes nothing, so a
   * client that keeps retrying is not pushed further back.
   *
   * State is kept per key and policy: a key consumed under a changed policy starts afresh.
   *
   * A network-backed store that cannot answer throws `AppError('service-unavailable')`.
   */
  consume(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision>;
  /** Releases timers and connections. */
  close(): Promise<void>;
}
