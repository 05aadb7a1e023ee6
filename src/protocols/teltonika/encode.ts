// The tracker's side of the protocol: the IMEI login and AVL packets (Codec 8 or 8E) as a
// Teltonika device writes them. For the simulator, the benchmark and the tests; the service
// itself only decodes.
import { crc16Ibm } from './crc.ts';
import { type AvlRecord, type CODEC_8, CODEC_8E } from './decode.ts';

/** An IO value as written: a number (1, 2, 4 or 8 bytes, as `size` says) or raw bytes (8E's NX). */
export type IoElement = { id: number; size: 1 | 2 | 4 | 8; value: number | bigint } | { id: number; bytes: Uint8Array };

export type EncodableRecord = Omit<AvlRecord, 'io'> & { io: IoElement[] };

export function imeiLogin(imei: string): Buffer {
  const out = Buffer.alloc(2 + imei.length);
  out.writeUInt16BE(imei.length);
  out.write(imei, 2, 'latin1');
  return out;
}

/** A whole packet: preamble, length, data, CRC. */
export function encodePacket(codec: typeof CODEC_8 | typeof CODEC_8E, records: readonly EncodableRecord[]): Buffer {
  const wide = codec === CODEC_8E;
  const parts: Buffer[] = [];
  const u8 = (n: number) => parts.push(Buffer.from([n]));
  const u16 = (n: number) => {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(n);
    parts.push(b);
  };
  const id = wide ? u16 : u8;
  u8(codec);
  u8(records.length);
  for (const r of records) {
    const head = Buffer.alloc(8 + 1 + 4 + 4 + 2 + 2 + 1 + 2);
    head.writeBigUInt64BE(BigInt(r.timestamp), 0);
    head.writeUInt8(r.priority, 8);
    head.writeInt32BE(Math.round(r.longitude * 1e7), 9);
    head.writeInt32BE(Math.round(r.latitude * 1e7), 13);
    head.writeInt16BE(r.altitude, 17);
    head.writeUInt16BE(r.angle, 19);
    head.writeUInt8(r.satellites, 21);
    head.writeUInt16BE(r.speed, 22);
    parts.push(head);
    id(r.eventId);
    id(r.io.length);
    for (const size of [1, 2, 4, 8] as const) {
      const fixed = r.io.filter((e): e is Extract<IoElement, { size: number }> => 'size' in e && e.size === size);
      id(fixed.length);
      for (const element of fixed) {
        id(element.id);
        const b = Buffer.alloc(size);
        if (size === 8) b.writeBigUInt64BE(BigInt(element.value));
        else b.writeUIntBE(Number(element.value), 0, size);
        parts.push(b);
      }
    }
    if (wide) {
      const variable = r.io.filter((e): e is Extract<IoElement, { bytes: Uint8Array }> => 'bytes' in e);
      u16(variable.length);
      for (const element of variable) {
        u16(element.id);
        u16(element.bytes.length);
        parts.push(Buffer.from(element.bytes));
      }
    }
  }
  u8(records.length);
  const data = Buffer.concat(parts);
  const out = Buffer.alloc(8 + data.length + 4);
  out.writeUInt32BE(data.length, 4);
  data.copy(out, 8);
  out.writeUInt32BE(crc16Ibm(data), 8 + data.length);
  return out;
}
