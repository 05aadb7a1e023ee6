import { AppError } from '../errors.ts';
import type { CommitRules } from '../rules/store.ts';
import type { EventRecord } from '../events/types.ts';
import type { VehicleStatus } from '../vehicles/schema.ts';
import { telemetryVerdict } from '../vehicles/transitions.ts';
import type { NumericField, TelemetryData, TelemetryField } from './schema.ts';

export interface ScanOptions<D> {
  pageSize: number;
  readSize?: number;
  decode?: (text: string) => D;
}

/** A record's stored JSON text, parsed whole. */
export const parseData = (text: string) => JSON.parse(text) as TelemetryData;

/** The decoder a scan uses: the one asked for, else `parseData` (`D` is then TelemetryData). */
export const decoderOf = <D>(options: ScanOptions<D>): ((text: string) => D) => options.decode ?? (parseData as unknown as (text: string) => D);

/** A record as `scan` reads it, its `data` as the scan's decoder gave it. */
export interface ScannedRecord<D> {
  vehicleId: string;
  /** ms since the epoch */
  timestamp: number;
  data: D;
}

export interface StoredRecord {
  vehicleId: string;
  /** ms since the epoch */
  timestamp: number;
  data: TelemetryData;
}

/** The last known value of each field of one vehicle, each with the time it was reported. */
export interface LatestState {
  organizationId: string;
  vehicleId: string;
  /** Time of the newest record. */
  timestamp: number;
  fields: Partial<Record<TelemetryField, { value: unknown; at: number }>>;
}

/** One request's records, committed together with others' in one transaction (group commit). */
export interface CommitBatch {
  organizationId: string;
  records: StoredRecord[];
  /** The time of the commit request, recorded on status changes it causes. */
  at: number;
}

export type BatchOutcome =
  | {
      ok: true;
      accepted: number;
      duplicates: number;
      /** Vehicles this batch moved from `registered` to `active`. */
      activated: string[];
      /** The events recorded in the commit's transaction (activations, geofences, alerts). */
      events: EventRecord[];
      /**
       * The latest state of each vehicle the batch touched, as far as this commit knows it: where
       * a store keeps a vehicle's state in parts (PostgreSQL: one per node) or folds records in
       * later (SQLite's recent records), only this commit's part, at least what its records say.
       * To be merged into what is known (`mergeStates`), never to replace it.
       */
      latest: LatestState[];
    }
  | { ok: false; reason: 'vehicle-not-found' | 'vehicle-retired'; vehicleIds: string[] };

/**
 * The most events a batch of more than one record may record (docs/API.md "Telemetry"): one commit
 * writing hundreds of thousands of geofence events would hold the store for seconds. A single
 * record is never refused for its events: they are bounded by its organization's geofences and
 * rules, and a device that resends it would be refused forever.
 */
export const MAX_EVENTS_PER_BATCH = 10_000;

/**
 * Refuses, inside the commit, a batch of `records` records once its records' events pass
 * MAX_EVENTS_PER_BATCH; the commit then fails, and the writer retries the other batches of its
 * group without it (writer.ts), so nothing of it is stored.
 */
export function limitBatchEvents(records: number, events: number): void {
  if (events <= MAX_EVENTS_PER_BATCH || records <= 1) return;
  const message = `would record more than ${MAX_EVENTS_PER_BATCH} events (geofence entries and exits, alerts, trips); send fewer records at once`;
  throw new AppError('validation-failed', `Invalid telemetry, nothing stored: /records ${message}.`, {
    errors: [{ in: 'body', path: '/records', message }],
  });
}

/** Folds records into a vehicle's latest state (pure; see telemetry/latest.ts). */
export type MergeLatest = (previous: LatestState | undefined, organizationId: string, vehicleId: string, records: StoredRecord[]) => LatestState;

export interface HistoryRange {
  from: number;
  to: number;
  /** Resume after this timestamp (the cursor). */
  after: number | undefined;
  limit: number;
}

/** Export formats a store may write itself (`scanWritten`). */
export type WrittenFormat = 'csv' | 'geojson';

/** A time range, `from` inclusive, `to` exclusive (ms). */
export interface TimeRange {
  from: number;
  to: number;
}

export interface AggregateQuery extends TimeRange {
  /** Bucket width in ms; buckets start at multiples of it since the epoch. */
  bucketMs: number;
  fields: readonly NumericField[];
}

export interface FieldStats {
  min: number;
  max: number;
  avg: number;
  /** The value of the newest record of the bucket that has the field. */
  last: number;
}

export interface AggregateBucket {
  /** ms */
  start: number;
  /** Records in the bucket, whatever fields they carry. */
  count: number;
  /** Only the fields some record of the bucket has. */
  fields: Partial<Record<NumericField, FieldStats>>;
}

/**
 * Persistence of telemetry. `commit` takes many requests' batches and writes them in one
 * transaction; each batch stands or falls alone (all-or-nothing per request), and the promise
 * resolves only once the transaction is durably committed.
 */
