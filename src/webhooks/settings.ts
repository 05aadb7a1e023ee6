// How the delivery worker paces its attempts, retries and leases (worker.ts), and their defaults.

export interface DeliverySettings {
  /** Delays before the 2nd, 3rd, ... attempt; the last one repeats. */
  retryDelaysMs: readonly number[];
  /** ± this fraction of each delay, at random, so failures do not come back in step. */
  jitter: number;
  /** No attempt after this long since the event was recorded: the delivery is then `failed`. */
  giveUpAfterMs: number;
  /** An endpoint whose every delivery failed for this long is disabled. */
  disableAfterMs: number;
  /**
   * A claimed delivery is this node's for this long. An attempt starts within a third of it or
   * not at all (the delivery is then claimed again once the lease has run out), so it must be more
   * than 1.5 × the longest an attempt can take (10 s).
   */
  leaseMs: number;
  /** Attempts under way at once; as many again are claimed ahead, ready to start. */
  concurrency: number;
  /**
   * Deliveries of one endpoint leased at once (under way or claimed ahead; in cluster mode across
   * the nodes). Claims take the organizations and their endpoints in turn (fair.ts), and a quarter
   * of the places is kept for endpoints with no attempt under way: however slow one
   * organization's endpoints or long its backlog, another's delivery finds a place.
   */
  endpointConcurrency: number;
  /** How often the store is asked for due deliveries when nothing wakes the worker. */
  pollMs: number;
  /**
   * A commit that recorded events wakes the worker within this long, so that one fan-out step
   * (a write and a disk sync) takes in what every commit of that time recorded, rather than one
   * step per commit.
   */
  wakeDelayMs: number;
  /**
   * Ended attempts' results wait up to this long to be recorded together (or until half the
   * concurrency of them are in hand): one transaction for many. Their deliveries stay leased
   * meanwhile, outside the caps.
   */
  recordDelayMs: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export const DEFAULT_DELIVERY_SETTINGS: DeliverySettings = {
  retryDelaysMs: [5_000, 30_000, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR],
  jitter: 0.2,
  giveUpAfterMs: 24 * HOUR,
  disableAfterMs: 5 * 24 * HOUR,
  leaseMs: 30_000,
  concurrency: 64,
  endpointConcurrency: 32,
  pollMs: 1000,
  wakeDelayMs: 20,
  recordDelayMs: 5,
};
