// Reads that may be a little behind (history, trips, exports, aggregates, reports) on a streaming
// replica (FLEET_DATABASE_READ_URL), with their staleness bounded: a probe asks the primary where
// its WAL is and the replica how far it has replayed, and the reads go to the replica only while
// nothing the primary had written more than `maxLagMs` ago is still missing there. Otherwise (the
// replica behind, unreachable, or not yet probed) they go to the primary, as without a replica.
import type pg from 'pg';
import type { Database, Queryable, Row } from './database.ts';
import { isUnavailable } from './database.ts';

export interface ReplicaOptions {
  /** Reads go to the replica only while its lag is at most this (FLEET_DATABASE_READ_MAX_LAG_SECONDS). */
  maxLagMs: number;
  /** How often the lag is measured. */
  probeMs: number;
  now?: () => number;
  /** Told when reads move to the replica (true) or away from it (false), with why. */
  onChange?: (onReplica: boolean, reason: string) => void;
}

export interface ReadRouter extends Queryable {
  /** The replica's lag when last probed, in ms; undefined while unknown (unreachable, not probed). */
  lagMs(): number | undefined;
  /** Whether reads go to the replica now. */
  onReplica(): boolean;
  /** Measures the lag now (the timer does so every probeMs). */
  probe(): Promise<void>;
  end(): Promise<void>;
}

/** A WAL position (`16/B374D848`) as a number that orders as the positions do. */
export function lsnValue(lsn: string): bigint {
  const [high = '0', low = '0'] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * The lag of a replica from the primary's WAL positions as sampled (oldest first, each with when it
 * was read) and the position the replica has replayed: the age of the oldest sample not replayed
 * yet, 0 when all are. Samples replayed are dropped (mutates `samples`).
 */
export function lagFrom(samples: { lsn: bigint; at: number }[], replayed: bigint, now: number): number {
  while (samples.length > 0 && samples[0]!.lsn <= replayed) samples.shift();
  return samples.length === 0 ? 0 : now - samples[0]!.at;
}

/** Samples kept of a replica that does not catch up (an hour and more at one a second), then thinned. */
const MAX_SAMPLES = 4_096;

/**
 * Halves the samples by merging neighbours into one with the later position and the earlier time:
 * the lag read from them can then only be overstated (by up to the merged span), never understated.
 */
export function thin(samples: { lsn: bigint; at: number }[]): void {
  const merged: { lsn: bigint; at: number }[] = [];
  for (let i = 0; i < samples.length; i += 2) {
    const [first, second] = [samples[i]!, samples[i + 1]];
    merged.push(second === undefined ? first : { lsn: second.lsn, at: first.at });
  }
  samples.splice(0, samples.length, ...merged);
}

export function readRouter(primary: Database, replica: Database, options: ReplicaOptions): ReadRouter {
  const now = options.now ?? Date.now;
  const samples: { lsn: bigint; at: number }[] = [];
  let lag: number | undefined;
  /** Undefined until the first probe: its decision is told whichever it is (unreachable from the start is news too). */
  let useReplica: boolean | undefined;
  let probing: Promise<void> | undefined;
  let ended = false;

  const decide = (next: boolean, reason: string) => {
    if (next !== useReplica) {
      useReplica = next;
      options.onChange?.(next, reason);
    }
  };

  async function measure(): Promise<void> {
    const at = now();
    try {
      const [{ rows: [head] }, { rows: [replay] }] = await Promise.all([
        primary.query<{ lsn: string }>({ name: 'replica.primary-lsn', text: 'SELECT pg_current_wal_lsn()::text AS lsn' }),
        replica.query<{ lsn: string | null }>({ name: 'replica.replay-lsn', text: 'SELECT pg_last_wal_replay_lsn()::text AS lsn' }),
      ]);
      const replayed = replay?.lsn ?? null;
      if (replayed === null) {
        // Not a standby (a primary behind a pooler, say): nothing to wait for.
        samples.length = 0;
        lag = 0;
      } else {
        samples.push({ lsn: lsnValue(head!.lsn), at });
        if (samples.length > MAX_SAMPLES) thin(samples);
        lag = lagFrom(samples, lsnValue(replayed), now());
      }
      decide(lag <= options.maxLagMs, `lag ${lag} ms (at most ${options.maxLagMs})`);
    } catch (error) {
      lag = undefined;
      samples.length = 0;
      decide(false, `probe failed: ${(error as Error).message}`);
    }
  }

  const probe = () => (probing ??= measure().finally(() => { probing = undefined; }));
  const timer = setInterval(() => void probe(), options.probeMs);
  timer.unref();
  void probe();

  return {
    async query<R extends pg.QueryResultRow = Row>(config: string | pg.QueryConfig, values?: unknown[]) {
      if (useReplica !== true) return primary.query<R>(config, values);
      try {
        return await replica.query<R>(config, values);
      } catch (error) {
        // The replica gone: this read and the next ones on the primary, until a probe finds it again.
        // (openPostgres gives such an error as a 503 AppError, the driver's error as its cause.)
        if (!(isUnavailable(error) || (error instanceof Error && isUnavailable(error.cause))) || ended) throw error;
        decide(false, `read failed: ${(error as Error).message}`);
        return primary.query<R>(config, values);
      }
    },
    lagMs: () => lag,
    onReplica: () => useReplica === true,
    probe,
    async end() {
      ended = true;
      clearInterval(timer);
      await probing;
      await replica.end();
    },
  };
}
