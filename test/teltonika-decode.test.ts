// Teltonika Codec 8 / 8E decoding alone, against the example packets of Teltonika's Codec
// documentation byte for byte (and the values it states for them), then the edge cases.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { crc16Ibm } from '../src/protocols/teltonika/crc.ts';
import { CODEC_8, CODEC_8E, MalformedPacket, decodeAvlData, toTelemetry } from '../src/protocols/teltonika/decode.ts';
import { encodePacket, imeiLogin } from '../src/protocols/teltonika/encode.ts';
import { type Frame, Framer, FramingError, MAX_PACKET_BYTES } from '../src/protocols/teltonika/frame.ts';
import { DOC } from './helpers/teltonika.ts';

const bytes = (hex: string) => Buffer.from(hex, 'hex');

/** Frames from `stream` fed in pieces of `size` bytes. */
function frames(stream: Buffer, size: number): Frame[] {
  const framer = new Framer();
  const out: Frame[] = [];
  for (let at = 0; at < stream.length; at += size) out.push(...framer.push(stream.subarray(at, at + size)));
  return out;
}

/** The frames of `packet` sent after a login, in pieces of `size` bytes. */
const afterLogin = (packet: Buffer, size = packet.length) => frames(Buffer.concat([bytes(DOC.imei), packet]), size).slice(1);

const packetData = (hex: string) => {
  const [frame] = frames(Buffer.concat([bytes(DOC.imei), bytes(hex)]), 4096).slice(1);
  assert.ok(frame?.kind === 'packet' && frame.crcOk, 'the documented CRC matches');
  return frame.data;
};

describe('the documented examples', () => {
  test('CRC-16/IBM of each example is the one it carries', () => {
    for (const hex of [DOC.codec8First, DOC.codec8Second, DOC.codec8Third, DOC.codec8E]) {
      const b = bytes(hex);
      assert.equal(crc16Ibm(b, 8, b.length - 4), b.readUInt32BE(b.length - 4), hex.slice(0, 24));
    }
    assert.equal(crc16Ibm(Buffer.from('123456789')), 0xbb3d, 'the CRC-16/ARC check value');
  });

  test('the IMEI login: 356307042441013', () => {
    assert.deepEqual(frames(bytes(DOC.imei), 100), [{ kind: 'imei', imei: '356307042441013' }]);
    assert.deepEqual(imeiLogin('356307042441013'), bytes(DOC.imei));
  });

  test('Codec 8, 1st example: 10.06.2019 10:04:46, priority 1, no fix, event IO 1, IO 21=3 1=1 66=24079 241=24602 78=0', () => {
    const packet = decodeAvlData(packetData(DOC.codec8First));
    assert.equal(packet.codec, CODEC_8);
    assert.deepEqual(packet.records, [{
      timestamp: Date.parse('2019-06-10T10:04:46Z'), priority: 1, longitude: 0, latitude: 0, altitude: 0, angle: 0, satellites: 0, speed: 0,
      eventId: 1, io: [[21, 3], [1, 1], [66, 24079], [241, 24602], [78, 0]],
    }]);
    assert.deepEqual(toTelemetry(packet.records[0]!), {
      timestamp: '2019-06-10T10:04:46.000Z',
      data: { diagnostics: { satellites: 0, io21: 3, io1: 1, io66: 24079, io241: 24602, io78: 0 } },
    });
  });

  test('Codec 8, 2nd example: 10:05:36, IO 21=3 1=1 66=24080', () => {
    const [record] = decodeAvlData(packetData(DOC.codec8Second)).records;
    assert.equal(record!.timestamp, Date.parse('2019-06-10T10:05:36Z'));
    assert.deepEqual(record!.io, [[21, 3], [1, 1], [66, 24080]]);
  });

  test('Codec 8, 3rd example: two records, 10:01:01 with IO 1=0 and 10:01:19 with IO 1=1', () => {
    const { records } = decodeAvlData(packetData(DOC.codec8Third));
    assert.deepEqual(records.map((r) => [new Date(r.timestamp).toISOString(), r.eventId, r.io]), [
      ['2019-06-10T10:01:01.000Z', 1, [[1, 0]]],
      ['2019-06-10T10:01:19.000Z', 1, [[1, 1]]],
    ]);
  });

  test('Codec 8 Extended example: 11:36:32, IO 1=1 17=29 16=22949000 11=893700218 14=500686954; IO 16 is the odometer', () => {
    const packet = decodeAvlData(packetData(DOC.codec8E));
    assert.equal(packet.codec, CODEC_8E);
    const [record] = packet.records;
    assert.equal(record!.timestamp, Date.parse('2019-06-10T11:36:32Z'));
    assert.equal(record!.eventId, 1);
    assert.deepEqual(record!.io, [[1, 1], [17, 29], [16, 22949000], [11, 893700218], [14, 500686954]]);
    assert.deepEqual(toTelemetry(record!).data, {
      odometer: 22949, diagnostics: { satellites: 0, io1: 1, io17: 29, io16: 22949000, io11: 893700218, io14: 500686954 },
    });
  });
});