export interface TelemetryStore {
  /** `rules` judges each vehicle's newly stored records inside the same transaction (rules/store.ts). */
  commit(batches: CommitBatch[], merge: MergeLatest, rules?: CommitRules): Promise<BatchOutcome[]>;
  /** In time order, `from` inclusive, `to` exclusive. */
  history(organizationId: string, vehicleId: string, range: HistoryRange): Promise<StoredRecord[]>;
  /**
   * Every record of the range in time order, in pages of up to `pageSize`, each page read only when
   * the one before has been taken: memory stays flat whatever the range, and a consumer that stops
   * (`return()`) stops the reads. Pages are never empty. A store whose queries cost much before
   * their first row reads up to `readSize` records at once (default `pageSize`), one read ahead:
   * larger reads are faster, and hold more in memory. Each record's `data` is `decode` of its stored
   * JSON text, JSON.parse when not given: a reader that needs a few fields of many records spares
   * building the rest (`D` is then what `decode` gives).
   */
  scan<D = TelemetryData>(organizationId: string, vehicleId: string, range: TimeRange, options: ScanOptions<D>): AsyncGenerator<ScannedRecord<D>[], void, undefined>;
  /**
   * The records `scan` would give, already written by the database as the export writes them
   * (history/formats.ts), byte for byte: `csv` lines (without the header), or `geojson` features
   * (of the located records, joined by `,\n`, without the collection around them). A piece for
   * up to `pageSize` records read, never empty, read as `scan` reads; no record is parsed in
   * JavaScript. Optional; `undefined` when the store cannot for this format or range, and the
   * export then writes the records `scan` gives.
   */
  scanWritten?(format: WrittenFormat, organizationId: string, vehicleId: string, range: TimeRange, pageSize: number): AsyncGenerator<string, void, undefined> | undefined;
  /** Per-bucket statistics of the numeric fields, computed by the database; empty buckets left out, in time order. */
  aggregate(organizationId: string, vehicleId: string, query: AggregateQuery): Promise<AggregateBucket[]>;
  /** Every vehicle's latest state, to rebuild the in-memory view at start. */
  loadLatest(): Promise<LatestState[]>;
  /**
   * Deletes records older than `before`, a step at a time: up to `max` one by one, and a backend
   * that partitions by time also drops every partition wholly older than `before` at once (those
   * count in the result). How many it deleted; fewer than `max` means none are left.
   */
  prune(before: number, max: number): Promise<number>;
  /**
   * Housekeeping run at start and then beside retention: prepares storage for records from
   * `keepDays` days before `now` to some days after it (PostgreSQL creates its daily partitions
   * ahead of time; SQLite has nothing to do).
   */
  maintain(now: number, keepDays: number): Promise<void>;
}

/**
 * `scan` over a store's keyset-paged `history`: each read is one short query (no cursor or
 * transaction held open while a slow client reads), and a record is read once even when records
 * arrive or move between tables meanwhile, since a read starts after the last time seen. A store
 * whose queries cost much before their first row reads `readSize` records at a time, handed out
 * in pages of `pageSize`.
 */
export async function* scanByPages<D>(
  history: (organizationId: string, vehicleId: string, range: HistoryRange) => Promise<ScannedRecord<D>[]>,
  organizationId: string, vehicleId: string, range: TimeRange, pageSize: number, readSize = pageSize,
): AsyncGenerator<ScannedRecord<D>[], void, undefined> {
  let after: number | undefined;
  for (;;) {
    const read = await history(organizationId, vehicleId, { from: range.from, to: range.to, after, limit: readSize });
    for (let i = 0; i < read.length; i += pageSize) yield read.slice(i, i + pageSize);
    if (read.length < readSize) return;
    after = read.at(-1)!.timestamp;
  }
}

/** Records grouped by vehicle, each group in the order given. */
export function groupByVehicle(records: Iterable<StoredRecord>): Map<string, StoredRecord[]> {
  const byVehicle = new Map<string, StoredRecord[]>();
  for (const record of records) {
    const list = byVehicle.get(record.vehicleId);
    if (list === undefined) byVehicle.set(record.vehicleId, [record]);
    else list.push(record);
  }
  return byVehicle;
}

/**
 * The part of a commit every backend shares: a batch's records grouped by vehicle, and the
 * batch judged against its vehicles' statuses (`undefined` for a vehicle that does not exist).
 * A refusal is decided before any write, so a refused batch leaves nothing behind.
 */
export function judgeBatch(
  batch: CommitBatch,
  statusOf: (vehicleId: string) => string | undefined,
): { refused: BatchOutcome & { ok: false } } | { refused: undefined; byVehicle: Map<string, StoredRecord[]>; registered: string[] } {
  const byVehicle = groupByVehicle(batch.records);
  const missing: string[] = [];
  const retired: string[] = [];
  const registered: string[] = [];
  for (const vehicleId of byVehicle.keys()) {
    const status = statusOf(vehicleId);
    if (status === undefined) {
      missing.push(vehicleId);
      continue;
    }
    const verdict = telemetryVerdict(status as VehicleStatus);
    if (verdict === 'refuse') retired.push(vehicleId);
    else if (verdict === 'activate') registered.push(vehicleId);
  }
  if (missing.length > 0) return { refused: { ok: false, reason: 'vehicle-not-found', vehicleIds: missing } };
  if (retired.length > 0) return { refused: { ok: false, reason: 'vehicle-retired', vehicleIds: retired } };
  return { refused: undefined, byVehicle, registered };
}
