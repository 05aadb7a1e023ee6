// /v2/report-schedules and the reports they keep, /v2/reports (docs/API.md "Report schedules").
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { typed } from '../../http/typed.ts';
import { NoContent, pageOf, responses } from '../../schema/common.ts';
import { SummaryReport } from '../schema.ts';
import {
  ReportIdParams, ReportList, ReportListQuery, ReportSchedule, ReportScheduleIdParams, ReportScheduleInput, ReportScheduleList,
  ReportScheduleListQuery, ReportView,
} from './schema.ts';
import { type ReportScheduleService, reportScheduleView, reportView } from './service.ts';

const schedules = '/v2/report-schedules';
const tags = ['reports'];
const read = { scope: 'telemetry:read' } as const;
const write = { scope: 'rules' } as const;
const MAKES = 'When a period ends in the schedule\'s time zone, and an hour more has passed for the records that arrive late, the check ' +
  '(every `FLEET_REPORT_CHECK_SECONDS`) makes its summary report once (in cluster mode exactly once), keeps it 90 days at `GET /v2/reports/{id}` ' +
  'and emits `report.ready` with it. Only periods that ended after the schedule was created are made, and after an outage only the latest.';
const READS = 'A credential limited to groups does not read kept reports (403 `outside-groups`): they are made for the whole organization.';

const CONTENT_TYPES = { json: 'application/json; charset=utf-8', csv: 'text/csv; charset=utf-8' } as const;

export async function reportScheduleRoutes(instance: FastifyInstance, opts: { service: ReportScheduleService }) {
  const app = typed(instance);
  const { service } = opts;

  app.post(schedules, {
    config: write,
    schema: {
      operationId: 'createReportSchedule', tags, summary: 'Create a report schedule',
      description: `${MAKES} A \`timezone\` Intl does not know answers 400; a \`groupId\` that does not exist, 404 \`group-not-found\`; past the organization's quota of schedules (FLEET_QUOTA_REPORT_SCHEDULES, default 100), 403 \`quota-exceeded\`.`,
      body: ReportScheduleInput, response: responses({ 201: ReportSchedule }, { body: true, location: true, errors: [404] }),
    },
  }, async (request, reply) => {
    const schedule = await service.createSchedule(request.principal, request.body);
    return reply.code(201).header('location', `${schedules}/${schedule.id}`).send(reportScheduleView(schedule));
  });

  app.get(schedules, {
    config: read,
    schema: { operationId: 'listReportSchedules', tags, summary: 'List report schedules', querystring: ReportScheduleListQuery, response: responses({ 200: ReportScheduleList }) },
  }, async (request) => {
    const page = pageOf(request.query);
    const { schedules: found, total } = await service.listSchedules(request.principal, page);
    return { schedules: found.map(reportScheduleView), total, ...page };
  });

  app.get(`${schedules}/:id`, {
    config: read,
    schema: {
      operationId: 'getReportSchedule', tags, summary: 'Read a report schedule', params: ReportScheduleIdParams, response: responses({ 200: ReportSchedule }, { errors: [404] }),
    },
  }, async (request) => reportScheduleView(await service.getSchedule(request.principal, request.params.id)));

  app.put(`${schedules}/:id`, {
    config: write,
    schema: {
      operationId: 'replaceReportSchedule', tags, summary: 'Replace a report schedule',
      description: 'Periods already reported are not made again; its creation time, from which periods are made, stays.',
      params: ReportScheduleIdParams, body: ReportScheduleInput, response: responses({ 200: ReportSchedule }, { body: true, errors: [404] }),
    },
  }, async (request) => reportScheduleView(await service.replaceSchedule(request.principal, request.params.id, request.body)));

  app.delete(`${schedules}/:id`, {
    config: write,
    schema: {
      operationId: 'deleteReportSchedule', tags, summary: 'Delete a report schedule',
      description: 'No report is made for it any more; the reports it made are kept until they are 90 days old.',
      params: ReportScheduleIdParams, response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await service.deleteSchedule(request.principal, request.params.id);
    return reply.code(204).send();
  });

  app.post(`${schedules}/:id/run`, {
    config: write,
    schema: {
      operationId: 'runReportSchedule', tags, summary: 'Make the report of the last complete period now',
      description: 'The last period whose end (local midnight in the schedule\'s time zone) has passed, made now: a new report each time, ' +
        'beside the one the schedule makes itself. It emits `report.ready` too.',
      params: ReportScheduleIdParams, response: responses({ 202: ReportView }, { errors: [404] }),
    },
  }, async (request, reply) => reply.code(202).send(reportView(await service.run(request.principal, request.params.id))));

  app.get('/v2/reports', {
    config: read,
    schema: {
      operationId: 'listReports', tags, summary: 'List kept reports',
      description: `Newest first; \`scheduleId\` keeps one schedule's (those of a deleted schedule included). ${READS}`,
      querystring: ReportListQuery, response: responses({ 200: ReportList }),
    },
  }, async (request) => {
    const page = pageOf(request.query);
    const { reports, total } = await service.listReports(request.principal, { scheduleId: request.query.scheduleId, ...page });
    return { reports: reports.map(reportView), total, ...page };
  });

  app.get('/v2/reports/:id', {
    config: read,
    schema: {
      operationId: 'getReport', tags, summary: 'Read a kept report', description: `Its content is at \`url\`. ${READS}`,
      params: ReportIdParams, response: responses({ 200: ReportView }, { errors: [404] }),
    },
  }, async (request) => reportView(await service.getReport(request.principal, request.params.id)));

  app.get('/v2/reports/:id/content', {
    config: read,
    schema: {
      operationId: 'getReportContent', tags, summary: 'A kept report\'s content, as a file',
      description: `The summary's rows as the report was made: \`{"rows": [...]}\` (format \`json\`) or CSV (format \`csv\`), sent as an attachment \`report_<id>.<format>\`. ${READS}`,
      params: ReportIdParams,
      response: responses({
        200: {
          description: 'The content.',
          headers: { 'content-disposition': Type.String({ description: '`attachment; filename="report_<id>.json"` or `.csv`' }) },
          content: {
            'application/json': { schema: SummaryReport },
            'text/csv': { schema: Type.String({ description: 'format `csv`: a header row (the key\'s name, then the six members), one line per row, CRLF.' }) },
          },
        },
      }, { errors: [404] }),
    },
  }, async (request, reply) => {
    const { id } = request.params;
    const { format, content } = await service.reportContent(request.principal, id);
    return reply.header('content-type', CONTENT_TYPES[format]).header('content-disposition', `attachment; filename="report_${id}.${format}"`).send(content);
  });
}
