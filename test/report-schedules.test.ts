// Report schedules through the API on both stores (docs/API.md "Report schedules"): schedules
// created, listed, replaced and deleted; bad input refused with nothing stored; `run` making the
// report of the last complete period (day, ISO week and month in a zone that is not UTC's, across
// both changes of its clock); the content at `url` as JSON and CSV; the check making each period's
// report once its end and an hour more have passed, exactly once (two checks at once, and two
// PostgreSQL nodes), announced by `report.ready` in the feed; reports deleted at 90 days; scopes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EventPort } from '../src/events/port.ts';
import { createVehicleScope } from '../src/groups/scope.ts';
import { summaryServiceOf } from '../src/reports/summary.ts';
import { SUMMARY_COLUMNS } from '../src/reports/model.ts';
import { startReportChecks } from '../src/reports/schedules/check.ts';
import { lastComplete, latestDue, periodStart, periodToMake } from '../src/reports/schedules/model.ts';
import { createReportScheduleService } from '../src/reports/schedules/service.ts';
import type { Stores } from '../src/storage/stores.ts';
import { SCOPES, createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock, type ManualClock } from './helpers/clock.ts';
import { eventValidator, feedEvents } from './helpers/events.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { waitUntil } from './helpers/wait.ts';

const skipPostgres = await skipUnlessPostgres();
const HOUR = 3_600_000;
const DAY = 86_400_000;
const BERLIN = 'Europe/Berlin';

interface Schedule { id: string; name: string; groupBy: string; period: string; timezone: string; vehicleIds: string[] | null; groupId: string | null; format: string; createdAt: string; updatedAt: string }
interface Report { id: string; scheduleId: string; period: { from: string; to: string }; createdAt: string; format: string; url: string }
interface ReadyEvent { id: string; type: string; vehicleId?: string; occurredAt: string; data: Report }

function problem(res: { statusCode: number; body: string; json<T>(): T }, status: number, code: string, path?: string) {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json<{ code: string; errors?: Array<{ in?: string; path: string }> }>();
  assert.equal(body.code, code, res.body);
  if (path !== undefined) assert.ok(body.errors?.some((e) => e.path === path && e.in === 'body'), res.body);
}

async function ok<T>(ctx: TestApp, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, status = 200, key?: string): Promise<T> {
  const res = await ctx.request(method, url, { ...(body === undefined ? {} : { body }), ...(key === undefined ? {} : { key }) });
  assert.equal(res.statusCode, status, `${method} ${url}: ${res.body}`);
  return (res.body === '' ? undefined : res.json()) as T;
}

const schedule = (extra: Record<string, unknown> = {}) => ({ name: 'Daily distance', groupBy: 'vehicle', period: 'day', timezone: BERLIN, format: 'json', ...extra });
const readyEvents = (ctx: TestApp, atLeast: number) => feedEvents<ReadyEvent>(ctx, 'types=report.ready', atLeast);
const reports = async (ctx: TestApp, query = '') => ok<{ reports: Report[]; total: number; limit: number; offset: number }>(ctx, 'GET', `/v2/reports${query}`);

/**
 * A report check of the test's own on the app's stores and clock, beside the app's: it fires as
 * the clock passes its interval too, and `runOnce` after an `advance` waits for the run that the
 * advance started (or starts one). The app's own check runs at the same time: that one period's
 * report is made once whichever makes it is part of what is tested.
 */
function ownCheck(stores: Stores, clock: ManualClock, organizationId: string) {
  const silent: EventPort = { emit: () => undefined };
  const summaries = summaryServiceOf(stores, createVehicleScope(stores.groups).assertSees);
  const service = createReportScheduleService({ store: stores.reportSchedules, groups: stores.groups, summaries, clock, events: silent });
  const warnings: string[] = [];
  const checks = startReportChecks({
    store: stores.reportSchedules, service, clock, log: { warn: (obj, msg) => void warnings.push(`${msg}: ${String((obj as { err?: unknown }).err)}`) }, intervalMs: 60_000,
  });
  return { checks, check: () => service.check(organizationId), prune: () => service.prune(), warnings };
}

