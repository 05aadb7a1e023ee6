import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDateTime } from '../src/http/date-time.ts';

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
});
