// Exports (history/formats.ts) written by SQLite itself from the stored JSON text, many records'
// text at a time in one string: JavaScript parses no record and makes no string per record, which
// is most of what an export of millions of records allocated. (Text, not a BLOB: a Uint8Array's
// memory is outside V8's heap, which an export then hardly grows, so V8 collected them only every
// 64 MB or so; the strings are collected with the young generation.)
//
// The same bytes as formats.ts writes: `->` gives a value as the stored text wrote it, and that
// text is JSON.stringify's (the store writes nothing else), which writes a number as String()
// does and an object as JSON.stringify does again once parsed; `json_remove` leaves the other
// members as they were, in their order. An absent field is NULL, written as nothing. Times are
// written by strftime, which agrees with Date#toISOString from year 0000 to 9999
// (`WRITTEN_TIMES`); a range reaching outside that is exported the general way.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { WrittenFormat } from '../../telemetry/store.ts';

/** ms since the epoch that strftime writes as Date#toISOString does, `from` inclusive, `to` exclusive. */
export const WRITTEN_TIMES = { from: -62_167_219_200_000, to: 253_402_300_800_000 } as const;

/** The row's time `ts` as Date#toISOString writes it, `ms` being its milliseconds within its second (≥ 0). */
const ISO_TIME = `strftime('%Y-%m-%dT%H:%M:%S', (ts - ms) / 1000, 'unixepoch') || printf('.%03dZ', ms)`;

const cell = (path: string) => `coalesce(data -> '${path}', '')`;

/** A row's text, and what goes between two rows' (SQL for group_concat's separator). */
const FORMATS: Record<WrittenFormat, { text: string; separator: string }> = {
  // One CSV line: every record has one.
  csv: {
    text: `${ISO_TIME} || ','
      || ${['$.location.lat', '$.location.lng', '$.speed', '$.heading', '$.battery', '$.temperature', '$.odometer'].map(cell).join(` || ',' || `)}
      || ',' || coalesce('"' || replace(data -> '$.diagnostics', '"', '""') || '"', '') || char(13, 10)`,
    separator: `''`,
  },
  // One Point feature, for a located record only (NULL otherwise, which group_concat leaves out).
  geojson: {
    text: `CASE WHEN data -> '$.location' IS NOT NULL THEN
        '{"type":"Feature","geometry":{"type":"Point","coordinates":[' || (data -> '$.location.lng') || ',' || (data -> '$.location.lat')
        || ']},"properties":{"timestamp":"' || ${ISO_TIME} || '"'
        || (SELECT CASE WHEN rest = '{}' THEN '' ELSE ',' || substr(rest, 2, length(rest) - 2) END FROM (SELECT json_remove(data, '$.location') AS rest))
        || '}}' END`,
    separator: `',' || char(10)`,
  },
};

/**
 * A statement giving one row: how many records `page` (SQL of rows `ts, data` in time order, with
 * its own parameters) read, the last one's time, and their text in `format` (NULL when none of
 * them has any).
 */
export function prepareWrittenPage(db: DatabaseSync, page: string, format: WrittenFormat): StatementSync {
  const { text, separator } = FORMATS[format];
  const statement = db.prepare(
    `SELECT count(*), max(ts), group_concat(${text}, ${separator} ORDER BY ts)
     FROM (SELECT ts, ((ts % 1000) + 1000) % 1000 AS ms, data FROM (${page}))`,
  );
  statement.setReturnArrays(true);
  return statement;
}
