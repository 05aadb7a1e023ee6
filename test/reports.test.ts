// Summary reports (docs/API.md "Summary reports") through the API on both stores: a small history
// whose rows are worked out by hand (by vehicle, driver and day, in UTC and in a zone whose day
// is not UTC's, JSON and CSV); random histories sent in shuffled batches, late and duplicate
// records and assignments made afterwards included, whose rollups must give what a computation
// from history gives, in several zones; and bad queries refused.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { rng } from './helpers/random.ts';
import { haversineMeters } from '../src/history/trips.ts';
import { summaryServiceOf } from '../src/reports/summary.ts';
import type { SummaryRequest, SummaryRow } from '../src/reports/model.ts';
import type { Principal } from '../src/auth/scopes.ts';

const skipPostgres = await skipUnlessPostgres();

const T0 = Date.parse('2026-11-02T22:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

type Rec = { timestamp: string; data: Record<string, unknown> };

async function post(ctx: TestApp, vehicleId: string, records: Rec[]) {
  const res = await ctx.request('POST', `/v2/telemetry/${vehicleId}`, { body: { records } });
  assert.equal(res.statusCode, 202, res.body);
}

async function summary(ctx: TestApp, query: string): Promise<SummaryRow[]> {
  const res = await ctx.request('GET', `/v2/reports/summary?${query}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ rows: SummaryRow[] }>().rows;
}

function problem(res: { statusCode: number; body: string; json<T>(): T }, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.json<{ code: string }>().code, code, res.body);
}

/** The rows as the API would give them from history (what the rollups must agree with). */
function oracle(ctx: TestApp) {
  const service = summaryServiceOf(ctx.stores);
  const who: Principal = { organizationId: ctx.organizationId, credentialId: 'test', scopes: new Set(), platform: false };
  return (request: SummaryRequest) => service.fromHistory(who, request).then((r) => r.rows);
}

/** Equal rows, the sums within rounding (the two ways add in different orders). */
function assertSameRows(actual: SummaryRow[], expected: SummaryRow[], what: string) {
  assert.equal(actual.length, expected.length, `${what}: ${JSON.stringify(actual)} vs ${JSON.stringify(expected)}`);
  for (const [i, e] of expected.entries()) {
    const a = actual[i]!;
    assert.equal(a.vehicleId ?? a.driverId ?? a.date, e.vehicleId ?? e.driverId ?? e.date, what);
    for (const k of ['distanceKm', 'drivingSeconds', 'idleSeconds', 'engineHours'] as const) {
      assert.ok(Math.abs(a[k] - e[k]) <= 0.002, `${what} ${k}: ${a[k]} vs ${e[k]} (${JSON.stringify(a)})`);
    }
    assert.equal(a.trips, e.trips, `${what} trips: ${JSON.stringify(a)} vs ${JSON.stringify(e)}`);
    assert.equal(a.maxSpeed, e.maxSpeed, `${what} maxSpeed`);
  }
}

describe('summary rollups in cluster mode', { skip: skipPostgres }, () => {
  test('two nodes replaying the same stale vehicles at once count each step once', async () => {
    const start = Date.parse('2026-11-01T00:00:00.000Z');
    const a = await createTestApp({ backend: 'postgres', clock: manualClock(start + 3 * 86_400_000) });
    const b = await createTestApp({ join: { stores: a.stores, adminKey: a.adminKey, organizationId: a.organizationId }, clock: manualClock(start + 3 * 86_400_000) });
    try {
      const vehicles = Array.from({ length: 6 }, (_, i) => `c-${i}`);
      for (const v of vehicles) {
        await a.registerVehicle(v);
        const records: Rec[] = Array.from({ length: 300 }, (_, i) => ({
          timestamp: new Date(start + i * 300_000).toISOString(),
          data: { location: { lat: 52.5 + (i % 7) * 0.002, lng: 13.4 }, speed: i % 5 === 0 ? 0 : 30, ignition: true },
        }));
        await post(a, v, records.filter((_, i) => i % 3 !== 1));
        // The rest late, through the other node: every vehicle stale.
        await post(b, v, records.filter((_, i) => i % 3 === 1));
      }
      await Promise.all([a.stores.rollups.repair(), b.stores.rollups.repair(), a.stores.rollups.repair()]);
      const query = { from: '2026-11-01', to: '2026-11-03', timezone: 'UTC', groupBy: 'vehicle' as const };
      assertSameRows(await summary(a, new URLSearchParams(query).toString()), await oracle(a)(query), 'after concurrent replays');
    } finally {
      await b.close();
      await a.close();
    }
  });
});

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`summary reports on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('rows worked out by hand: by vehicle, driver and day, in UTC and Europe/Berlin, JSON and CSV', async () => {
      const ctx = await createTestApp({ backend, clock: manualClock(T0 + 86_400_000) });
      try {
        await ctx.registerVehicle('van-1');
        const driver = await ctx.request('POST', '/v2/drivers', { body: { name: 'Ada', identifiers: [{ kind: 'rfid', value: 'CARD1' }] } });
        assert.equal(driver.statusCode, 201, driver.body);
        const driverId = driver.json<{ id: string }>().id;
        const a = { lat: 52.5, lng: 13.4 };
        const b = { lat: 52.51, lng: 13.4 };
        const c = { lat: 52.52, lng: 13.4 };
        // 22:00Z (23:00 in Berlin) on the 2nd: idle with the engine on, then driving past 23:00Z (midnight in Berlin).
        await post(ctx, 'van-1', [
          { timestamp: at(0), data: { location: a, speed: 0, ignition: true } },
          { timestamp: at(600), data: { location: a, speed: 0, ignition: true } }, // idle 600 s
          { timestamp: at(1200), data: { location: b, speed: 40, ignition: true, driverIdentifier: 'CARD1' } }, // moving 600 s, a→b, no driver yet; the trip starts here, with Ada
          { timestamp: at(4500), data: { location: c, speed: 50, ignition: true } }, // moving 3300 s, b→c, Ada, counted at 22:20Z
          { timestamp: at(5400), data: { location: a, speed: 30, ignition: true } }, // moving 900 s, c→a, Ada, counted at 23:15Z
          { timestamp: at(5400 + 3601), data: { location: a, speed: 0, ignition: false } }, // more than an hour later: no step
        ]);
        const ab = haversineMeters(a, b) / 1000;
        const bc = haversineMeters(b, c) / 1000;
        const ca = haversineMeters(c, a) / 1000;
        const round = (v: number) => Math.round(v * 1000) / 1000;

        const byVehicle = await summary(ctx, 'from=2026-11-02&to=2026-11-04');
        assert.deepEqual(byVehicle, [{
          vehicleId: 'van-1', distanceKm: round(ab + bc + ca), drivingSeconds: 4800, idleSeconds: 600, engineHours: 1.5, trips: 1, maxSpeed: 50,
        }]);
        const byDriver = await summary(ctx, 'from=2026-11-02&to=2026-11-04&groupBy=driver');
        assert.deepEqual(byDriver, [{ driverId, distanceKm: round(bc + ca), drivingSeconds: 4200, idleSeconds: 0, engineHours: round(4200 / 3600), trips: 1, maxSpeed: 50 }]);

        // By day in UTC: everything starts on the 2nd but the last record (no step, speed 0) on the 3rd.
        assert.deepEqual(await summary(ctx, 'from=2026-11-02&to=2026-11-04&groupBy=day'), [
          { date: '2026-11-02', distanceKm: round(ab + bc + ca), drivingSeconds: 4800, idleSeconds: 600, engineHours: 1.5, trips: 1, maxSpeed: 50 },
          { date: '2026-11-03', distanceKm: 0, drivingSeconds: 0, idleSeconds: 0, engineHours: 0, trips: 0, maxSpeed: 0 },
        ]);
        // In Berlin (UTC+1) the 3rd begins at 23:00Z: the step from 23:15Z is the 3rd's.
        assert.deepEqual(await summary(ctx, 'from=2026-11-02&to=2026-11-04&groupBy=day&timezone=Europe/Berlin'), [
          { date: '2026-11-02', distanceKm: round(ab + bc), drivingSeconds: 3900, idleSeconds: 600, engineHours: 1.25, trips: 1, maxSpeed: 40 },
          { date: '2026-11-03', distanceKm: round(ca), drivingSeconds: 900, idleSeconds: 0, engineHours: 0.25, trips: 0, maxSpeed: 50 },
        ]);
        // Only the 3rd in Berlin: the hours from 23:00Z on.
        const third = await summary(ctx, 'from=2026-11-03&to=2026-11-04&timezone=Europe/Berlin');
        assert.deepEqual(third, [{ vehicleId: 'van-1', distanceKm: round(ca), drivingSeconds: 900, idleSeconds: 0, engineHours: 0.25, trips: 0, maxSpeed: 50 }]);

        const csv = await ctx.request('GET', '/v2/reports/summary?from=2026-11-02&to=2026-11-04&groupBy=day&format=csv');
        assert.equal(csv.statusCode, 200);
        assert.match(String(csv.headers['content-type']), /^text\/csv/);
        assert.match(String(csv.headers['content-disposition']), /^attachment; filename="summary_day_2026-11-02_2026-11-04\.csv"$/);
        assert.equal(csv.body.split('\r\n')[0], 'date,distanceKm,drivingSeconds,idleSeconds,engineHours,trips,maxSpeed');
        assert.equal(csv.body.split('\r\n')[2], '2026-11-03,0,0,0,0,0,0');
        assert.equal(csv.body.split('\r\n').length, 4);

        // A zone whose day starts on the half hour is computed from history, with the same answer.
        const kolkata = await summary(ctx, 'from=2026-11-02&to=2026-11-04&groupBy=day&timezone=Asia/Kolkata');
        assertSameRows(kolkata, await oracle(ctx)({ from: '2026-11-02', to: '2026-11-04', timezone: 'Asia/Kolkata', groupBy: 'day' }), 'Kolkata');
        assert.equal(kolkata.length, 1, JSON.stringify(kolkata));

        // Only some vehicles; another organization sees none of it.
        assert.deepEqual(await summary(ctx, 'from=2026-11-02&to=2026-11-04&vehicleIds=van-2'), []);
        const other = await ctx.otherOrganization();
        const theirs = await ctx.request('GET', '/v2/reports/summary?from=2026-11-02&to=2026-11-04', { key: other.key });
        assert.deepEqual(theirs.json(), { rows: [] });
      } finally {
        await ctx.close();
      }
    });

    test('rollups agree with a computation from history: random histories, shuffled batches, late and duplicate records, assignments afterwards', async () => {
      const start = Date.parse('2026-10-30T00:00:00.000Z');
      const ctx = await createTestApp({ backend, clock: manualClock(start + 6 * 86_400_000) });
      try {
        const random = rng(backend === 'sqlite' ? 32 : 33);
        const drivers: string[] = [];
        for (const [i, card] of ['AAA1', 'BBB2', 'CCC3'].entries()) {
          const res = await ctx.request('POST', '/v2/drivers', { body: { name: `Driver ${i}`, identifiers: [{ kind: 'rfid', value: card }] } });
          drivers.push(res.json<{ id: string }>().id);
        }
        const vehicles = ['v-1', 'v-2', 'v-3', 'v-4', 'v-5'];
        for (const v of vehicles) await ctx.registerVehicle(v);
        for (const v of vehicles) {
          // Four days of a vehicle that drives, idles, parks and goes silent now and then.
          const records: Rec[] = [];
          let t = start + Math.floor(random() * 3_600_000);
          let lat = 52.5;
          let lng = 13.4;
          let moving = false;
          let ignition = false;
          while (t < start + 4 * 86_400_000) {
            if (random() < 0.05) moving = !moving;
            if (random() < 0.04) ignition = !ignition;
            if (moving) {
              lat += (random() - 0.5) * 0.01;
              lng += (random() - 0.5) * 0.01;
            }
            const data: Record<string, unknown> = {};
            if (random() < 0.9) data.location = { lat, lng };
            if (random() < 0.8) data.speed = moving ? 10 + Math.floor(random() * 80) : 0;
            if (random() < 0.85) data.ignition = ignition;
            if (Object.keys(data).length === 0) data.ignition = ignition;
            if (v !== 'v-5' && random() < 0.03) data.driverIdentifier = ['AAA1', 'BBB2', 'CCC3', 'NOBODY9'][Math.floor(random() * 4)];
            records.push({ timestamp: new Date(t).toISOString(), data });
            t += random() < 0.02 ? 3_000_000 + Math.floor(random() * 4_000_000) : 30_000 + Math.floor(random() * 300_000);
          }
          // In batches, in order mostly; some batches sent late, some twice.
          const batches: Rec[][] = [];
          for (let i = 0; i < records.length; i += 40) batches.push(records.slice(i, i + 40));
          const late: Rec[][] = [];
          for (const [i, batch] of batches.entries()) {
            if (i > 0 && random() < 0.15) late.push(batch);
            else await post(ctx, v, batch);
            if (random() < 0.1) await post(ctx, v, batch);
          }
          for (const batch of late.reverse()) await post(ctx, v, batch);
          // Single records sent late, into the middle of the history.
          for (let k = 0; k < 3; k++) {
            const when = start + Math.floor(random() * 3 * 86_400_000) + 17;
            await post(ctx, v, [{ timestamp: new Date(when).toISOString(), data: { location: { lat: 52.5, lng: 13.41 }, speed: 55, ignition: true } }]);
          }
        }
        // An assignment by the API, back in time, of a driver without a card in the vehicle without a reader; then ended.
        const dee = (await ctx.request('POST', '/v2/drivers', { body: { name: 'Dee' } })).json<{ id: string }>().id;
        const assigned = await ctx.request('POST', '/v2/driver-assignments', { body: { driverId: dee, vehicleId: 'v-5', startedAt: new Date(start + 86_400_000).toISOString() } });
        assert.equal(assigned.statusCode, 201, assigned.body);
        const ended = await ctx.request('POST', `/v2/driver-assignments/${assigned.json<{ id: string }>().id}/end`, { body: { endedAt: new Date(start + 2 * 86_400_000).toISOString() } });
        assert.equal(ended.statusCode, 200, ended.body);

        const fromHistory = oracle(ctx);
        for (const timezone of ['UTC', 'America/New_York', 'Europe/Berlin']) {
          for (const groupBy of ['vehicle', 'driver', 'day'] as const) {
            for (const [from, to] of [['2026-10-29', '2026-11-05'], ['2026-10-31', '2026-11-02'], ['2026-10-01', '2026-12-01'], ['2026-11-01', '2026-12-01']]) {
              const query = { from: from!, to: to!, timezone, groupBy };
              const rows = await summary(ctx, new URLSearchParams(query).toString());
              assertSameRows(rows, await fromHistory(query), `${timezone} ${groupBy} ${from}..${to}`);
              if (groupBy === 'vehicle' && from === '2026-10-29') assert.equal(rows.length, 5);
              if (groupBy === 'driver' && from === '2026-10-29') assert.ok(rows.some((r) => r.driverId === dee), JSON.stringify(rows));
            }
          }
        }
      } finally {
        await ctx.close();
      }
    });

    test('groups: a scoped key counts its groups\' vehicles; groupId and vehicleIds limit the rows', async () => {
      const ctx = await createTestApp({ backend, clock: manualClock(T0 + 86_400_000) });
      try {
        const north = (await ctx.request('POST', '/v2/groups', { body: { name: 'north' } })).json<{ id: string }>().id;
        const south = (await ctx.request('POST', '/v2/groups', { body: { name: 'south' } })).json<{ id: string }>().id;
        await ctx.registerVehicle('n-1', { groupIds: [north] });
        await ctx.registerVehicle('s-1', { groupIds: [south] });
        for (const v of ['n-1', 's-1']) {
          await post(ctx, v, [{ timestamp: at(0), data: { location: { lat: 52.5, lng: 13.4 }, speed: 20 } }, { timestamp: at(60), data: { location: { lat: 52.505, lng: 13.4 }, speed: 20 } }]);
        }
        const ids = (rows: SummaryRow[]) => rows.map((r) => r.vehicleId);
        assert.deepEqual(ids(await summary(ctx, 'from=2026-11-02&to=2026-11-03')), ['n-1', 's-1']);
        assert.deepEqual(ids(await summary(ctx, `from=2026-11-02&to=2026-11-03&groupId=${south}`)), ['s-1']);
        assert.deepEqual(ids(await summary(ctx, 'from=2026-11-02&to=2026-11-03&vehicleIds=n-1,nobody')), ['n-1']);
        const scoped = (await ctx.request('POST', '/v2/api-keys', { body: { name: 'north only', scopes: ['telemetry:read'], groupIds: [north] } })).json<{ key: string }>().key;
        const mine = await ctx.request('GET', '/v2/reports/summary?from=2026-11-02&to=2026-11-03', { key: scoped });
        assert.deepEqual(ids(mine.json<{ rows: SummaryRow[] }>().rows), ['n-1']);
        const theirs = await ctx.request('GET', `/v2/reports/summary?from=2026-11-02&to=2026-11-03&groupId=${south}`, { key: scoped });
        assert.deepEqual(theirs.json<{ rows: SummaryRow[] }>().rows, []);
        problem(await ctx.request('GET', '/v2/reports/summary?from=2026-11-02&to=2026-11-03&vehicleIds=s-1', { key: scoped }), 404, 'vehicle-not-found');
      } finally {
        await ctx.close();
      }
    });

    test('bad queries answer 400 or 404 and nothing else', async () => {
      const ctx = await createTestApp({ backend });
      try {
        for (const [query, path] of [
          ['from=2026-11-02', '/to'],
          ['from=2026-13-01&to=2026-11-02', '/from'],
          ['from=2026-02-30&to=2026-03-02', '/from'],
          ['from=2026-11-02&to=2026-11-02', '/from'],
          ['from=2025-01-01&to=2026-01-03', '/to'],
          ['from=2026-11-02&to=2026-11-03&timezone=Mars/Olympus', '/timezone'],
          ['from=2026-11-02&to=2026-11-03&groupBy=week', '/groupBy'],
          ['from=2026-11-02&to=2026-11-03&format=xml', '/format'],
          ['from=2026-11-02&to=2026-11-03&vehicleIds=a&groupId=grp_7Qm2Lw9ZbT4kX1cNp8Rs', '/groupId'],
        ] as const) {
          const res = await ctx.request('GET', `/v2/reports/summary?${query}`);
          problem(res, 400, 'validation-failed');
          assert.ok(JSON.stringify(res.json()).includes(path), `${query}: ${res.body}`);
        }
        problem(await ctx.request('GET', '/v2/reports/summary?from=2026-11-02&to=2026-11-03&groupId=grp_7Qm2Lw9ZbT4kX1cNp8Rs'), 404, 'group-not-found');
        // 366 days is the most.
        assert.equal((await ctx.request('GET', '/v2/reports/summary?from=2025-01-01&to=2026-01-02')).statusCode, 200);
        const noScope = await ctx.keyWith(['fleet:read']);
        assert.equal((await ctx.request('GET', '/v2/reports/summary?from=2026-11-02&to=2026-11-03', { key: noScope })).statusCode, 403);
      } finally {
        await ctx.close();
      }
    });
  });
}
