// The meters and the rollups' state as the embedded store keeps them in each vehicle's rule state
// row: a few bytes of fixed layout instead of JSON. A telemetry commit writes both with every
// record of a vehicle with meters on, and printing their numbers as decimal text was most of the
// row's cost (docs/ARCHITECTURE.md, "Decisions"). Rows written as JSON before stay readable:
// `decodeMeters` and `decodeRoll` take either form. PostgreSQL keeps them as jsonb.
//
// Layout, little-endian, numbers first so that they are written as float64s in place: a header of
// 8 bytes (the version, 1; a byte of flags; a uint16 count; four bytes unused), the numbers
// (float64, NaN for null), then the texts, each a uint32 byte length (0xffffffff for null,
// 0xfffffffe for the same text as the one before) and its UTF-8 bytes.
import type { MeterState } from '../meters/state.ts';
import type { PackedTally, RollupState } from '../reports/rollup.ts';

const VERSION = 1;
const HEADER = 8;
const NULL_TEXT = 0xffffffff;
/** A text the same as the last one written (a rollup names its driver up to four times). */
const SAME_TEXT = 0xfffffffe;

/**
 * Writes into a buffer kept for the next value: `bytes()` is a view of it, valid until the
 * writer's next value (the statement that stores it copies it at once).
 */
class Writer {
  private bytes8 = new Uint8Array(512);
  private numbers = new Float64Array(this.bytes8.buffer);
  private at = HEADER;
  private last: string | undefined;

