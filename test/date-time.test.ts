import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDateTime } from '../src/schema/date-time.ts';

describe('date-time format', () => {
  it('accepts RFC 3339 times with a zone, each of which Date.parse reads', () => {
    for (const text of [
      '2026-11-22T08:30:00.000Z', '2026-11-22t08:30:00z', '2026-11-22 08:30:00Z', '2026-11-22T08:30:00+02:00', '2026-11-22T08:30:00-0530',
      '2026-11-22T08:30:00.123456789Z', '2024-02-29T00:00:00Z', '2000-02-29T23:59:59.999Z', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59Z',
    ]) {
      assert.ok(isDateTime(text), text);
      assert.ok(!Number.isNaN(Date.parse(text)), text);
    }
  });

  it('refuses a leap second, impossible dates and times, no zone, and other shapes', () => {
    for (const text of [
      '2016-12-31T23:59:60Z', '2026-02-29T08:00:00Z', '1900-02-29T08:00:00Z', '2026-04-31T08:00:00Z', '2026-13-01T08:00:00Z', '2026-00-10T08:00:00Z',
      '2026-11-00T08:00:00Z', '2026-11-22T24:00:00Z', '2026-11-22T08:60:00Z', '2026-11-22T08:30:00+24:00', '2026-11-22T08:30:00+01:60',
      '2026-11-22T08:30:00+01', '2026-11-22T08:30:00', '2026-11-22T08:30Z', '2026-11-22', '2026-11-22\t08:30:00Z', '+002026-11-22T08:30:00Z',
      '2026-11-22T08:30:00.Z', ' 2026-11-22T08:30:00Z', '2026-11-22T08:30:00Z ', 'yesterday', '',
    ]) {
      assert.equal(isDateTime(text), false, text);
    }
  });

  it('every string of the shape it accepts, whatever the numbers, is one Date.parse reads', () => {
    // A small deterministic generator: each field a random two or four digits, over their whole
    // range and past it, each separator, fraction and zone form.
    let seed = 2463534242;
    const rand = (n: number) => {
      // xorshift32
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const two = () => String(rand(100)).padStart(2, '0');
    const pick = <T>(options: T[]) => options[rand(options.length)]!;
    let accepted = 0;
    for (let i = 0; i < 50_000; i++) {
      const year = String(pick([rand(10_000), 1970 + rand(100), 2000, 1900, 2024])).padStart(4, '0');
      const zone = pick(['Z', 'z', `+${two()}:${two()}`, `-${two()}${two()}`]);
      const fraction = pick(['', '.5', `.${rand(1000)}`, '.123456789']);
      const text = `${year}-${pick([two(), String(1 + rand(12)).padStart(2, '0')])}-${pick([two(), String(1 + rand(31)).padStart(2, '0')])}` +
        `${pick(['T', 't', ' '])}${pick([two(), String(rand(24)).padStart(2, '0')])}:${two()}:${two()}${fraction}${zone}`;
      if (!isDateTime(text)) continue;
      accepted++;
      assert.ok(Number.isFinite(Date.parse(text)), text);
    }
    assert.ok(accepted > 1_000, `only ${accepted} accepted: the generator misses the format`);
  });
});
