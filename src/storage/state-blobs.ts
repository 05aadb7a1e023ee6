// The meters and the rollups' state as the embedded store keeps them in each vehicle's rule state
// row: a few bytes of fixed layout instead of JSON. A telemetry commit writes both with every
// record of a vehicle with meters on, and printing their numbers as decimal text was most of the
// row's cost (docs/ARCHITECTURE.md, "Decisions"). Rows written as JSON before stay readable:
// `decodeMeters` and `decodeRoll` take either form. PostgreSQL keeps them as jsonb.
//
// Layout, little-endian: a version byte (1), then the fields in the order below; a number is a
// float64 (NaN for null), a flag one byte, a text a uint32 byte length (0xffffffff for null) and
// its UTF-8 bytes (0xfffffffe: the same text as the one before).
import type { MeterState } from '../meters/state.ts';
import type { PackedTally, RollupState } from '../reports/rollup.ts';

const VERSION = 1;
const NULL_TEXT = 0xffffffff;
/** A text the same as the last one written (a rollup names its driver up to four times). */
const SAME_TEXT = 0xfffffffe;

/** Writes into one buffer sized for the worst case, then hands out the bytes used. */
class Writer {
  private readonly buf: Buffer;
  private at = 1;
  private last: string | undefined;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
    this.buf[0] = VERSION;
  }
  number(value: number | null): void {
    this.at = this.buf.writeDoubleLE(value ?? Number.NaN, this.at);
  }
  flag(value: boolean): void {
    this.buf[this.at++] = value ? 1 : 0;
  }
  count(value: number): void {
    this.at = this.buf.writeUInt32LE(value, this.at);
  }
  text(value: string | null): void {
    if (value === null || value === this.last) {
      this.count(value === null ? NULL_TEXT : SAME_TEXT);
      return;
    }
    this.last = value;
    // Ids and identifiers are ASCII: copied here (a write through Buffer costs more than short texts).
    const start = this.at + 4;
    let length = 0;
    for (; length < value.length; length++) {
      const c = value.charCodeAt(length);
      if (c > 0x7f) break;
      this.buf[start + length] = c;
    }
    if (length < value.length) length = this.buf.write(value, start, 'utf8');
    this.count(length);
    this.at += length;
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.at);
  }
}

/** At most this many bytes for a text: four for its length, three per UTF-16 unit. */
const textSize = (value: string | null) => 4 + (value === null ? 0 : value.length * 3);

class Reader {
  private readonly buf: Buffer;
  private at = 1;
  private last: string | undefined;
  constructor(bytes: Uint8Array) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (this.buf[0] !== VERSION) throw new Error(`a rule state value of unknown layout ${String(this.buf[0])}`);
  }
  number(): number | null {
    const value = this.buf.readDoubleLE(this.at);
    this.at += 8;
    return Number.isNaN(value) ? null : value;
  }
  flag(): boolean {
    return this.buf[this.at++] === 1;
  }
  count(): number {
    const value = this.buf.readUInt32LE(this.at);
    this.at += 4;
    return value;
  }
  text(): string | null {
    const length = this.count();
    if (length === NULL_TEXT) return null;
    if (length === SAME_TEXT) return this.last!;
    const value = this.buf.toString('utf8', this.at, this.at + length);
    this.at += length;
    return (this.last = value);
  }
}

export function encodeMeters(m: MeterState): Uint8Array {
  const w = new Writer(1 + 7 * 8 + 1 + textSize(m.ident));
  w.number(m.odo);
  w.number(m.off);
  w.number(m.gps);
  w.number(m.eng);
  w.number(m.lat);
  w.number(m.lng);
  w.number(m.up);
  w.flag(m.ign);
  w.text(m.ident);
  return w.bytes();
}

export function decodeMeters(value: unknown): MeterState {
  if (typeof value === 'string') return JSON.parse(value) as MeterState;
  const r = new Reader(value as Uint8Array);
  const odo = r.number();
  const off = r.number()!;
  const gps = r.number()!;
  const eng = r.number()!;
  const lat = r.number();
  const lng = r.number();
  const up = r.number();
  return { odo, off, gps, eng, lat, lng, ign: r.flag(), ident: r.text(), up };
}

export function encodeRoll(s: RollupState): Uint8Array {
  let size = 1 + 8 + 1 + 16 + textSize(s.drv) + textSize(s.cur) + textSize(s.tdrv) + 4;
  for (const t of s.pend) size += 7 * 8 + textSize(t[1]);
  const w = new Writer(size);
  w.number(s.t);
  w.flag(s.ign);
  w.number(s.loc?.lat ?? null);
  w.number(s.loc?.lng ?? null);
  w.text(s.drv);
  w.text(s.cur);
  w.text(s.tdrv);
  w.count(s.pend.length);
  for (const [bucket, driver, distanceM, drivingS, idleS, engineS, trips, maxSpeed] of s.pend) {
    w.number(bucket);
    w.text(driver);
    w.number(distanceM);
    w.number(drivingS);
    w.number(idleS);
    w.number(engineS);
    w.number(trips);
    w.number(maxSpeed);
  }
  return w.bytes();
}

export function decodeRoll(value: unknown): RollupState {
  if (typeof value === 'string') return JSON.parse(value) as RollupState;
  const r = new Reader(value as Uint8Array);
  const t = r.number();
  const ign = r.flag();
  const lat = r.number();
  const lng = r.number();
  const drv = r.text();
  const cur = r.text();
  const tdrv = r.text();
  const pend: PackedTally[] = [];
  for (let n = r.count(); n > 0; n--) {
    pend.push([r.number()!, r.text()!, r.number()!, r.number()!, r.number()!, r.number()!, r.number()!, r.number()]);
  }
  return { t, ign, loc: lat === null || lng === null ? null : { lat, lng }, drv, cur, tdrv, pend };
}
