// Group commit: every request that arrives while the event loop is busy is written in the next
// single transaction, so durability (a synced commit) is paid once per group, not per request.
// Each request's promise settles only after the transaction that holds it has committed.
//
// One request's batch never fails another's. A batch refused for what it names (an unknown or
// retired vehicle) is refused inside the commit without writing anything, and the others go on.
// A batch that makes the transaction fail (the rules judging it throw, the store rejects a value,
// it would record more events than a batch may) rolls the whole group back: nothing of it was
// committed, so the group is committed again in halves, one after the other, and a failing half
// is split again, down to the single batch that fails. Only that request gets the error; every
// other batch is committed exactly once, in its original order, with its events in the same
// transaction as its records. A group of n batches with one failing costs about 2·log₂ n extra
// transactions, and nothing is retried when no commit fails. A store that cannot be reached at all
// (`service-unavailable`: PostgreSQL down, a full disk, a failed WAL sync) fails every batch of
// the group at once, since no split would commit.
import type { Span } from '@opentelemetry/api';
import { isAppError } from '../errors.ts';
import type { CommitRules } from '../rules/store.ts';
import { endFailed, type Tracing } from '../tracing/tracing.ts';
import type { BatchOutcome, CommitBatch, MergeLatest, TelemetryStore } from './store.ts';

/** Bounds one transaction, so one huge group cannot hold the store for long. */
const MAX_RECORDS_PER_COMMIT = 20_000;

interface Pending {
  batch: CommitBatch;
  resolve: (outcome: BatchOutcome) => void;
  reject: (error: unknown) => void;
  /** The request's wait for its commit, when traced. */
  span: Span | undefined;
}

/**
 * `timed` hears how long each group's commit took, seconds, whether it succeeded or not; with
 * `tracing`, each submission traced is a span from its submission to its commit.
 */
export function createGroupCommitter(store: TelemetryStore, merge: MergeLatest, rules?: CommitRules, timed?: (seconds: number) => void, tracing?: Tracing) {
  let queue: Pending[] = [];
  let scheduled = false;
  let flushing = false;
  let idle: (() => void) | undefined;

  function schedule() {
    if (scheduled || flushing) return;
    scheduled = true;
    setImmediate(() => void flush());
  }

  async function flush() {
    scheduled = false;
    if (queue.length === 0) {
      idle?.();
      return;
    }
    flushing = true;
    let records = 0;
    let take = 0;
    while (take < queue.length && (take === 0 || records + queue[take]!.batch.records.length <= MAX_RECORDS_PER_COMMIT)) {
      records += queue[take]!.batch.records.length;
      take++;
    }
    const group = queue.slice(0, take);
    queue = queue.slice(take);
    try {
      await commit(group);
    } finally {
      flushing = false;
      schedule();
    }
  }

  /** Commits `group`, or, when its transaction fails, each half of it in turn (see the header). */
  async function commit(group: Pending[]): Promise<void> {
    const started = performance.now();
    try {
      const outcomes = await store.commit(group.map((p) => p.batch), merge, rules);
      timed?.((performance.now() - started) / 1000);
      let records: number | undefined;
      group.forEach((p, i) => {
        if (p.span !== undefined) {
          records ??= group.reduce((sum, q) => sum + q.batch.records.length, 0);
          p.span.setAttributes({ 'fleet.commit.batches': group.length, 'fleet.commit.records': records });
          p.span.end();
        }
        p.resolve(outcomes[i]!);
      });
    } catch (error) {
      timed?.((performance.now() - started) / 1000);
      if (group.length === 1 || (isAppError(error) && error.code === 'service-unavailable')) {
        for (const p of group) {
          endFailed(p.span, error);
          p.reject(error);
        }
        return;
      }
      const half = Math.ceil(group.length / 2);
      await commit(group.slice(0, half));
      await commit(group.slice(half));
    }
  }

  return {
    submit(batch: CommitBatch): Promise<BatchOutcome> {
      return new Promise((resolve, reject) => {
        const span = tracing?.child('telemetry commit', { 'fleet.records': batch.records.length, 'fleet.organization.id': batch.organizationId });
        queue.push({ batch, resolve, reject, span });
        schedule();
      });
    },
    /** Resolves once everything submitted so far is committed (used at shutdown). */
    drain(): Promise<void> {
      if (queue.length === 0 && !flushing) return Promise.resolve();
      return new Promise((resolve) => {
        idle = resolve;
        schedule();
      });
    },
  };
}

export type GroupCommitter = ReturnType<typeof createGroupCommitter>;
