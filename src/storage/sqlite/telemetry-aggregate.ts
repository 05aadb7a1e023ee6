// History aggregates in the embedded store: one statement per set of fields asked for, run by
// SQLite over the (organization, vehicle, time) key of both telemetry tables; only the buckets
// come back to JavaScript.
import type { DatabaseSync, SQLOutputValue, StatementSync } from 'node:sqlite';
import type { NumericField } from '../../telemetry/schema.ts';
import type { AggregateBucket, AggregateQuery } from '../../telemetry/store.ts';
import { bucketOf } from '../rows.ts';

export function createSqliteAggregate(db: DatabaseSync) {
  const statements = new Map<string, StatementSync>();

  // Field names come from a fixed list (NUMERIC_FIELDS), never from the request's text.
  function statementFor(fields: readonly NumericField[]): StatementSync {
    const key = fields.join(',');
    let statement = statements.get(key);
    if (statement !== undefined) return statement;
    const rowsOf = (table: string) =>
      `SELECT ts, ${fields.map((f) => `data ->> '$.${f}' AS ${f}`).join(', ')} FROM ${table}
       WHERE organization_id = ?1 AND vehicle_id = ?2 AND ts >= ?3 AND ts < ?4`;
    // `last` is found by the time of the newest record having the field, then one key lookup per
    // bucket (the record is in exactly one of the two tables), rather than carried along each row.
    const lastOf = (f: string) =>
      `coalesce((SELECT data ->> '$.${f}' FROM telemetry WHERE organization_id = ?1 AND vehicle_id = ?2 AND ts = ${f}_ts),
                (SELECT data ->> '$.${f}' FROM telemetry_recent WHERE ts = ${f}_ts AND organization_id = ?1 AND vehicle_id = ?2)) AS ${f}_last`;
    // LIMIT -1 keeps SQLite from flattening the inner query into the aggregate, which would
    // extract each field from the JSON once per aggregate using it instead of once per row.
    // The double modulo rounds down for times before 1970 too.
    statement = db.prepare(
      `SELECT bucket, n, ${fields.map((f) => `${f}_min, ${f}_max, ${f}_avg, ${lastOf(f)}`).join(', ')}
       FROM (SELECT ts - ((ts % ?5) + ?5) % ?5 AS bucket, count(*) AS n,
                    ${fields.map((f) => `min(${f}) AS ${f}_min, max(${f}) AS ${f}_max, avg(${f}) AS ${f}_avg, max(CASE WHEN ${f} IS NOT NULL THEN ts END) AS ${f}_ts`).join(', ')}
             FROM (${rowsOf('telemetry')} UNION ALL ${rowsOf('telemetry_recent')} LIMIT -1)
             GROUP BY bucket)
       ORDER BY bucket`,
    );
    statements.set(key, statement);
    return statement;
  }

  return (organizationId: string, vehicleId: string, query: AggregateQuery): AggregateBucket[] =>
    statementFor(query.fields)
      .all(organizationId, vehicleId, query.from, query.to, query.bucketMs)
      .map((row: Record<string, SQLOutputValue>) => bucketOf(row, query.fields));
}
