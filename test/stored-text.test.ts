// Readers of a record's stored text against JSON.parse: the trip machine's fields, and the export
// formats' bytes, the same for any record the store can write as when the text is parsed whole,
// and for text of any other shape too.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FORMATS } from '../src/history/formats.ts';
import { motionData, readMotionData } from '../src/history/motion-data.ts';
import { EXPORT_FORMATS } from '../src/history/schema.ts';
import type { TelemetryData } from '../src/telemetry/schema.ts';
import { rng } from './helpers/random.ts';

/** What JSON.parse gives of the three fields (absent ones left out). */
function expected(text: string) {
  const { location, speed, odometer } = JSON.parse(text) as TelemetryData;
  return { ...(location === undefined ? {} : { location }), ...(speed === undefined ? {} : { speed }), ...(odometer === undefined ? {} : { odometer }) };
}

/** `count` random records' stored text (JSON.stringify of data the schema allows), the same every run. */
function records(count: number): string[] {
  const next = rng(20261127);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  // Numbers as JSON.stringify writes them: short and long decimals, integers, exponents, zero.
  const number = (scale: number) => pick([
    () => Math.round(next() * scale * 1e6) / 1e6,
    () => next() * scale,
    () => Math.round(next() * scale),
    () => next() * 1e-9,
    () => next() * 1e22,
    () => 0,
    () => 123456789012345,
    () => 0.1 + 0.2,
  ])();
  const strings = ['', 'P0420', '"speed":1', '{"odometer":5}', 'a\\b', '}', ',', '\u00e9\u4e2d\ud83d\ude97', '\n\t', '"location":{"lat":1,"lng":2}', '<&>\''];
  const texts: string[] = [];
  for (let i = 0; i < count; i++) {
    const members: [string, unknown][] = [];
    if (next() < 0.8) {
      const lat = (next() - 0.5) * 180 * (next() < 0.1 ? 1e-8 : 1);
      const lng = (next() - 0.5) * 360;
      members.push(['location', next() < 0.5 ? { lat, lng } : { lng, lat }]);
    }
    if (next() < 0.7) members.push(['speed', number(300)]);
    if (next() < 0.5) members.push(['heading', number(359)]);
    if (next() < 0.5) members.push(['battery', number(100)]);
    if (next() < 0.5) members.push(['temperature', -number(40)]);
    if (next() < 0.6) members.push(['odometer', number(1e6)]);
    if (next() < 0.3) members.push(['ignition', next() < 0.5]);
    if (next() < 0.3) members.push(['driverIdentifier', pick(['01A2B3C4D5E6F708', 'card42', 'X'])]);
    if (next() < 0.4) {
      // Diagnostics may use the names of the fields read, and hold any string.
      const diagnostics: Record<string, unknown> = {};
      for (let k = Math.floor(next() * 5); k > 0; k--) {
        diagnostics[pick(['speed', 'odometer', 'location', 'dtc', 'lat', 'x.y-z_1'])] = pick([() => pick(strings), () => number(1000), () => next() < 0.5])();
      }
      members.push(['diagnostics', diagnostics]);
    }
    if (members.length === 0) members.push(['battery', 50]);
    // Members in any order: the stored text keeps the order the client sent.
    members.sort(() => next() - 0.5);
    texts.push(JSON.stringify(Object.fromEntries(members)));
  }
  return texts;
}

describe('motionData', () => {
  test('gives what JSON.parse gives, for 20,000 random records of every shape the schema allows', () => {
    for (const text of records(20_000)) {
      // Read by the reader itself, not by the JSON.parse it falls back on.
      assert.deepEqual(readMotionData(text), expected(text), text);
      assert.deepEqual(motionData(text), expected(text), text);
    }
  });

  test('numbers at the edges of the exact reading', () => {
    for (const value of [0, 1, -1, 9007199254740991, 999999999999999, 1e15, 1e21, 5e-324, 1.7976931348623157e308, 0.000001, 1e-7, 52.520008, 13.404954, 12000.25, -33.8688197, 0.1 + 0.7, 151.2092955 / 3]) {
      const text = JSON.stringify({ location: { lat: value, lng: -value }, speed: value, odometer: value });
      assert.deepEqual(readMotionData(text), expected(text), text);
    }
  });

  test('text of another shape (members or values the schema has not, whitespace) is read whole, as JSON.parse reads it', () => {
    for (const text of [
      '{ "speed" : 5 , "odometer": 7 }',
      '{"speed":5,"location":null}',
      '{"location":{"lat":1,"lng":2,"alt":3},"speed":4}',
      '{"location":{"lat":1},"speed":4}',
      '{"speed":"fast","odometer":7}',
      '{"speed":[1,2],"odometer":{"km":7}}',
      '{"heading":[{"a":"}"}],"speed":9}',
      '{"x":{"speed":1},"odometer":3}',
      '{"speed":1,"speed":2}',
      '{"diagnostics":{"a":{"speed":1}},"speed":2}',
    ]) {
      assert.equal(readMotionData(text), undefined, text);
      assert.deepEqual(motionData(text), expected(text), text);
    }
  });

  test('text that is not JSON is refused as JSON.parse refuses it', () => {
    for (const text of ['', '{', '{"speed":}', '{"speed":5', '{"speed":5}x', '{"speed":5x}', '{}x', '{"speed":1.2.3}']) {
      assert.throws(() => motionData(text), SyntaxError, text);
    }
  });
});

describe('export formats', () => {
  test('write from the stored text what they write from the parsed record, for 5,000 random records', () => {
    // Text with whitespace is refused by the reader and parsed whole: the same records, written
    // the other way.
    const texts = records(5_000);
    const page = (format: (typeof EXPORT_FORMATS)[number], data: (text: string) => string) =>
      FORMATS[format].writer('v').page(texts.map((text, i) => ({ vehicleId: 'v', timestamp: 1_794_009_600_000 + i * 1_001, data: data(text) })));
    for (const format of EXPORT_FORMATS) {
      const read = page(format, (text) => text);
      assert.ok(read.length > 100_000, format);
      assert.equal(read, page(format, (text) => JSON.stringify(JSON.parse(text), null, 1)), format);
    }
  });
});
