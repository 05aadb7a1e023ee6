// The CSV export (history/formats.ts) written by SQLite itself from the stored JSON text, a piece
// of many lines at a time handed over as bytes: JavaScript parses no record and makes no string
// per record, which is most of what an export of millions of records allocated.
//
// The same bytes as formats.ts writes: `->` gives a value as the stored text wrote it, and that
// text is JSON.stringify's (the store writes nothing else), which writes a number as String()
// does and an object as JSON.stringify does again once parsed; an absent field is NULL, written
// as nothing. Times are written by strftime, which agrees with Date#toISOString from year 0000
// to 9999 (`CSV_TIMES`); a range reaching outside that is exported the general way.
import type { DatabaseSync, StatementSync } from 'node:sqlite';

/** ms since the epoch that strftime writes as Date#toISOString does, `from` inclusive, `to` exclusive. */
export const CSV_TIMES = { from: -62_167_219_200_000, to: 253_402_300_800_000 } as const;

const cell = (path: string) => `coalesce(data -> '${path}', '')`;

/** One CSV line of a row `(ts, ms, data)`, `ms` being ts's milliseconds within its second (≥ 0). */
const CSV_LINE = `strftime('%Y-%m-%dT%H:%M:%S', (ts - ms) / 1000, 'unixepoch') || printf('.%03dZ,', ms)
  || ${['$.location.lat', '$.location.lng', '$.speed', '$.heading', '$.battery', '$.temperature', '$.odometer'].map(cell).join(` || ',' || `)}
  || ',' || coalesce('"' || replace(data -> '$.diagnostics', '"', '""') || '"', '') || char(13, 10)`;

/**
 * A statement giving one row: how many records `page` (SQL of rows `ts, data` in time order, with
 * its own parameters) read, the last one's time, and their CSV lines as a BLOB.
 */
export function prepareCsvPage(db: DatabaseSync, page: string): StatementSync {
  const statement = db.prepare(
    `SELECT count(*), max(ts), CAST(group_concat(${CSV_LINE}, '' ORDER BY ts) AS BLOB)
     FROM (SELECT ts, ((ts % 1000) + 1000) % 1000 AS ms, data FROM (${page}))`,
  );
  statement.setReturnArrays(true);
  return statement;
}
