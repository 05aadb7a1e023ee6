// Which records the soak sent and what became of each, and the check at the end against every
// vehicle's history. Record k of vehicle v is stamped base + k ms: timestamps are unique per
// vehicle (the store's identity of a record), so a record stored twice shows as a timestamp seen
// twice, and one never sent cannot be mistaken for one that was. One byte per record keeps a run
// of millions of records to a few megabytes here.

/** Never handed out. */
const UNSENT = 0;
/** Sent, no answer yet. */
const PENDING = 1;
/** Acknowledged: HTTP 202, MQTT PUBACK, OsmAnd 200, the Teltonika record count. Must be stored once. */
const ACKED = 2;
/** Refused, failed or unanswered: may or may not be stored, but never twice. */
const UNKNOWN = 3;

export type Outcome = typeof ACKED | typeof UNKNOWN;
export const OUTCOME = { ACKED, UNKNOWN } as const;

export class Ledger {
  readonly base: number;
  readonly vehicles: readonly string[];
  private readonly states: Uint8Array[];
  private readonly next: number[];

  constructor(vehicles: readonly string[], base: number) {
    this.vehicles = vehicles;
    this.base = base;
    this.states = vehicles.map(() => new Uint8Array(1024));
    this.next = vehicles.map(() => 0);
  }

  /** The next record of vehicle `v`: its k (timestamp base + k), marked pending. */
  take(v: number): number {
    const k = this.next[v]!++;
    let states = this.states[v]!;
    if (k >= states.length) {
      const grown = new Uint8Array(states.length * 2);
      grown.set(states);
      this.states[v] = states = grown;
    }
    states[k] = PENDING;
    return k;
  }

  timestamp(k: number): number {
    return this.base + k;
  }

  /** Records handed out so far for vehicle `v`. */
  count(v: number): number {
    return this.next[v]!;
  }

  settle(v: number, k: number, outcome: Outcome): void {
    this.states[v]![k] = outcome;
  }

  settleAll(v: number, ks: readonly number[], outcome: Outcome): void {
    for (const k of ks) this.states[v]![k] = outcome;
  }

  totals(): { sent: number; acknowledged: number; unknown: number; pending: number } {
    let sent = 0;
    let acknowledged = 0;
    let unknown = 0;
    let pending = 0;
    for (const [v, states] of this.states.entries()) {
      const n = this.next[v]!;
      sent += n;
      for (let k = 0; k < n; k++) {
        const s = states[k]!;
        if (s === ACKED) acknowledged++;
        else if (s === UNKNOWN) unknown++;
        else if (s === PENDING) pending++;
      }
    }
    return { sent, acknowledged, unknown, pending };
  }

  /**
   * Compares vehicle `v`'s stored timestamps (each occurrence once, in any order) with what was
   * sent: an acknowledged record stored other than once, any record stored twice, or a record
   * stored that was never sent, is a finding.
   */
  check(v: number, stored: Iterable<number>): VehicleCheck {
    const n = this.next[v]!;
    const seen = new Uint8Array(n);
    const result: VehicleCheck = {
      stored: 0, acknowledgedStored: 0, unacknowledgedStored: 0, missing: findings(), duplicated: findings(), unexpected: findings(),
    };
    for (const timestamp of stored) {
      result.stored++;
      const k = timestamp - this.base;
      if (!Number.isInteger(k) || k < 0 || k >= n || this.states[v]![k] === UNSENT) {
        note(result.unexpected, timestamp);
      } else if (seen[k] === 1) {
        note(result.duplicated, timestamp);
      } else {
        seen[k] = 1;
      }
    }
    const states = this.states[v]!;
    for (let k = 0; k < n; k++) {
      if (states[k] === ACKED) {
        if (seen[k] === 1) result.acknowledgedStored++;
        else note(result.missing, this.base + k);
      } else if (seen[k] === 1) {
        result.unacknowledgedStored++;
      }
    }
    return result;
  }
}

/** How many timestamps, and the first few of them (enough to look them up). */
export interface Findings {
  count: number;
  sample: number[];
}

function findings(): Findings {
  return { count: 0, sample: [] };
}

function note(f: Findings, timestamp: number): void {
  f.count++;
  if (f.sample.length < 5) f.sample.push(timestamp);
}

export interface VehicleCheck {
  /** History records read. */
  stored: number;
  /** Acknowledged records found exactly once. */
  acknowledgedStored: number;
  /** Acknowledged, not in the history. */
  missing: Findings;
  /** Timestamps met more than once (each extra occurrence counted). */
  duplicated: Findings;
  /** Timestamps in the history that were never sent. */
  unexpected: Findings;
  /** Records that failed, were refused or were never answered, yet are stored (once): allowed. */
  unacknowledgedStored: number;
}
