// Teltonika AVL data (Codec 8 and Codec 8 Extended), pure: the bytes a packet's CRC covers (codec
// id to the second record count) in, records out; and records to telemetry.
//
// Codec 8 and 8E differ only in the IO element: 8E writes ids and counts on 2 bytes instead of 1
// and adds variable-length (NX) values after the 8-byte ones.
import type { TelemetryData } from '../../telemetry/schema.ts';
import type { DeviceTelemetry } from '../ingest.ts';

export const CODEC_8 = 0x08;
export const CODEC_8E = 0x8e;

/** Unsigned integers up to 2^53 as numbers; larger ones and variable-length values as lowercase hex. */
export type IoValue = number | string;

export interface AvlRecord {
  /** ms since the epoch */
  timestamp: number;
  priority: number;
  /** Degrees (WGS 84), from 1e-7 degree integers. */
  longitude: number;
  latitude: number;
  /** Metres above sea level. */
  altitude: number;
  /** Degrees from north, clockwise. */
  angle: number;
  satellites: number;
  /** km/h */
  speed: number;
  eventId: number;
  /** In the order sent. */
  io: Array<[id: number, value: IoValue]>;
}

export interface AvlPacket {
  codec: typeof CODEC_8 | typeof CODEC_8E;
  records: AvlRecord[];
}

/** The largest time a JavaScript Date holds, ms. */
const MAX_TIME = 8.64e15;

/** The bytes are not AVL data this decoder understands (an unknown codec, counts that disagree, a short read). */
export class MalformedPacket extends Error {}

export function isKnownCodec(codec: number): boolean {
  return codec === CODEC_8 || codec === CODEC_8E;
}

/** Reads `data` (codec id .. second record count) front to back; any overrun is a MalformedPacket. */
export function decodeAvlData(data: Uint8Array): AvlPacket {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  const take = (n: number) => {
    if (at + n > data.length) throw new MalformedPacket(`the packet ends inside a record (at byte ${at}, ${n} more needed)`);
    const start = at;
    at += n;
    return start;
  };
  const u8 = () => view.getUint8(take(1));
  const u16 = () => view.getUint16(take(2));

  const codec = u8();
  if (!isKnownCodec(codec)) throw new MalformedPacket(`codec 0x${codec.toString(16).padStart(2, '0')} is not Codec 8 or 8 Extended`);
  const wide = codec === CODEC_8E;
  const id = wide ? u16 : u8;
  const count = wide ? u16 : u8;
  const records: AvlRecord[] = [];
  const expected = u8();
  for (let r = 0; r < expected; r++) {
    const timestamp = Number(view.getBigUint64(take(8)));
    if (timestamp > MAX_TIME) throw new MalformedPacket(`record ${r} has a timestamp past the year 275760`);
    const priority = u8();
    const longitude = view.getInt32(take(4)) / 1e7;
    const latitude = view.getInt32(take(4)) / 1e7;
    const altitude = view.getInt16(take(2));
    const angle = u16();
    const satellites = u8();
    const speed = u16();
    const eventId = id();
    const total = count();
    const io: AvlRecord['io'] = [];
    for (const size of [1, 2, 4, 8] as const) {
      const n = count();
      for (let i = 0; i < n; i++) {
        const ioId = id();
        const start = take(size);
        io.push([ioId, fixedValue(view, start, size)]);
      }
    }
    if (wide) {
      const n = count();
      for (let i = 0; i < n; i++) {
        const ioId = u16();
        const length = u16();
        const start = take(length);
        io.push([ioId, Buffer.from(data.buffer, data.byteOffset + start, length).toString('hex')]);
      }
    }
    if (io.length !== total) throw new MalformedPacket(`record ${r} says ${total} IO elements but holds ${io.length}`);
    records.push({ timestamp, priority, longitude, latitude, altitude, angle, satellites, speed, eventId, io });
  }
  const second = u8();
  if (second !== expected) throw new MalformedPacket(`the record counts disagree (${expected} and ${second})`);
  if (at !== data.length) throw new MalformedPacket(`${data.length - at} bytes follow the last record`);
  return { codec: codec as AvlPacket['codec'], records };
}

function fixedValue(view: DataView, start: number, size: 1 | 2 | 4 | 8): IoValue {
  switch (size) {
    case 1:
      return view.getUint8(start);
    case 2:
      return view.getUint16(start);
    case 4:
      return view.getUint32(start);
    case 8: {
      const value = view.getBigUint64(start);
      return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString(16).padStart(16, '0');
    }
  }
}

/** IO ids with a telemetry field of their own (besides diagnostics). */
const IO_BATTERY = 113;
const IO_ODOMETER = 16;
/** Digital input 1 as ignition (1: on). */
const IO_IGNITION = 239;
/** The iButton read by the tracker, its 64-bit serial (0: none). */
const IO_IBUTTON = 78;
const MAX_DIAGNOSTICS = 64;
const MAX_SPEED = 1000;
const MAX_STRING = 256;

/** An IO 78 value as 16 uppercase hex digits; undefined for 0 (no iButton) or a value of another size. */
function iButtonOf(value: IoValue): string | undefined {
  const hex = typeof value === 'number' ? (value === 0 ? undefined : value.toString(16)) : value;
  return hex === undefined || hex.length > 16 || !/^[0-9a-fA-F]+$/.test(hex) ? undefined : hex.padStart(16, '0').toUpperCase();
}

/**
 * A record as telemetry. Without satellites the GPS element is not a fix: location, speed and
 * heading are left out (and so is a speed over 1000 km/h, which no vehicle of ours reaches). IO 113
 * gives the battery, 16 the odometer, 239 the ignition and 78 the driver's iButton. Diagnostics hold `satellites`, `altitude` (with a fix) and each IO element
 * as `io<ID>`; those past the 64-key limit, and variable-length values over 128 bytes (256 hex
 * characters, the limit of a diagnostic string), are left out rather than refuse the whole packet.
 */
export function toTelemetry(record: AvlRecord): DeviceTelemetry {
  const data: TelemetryData = {};
  const diagnostics: Record<string, number | string> = { satellites: record.satellites };
  const fix = record.satellites > 0;
  if (fix) {
    if (Math.abs(record.latitude) <= 90 && Math.abs(record.longitude) <= 180) {
      data.location = { lat: record.latitude, lng: record.longitude };
    }
    if (record.speed <= MAX_SPEED) data.speed = record.speed;
    data.heading = record.angle % 360;
    diagnostics.altitude = record.altitude;
  }
  for (const [id, value] of record.io) {
    if (Object.keys(diagnostics).length >= MAX_DIAGNOSTICS) break;
    if (typeof value === 'string' && value.length > MAX_STRING) continue;
    diagnostics[`io${id}`] = value;
    if (id === IO_BATTERY && typeof value === 'number' && value <= 100) data.battery = value;
    if (id === IO_ODOMETER && typeof value === 'number') data.odometer = value / 1000;
    if (id === IO_IGNITION && typeof value === 'number') data.ignition = value === 1;
    if (id === IO_IBUTTON) {
      const serial = iButtonOf(value);
      if (serial !== undefined) data.driverIdentifier = serial;
    }
  }
  data.diagnostics = diagnostics;
  return { timestamp: new Date(record.timestamp).toISOString(), data };
}