  /** Starts a value of `numbers` numbers and texts of at most `textUnits` UTF-16 units in all. */
  start(flags: number, count: number, numbers: number, texts: number, textUnits: number): void {
    const size = HEADER + numbers * 8 + texts * 4 + textUnits * 3;
    if (size > this.bytes8.length) {
      this.bytes8 = new Uint8Array(2 ** Math.ceil(Math.log2(size)));
      this.numbers = new Float64Array(this.bytes8.buffer);
    }
    const b = this.bytes8;
    b[0] = VERSION;
    b[1] = flags;
    b[2] = count & 0xff;
    b[3] = count >>> 8;
    this.at = HEADER;
    this.last = undefined;
  }
  /** The numbers, in order, right after the header. */
  number(i: number, value: number | null): void {
    this.numbers[1 + i] = value ?? Number.NaN;
  }
  /** Texts begin after the numbers. */
  textsAfter(numbers: number): void {
    this.at = HEADER + numbers * 8;
  }
  private length(value: number): void {
    const b = this.bytes8;
    b[this.at] = value & 0xff;
    b[this.at + 1] = (value >>> 8) & 0xff;
    b[this.at + 2] = (value >>> 16) & 0xff;
    b[this.at + 3] = value >>> 24;
    this.at += 4;
  }
  text(value: string | null): void {
    if (value === null || value === this.last) {
      this.length(value === null ? NULL_TEXT : SAME_TEXT);
      return;
    }
    this.last = value;
    // Ids and identifiers are ASCII: copied here; anything else through the encoder.
    const b = this.bytes8;
    const start = this.at + 4;
    let n = 0;
    for (; n < value.length; n++) {
      const c = value.charCodeAt(n);
      if (c > 0x7f) break;
      b[start + n] = c;
    }
    if (n < value.length) n = encoder.encodeInto(value, b.subarray(start)).written;
    this.length(n);
    this.at += n;
  }
  bytes(): Uint8Array {
    return this.bytes8.subarray(0, this.at);
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

class Reader {
  private readonly view: DataView;
  private readonly bytes: Uint8Array;
  private at: number;
  private last: string | undefined;
  readonly flags: number;
  readonly count: number;
  constructor(value: unknown, numbers: (count: number) => number) {
    this.bytes = value as Uint8Array;
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    if (this.bytes[0] !== VERSION) throw new Error(`a rule state value of unknown layout ${String(this.bytes[0])}`);
    this.flags = this.bytes[1]!;
    this.count = this.view.getUint16(2, true);
    this.at = HEADER + numbers(this.count) * 8;
  }
  number(i: number): number | null {
    const value = this.view.getFloat64(HEADER + i * 8, true);
    return Number.isNaN(value) ? null : value;
  }
  text(): string | null {
    const length = this.view.getUint32(this.at, true);
    this.at += 4;
    if (length === NULL_TEXT) return null;
    if (length === SAME_TEXT) return this.last!;
    const value = decoder.decode(this.bytes.subarray(this.at, this.at + length));
    this.at += length;
    return (this.last = value);
  }
}

const textUnits = (...values: (string | null)[]) => values.reduce((n, v) => n + (v?.length ?? 0), 0);

const meterWriter = new Writer();
const METER_NUMBERS = 7;

/** The meters' bytes: a view valid until the next call (bind it at once). */
export function encodeMeters(m: MeterState): Uint8Array {
  const w = meterWriter;
  w.start(m.ign ? 1 : 0, 0, METER_NUMBERS, 1, textUnits(m.ident));
  w.number(0, m.odo);
  w.number(1, m.off);
  w.number(2, m.gps);
  w.number(3, m.eng);
  w.number(4, m.lat);
  w.number(5, m.lng);
  w.number(6, m.up);
  w.textsAfter(METER_NUMBERS);
  w.text(m.ident);
  return w.bytes();
}

export function decodeMeters(value: unknown): MeterState {
  if (typeof value === 'string') return JSON.parse(value) as MeterState;
  const r = new Reader(value, () => METER_NUMBERS);
  return {
    odo: r.number(0), off: r.number(1)!, gps: r.number(2)!, eng: r.number(3)!, lat: r.number(4), lng: r.number(5),
    ign: (r.flags & 1) === 1, ident: r.text(), up: r.number(6),
  };
}

const rollWriter = new Writer();
/** t, lat, lng; then each pending tally's seven numbers. */
const rollNumbers = (pending: number) => 3 + 7 * pending;

/** The rollup state's bytes: a view valid until the next call (bind it at once). */
export function encodeRoll(s: RollupState): Uint8Array {
  if (s.pend.length > 0xffff) throw new Error('a rollup state of more than 65535 pending tallies');
  const w = rollWriter;
  let units = textUnits(s.drv, s.cur, s.tdrv);
  for (const t of s.pend) units += t[1].length;
  const numbers = rollNumbers(s.pend.length);
  w.start(s.ign ? 1 : 0, s.pend.length, numbers, 3 + s.pend.length, units);
  w.number(0, s.t);
  w.number(1, s.loc?.lat ?? null);
  w.number(2, s.loc?.lng ?? null);
  let i = 3;
  for (const [bucket, , distanceM, drivingS, idleS, engineS, trips, maxSpeed] of s.pend) {
    w.number(i++, bucket);
    w.number(i++, distanceM);
    w.number(i++, drivingS);
    w.number(i++, idleS);
    w.number(i++, engineS);
    w.number(i++, trips);
    w.number(i++, maxSpeed);
  }
  w.textsAfter(numbers);
  w.text(s.drv);
  w.text(s.cur);
  w.text(s.tdrv);
  for (const t of s.pend) w.text(t[1]);
  return w.bytes();
}

export function decodeRoll(value: unknown): RollupState {
  if (typeof value === 'string') return JSON.parse(value) as RollupState;
  const r = new Reader(value, rollNumbers);
  const lat = r.number(1);
  const lng = r.number(2);
  const drv = r.text();
  const cur = r.text();
  const tdrv = r.text();
  const pend: PackedTally[] = [];
  for (let p = 0, i = 3; p < r.count; p++, i += 7) {
    pend.push([r.number(i)!, r.text()!, r.number(i + 1)!, r.number(i + 2)!, r.number(i + 3)!, r.number(i + 4)!, r.number(i + 5)!, r.number(i + 6)]);
  }
  return { t: r.number(0), ign: (r.flags & 1) === 1, loc: lat === null || lng === null ? null : { lat, lng }, drv, cur, tdrv, pend };
}
