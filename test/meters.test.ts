// Meters and who drives from the records, through the API on both stores (docs/API.md "Meters",
// "Drivers"): the GPS odometer and the reported one with its offset, engine hours from `ignition`
// (gaps over an hour left out), settings by hand that later records add to, late records that
// change nothing, bad settings refused; a driver's identifier in the records starting that
// driver's assignment, `driver.unknown` for an identifier nobody has (again only when it changes),
// and the driver of each trip, in its events and in the trips report; on PostgreSQL, a record whose
// driver another transaction holds neither waits nor fails.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { TEST_DATABASE_URL, skipUnlessPostgres } from './helpers/postgres.ts';
import pg from 'pg';
import { feedEvents } from './helpers/events.ts';
import { haversineMeters } from '../src/history/trips.ts';

const skipPostgres = await skipUnlessPostgres();

const T0 = Date.parse('2026-11-22T06:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

interface Meters { vehicleId: string; odometerKm: number; engineHours: number; updatedAt: string | null }

async function post(ctx: TestApp, vehicleId: string, records: Array<{ timestamp: string; data: Record<string, unknown> }>) {
  const res = await ctx.request('POST', `/v2/telemetry/${vehicleId}`, { body: { records } });
  assert.equal(res.statusCode, 202, res.body);
}

async function meters(ctx: TestApp, vehicleId: string): Promise<Meters> {
  const res = await ctx.request('GET', `/v2/fleet/vehicles/${vehicleId}/meters`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<Meters>();
}

function problem(res: { statusCode: number; body: string; json<T>(): T }, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  assert.equal(res.json<{ code: string }>().code, code, res.body);
}

/** The feed's events of these types, once at least `atLeast` are there (see feedEvents). */
const events = (ctx: TestApp, types: string, atLeast: number) =>
  feedEvents<{ type: string; vehicleId: string; occurredAt: string; data: Record<string, unknown> }>(ctx, `types=${types}`, atLeast);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`meters and drivers from records on ${backend}`, { skip: backend === 'postgres' && skipPostgres }, () => {
    test('odometer from GPS or as reported plus an offset, engine hours from ignition; settings by hand; late records change nothing', async () => {
      const ctx = await createTestApp({ backend, clock: manualClock(T0 + 7200_000) });
      try {
        await ctx.registerVehicle('van-1');
        await ctx.registerVehicle('van-2');
        assert.deepEqual(await meters(ctx, 'van-1'), { vehicleId: 'van-1', odometerKm: 0, engineHours: 0, updatedAt: null }, 'before any record');

        // van-1 reports no odometer: the steps between its located records, whatever the gap.
        const points = [{ lat: 52.5, lng: 13.4 }, { lat: 52.51, lng: 13.4 }, { lat: 52.51, lng: 13.42 }, { lat: 52.53, lng: 13.42 }];
        await post(ctx, 'van-1', [
          { timestamp: at(0), data: { location: points[0], ignition: true } },
          { timestamp: at(600), data: { location: points[1], ignition: true } },
          { timestamp: at(900), data: { speed: 0, ignition: false } }, // no location: no step; 300 s of engine from the record before
          { timestamp: at(1200), data: { location: points[2], ignition: true } }, // ignition was off before: no engine time
          { timestamp: at(1200 + 3601), data: { location: points[3], ignition: true } }, // more than an hour after: no engine time
        ]);
        let gps = 0;
        for (let i = 1; i < points.length; i++) gps += haversineMeters(points[i - 1]!, points[i]!) / 1000;
        let m = await meters(ctx, 'van-1');
        assert.ok(Math.abs(m.odometerKm - gps) < 0.001, `${m.odometerKm} vs ${gps}`);
        assert.equal(m.engineHours, Math.round((900 / 3600) * 1000) / 1000);
        assert.equal(m.updatedAt, at(4801));

        // A late record (older than the newest) leaves them as they are.
        await post(ctx, 'van-1', [{ timestamp: at(1000), data: { location: { lat: 53, lng: 14 }, ignition: true } }]);
        assert.deepEqual(await meters(ctx, 'van-1'), m);

        // Set by hand: later records add to the value set.
        const set = await ctx.request('PUT', '/v2/fleet/vehicles/van-1/meters', { body: { odometerKm: 1000, engineHours: 10 } });
        assert.equal(set.statusCode, 200, set.body);
        assert.equal(set.json<Meters>().odometerKm, 1000);
        await post(ctx, 'van-1', [{ timestamp: at(4860), data: { location: points[2], ignition: false } }]);
        m = await meters(ctx, 'van-1');
        const step = haversineMeters(points[3]!, points[2]!) / 1000;
        assert.ok(Math.abs(m.odometerKm - (1000 + step)) < 0.001, `${m.odometerKm}`);
        assert.equal(m.engineHours, Math.round((10 + 59 / 3600) * 1000) / 1000);

        // van-2 reports its odometer: the latest reported plus the offset a setting made.
        await post(ctx, 'van-2', [{ timestamp: at(0), data: { odometer: 5000 } }, { timestamp: at(60), data: { odometer: 5001.5 } }]);
        assert.equal((await meters(ctx, 'van-2')).odometerKm, 5001.5);
        await ctx.request('PUT', '/v2/fleet/vehicles/van-2/meters', { body: { odometerKm: 4000 } });
        await post(ctx, 'van-2', [{ timestamp: at(120), data: { odometer: 5010 } }]);
        assert.equal((await meters(ctx, 'van-2')).odometerKm, 4008.5);
        assert.equal((await meters(ctx, 'van-2')).engineHours, 0, 'engine hours untouched by an odometer setting');

        // Bad settings are refused and change nothing.
        const before = await meters(ctx, 'van-2');
        problem(await ctx.request('PUT', '/v2/fleet/vehicles/van-2/meters', { body: { odometerKm: -1 } }), 400, 'validation-failed');
        problem(await ctx.request('PUT', '/v2/fleet/vehicles/van-2/meters', { body: {} }), 400, 'validation-failed');
        problem(await ctx.request('PUT', '/v2/fleet/vehicles/van-2/meters', { body: { engineHours: 'ten' } }), 400, 'validation-failed');
        problem(await ctx.request('PUT', '/v2/fleet/vehicles/van-2/meters', { body: { odometerKm: 1, trip: 2 } }), 400, 'validation-failed');
        problem(await ctx.request('PUT', '/v2/fleet/vehicles/van-9/meters', { body: { odometerKm: 1 } }), 404, 'vehicle-not-found');
        problem(await ctx.request('GET', '/v2/fleet/vehicles/van-9/meters'), 404, 'vehicle-not-found');
        assert.deepEqual(await meters(ctx, 'van-2'), before);
        // Another organization's vehicle is missing to it.
        const { key } = await ctx.otherOrganization();
        problem(await ctx.request('GET', '/v2/fleet/vehicles/van-2/meters', { key }), 404, 'vehicle-not-found');

        // A setting before any record is kept, and the first records add to it.
        await ctx.registerVehicle('van-3');
        await ctx.request('PUT', '/v2/fleet/vehicles/van-3/meters', { body: { engineHours: 2 } });
        await post(ctx, 'van-3', [{ timestamp: at(0), data: { ignition: true } }, { timestamp: at(360), data: { ignition: true } }]);
        assert.equal((await meters(ctx, 'van-3')).engineHours, 2.1);
      } finally {
        await ctx.close();
      }
    });

    test('a driver\'s identifier in the records starts that driver\'s assignment; an unknown one is announced when it changes; trips carry their driver', async () => {
      const ctx = await createTestApp({ backend, clock: manualClock(T0 + 7200_000) });
      try {
        await ctx.registerVehicle('van-1');
        await ctx.registerVehicle('van-2');
        const made = await ctx.request('POST', '/v2/drivers', { body: { name: 'Ada', identifiers: [{ kind: 'ibutton', value: '01A2B3C4D5E6F708' }] } });
        const ada = made.json<{ id: string }>().id;
        const bob = (await ctx.request('POST', '/v2/drivers', { body: { name: 'Bob', identifiers: [{ kind: 'rfid', value: 'card42' }] } })).json<{ id: string }>().id;

        // Unknown X, X, unknown Y, X again: three announcements; a record without one changes nothing.
        await post(ctx, 'van-1', [
          { timestamp: at(0), data: { speed: 0, driverIdentifier: 'STRANGER1' } },
          { timestamp: at(10), data: { speed: 0, driverIdentifier: 'STRANGER1' } },
          { timestamp: at(20), data: { speed: 0 } },
          { timestamp: at(30), data: { speed: 0, driverIdentifier: 'STRANGER1' } },
          { timestamp: at(40), data: { speed: 0, driverIdentifier: 'STRANGER2' } },
        ]);
        await post(ctx, 'van-1', [{ timestamp: at(50), data: { speed: 0, driverIdentifier: 'STRANGER1' } }]);
        const unknown = await events(ctx, 'driver.unknown', 3);
        assert.deepEqual(unknown.map((e) => [e.occurredAt, e.data.identifier, e.vehicleId]), [
          [at(0), 'STRANGER1', 'van-1'], [at(40), 'STRANGER2', 'van-1'], [at(50), 'STRANGER1', 'van-1'],
        ]);

        // Ada's iButton (sent in lowercase) starts her assignment at the record's time, from the device.
        await post(ctx, 'van-1', [{ timestamp: at(60), data: { speed: 0, driverIdentifier: '01a2b3c4d5e6f708' } }]);
        let vehicle = (await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>();
        assert.equal(vehicle.driverId, ada);
        const list = (await ctx.request('GET', `/v2/driver-assignments?vehicleId=van-1`)).json<{ assignments: Array<{ driverId: string; startedAt: string; endedAt: string | null; source: string }> }>();
        assert.deepEqual(list.assignments.map((a) => [a.driverId, a.startedAt, a.endedAt, a.source]), [[ada, at(60), null, 'device']]);
        // The same identifier again changes nothing.
        await post(ctx, 'van-1', [{ timestamp: at(70), data: { speed: 0, driverIdentifier: '01A2B3C4D5E6F708' } }]);
        assert.equal((await events(ctx, 'driver.assigned', 1)).length, 1);

        // Ada swipes into van-2: her van-1 assignment ends there; Bob's card takes van-1.
        await post(ctx, 'van-2', [{ timestamp: at(100), data: { speed: 0, driverIdentifier: '01A2B3C4D5E6F708' } }]);
        await post(ctx, 'van-1', [{ timestamp: at(120), data: { speed: 0, driverIdentifier: 'card42' } }]);
        vehicle = (await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>();
        assert.equal(vehicle.driverId, bob);
        assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-2')).json<{ driverId: string | null }>().driverId, ada);
        const changes = await events(ctx, 'driver.assigned,driver.unassigned', 4);
        assert.deepEqual(changes.map((e) => `${e.type} ${e.vehicleId} ${e.occurredAt}`), [
          `driver.assigned van-1 ${at(60)}`, `driver.unassigned van-1 ${at(100)}`, `driver.assigned van-2 ${at(100)}`, `driver.assigned van-1 ${at(120)}`,
        ]);

        // Ended by a dispatcher, Bob's card in the next record starts him again.
        const ongoing = (await ctx.request('GET', `/v2/driver-assignments?vehicleId=van-1`)).json<{ assignments: Array<{ id: string }> }>().assignments[0]!;
        const ended = await ctx.request('POST', `/v2/driver-assignments/${ongoing.id}/end`, { body: { endedAt: at(130) } });
        assert.equal(ended.statusCode, 200, ended.body);
        await post(ctx, 'van-1', [{ timestamp: at(140), data: { speed: 0, driverIdentifier: 'card42' } }]);
        assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>().driverId, bob);

        // An RFID value matches exactly: Bob's card42 is not CARD42, which no driver has.
        await post(ctx, 'van-1', [{ timestamp: at(145), data: { speed: 0, driverIdentifier: 'CARD42' } }]);
        assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>().driverId, bob);
        assert.equal((await events(ctx, 'driver.unknown', 4)).at(-1)?.data.identifier, 'CARD42');

        // A bad identifier is refused with the record, and nothing is stored.
        const bad = await ctx.request('POST', '/v2/telemetry/van-1', { body: { timestamp: at(150), data: { driverIdentifier: 'no-dashes' } } });
        problem(bad, 400, 'validation-failed');
        const refused = await ctx.request('POST', '/v2/telemetry/van-1', { body: { timestamp: at(150), data: { ignition: 'yes' } } });
        problem(refused, 400, 'validation-failed');

        // A drive of 20 minutes with Bob: the trip's events and the trips report name him.
        const drive: Array<{ timestamp: string; data: Record<string, unknown> }> = [];
        for (let s = 200; s <= 1400; s += 60) drive.push({ timestamp: at(s), data: { speed: 60, location: { lat: 52.5 + (s - 200) * 0.0002, lng: 13.4 }, driverIdentifier: 'card42' } });
        for (let s = 1460; s <= 2000; s += 60) drive.push({ timestamp: at(s), data: { speed: 0, location: { lat: 52.5 + 1200 * 0.0002, lng: 13.4 } } });
        await post(ctx, 'van-1', drive);
        const trips = await events(ctx, 'trip.started,trip.ended', 2);
        assert.deepEqual(trips.map((e) => [e.type, e.data.driverId]), [['trip.started', bob], ['trip.ended', bob]]);
        const report = await ctx.request('GET', `/v2/fleet/vehicles/van-1/trips?from=${at(0)}&to=${at(3000)}`);
        assert.equal(report.statusCode, 200, report.body);
        assert.deepEqual(report.json<{ trips: Array<{ driverId: string | null }> }>().trips.map((t) => t.driverId), [bob]);
        // van-2's drive, with no driver at its start, has none.
        const alone: Array<{ timestamp: string; data: Record<string, unknown> }> = [];
        await ctx.request('POST', `/v2/driver-assignments/${(await ctx.request('GET', '/v2/driver-assignments?vehicleId=van-2')).json<{ assignments: Array<{ id: string }> }>().assignments[0]!.id}/end`, { body: { endedAt: at(150) } });
        for (let s = 200; s <= 1400; s += 60) alone.push({ timestamp: at(s), data: { speed: 60, location: { lat: 48 + (s - 200) * 0.0002, lng: 11 } } });
        for (let s = 1460; s <= 2000; s += 60) alone.push({ timestamp: at(s), data: { speed: 0, location: { lat: 48 + 1200 * 0.0002, lng: 11 } } });
        await post(ctx, 'van-2', alone);
        const other = await ctx.request('GET', `/v2/fleet/vehicles/van-2/trips?from=${at(0)}&to=${at(3000)}`);
        assert.deepEqual(other.json<{ trips: Array<{ driverId: string | null }> }>().trips.map((t) => t.driverId), [null]);

        // van-1 deleted (its assignments with it) and registered again: Bob's card in its first record assigns him anew.
        assert.equal((await ctx.request('DELETE', '/v2/fleet/vehicles/van-1')).statusCode, 204);
        await ctx.registerVehicle('van-1');
        await post(ctx, 'van-1', [{ timestamp: at(2100), data: { speed: 0, driverIdentifier: 'card42' } }]);
        assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>().driverId, bob);
      } finally {
        await ctx.close();
      }
    });
  });
}