describe('periods (pure)', () => {
  test('day, ISO week and month in a zone: the last complete one, across its clock changes', () => {
    const last = (t: string, zone: string, period: 'day' | 'week' | 'month') => lastComplete(Date.parse(t), zone, period);
    // Europe/Berlin leaves summer time on Sunday 2026-10-25 (a 25-hour day), enters it on Sunday 2026-03-29 (23 hours).
    assert.deepEqual(last('2026-10-25T22:59:59.999Z', BERLIN, 'day'), { from: '2026-10-24', to: '2026-10-25' });
    assert.deepEqual(last('2026-10-25T23:00:00.000Z', BERLIN, 'day'), { from: '2026-10-25', to: '2026-10-26' });
    assert.deepEqual(last('2026-10-25T22:59:59.999Z', BERLIN, 'week'), { from: '2026-10-12', to: '2026-10-19' });
    assert.deepEqual(last('2026-10-25T23:00:00.000Z', BERLIN, 'week'), { from: '2026-10-19', to: '2026-10-26' });
    assert.deepEqual(last('2026-10-31T22:59:59.999Z', BERLIN, 'month'), { from: '2026-09-01', to: '2026-10-01' });
    assert.deepEqual(last('2026-10-31T23:00:00.000Z', BERLIN, 'month'), { from: '2026-10-01', to: '2026-11-01' });
    assert.deepEqual(last('2026-03-29T21:59:59.999Z', BERLIN, 'day'), { from: '2026-03-28', to: '2026-03-29' });
    assert.deepEqual(last('2026-03-29T22:00:00.000Z', BERLIN, 'day'), { from: '2026-03-29', to: '2026-03-30' });
    // New York leaves summer time on Sunday 2026-11-01: that day runs from 04:00 to 05:00 UTC the next.
    assert.deepEqual(last('2026-11-02T04:59:59.999Z', 'America/New_York', 'day'), { from: '2026-10-31', to: '2026-11-01' });
    assert.deepEqual(last('2026-11-02T05:00:00.000Z', 'America/New_York', 'day'), { from: '2026-11-01', to: '2026-11-02' });
    // A week starts on Monday, across a year's end; a month across a year's end.
    assert.equal(periodStart('2027-01-03', 'week'), '2026-12-28');
    assert.equal(periodStart('2026-12-28', 'week'), '2026-12-28');
    assert.deepEqual(last('2027-01-01T12:00:00Z', 'UTC', 'month'), { from: '2026-12-01', to: '2027-01-01' });
    assert.deepEqual(last('2027-01-04T00:00:00Z', 'UTC', 'week'), { from: '2026-12-28', to: '2027-01-04' });
    assert.deepEqual(last('2026-03-01T00:00:00Z', 'UTC', 'month'), { from: '2026-02-01', to: '2026-03-01' });
  });

  test('a period is due an hour after its end; only periods that ended after the schedule was created are made', () => {
    const end = Date.parse('2026-11-02T23:00:00.000Z'); // Tuesday 2026-11-03 00:00 in Berlin
    assert.deepEqual(latestDue(end + HOUR - 1, BERLIN, 'day'), { from: '2026-11-01', to: '2026-11-02' });
    assert.deepEqual(latestDue(end + HOUR, BERLIN, 'day'), { from: '2026-11-02', to: '2026-11-03' });
    const created = { timezone: BERLIN, period: 'day' as const, createdAt: Date.parse('2026-11-02T10:00:00.000Z') };
    assert.equal(periodToMake(created, end + HOUR - 1), undefined, 'the day before the creation is not made');
    assert.deepEqual(periodToMake(created, end + HOUR), { from: '2026-11-02', to: '2026-11-03' });
    // After days away, only the latest due period.
    assert.deepEqual(periodToMake(created, end + 5 * DAY + 2 * HOUR), { from: '2026-11-07', to: '2026-11-08' });
    assert.deepEqual(periodToMake({ ...created, period: 'month' }, Date.parse('2026-12-01T00:00:00.000Z')), { from: '2026-11-01', to: '2026-12-01' });
    assert.equal(periodToMake({ ...created, period: 'month' }, Date.parse('2026-11-30T23:59:59.000Z')), undefined);
  });
});

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`report schedules on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('created, listed, read, replaced, deleted; bad input stores nothing; scopes; another organization sees none', async () => {
      const clock = manualClock(Date.parse('2026-11-02T10:00:00.000Z'));
      const ctx = await createTestApp({ backend, clock, env: { FLEET_QUOTA_REPORT_SCHEDULES: '5' } });
      try {
        const created = await ctx.request('POST', '/v2/report-schedules', { body: schedule({ vehicleIds: ['van-1', 'van-2'] }) });
        assert.equal(created.statusCode, 201, created.body);
        const first = created.json<Schedule>();
        assert.match(first.id, /^rps_[A-Za-z0-9]{20}$/);
        assert.match(created.headers.location as string, new RegExp(`/v2/report-schedules/${first.id}$`));
        assert.deepEqual({ ...first, id: undefined }, {
          id: undefined, name: 'Daily distance', groupBy: 'vehicle', period: 'day', timezone: BERLIN, vehicleIds: ['van-1', 'van-2'], groupId: null, format: 'json',
          createdAt: '2026-11-02T10:00:00.000Z', updatedAt: '2026-11-02T10:00:00.000Z',
        });
        const group = await ok<{ id: string }>(ctx, 'POST', '/v2/groups', { name: 'North' }, 201);
        clock.advance(1000); // listed in the order they were created
        const second = await ok<Schedule>(ctx, 'POST', '/v2/report-schedules', schedule({ name: 'Monthly by driver', groupBy: 'driver', period: 'month', groupId: group.id, format: 'csv' }), 201);
        assert.equal(second.groupId, group.id);
        const list = await ok<{ schedules: Schedule[]; total: number; limit: number; offset: number }>(ctx, 'GET', '/v2/report-schedules');
        assert.deepEqual([list.schedules.map((s) => s.id), list.total, list.limit, list.offset], [[first.id, second.id], 2, 50, 0]);
        assert.deepEqual((await ok<{ schedules: Schedule[] }>(ctx, 'GET', '/v2/report-schedules?limit=1&offset=1')).schedules.map((s) => s.id), [second.id]);
        assert.deepEqual(await ok<Schedule>(ctx, 'GET', `/v2/report-schedules/${first.id}`), first);

        const replaced = await ok<Schedule>(ctx, 'PUT', `/v2/report-schedules/${first.id}`, schedule({ name: 'Weekly', period: 'week', timezone: 'America/New_York', format: 'csv' }));
        assert.deepEqual([replaced.name, replaced.period, replaced.timezone, replaced.vehicleIds, replaced.format, replaced.createdAt], ['Weekly', 'week', 'America/New_York', null, 'csv', first.createdAt]);
        assert.ok(replaced.updatedAt > first.updatedAt, 'a replacement is later than what it replaces');
        assert.deepEqual(await ok<Schedule>(ctx, 'GET', `/v2/report-schedules/${first.id}`), replaced);
        await ok(ctx, 'DELETE', `/v2/report-schedules/${first.id}`, undefined, 204);
        problem(await ctx.request('GET', `/v2/report-schedules/${first.id}`), 404, 'report-schedule-not-found');
        problem(await ctx.request('PUT', `/v2/report-schedules/${first.id}`, { body: schedule() }), 404, 'report-schedule-not-found');
        problem(await ctx.request('DELETE', `/v2/report-schedules/${first.id}`), 404, 'report-schedule-not-found');
        problem(await ctx.request('POST', `/v2/report-schedules/${first.id}/run`), 404, 'report-schedule-not-found');
        problem(await ctx.request('GET', '/v2/reports/rpt_00000000000000000000'), 404, 'report-not-found');
        problem(await ctx.request('GET', '/v2/reports/rpt_00000000000000000000/content'), 404, 'report-not-found');

        // Bad input: a problem response, and nothing stored.
        const post = (body: unknown) => ctx.request('POST', '/v2/report-schedules', { body });
        problem(await post(schedule({ timezone: 'Mars/Olympus_Mons' })), 400, 'validation-failed', '/timezone');
        problem(await post(schedule({ timezone: '' })), 400, 'validation-failed', '/timezone');
        problem(await post(schedule({ period: 'year' })), 400, 'validation-failed', '/period');
        problem(await post(schedule({ groupBy: 'hour' })), 400, 'validation-failed', '/groupBy');
        problem(await post(schedule({ format: 'pdf' })), 400, 'validation-failed', '/format');
        problem(await post(schedule({ vehicleIds: ['van-1'], groupId: group.id })), 400, 'validation-failed', '/groupId');
        problem(await post(schedule({ groupId: 'grp_00000000000000000000' })), 404, 'group-not-found');
        problem(await post(schedule({ name: '' })), 400, 'validation-failed', '/name');
        problem(await post(schedule({ name: 'x'.repeat(201) })), 400, 'validation-failed', '/name');
        problem(await post(schedule({ color: 'blue' })), 400, 'validation-failed', '/color');
        const noFormat: Record<string, unknown> = schedule();
        delete noFormat.format;
        problem(await post(noFormat), 400, 'validation-failed');
        problem(await ctx.request('PUT', `/v2/report-schedules/${second.id}`, { body: schedule({ timezone: 'Nowhere/Town' }) }), 400, 'validation-failed', '/timezone');
        assert.equal((await ok<Schedule>(ctx, 'GET', `/v2/report-schedules/${second.id}`)).timezone, BERLIN, 'a refused replacement changes nothing');
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/report-schedules')).total, 1);
        problem(await ctx.request('GET', '/v2/report-schedules/mnt_00000000000000000000'), 400, 'validation-failed');
        problem(await ctx.request('GET', '/v2/reports?scheduleId=daily'), 400, 'validation-failed');

        // Scopes: `rules` to create, change, delete and run; `telemetry:read` to read.
        const noRules = await ctx.keyWith(SCOPES.filter((s) => s !== 'rules'));
        problem(await ctx.request('POST', '/v2/report-schedules', { key: noRules, body: schedule() }), 403, 'insufficient-scope');
        problem(await ctx.request('PUT', `/v2/report-schedules/${second.id}`, { key: noRules, body: schedule() }), 403, 'insufficient-scope');
        problem(await ctx.request('DELETE', `/v2/report-schedules/${second.id}`, { key: noRules }), 403, 'insufficient-scope');
        problem(await ctx.request('POST', `/v2/report-schedules/${second.id}/run`, { key: noRules }), 403, 'insufficient-scope');
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/report-schedules', undefined, 200, noRules)).total, 1);
        const rulesOnly = await ctx.keyWith(['rules']);
        problem(await ctx.request('GET', '/v2/report-schedules', { key: rulesOnly }), 403, 'insufficient-scope');
        problem(await ctx.request('GET', '/v2/reports', { key: rulesOnly }), 403, 'insufficient-scope');
        const ran = await ok<Report>(ctx, 'POST', `/v2/report-schedules/${second.id}/run`, undefined, 202, rulesOnly);
        // A credential limited to groups reads schedules, not the organization's reports.
        const scoped = (await ok<{ key: string }>(ctx, 'POST', '/v2/api-keys', { name: 'North board', scopes: ['telemetry:read'], groupIds: [group.id] }, 201)).key;
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/report-schedules', undefined, 200, scoped)).total, 1);
        problem(await ctx.request('GET', '/v2/reports', { key: scoped }), 403, 'outside-groups');
        problem(await ctx.request('GET', `/v2/reports/${ran.id}`, { key: scoped }), 403, 'outside-groups');
        problem(await ctx.request('GET', `/v2/reports/${ran.id}/content`, { key: scoped }), 403, 'outside-groups');

        // Another organization sees none of it.
        const { key } = await ctx.otherOrganization();
        problem(await ctx.request('GET', `/v2/report-schedules/${second.id}`, { key }), 404, 'report-schedule-not-found');
        problem(await ctx.request('POST', `/v2/report-schedules/${second.id}/run`, { key }), 404, 'report-schedule-not-found');
        problem(await ctx.request('GET', `/v2/reports/${ran.id}`, { key }), 404, 'report-not-found');
        problem(await ctx.request('GET', `/v2/reports/${ran.id}/content`, { key }), 404, 'report-not-found');
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/reports', undefined, 200, key)).total, 0);
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/report-schedules', undefined, 200, key)).total, 0);

        // At most FLEET_QUOTA_REPORT_SCHEDULES (here 5) schedules per organization.
        for (let i = 1; i < 5; i++) await ok(ctx, 'POST', '/v2/report-schedules', schedule({ name: `Schedule ${i}` }), 201);
        problem(await post(schedule({ name: 'One too many' })), 403, 'quota-exceeded');
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/report-schedules')).total, 5);
        assert.equal((await ok<{ total: number }>(ctx, 'GET', '/v2/report-schedules', undefined, 200, key)).total, 0);
        await ok(ctx, 'POST', '/v2/report-schedules', schedule(), 201, key);
      } finally {
        await ctx.close();
      }
    });

    test('run: the last complete day, ISO week and month in Berlin, across both clock changes; content as JSON and CSV', async () => {
      // Sunday 2026-03-29 23:59:59 in Berlin, the day summer time began (23 hours long).
      const clock = manualClock(Date.parse('2026-03-29T21:59:59.000Z'));
      const ctx = await createTestApp({ backend, clock });
      try {
        await ctx.registerVehicle('van-1');
        const ids: Record<string, string> = {};
        for (const period of ['day', 'week', 'month'] as const) {
          ids[period] = (await ok<Schedule>(ctx, 'POST', '/v2/report-schedules', schedule({ name: period, period }), 201)).id;
        }
        let runs = 0;
        const run = async (period: string) => {
          runs++;
          return (await ok<Report>(ctx, 'POST', `/v2/report-schedules/${ids[period]}/run`, undefined, 202)).period;
        };
        const expect = async (periods: Record<string, [string, string]>) => {
          for (const [period, [from, to]] of Object.entries(periods)) assert.deepEqual(await run(period), { from, to }, `${period} at ${new Date(clock.now()).toISOString()}`);
        };
        await expect({ day: ['2026-03-28', '2026-03-29'], week: ['2026-03-16', '2026-03-23'], month: ['2026-02-01', '2026-03-01'] });
        clock.advance(1000); // Monday 2026-03-30 00:00 CEST
        await expect({ day: ['2026-03-29', '2026-03-30'], week: ['2026-03-23', '2026-03-30'], month: ['2026-02-01', '2026-03-01'] });
        clock.advance(Date.parse('2026-03-31T21:59:59.000Z') - clock.now()); // 2026-03-31 23:59:59 CEST
        await expect({ day: ['2026-03-30', '2026-03-31'], month: ['2026-02-01', '2026-03-01'] });
        clock.advance(1000);
        await expect({ day: ['2026-03-31', '2026-04-01'], week: ['2026-03-23', '2026-03-30'], month: ['2026-03-01', '2026-04-01'] });
        // Sunday 2026-10-25, the day summer time ended (25 hours long), at its last second.
        clock.advance(Date.parse('2026-10-25T22:59:59.000Z') - clock.now());
        await expect({ day: ['2026-10-24', '2026-10-25'], week: ['2026-10-12', '2026-10-19'], month: ['2026-09-01', '2026-10-01'] });
        clock.advance(1000); // Monday 2026-10-26 00:00 CET
        await expect({ day: ['2026-10-25', '2026-10-26'], week: ['2026-10-19', '2026-10-26'], month: ['2026-09-01', '2026-10-01'] });
        clock.advance(Date.parse('2026-10-31T23:00:00.000Z') - clock.now()); // Sunday 2026-11-01 00:00 CET
        await expect({ day: ['2026-10-31', '2026-11-01'], week: ['2026-10-19', '2026-10-26'], month: ['2026-10-01', '2026-11-01'] });

        // A day of van-1's telemetry (Monday 2026-11-02 in Berlin): the report of it, as JSON and as CSV, from a
        // schedule of its own (the check, run by the clock as it passed, made the others' reports too).
        clock.advance(Date.parse('2026-11-03T06:00:00.000Z') - clock.now());
        const records = Array.from({ length: 11 }, (_, i) => ({
          timestamp: new Date(Date.parse('2026-11-02T09:00:00.000Z') + i * 60_000).toISOString(),
          data: { speed: 50, ignition: true, location: { lat: 52.5 + i * 0.01, lng: 13.4 } },
        }));
        await ok(ctx, 'POST', '/v2/telemetry/van-1', { records }, 202);
        const daily = (await ok<Schedule>(ctx, 'POST', '/v2/report-schedules', schedule(), 201)).id;
        const json = await ok<Report>(ctx, 'POST', `/v2/report-schedules/${daily}/run`, undefined, 202);
        assert.match(json.id, /^rpt_[A-Za-z0-9]{20}$/);
        assert.deepEqual(json, {
          id: json.id, scheduleId: daily, period: { from: '2026-11-02', to: '2026-11-03' }, createdAt: '2026-11-03T06:00:00.000Z', format: 'json', url: `/v2/reports/${json.id}/content`,
        });
        assert.deepEqual(await ok<Report>(ctx, 'GET', `/v2/reports/${json.id}`), json);
        const content = await ctx.request('GET', json.url);
        assert.equal(content.statusCode, 200, content.body);
        assert.match(String(content.headers['content-type']), /^application\/json\b/);
        assert.equal(content.headers['content-disposition'], `attachment; filename="report_${json.id}.json"`);
        const rows = content.json<{ rows: Array<Record<string, unknown>> }>().rows;
        assert.deepEqual(Object.keys(content.json()), ['rows']);
        assert.deepEqual(rows.map((r) => r.vehicleId), ['van-1']);
        assert.ok((rows[0]!.distanceKm as number) > 0 && (rows[0]!.drivingSeconds as number) > 0, JSON.stringify(rows));
        // The summary report of the same dates says the same.
        const summary = await ok<{ rows: unknown[] }>(ctx, 'GET', '/v2/reports/summary?from=2026-11-02&to=2026-11-03&timezone=Europe/Berlin');
        assert.deepEqual(rows, summary.rows);

        clock.advance(1000);
        await ok(ctx, 'PUT', `/v2/report-schedules/${daily}`, schedule({ format: 'csv', vehicleIds: ['van-1', 'van-9'] }));
        const csv = await ok<Report>(ctx, 'POST', `/v2/report-schedules/${daily}/run`, undefined, 202);
        assert.equal(csv.format, 'csv');
        assert.deepEqual(csv.period, json.period, 'run again: a new report of the same period');
        assert.notEqual(csv.id, json.id);
        const file = await ctx.request('GET', csv.url);
        assert.equal(file.statusCode, 200, file.body);
        assert.equal(file.headers['content-type'], 'text/csv; charset=utf-8');
        assert.equal(file.headers['content-disposition'], `attachment; filename="report_${csv.id}.csv"`);
        const lines = file.body.split('\r\n');
        assert.equal(lines[0], ['vehicleId', ...SUMMARY_COLUMNS].join(','));
        assert.equal(lines.length, 3, file.body);
        assert.match(lines[1]!, /^van-1,/);
        assert.equal(lines[2], '');

        // Listed newest first, by schedule; each announced by report.ready, an instance of its schema.
        const ofDaily = await reports(ctx, `?scheduleId=${daily}`);
        assert.deepEqual([ofDaily.reports, ofDaily.total, ofDaily.limit, ofDaily.offset], [[csv, json], 2, 50, 0]);
        assert.deepEqual((await reports(ctx, `?scheduleId=${daily}&limit=1&offset=1`)).reports, [json]);
        assert.deepEqual((await reports(ctx, '?limit=1')).reports, [csv]);
        assert.equal((await reports(ctx, '?scheduleId=rps_00000000000000000000')).total, 0);
        runs += 2;
        // (The check, as the clock passed, made the other schedules' reports of the periods it passed, and deleted those 90 days old.)
        // The other schedules' events may be in the feed before these two (PostgreSQL's feed holds an
        // event back while an older transaction is open): read until both are there.
        let events: ReadyEvent[] = [];
        let mine: ReadyEvent[] = [];
        await waitUntil(async () => {
          events = await readyEvents(ctx, runs);
          mine = events.filter((e) => e.data.scheduleId === daily);
          return mine.length >= 2;
        }, 'the daily schedule\'s two report.ready events in the feed', 15_000);
        assert.deepEqual(mine.map((e) => [e.type, e.vehicleId, e.occurredAt, e.data]), [
          ['report.ready', undefined, json.createdAt, json], ['report.ready', undefined, csv.createdAt, csv],
        ]);
        const validate = await eventValidator(ctx);
        for (const event of events) assert.ok(validate(event), `${JSON.stringify(event)}\n${JSON.stringify(validate.errors)}`);
        assert.equal(validate({ ...mine[0], vehicleId: 'van-1' }), false, 'report.ready names no vehicle');

        // A group deleted since: its reports have no rows. The reports of a deleted schedule are kept.
        const group = await ok<{ id: string }>(ctx, 'POST', '/v2/groups', { name: 'North' }, 201);
        await ok(ctx, 'POST', `/v2/groups/${group.id}/vehicles`, { vehicleIds: ['van-1'] }, 204);
        const byGroup = await ok<Schedule>(ctx, 'POST', '/v2/report-schedules', schedule({ groupId: group.id, groupBy: 'day' }), 201);
        const before = await ok<Report>(ctx, 'POST', `/v2/report-schedules/${byGroup.id}/run`, undefined, 202);
        assert.deepEqual((await ctx.request('GET', before.url)).json<{ rows: Array<{ date: string }> }>().rows.map((r) => r.date), ['2026-11-02']);
        await ok(ctx, 'DELETE', `/v2/groups/${group.id}`, undefined, 204);
        const after = await ok<Report>(ctx, 'POST', `/v2/report-schedules/${byGroup.id}/run`, undefined, 202);
        assert.equal((await ctx.request('GET', after.url)).body, '{"rows":[]}');
        await ok(ctx, 'DELETE', `/v2/report-schedules/${byGroup.id}`, undefined, 204);
        assert.deepEqual(await ok<Report>(ctx, 'GET', `/v2/reports/${before.id}`), before);
        assert.equal((await reports(ctx, `?scheduleId=${byGroup.id}`)).total, 2);
      } finally {
        await ctx.close();
      }
    });

    test('the check makes each period\'s report once, an hour after the period ended; report.ready in the feed; kept 90 days', async () => {
      // Monday 2026-11-02 11:00 in Berlin.
      const clock = manualClock(Date.parse('2026-11-02T10:00:00.000Z'));
      const ctx = await createTestApp({ backend, clock });
      const own = ownCheck(ctx.stores, clock, ctx.organizationId);
      try {
        await ctx.registerVehicle('van-1');
        const daily = await ok<Schedule>(ctx, 'POST', '/v2/report-schedules', schedule({ format: 'csv' }), 201);
        const monthly = await ok<Schedule>(ctx, 'POST', '/v2/report-schedules', schedule({ name: 'Monthly', period: 'month' }), 201);
        await Promise.all([own.checks.runOnce(), own.check()]);
        assert.equal((await reports(ctx)).total, 0, 'no report of a period that ended before the schedule was created');

        // Tuesday 00:30 in Berlin: Monday has ended, its hour for late records has not.
        clock.advance(Date.parse('2026-11-02T23:30:00.000Z') - clock.now());
        await own.checks.runOnce();
        assert.equal((await reports(ctx)).total, 0, 'not before the hour for late records has passed');
        // Tuesday 01:00:30: Monday's report, once, whichever check makes it (the app's, the test's, two at once).
        clock.advance(Date.parse('2026-11-03T00:00:30.000Z') - clock.now());
        await own.checks.runOnce();
        await Promise.all([own.check(), own.check()]);
        const events = await readyEvents(ctx, 1);
        const made = await reports(ctx);
        assert.equal(made.total, 1, JSON.stringify(made));
        const report = made.reports[0]!;
        assert.deepEqual([report.scheduleId, report.period, report.format], [daily.id, { from: '2026-11-02', to: '2026-11-03' }, 'csv']);
        assert.deepEqual(events.map((e) => [e.type, e.vehicleId, e.data]), [['report.ready', undefined, report]]);
        const file = await ctx.request('GET', report.url);
        assert.equal(file.statusCode, 200, file.body);
        assert.equal(file.body, `${['vehicleId', ...SUMMARY_COLUMNS].join(',')}\r\n`, 'no telemetry: the header row alone');

        // Later the same day, and a check after every minute of an hour: nothing more.
        clock.advance(12 * HOUR);
        await own.checks.runOnce();
        for (let i = 0; i < 60; i++) {
          clock.advance(60_000);
          await own.checks.runOnce();
        }
        assert.equal((await reports(ctx)).total, 1);
        assert.equal((await readyEvents(ctx, 1)).length, 1);

        // Days away (the checks stopped): only the latest due day is made, and the month once it is due.
        await own.checks.stop();
        clock.advance(Date.parse('2026-12-01T00:30:00.000Z') - clock.now()); // Tuesday 2026-12-01 01:30 in Berlin
        await own.check();
        const later = await reports(ctx);
        assert.deepEqual(later.reports.map((r) => [r.scheduleId, r.period.from, r.period.to]).sort(), [
          [daily.id, '2026-11-02', '2026-11-03'], [daily.id, '2026-11-30', '2026-12-01'], [monthly.id, '2026-11-01', '2026-12-01'],
        ].sort());
        assert.equal((await readyEvents(ctx, 3)).length, 3);

        // 90 days on, the check deletes the reports made before then (and makes the latest day's).
        clock.advance(Date.parse('2026-11-03T00:01:00.000Z') + 90 * DAY - clock.now());
        await own.check();
        await own.prune();
        problem(await ctx.request('GET', `/v2/reports/${report.id}`), 404, 'report-not-found');
        problem(await ctx.request('GET', report.url), 404, 'report-not-found');
        const kept = await reports(ctx);
        assert.ok(!kept.reports.some((r) => r.id === report.id));
        assert.deepEqual(kept.reports.filter((r) => r.scheduleId === daily.id).map((r) => r.period.from).sort(), ['2026-11-30', '2027-01-31']);
        assert.deepEqual(own.warnings, []);
      } finally {
        await own.checks.stop();
        await ctx.close();
      }
    });
  });
}

describe('report schedules in cluster mode', { skip: skipPostgres }, () => {
  test('two nodes on one PostgreSQL database: each period\'s report made and announced once', async () => {
    const start = Date.parse('2026-11-02T10:00:00.000Z');
    const clockA = manualClock(start);
    const clockB = manualClock(start);
    const a = await createTestApp({ backend: 'postgres', clock: clockA });
    const b = await createTestApp({ join: { stores: a.stores, adminKey: a.adminKey, organizationId: a.organizationId }, clock: clockB });
    const ownA = ownCheck(a.stores, clockA, a.organizationId);
    const ownB = ownCheck(b.stores, clockB, b.organizationId);
    try {
      const daily = await ok<Schedule>(a, 'POST', '/v2/report-schedules', schedule(), 201);
      await ok(b, 'POST', '/v2/report-schedules', schedule({ name: 'Weekly', period: 'week' }), 201);
      // Both nodes' clocks pass Monday's end and its hour; every check of both runs at once.
      for (const clock of [clockA, clockB]) clock.advance(Date.parse('2026-11-03T00:00:30.000Z') - start);
      await Promise.all([ownA.checks.runOnce(), ownB.checks.runOnce(), ownA.check(), ownB.check(), ownA.check(), ownB.check()]);
      const events = await readyEvents(a, 1);
      const made = await reports(b);
      assert.deepEqual(made.reports.map((r) => [r.scheduleId, r.period]), [[daily.id, { from: '2026-11-02', to: '2026-11-03' }]]);
      assert.deepEqual(events.map((e) => e.data), made.reports);
      // Later checks on either node make nothing more.
      for (const clock of [clockA, clockB]) clock.advance(HOUR);
      await Promise.all([ownA.checks.runOnce(), ownB.checks.runOnce()]);
      assert.equal((await reports(a)).total, 1);
      assert.equal((await readyEvents(b, 1)).length, 1);
      assert.deepEqual([...ownA.warnings, ...ownB.warnings], []);
    } finally {
      await Promise.all([ownA.checks.stop(), ownB.checks.stop()]);
      await b.close();
      await a.close();
    }
  });
});
