// Replay (docs/API.md "Live streams": `lastSeq`), built so that holding 60 s of messages for every stream
// costs each stream 4 bytes per message, not a copy of each frame.
//
// Every event is serialized once and appended to one EventLog shared by all streams (its shared
// part, UTF-8, and its type, under a global number `g`). A stream's own history is a SeqRing of those
// numbers: its seq N is the ring's entry N, and its frame is rebuilt on replay from the log entry
// with `frame()`. The log keeps entries for the replay window, bounded in count and bytes too.

/** Global, append-only, shared by every stream; entries leave it by age, count or bytes. */
export class EventLog {
  #shared: (Buffer | undefined)[] = new Array<Buffer | undefined>(1024);
  #types = new Uint8Array(1024);
  #times = new Float64Array(1024);
  #head = 0;
  #count = 0;
  #first = 0;
  #bytes = 0;
  readonly #windowMs: number;
  readonly #maxEntries: number;
  readonly #maxBytes: number;

  constructor(options: { windowMs: number; maxEntries: number; maxBytes: number }) {
    this.#windowMs = options.windowMs;
    this.#maxEntries = options.maxEntries;
    this.#maxBytes = options.maxBytes;
  }

  /** The number of the oldest entry still held. */
  get first(): number {
    return this.#first;
  }

  /** The number the next entry will get. */
  get end(): number {
    return this.#first + this.#count;
  }

  get size(): number {
    return this.#count;
  }

  has(g: number): boolean {
    return g >= this.#first && g < this.#first + this.#count;
  }

  append(type: number, shared: Buffer, now: number): number {
    this.#evict(now, shared.length);
    if (this.#count === this.#types.length) this.#grow();
    const index = (this.#head + this.#count) & (this.#types.length - 1);
    this.#shared[index] = shared;
    this.#types[index] = type;
    this.#times[index] = now;
    this.#count++;
    this.#bytes += shared.length;
    return this.#first + this.#count - 1;
  }

  type(g: number): number {
    return this.#types[(this.#head + (g - this.#first)) & (this.#types.length - 1)]!;
  }

  shared(g: number): Buffer {
    return this.#shared[(this.#head + (g - this.#first)) & (this.#types.length - 1)]!;
  }

  #evict(now: number, incoming: number): void {
    const mask = this.#types.length - 1;
    while (
      this.#count > 0 &&
      (this.#times[this.#head]! < now - this.#windowMs || this.#count >= this.#maxEntries || this.#bytes + incoming > this.#maxBytes)
    ) {
      this.#bytes -= this.#shared[this.#head]!.length;
      this.#shared[this.#head] = undefined;
      this.#head = (this.#head + 1) & mask;
      this.#count--;
      this.#first++;
    }
  }

  #grow(): void {
    const size = this.#types.length;
    const shared = new Array<Buffer | undefined>(size * 2);
    const types = new Uint8Array(size * 2);
    const times = new Float64Array(size * 2);
    for (let i = 0; i < this.#count; i++) {
      const from = (this.#head + i) & (size - 1);
      shared[i] = this.#shared[from];
      types[i] = this.#types[from]!;
      times[i] = this.#times[from]!;
    }
    this.#shared = shared;
    this.#types = types;
    this.#times = times;
    this.#head = 0;
  }
}

const TWO_32 = 2 ** 32;

/**
 * One stream's sent messages as log numbers (mod 2^32, 4 bytes each): entry k is the stream's
 * seq `last - size + 1 + k`. Grows by doubling up to `max`, then drops its oldest.
 */
export class SeqRing {
  #ring = new Uint32Array(16);
  #head = 0;
  #count = 0;
  /** The stream's last seq (0 before the first message). */
  last = 0;
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#count;
  }

  /** The lowest seq still held (last + 1 when empty). */
  get firstSeq(): number {
    return this.last - this.#count + 1;
  }

  /** Records the next message; returns its seq. Entries whose log entry is gone are dropped first. */
  push(g: number, log: EventLog): number {
    this.#dropGone(log);
    if (this.#count === this.#ring.length) {
      if (this.#ring.length < this.#max) this.#grow();
      else this.#shift();
    }
    this.#ring[(this.#head + this.#count) & (this.#ring.length - 1)] = g % TWO_32;
    this.#count++;
    return ++this.last;
  }

  /** The log numbers of seqs after `afterSeq`, oldest first; undefined when some are no longer held. */
  after(afterSeq: number, log: EventLog): number[] | undefined {
    this.#dropGone(log);
    if (afterSeq < this.firstSeq - 1 || afterSeq > this.last) return undefined;
    const out: number[] = [];
    for (let seq = afterSeq + 1; seq <= this.last; seq++) out.push(this.#at(seq - this.firstSeq, log));
    return out;
  }

  /** Forgets what it holds and goes on numbering after `last` (a stream taken over from another node). */
  restart(last: number): void {
    this.#head = 0;
    this.#count = 0;
    this.last = last;
  }

  clear(): void {
    this.#ring = new Uint32Array(0);
    this.#head = 0;
    this.#count = 0;
  }

  /** The full log number of entry k: the one below the log's end with the same low 32 bits. */
  #at(k: number, log: EventLog): number {
    const low = this.#ring[(this.#head + k) & (this.#ring.length - 1)]!;
    const end = log.end;
    return end - 1 - ((((end - 1) % TWO_32) - low + TWO_32) % TWO_32);
  }

  #dropGone(log: EventLog): void {
    while (this.#count > 0 && !log.has(this.#at(0, log))) this.#shift();
  }

  #shift(): void {
    this.#head = (this.#head + 1) & (this.#ring.length - 1);
    this.#count--;
  }

  #grow(): void {
    const size = this.#ring.length;
    const ring = new Uint32Array(Math.max(16, size * 2));
    for (let i = 0; i < this.#count; i++) ring[i] = this.#ring[(this.#head + i) & (size - 1)]!;
    this.#ring = ring;
    this.#head = 0;
  }
}
