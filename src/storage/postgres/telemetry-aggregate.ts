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
  // row once for all the fields. `last` is the greatest [time, value] pair of the bucket (times
  // are exact in float8): a key lookup per bucket and field instead took three times as long,
  // each one a subplan over the partitions. The double modulo rounds down before 1970 too.
  return `SELECT t.ts - ((t.ts % $5) + $5) % $5 AS bucket, count(*) AS n,
                 ${fields.map((f) => `min(x.${f}) AS ${f}_min, max(x.${f}) AS ${f}_max, avg(x.${f}) AS ${f}_avg,
                 (max(ARRAY[t.ts::float8, x.${f}]) FILTER (WHERE x.${f} IS NOT NULL))[2] AS ${f}_last`).join(', ')}
          FROM telemetry t CROSS JOIN LATERAL json_to_record(t.data) AS x(${fields.map((f) => `${f} float8`).join(', ')})
          WHERE t.organization_id = $1 AND t.vehicle_id = $2 AND t.ts >= $3 AND t.ts < $4
          GROUP BY 1 ORDER BY 1`;
}

export async function aggregatePostgres(db: Queryable, organizationId: string, vehicleId: string, query: AggregateQuery): Promise<AggregateBucket[]> {
  const { rows } = await db.query({
    name: `telemetry.aggregate:${query.fields.join(',')}`,
    text: sqlFor(query.fields),
    values: [organizationId, vehicleId, query.from, query.to, query.bucketMs],
  });
  return rows.map((row) => bucketOf(row, query.fields));
}
