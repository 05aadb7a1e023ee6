// iso() writes exactly what Date#toISOString writes, for any timestamp, in any order of calls
// (it keeps the text of the last minute it saw).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { iso } from '../src/clock.ts';

test('iso matches toISOString across minutes, years, the epoch and far dates', () => {
  const fixed = [0, -1, 1, 59_999, 60_000, -60_000, -60_001, 1_795_322_606_265, 8.64e15, -8.64e15, 253_402_300_799_999, 253_402_300_800_000, -62_167_219_200_001];
  for (const ms of fixed) assert.equal(iso(ms), new Date(ms).toISOString(), String(ms));
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const now = Date.parse('2026-11-22T08:00:00.000Z');
  for (let i = 0; i < 20_000; i++) {
    // Mostly near one another (the cached minute hits and misses), sometimes anywhere.
    const ms = i % 10 === 0 ? Math.floor((random() - 0.5) * 2 * 8.64e15) : now + Math.floor((random() - 0.5) * 300_000);
    assert.equal(iso(ms), new Date(ms).toISOString(), String(ms));
  }
});

test('iso of a non-integer or invalid time behaves as toISOString', () => {
  assert.equal(iso(1.5), new Date(1.5).toISOString());
  assert.throws(() => iso(Number.NaN), RangeError);
});
