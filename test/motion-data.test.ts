// The trip machine's reader of stored record text against JSON.parse: the same location, speed and
// odometer for any record the store can write, and for text of any other shape too.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { motionData, readMotionData } from '../src/history/motion-data.ts';
import type { TelemetryData } from '../src/telemetry/schema.ts';

/** What JSON.parse gives of the three fields (absent ones left out). */
function expected(text: string) {
  const { location, speed, odometer } = JSON.parse(text) as TelemetryData;
  return { ...(location === undefined ? {} : { location }), ...(speed === undefined ? {} : { speed }), ...(odometer === undefined ? {} : { odometer }) };
}

/** A deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('motionData', () => {
  test('gives what JSON.parse gives, for 20,000 random records of every shape the schema allows', () => {
    const next = random(20261127);
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
    const strings = ['', 'P0420', '"speed":1', '{"odometer":5}', 'a\\b', '}', ',', '\u00e9\u4e2d\ud83d\ude97', '\n\t', '"location":{"lat":1,"lng":2}'];
    for (let i = 0; i < 20_000; i++) {
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
      const text = JSON.stringify(Object.fromEntries(members));
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

  test('other members hold any JSON value: it is skipped', () => {
    for (const text of ['{}', '{"heading":[{"a":"}"}],"speed":9}', '{"x":{"speed":1,"y":[1,{"odometer":2}]},"odometer":3,"z":"\\"}"}']) {
      assert.deepEqual(readMotionData(text), expected(text), text);
    }
  });

  test('text of another shape is read whole, as JSON.parse reads it', () => {
    for (const text of [
      '{ "speed" : 5 , "odometer": 7 }',
      '{"speed":5,"location":null}',
      '{"location":{"lat":1,"lng":2,"alt":3},"speed":4}',
      '{"location":{"lat":1},"speed":4}',
      '{"speed":"fast","odometer":7}',
      '{"speed":[1,2],"odometer":{"km":7}}',
    ]) {
      assert.equal(readMotionData(text), undefined, text);
      assert.deepEqual(motionData(text), expected(text), text);
    }
  });

  test('text that is not JSON is refused as JSON.parse refuses it', () => {
    for (const text of ['', '{', '{"speed":}', '{"speed":5', '{"speed":5}x', '{"speed":5x}']) {
      assert.throws(() => motionData(text), SyntaxError, text);
    }
  });
});
