// History aggregates in cluster mode: one statement per set of fields asked for, run by PostgreSQL
// over the (organization, vehicle, time) key of the daily partitions the range touches; only the
// buckets come back.
import type { NumericField } from '../../telemetry/schema.ts';
import type { AggregateBucket, AggregateQuery } from '../../telemetry/store.ts';
import { bucketOf } from '../rows.ts';
import type { Queryable } from './database.ts';

// Field names come from a fixed list (NUMERIC_FIELDS), never from the request's text.
function sqlFor(fields: readonly NumericField[]): string {
  // `data` is json (kept as sent), which each ->> would parse again: json_to_record parses each
  // row once for all the fields. `last` is found by the time of the newest record having the
  // field, then one key lookup per bucket, rather than carried along each row. The double modulo
  // rounds down for times before 1970 too.
  const lastOf = (f: string) =>
    `(SELECT (l.data ->> '${f}')::float8 FROM telemetry l
      WHERE l.organization_id = $1 AND l.vehicle_id = $2 AND l.ts = b.${f}_ts AND l.ts >= $3 AND l.ts < $4) AS ${f}_last`;
  return `WITH b AS (
            SELECT t.ts - ((t.ts % $5) + $5) % $5 AS bucket, count(*) AS n,
                   ${fields.map((f) => `min(x.${f}) AS ${f}_min, max(x.${f}) AS ${f}_max, avg(x.${f}) AS ${f}_avg, max(t.ts) FILTER (WHERE x.${f} IS NOT NULL) AS ${f}_ts`).join(', ')}
            FROM telemetry t CROSS JOIN LATERAL json_to_record(t.data) AS x(${fields.map((f) => `${f} float8`).join(', ')})
            WHERE t.organization_id = $1 AND t.vehicle_id = $2 AND t.ts >= $3 AND t.ts < $4
            GROUP BY 1
          )
          SELECT bucket, n, ${fields.map((f) => `${f}_min, ${f}_max, ${f}_avg, ${lastOf(f)}`).join(', ')}
          FROM b ORDER BY bucket`;
}

export async function aggregatePostgres(db: Queryable, organizationId: string, vehicleId: string, query: AggregateQuery): Promise<AggregateBucket[]> {
  const key = query.fields.join(',');
  const { rows } = await db.query({
    name: `telemetry.aggregate:${key}`,
    text: sqlFor(query.fields),
    values: [organizationId, vehicleId, query.from, query.to, query.bucketMs],
  });
  return rows.map((row) => bucketOf(row, query.fields));
}
