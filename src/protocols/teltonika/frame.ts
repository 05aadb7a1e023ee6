// Splitting a Teltonika TCP stream into its messages, whatever the segment boundaries: first the
// IMEI (2-byte length, ASCII), then AVL packets (4 zero bytes, 4-byte length, the data, 4-byte CRC).
//
// Memory stays bounded: at most one packet is buffered, allocated once its length is known (a
// length over 64 KiB closes the connection before anything is allocated), and bytes are copied
// once into it, so a packet sent a byte at a time costs no more than one sent whole.
import { crc16Ibm } from './crc.ts';
import { CODEC_12 } from './codec12.ts';
import { isKnownCodec } from './decode.ts';

/** Longest AVL data accepted; Teltonika's own devices send at most a few KiB. */
export const MAX_PACKET_BYTES = 64 * 1024;
const MAX_IMEI_BYTES = 64;

export type Frame =
  | { kind: 'imei'; imei: string }
  /** `data`: codec id .. second record count. `crcOk` false: damaged in transit, to be sent again. */
  | { kind: 'packet'; data: Uint8Array; crcOk: boolean }
  /** A Codec 12 message (a tracker's answer to a command): `data` from the codec id to the second quantity. */
  | { kind: 'codec12'; data: Uint8Array; crcOk: boolean };

/** Bytes that cannot be this protocol: the connection is closed. */
export class FramingError extends Error {}

export class Framer {
  #stage: 'imei-length' | 'imei' | 'header' | 'body' = 'imei-length';
  /** The 2-byte IMEI length or the 8-byte packet header, as far as it has arrived. */
  readonly #head = Buffer.alloc(8);
  #headFilled = 0;
  #body: Buffer | undefined;
  #bodyFilled = 0;

  /** The frames `chunk` completes, in order; throws FramingError for bytes that cannot be a frame. */
  push(chunk: Uint8Array): Frame[] {
    const frames: Frame[] = [];
    let at = 0;
    while (at < chunk.length) {
      switch (this.#stage) {
        case 'imei-length':
        case 'header': {
          const want = this.#stage === 'header' ? 8 : 2;
          const n = Math.min(want - this.#headFilled, chunk.length - at);
          this.#head.set(chunk.subarray(at, at + n), this.#headFilled);
          this.#headFilled += n;
          at += n;
          if (this.#headFilled === want) this.#startBody();
          break;
        }
        case 'imei':
        case 'body': {
          const body = this.#body!;
          const n = Math.min(body.length - this.#bodyFilled, chunk.length - at);
          body.set(chunk.subarray(at, at + n), this.#bodyFilled);
          this.#bodyFilled += n;
          at += n;
          if (this.#bodyFilled === body.length) frames.push(this.#finish(body));
          break;
        }
      }
    }
    return frames;
  }

  /** Bytes held for an unfinished frame (for tests of the bound). */
  get buffered(): number {
    return this.#headFilled + (this.#body === undefined ? 0 : this.#bodyFilled);
  }

  #startBody(): void {
    if (this.#stage === 'imei-length') {
      const length = this.#head.readUInt16BE(0);
      if (length === 0 || length > MAX_IMEI_BYTES) throw new FramingError(`an IMEI of ${length} bytes`);
      this.#body = Buffer.allocUnsafe(length);
      this.#stage = 'imei';
    } else {
      if (this.#head.readUInt32BE(0) !== 0) throw new FramingError('no 4-zero-byte preamble');
      const length = this.#head.readUInt32BE(4);
      // The smallest packet is a codec id and two record counts.
      if (length < 3 || length > MAX_PACKET_BYTES) throw new FramingError(`a data length of ${length} bytes`);
      this.#body = Buffer.allocUnsafe(length + 4);
      this.#stage = 'body';
    }
    this.#bodyFilled = 0;
  }

  #finish(body: Buffer): Frame {
    this.#body = undefined;
    this.#bodyFilled = 0;
    this.#headFilled = 0;
    if (this.#stage === 'imei') {
      this.#stage = 'header';
      return { kind: 'imei', imei: body.toString('latin1') };
    }
    this.#stage = 'header';
    const data = body.subarray(0, body.length - 4);
    // The codec id is checked before the CRC: an unknown codec is not a damaged packet to await again.
    const crcOk = body.readUInt32BE(body.length - 4) === crc16Ibm(data);
    if (data[0] === CODEC_12) return { kind: 'codec12', data, crcOk };
    if (!isKnownCodec(data[0]!)) throw new FramingError(`unknown codec 0x${data[0]!.toString(16).padStart(2, '0')}`);
    return { kind: 'packet', data, crcOk };
  }
}