test('PostgreSQL: a record whose driver another transaction holds starts nothing, and the next record that carries the identifier does', { skip: skipPostgres }, async () => {
  const ctx = await createTestApp({ backend: 'postgres', clock: manualClock(T0 + 7200_000) });
  const holder = new pg.Client({ connectionString: TEST_DATABASE_URL });
  try {
    await ctx.registerVehicle('van-1');
    const ada = (await ctx.request('POST', '/v2/drivers', { body: { name: 'Ada', identifiers: [{ kind: 'rfid', value: 'ada1' }] } })).json<{ id: string }>().id;
    // Another transaction holds Ada's row (an assignment under way): the commit neither waits for it nor fails.
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM ${(ctx.stores as { schema?: string }).schema}.drivers WHERE id = $1 FOR UPDATE`, [ada]);
    await post(ctx, 'van-1', [{ timestamp: at(0), data: { speed: 0, driverIdentifier: 'ada1' } }]);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>().driverId, null);
    await holder.query('COMMIT');
    await post(ctx, 'van-1', [{ timestamp: at(10), data: { speed: 0, driverIdentifier: 'ada1' } }]);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/van-1')).json<{ driverId: string | null }>().driverId, ada);
    const list = (await ctx.request('GET', '/v2/driver-assignments?vehicleId=van-1')).json<{ assignments: Array<{ startedAt: string }> }>();
    assert.deepEqual(list.assignments.map((a) => a.startedAt), [at(10)]);
  } finally {
    await holder.end();
    await ctx.close();
  }
});
