// Teltonika Codec 12: text commands to a tracker over its open connection, and its text answers.
// A frame is the AVL framing (4 zero bytes, 4-byte length, data, 4-byte CRC-16/IBM of the data)
// around: codec 0x0C, quantity 1, type (0x05 command, 0x06 response), 4-byte text length, the text,
// quantity 1.
import { crc16Ibm } from './crc.ts';

export const CODEC_12 = 0x0c;
export const COMMAND_TYPE = 0x05;
export const RESPONSE_TYPE = 0x06;

/** Longest command text sent; the contract's own limit for `custom` text is 512 characters. */
export const MAX_COMMAND_BYTES = 512;

/** A whole Codec 12 frame of `type` carrying `text` (ASCII for a command, as trackers read it). */
export function encodeCodec12(text: string, type: number = COMMAND_TYPE): Buffer {
  const body = Buffer.from(text, 'latin1');
  const data = Buffer.alloc(1 + 1 + 1 + 4 + body.length + 1);
  data.writeUInt8(CODEC_12, 0);
  data.writeUInt8(1, 1);
  data.writeUInt8(type, 2);
  data.writeUInt32BE(body.length, 3);
  body.copy(data, 7);
  data.writeUInt8(1, 7 + body.length);
  const out = Buffer.alloc(8 + data.length + 4);
  out.writeUInt32BE(data.length, 4);
  data.copy(out, 8);
  out.writeUInt32BE(crc16Ibm(data), 8 + data.length);
  return out;
}

export type Codec12Message = { type: number; text: string };

/**
 * The message in `data` (codec id .. second quantity, as the framer hands it over), or why it is
 * not one: a quantity other than 1, or a text length that disagrees with the frame's.
 */
export function decodeCodec12(data: Uint8Array): Codec12Message | { malformed: string } {
  if (data.length < 8) return { malformed: `${data.length} bytes, fewer than a Codec 12 message's 8` };
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const quantity = view.getUint8(1);
  const type = view.getUint8(2);
  const size = view.getUint32(3);
  if (quantity !== 1) return { malformed: `a quantity of ${quantity}` };
  if (7 + size + 1 !== data.length) return { malformed: `a text of ${size} bytes in ${data.length} bytes of data` };
  if (view.getUint8(7 + size) !== quantity) return { malformed: 'the second quantity differs from the first' };
  // Trackers answer in ASCII; anything else is kept byte for byte rather than refused.
  return { type, text: Buffer.from(data.buffer, data.byteOffset + 7, size).toString('latin1') };
}
