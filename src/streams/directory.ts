// Where the streams of a cluster are found by every node, so that a client can reconnect to any
// node: the stream's definition, its single-use tickets, and the messages it was sent (for
// `lastSeq` replay). One node holds a stream at a time (the one its socket is on); the directory
// is how another node takes it over. Cluster mode keeps it in Redis (cluster/streams-directory.ts);
// memory.ts-style sharing in one process serves the tests. Embedded mode has no directory.

/** What another node needs to take a stream over. Plain JSON. */
export interface StreamDefinition {
  id: string;
  organizationId: string;
  credentialId: string;
  vehicleId: string | undefined;
  vehicleIds: string[] | null;
  interval: number;
  mask: number;
  createdAt: number;
  /**
   * The creating credential's scopes and expiry (ms; null: none). Absent in entries written by
   * nodes that did not record them: the scopes the stream's types need, and no expiry, are assumed.
   */
  scopes?: string[];
  credentialExpiresAt?: number | null;
  /** The vehicle groups the creating credential was limited to; absent or null: the whole organization. */
  groupIds?: string[] | null;
}

/** As the directory knows it: the definition, and how it stands. */
export interface StreamEntry extends StreamDefinition {
  /** The node that holds it now. */
  node: string;
  attached: boolean;
  /** When it expires unless a socket attaches (null while attached or once closed). */
  expiresAt: number | null;
  closedAt: number | null;
}

export interface StreamDirectory {
  /** Writes the entry; it is forgotten `ttlMs` later unless written again. */
  put(entry: StreamEntry, ttlMs: number): Promise<void>;
  get(streamId: string): Promise<StreamEntry | undefined>;
  putTicket(ticketHash: string, streamId: string, expiresAt: number): Promise<void>;
  /** The stream of a ticket, taken so that no node can redeem it again; undefined if unknown or taken. */
  takeTicket(ticketHash: string): Promise<string | undefined>;
  /** Keeps a sent message for replay (written soon, in batches; lost if the directory is away). */
  record(streamId: string, seq: number, frame: Buffer): void;
  /**
   * The messages sent after `afterSeq`, and the stream's last seq; `frames` is undefined when some
   * after `afterSeq` are no longer held (the caller sends a snapshot instead).
   */
  recorded(streamId: string, afterSeq: number): Promise<{ frames: Buffer[] | undefined; last: number }>;
  /** The seq of the newest message recorded (0 when none). */
  lastSeq(streamId: string): Promise<number>;
  /** Resolves once every message recorded so far is written. */
  flush(): Promise<void>;
  /**
   * Counts the stream among its organization's open streams for `leaseMs` from now (again, if it
   * is counted already): false, and not counted, when `max` others are. The organization's quota
   * is so kept for the whole cluster; a stream whose holder stops renewing it (a node that died)
   * stops counting when its lease runs out.
   */
  claimOpen(organizationId: string, streamId: string, max: number, leaseMs: number): Promise<boolean>;
  /** Counts these streams, which this node still holds, for `leaseMs` more from now. */
  renewOpen(held: readonly { organizationId: string; id: string }[], leaseMs: number): Promise<void>;
  /** The stream ended: it no longer counts. */
  releaseOpen(organizationId: string, streamId: string): Promise<void>;
}

/** Several nodes' view of one directory inside this process (tests); same semantics as Redis. */
export function createMemoryStreamDirectory(options: { maxMessages: number }): StreamDirectory {
  const entries = new Map<string, { json: string; until: number }>();
  const tickets = new Map<string, { streamId: string; until: number }>();
  const logs = new Map<string, { seq: number; frame: Buffer }[]>();
  /** organization → stream id → until when it counts */
  const open = new Map<string, Map<string, number>>();
  const live = <T extends { until: number }>(value: T | undefined) => (value !== undefined && value.until > Date.now() ? value : undefined);
  function openOf(organizationId: string): Map<string, number> {
    let counted = open.get(organizationId);
    if (counted === undefined) open.set(organizationId, (counted = new Map<string, number>()));
    const now = Date.now();
    for (const [id, until] of counted) if (until <= now) counted.delete(id);
    return counted;
  }
  return {
    async put(entry, ttlMs) {
      entries.set(entry.id, { json: JSON.stringify(entry), until: Date.now() + ttlMs });
    },
    async get(streamId) {
      const found = live(entries.get(streamId));
      return found === undefined ? undefined : (JSON.parse(found.json) as StreamEntry);
    },
    async putTicket(hash, streamId, expiresAt) {
      tickets.set(hash, { streamId, until: expiresAt });
    },
    async takeTicket(hash) {
      const found = live(tickets.get(hash));
      tickets.delete(hash);
      return found?.streamId;
    },
    record(streamId, seq, frame) {
      let log = logs.get(streamId);
      if (log === undefined) logs.set(streamId, (log = []));
      log.push({ seq, frame });
      if (log.length > options.maxMessages) log.shift();
    },
    async recorded(streamId, afterSeq) {
      return framesAfter(logs.get(streamId) ?? [], afterSeq);
    },
    async lastSeq(streamId) {
      return logs.get(streamId)?.at(-1)?.seq ?? 0;
    },
    async flush() {},
    async claimOpen(organizationId, streamId, max, leaseMs) {
      const counted = openOf(organizationId);
      if (!counted.has(streamId) && counted.size >= max) return false;
      counted.set(streamId, Date.now() + leaseMs);
      return true;
    },
    async renewOpen(held, leaseMs) {
      for (const { organizationId, id } of held) openOf(organizationId).set(id, Date.now() + leaseMs);
    },
    async releaseOpen(organizationId, streamId) {
      open.get(organizationId)?.delete(streamId);
    },
  };
}

/** From a stream's recorded messages (oldest first): those after `afterSeq`, if none is missing. */
export function framesAfter(log: readonly { seq: number; frame: Buffer }[], afterSeq: number): { frames: Buffer[] | undefined; last: number } {
  const last = log.at(-1)?.seq ?? 0;
  const first = log[0]?.seq ?? last + 1;
  if (afterSeq > last || afterSeq < first - 1) return { frames: undefined, last };
  return { frames: log.filter((m) => m.seq > afterSeq).map((m) => m.frame), last };
}