describe('GPS and IO elements as telemetry', () => {
  const base = { timestamp: Date.parse('2026-11-22T08:00:00Z'), priority: 0, altitude: 120, angle: 275, satellites: 9, speed: 63, eventId: 0 };

  test('a fix: 1e-7 degrees, speed, heading; IO 113 is the battery; numbers past 2^53 and NX values are hex', () => {
    const packet = encodePacket(CODEC_8E, [{
      ...base, longitude: -3.7037902, latitude: 40.4167754,
      io: [
        { id: 113, size: 1, value: 87 }, { id: 16, size: 4, value: 123456 }, { id: 300, size: 8, value: 2n ** 53n + 1n },
        { id: 385, bytes: Uint8Array.from([0xde, 0xad, 0xbe, 0xef]) }, { id: 386, bytes: new Uint8Array(200) },
      ],
    }]);
    const [frame] = afterLogin(packet, 7);
    assert.ok(frame?.kind === 'packet' && frame.crcOk);
    assert.deepEqual(toTelemetry(decodeAvlData(frame.data).records[0]!), {
      timestamp: '2026-11-22T08:00:00.000Z',
      data: {
        location: { lat: 40.4167754, lng: -3.7037902 }, speed: 63, heading: 275, battery: 87, odometer: 123.456,
        // io386 (200 bytes, 400 hex characters) is past the 256-character limit of a diagnostic string.
        diagnostics: { satellites: 9, altitude: 120, io113: 87, io16: 123456, io300: '0020000000000001', io385: 'deadbeef' },
      },
    });
  });

  test('IO 239 is the ignition; IO 78 the driver\'s iButton as 16 uppercase hex digits, 0 none', () => {
    const packet = encodePacket(CODEC_8E, [
      { ...base, satellites: 0, longitude: 0, latitude: 0, io: [{ id: 239, size: 1, value: 1 }, { id: 78, size: 8, value: 0x01a2b3c4d5e6f708n }] },
      { ...base, satellites: 0, longitude: 0, latitude: 0, io: [{ id: 239, size: 1, value: 0 }, { id: 78, size: 8, value: 0n }] },
      { ...base, satellites: 0, longitude: 0, latitude: 0, io: [{ id: 78, size: 8, value: 0xf1a2b3c4d5e6f708n }] },
    ]);
    const [frame] = afterLogin(packet);
    assert.ok(frame?.kind === 'packet');
    const [on, off, high] = decodeAvlData(frame.data).records.map((r) => toTelemetry(r).data);
    assert.equal(on!.ignition, true);
    assert.equal(on!.driverIdentifier, '01A2B3C4D5E6F708');
    assert.equal(off!.ignition, false);
    assert.equal(off!.driverIdentifier, undefined, '0: no iButton');
    assert.equal(high!.driverIdentifier, 'F1A2B3C4D5E6F708', 'past 2^53 too');
  });

  test('0 satellites keeps none of location, speed and heading; a battery over 100 stays only in diagnostics', () => {
    const packet = encodePacket(CODEC_8, [{ ...base, satellites: 0, longitude: 1, latitude: 2, io: [{ id: 113, size: 1, value: 250 }] }]);
    const [frame] = afterLogin(packet);
    assert.ok(frame?.kind === 'packet');
    assert.deepEqual(toTelemetry(decodeAvlData(frame.data).records[0]!).data, { diagnostics: { satellites: 0, io113: 250 } });
  });

  test('at most 64 diagnostics: IO elements past the limit are left out', () => {
    const io = Array.from({ length: 100 }, (_, i) => ({ id: i + 1, size: 1 as const, value: i }));
    const packet = encodePacket(CODEC_8, [{ ...base, longitude: 0, latitude: 0, io }]);
    const [frame] = afterLogin(packet);
    assert.ok(frame?.kind === 'packet');
    assert.equal(Object.keys(toTelemetry(decodeAvlData(frame.data).records[0]!).data.diagnostics!).length, 64);
  });
});

