// GET /v2/reports/summary (docs/API.md "Summary reports").
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { typed } from '../http/typed.ts';
import { responses } from '../schema/common.ts';
import { summaryCsv } from './model.ts';
import { SummaryQuery, SummaryReport } from './schema.ts';
import type { SummaryService } from './summary.ts';

const tags = ['reports'];

export async function summaryRoutes(instance: FastifyInstance, opts: { service: SummaryService }) {
  const app = typed(instance);
  const { service } = opts;

  app.get('/v2/reports/summary', {
    config: { scope: 'telemetry:read' },
    schema: {
      operationId: 'getSummaryReport', tags, summary: 'Distance, driving, idle and engine time, trips and top speed, summed',
      description: 'Over each two consecutive records of a vehicle at most 3600 s apart (a step, counted on the date and with the driver of its first record): ' +
        'a moving step (the trips report\'s test on its later record) adds its distance and time to `distanceKm` and `drivingSeconds`; a step not moving ' +
        'whose first record had `ignition` true adds its time to `idleSeconds`; every step whose first record had `ignition` true adds to `engineHours`. ' +
        'Answered from rollups kept as records are committed (a late record corrects its day), so a year of a large fleet answers at once; ' +
        'a time zone whose days do not start on the hour (Asia/Kolkata) is computed from history, more slowly. ' +
        'A credential limited to groups counts its groups\' vehicles only.',
      querystring: SummaryQuery,
      response: responses({
        200: {
          description: 'The rows, as JSON or as CSV (one column per member, header row).',
          content: {
            'application/json': { schema: SummaryReport },
            'text/csv': { schema: Type.String({ description: 'format=csv' }) },
          },
        },
      }, { errors: [404] }),
    },
  }, async (request, reply) => {
    const q = request.query;
    const groupBy = q.groupBy ?? 'vehicle';
    const report = await service.summary(request.principal, {
      from: q.from, to: q.to, timezone: q.timezone ?? 'UTC', groupBy,
      vehicleIds: q.vehicleIds?.split(',').filter((id) => id !== ''), groupId: q.groupId,
    });
    if (q.format === 'csv') {
      return reply.header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="summary_${groupBy}_${q.from}_${q.to}.csv"`)
        .send(summaryCsv(report.rows, groupBy));
    }
    return reply.header('content-type', 'application/json; charset=utf-8').send(report);
  });
}
