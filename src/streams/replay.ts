// Replay (docs/API.md "Live streams": `lastSeq`), built so that holding 60 s of messages for every stream
// costs each stream 4 bytes per message, not a copy of each frame.
//
// Every event is serialized once and appended to one EventLog shared by all streams (its shared
// part, UTF-8, and its type, under a global number `g`). A stream's own history is a SeqRing of those
// numbers: its seq N is the ring's entry N, and its frame is rebuilt on replay from the log entry
// with `frame()`. The log keeps entries for the replay window, bounded in count and bytes too.

/** Bytes of one slab of the log's text: entries are copied into slabs, which leave whole. */
export const SLAB_BYTES = 1 << 20;

/**
 * Global, append-only, shared by every stream; entries leave it by age, count or bytes.
 *
 * Each entry's text is copied into the current slab (a Buffer of SLAB_BYTES, or an entry's own
 * size when larger), and the entry keeps its slab, offset and length in typed arrays. Entries
 * leave in order, so a slab is released once its last entry has left. A full log (a minute of a
 * busy fleet: up to a million entries) is then a few hundred objects for the garbage collector to
 * trace, not a Buffer (two objects and a backing store) per entry: those made every major
 * collection walk millions of objects, pauses the whole process felt.
 */
export class EventLog {
  #slabOf = new Uint32Array(1024);
  #offsets = new Uint32Array(1024);
  #lengths = new Uint32Array(1024);
  #types = new Uint8Array(1024);
  #times = new Float64Array(1024);
  /** The slabs still holding entries, by number. */
  readonly #slabs = new Map<number, Buffer>();
  /** The slab being filled, its number, and how much of it is used. */
  #slab: Buffer | undefined;
  #slabNumber = -1;
  #slabUsed = 0;
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

  /** Slabs held (the one being filled included). */
  get slabs(): number {
    return this.#slabs.size;
  }

  has(g: number): boolean {
    return g >= this.#first && g < this.#first + this.#count;
  }

  append(type: number, shared: Buffer, now: number): number {
    this.#evict(now, shared.length);
    if (this.#count === this.#types.length) this.#grow();
    const index = (this.#head + this.#count) & (this.#types.length - 1);
    if (this.#slab === undefined || this.#slabUsed + shared.length > this.#slab.length) {
      this.#slab = Buffer.allocUnsafeSlow(Math.max(SLAB_BYTES, shared.length));
      this.#slabNumber = (this.#slabNumber + 1) >>> 0;
      this.#slabUsed = 0;
      this.#slabs.set(this.#slabNumber, this.#slab);
    }
    shared.copy(this.#slab, this.#slabUsed);
    this.#slabOf[index] = this.#slabNumber;
    this.#offsets[index] = this.#slabUsed;
    this.#lengths[index] = shared.length;
    this.#slabUsed += shared.length;
    this.#types[index] = type;
    this.#times[index] = now;
    this.#count++;
    this.#bytes += shared.length;
    return this.#first + this.#count - 1;
  }

  type(g: number): number {
    return this.#types[(this.#head + (g - this.#first)) & (this.#types.length - 1)]!;
  }

  /** The entry's text: a view of its slab, good while the entry is held (copy it to keep it). */
  shared(g: number): Buffer {
    const index = (this.#head + (g - this.#first)) & (this.#types.length - 1);
    const offset = this.#offsets[index]!;
    return this.#slabs.get(this.#slabOf[index]!)!.subarray(offset, offset + this.#lengths[index]!);
  }

  #evict(now: number, incoming: number): void {
    const mask = this.#types.length - 1;
    while (
      this.#count > 0 &&
      (this.#times[this.#head]! < now - this.#windowMs || this.#count >= this.#maxEntries || this.#bytes + incoming > this.#maxBytes)
    ) {
      const slab = this.#slabOf[this.#head]!;
      this.#bytes -= this.#lengths[this.#head]!;
      this.#head = (this.#head + 1) & mask;
      this.#count--;
      this.#first++;
      // Its last entry gone: the slab goes too, unless it is the one being filled.
      if ((this.#count === 0 || this.#slabOf[this.#head] !== slab) && slab !== this.#slabNumber) this.#slabs.delete(slab);
    }
  }

  #grow(): void {
    const size = this.#types.length;
    const head = this.#head;
    // The full ring unrolled into one twice its size: from the head to the end, then what was before it.
    function unroll<T extends Uint8Array | Uint32Array | Float64Array>(from: T, to: T): T {
      to.set(from.subarray(head), 0);
      to.set(from.subarray(0, head), size - head);
      return to;
    }
    this.#slabOf = unroll(this.#slabOf, new Uint32Array(size * 2));
    this.#offsets = unroll(this.#offsets, new Uint32Array(size * 2));
    this.#lengths = unroll(this.#lengths, new Uint32Array(size * 2));
    this.#types = unroll(this.#types, new Uint8Array(size * 2));
    this.#times = unroll(this.#times, new Float64Array(size * 2));
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