describe('framing', () => {
  const stream = Buffer.concat([bytes(DOC.imei), bytes(DOC.codec8First), bytes(DOC.codec8E), bytes(DOC.codec8Third)]);

  test('any segment boundaries give the same frames, one byte at a time included, with bounded buffering', () => {
    const whole = frames(stream, stream.length);
    assert.deepEqual(whole.map((f) => f.kind), ['imei', 'packet', 'packet', 'packet']);
    for (const size of [1, 2, 3, 7, 13, 64]) assert.deepEqual(frames(stream, size), whole, `segments of ${size}`);
    const framer = new Framer();
    let most = 0;
    for (const byte of stream) {
      framer.push(Uint8Array.of(byte));
      most = Math.max(most, framer.buffered);
    }
    assert.ok(most <= bytes(DOC.codec8E).length, `held ${most} bytes at most`);
  });

  test('a bad CRC is flagged, and the next packet is framed as usual', () => {
    const damaged = bytes(DOC.codec8First);
    damaged[20]! ^= 0xff;
    const out = frames(Buffer.concat([bytes(DOC.imei), damaged, bytes(DOC.codec8Second)]), 5);
    assert.deepEqual(out.slice(1).map((f) => f.kind === 'packet' && f.crcOk), [false, true]);
  });

  test('bytes that cannot be a frame throw before anything large is allocated', () => {
    const login = bytes(DOC.imei);
    const withHeader = (preamble: number, length: number) => {
      const b = Buffer.alloc(8);
      b.writeUInt32BE(preamble);
      b.writeUInt32BE(length, 4);
      return Buffer.concat([login, b]);
    };
    assert.throws(() => new Framer().push(withHeader(0, 0xfffffff0)), FramingError, 'a length claiming gigabytes');
    assert.throws(() => new Framer().push(withHeader(0, MAX_PACKET_BYTES + 1)), FramingError);
    assert.throws(() => new Framer().push(withHeader(0x47455420, 10)), FramingError, 'a bad preamble ("GET ...")');
    assert.throws(() => new Framer().push(Buffer.from('GET / HTTP/1.1\r\n')), FramingError, 'an IMEI length of 18245');
    assert.throws(() => new Framer().push(Buffer.from([0, 0])), FramingError, 'an empty IMEI');
    const codec13 = bytes(DOC.codec8Second);
    codec13[8] = 0x0d; // Codec 13 (Codec 12 carries commands: commands-teltonika.test.ts)
    assert.throws(() => new Framer().push(Buffer.concat([login, codec13])), FramingError, 'an unknown codec');
  });

  test('AVL data that does not parse is a MalformedPacket, never a crash or a partial result', () => {
    const good = packetData(DOC.codec8First);
    const cases: Array<[string, Uint8Array]> = [
      ['truncated', good.subarray(0, good.length - 5)],
      ['counts disagree', Uint8Array.from([...good.subarray(0, good.length - 1), 2])],
      ['trailing bytes', Uint8Array.from([...good.subarray(0, good.length - 1), 0, 1])],
      ['claims 255 records', Uint8Array.from([8, 255, ...good.subarray(2)])],
      ['not a known codec', Uint8Array.from([0x10, ...good.subarray(1)])],
    ];
    for (const [label, data] of cases) assert.throws(() => decodeAvlData(data), MalformedPacket, label);
    const random = Buffer.alloc(4096);
    for (let i = 0; i < 2000; i++) {
      for (let j = 0; j < random.length; j++) random[j] = (Math.random() * 256) | 0;
      random[0] = i % 2 === 0 ? CODEC_8 : CODEC_8E;
      try {
        decodeAvlData(random.subarray(0, 3 + (i % 400)));
      } catch (error) {
        assert.ok(error instanceof MalformedPacket, String(error));
      }
    }
  });
});
