import type { EventRecord, EventType } from './types.ts';

/**
 * Where an event stands in the log, in the order the feed reads it. SQLite: `[0, seq]`, since one
 * writer at a time commits in sequence order. PostgreSQL: `[transaction id, seq]`, read only up to
 * the oldest transaction still running, so that a sequence number taken before a commit that
 * becomes visible after a higher one is never stepped over (see storage/postgres/events.ts).
 */
export type Position = readonly [tx: number, seq: number];

export const START: Position = [0, 0];

export function comparePositions(a: Position, b: Position): number {
  return a[0] !== b[0] ? a[0] - b[0] : a[1] - b[1];
}

export interface LoggedEvent extends EventRecord {
  position: Position;
  /** The public envelope as JSON text (`envelopeJson`): what the feed and webhooks send, as it is. */
  envelope: string;
  /** When the service recorded it (its commit's time). */
  recordedAt: number;
}

export interface FeedQuery {
  after: Position;
  types?: readonly EventType[];
  vehicleId?: string;
  /** Only events of vehicles in at least one of these groups now (a credential limited to groups). */
  anyOfGroups?: readonly string[];
  limit: number;
}

export type FeedPage =
  /**
   * `envelopes`: the page's events as their public envelopes, JSON text separated by commas (the
   * inside of a JSON array: the feed sends it as it is); `count` of them. `next`: the last event
   * returned, or, when the page is not full, the newest position read.
   */
  | { gone: false; envelopes: string; count: number; next: Position }
  /** `after` is older than the oldest event kept: events after it were pruned. */
  | { gone: true };

/**
 * The event log. Events are written by the other stores, inside the transaction of the change
 * that causes them (each adapter's `appendEvents`); this interface reads and prunes.
 */
export interface EventStore {
  /** One organization's events after `query.after`, oldest first. */
  feed(organizationId: string, query: FeedQuery): Promise<FeedPage>;
  /** Every organization's events after `after`, oldest first (the webhook fan-out reads this way). */
  since(after: Position, limit: number): Promise<LoggedEvent[]>;
  /** Deletes up to `max` events recorded before `before`; how many it deleted. */
  prune(before: number, max: number): Promise<number>;
}

/** An event read from the log: `data` is parsed from its envelope's text only when asked for. */
export class StoredEvent implements LoggedEvent {
  readonly position: Position;
  readonly id: string;
  readonly organizationId: string;
  readonly type: EventType;
  readonly vehicleId: string | null;
  readonly occurredAt: number;
  readonly recordedAt: number;
  readonly envelope: string;
  #data: Record<string, unknown> | undefined;

  constructor(row: { position: Position; id: string; organizationId: string; type: EventType; vehicleId: string | null; occurredAt: number; recordedAt: number; envelope: string }) {
    this.position = row.position;
    this.id = row.id;
    this.organizationId = row.organizationId;
    this.type = row.type;
    this.vehicleId = row.vehicleId;
    this.occurredAt = row.occurredAt;
    this.recordedAt = row.recordedAt;
    this.envelope = row.envelope;
  }

  get data(): Record<string, unknown> {
    return (this.#data ??= (JSON.parse(this.envelope) as { data: Record<string, unknown> }).data);
  }
}
