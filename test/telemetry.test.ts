// Telemetry over HTTP (docs/API.md "Telemetry", "Status and transitions"): ingest, latest, history, through the whole stack.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, manualClock, type TestApp } from './helpers/app.ts';

const clock = manualClock(Date.parse('2026-11-22T08:00:00.000Z'));
let ctx: TestApp;
before(async () => {
  ctx = await createTestApp({ clock });
});
after(() => ctx.close());

const at = (offsetSeconds: number) => new Date(clock.now() + offsetSeconds * 1000).toISOString();

async function send(vehicleId: string, body: unknown, key?: string) {
  return ctx.request('POST', `/v2/telemetry/${vehicleId}`, { body: JSON.stringify(body), key });
}

describe('ingest and latest', () => {
  test('one record: 202 with counts, then the latest state', async () => {
    await ctx.registerVehicle('t-1');
    const res = await send('t-1', { timestamp: at(-60), data: { location: { lat: 52.52, lng: 13.405 }, speed: 42.5, battery: 80 } });
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(res.json(), { accepted: 1, duplicates: 0 });
    const latest = await ctx.request('GET', '/v2/telemetry/t-1');
    assert.equal(latest.statusCode, 200);
    assert.deepEqual(latest.json(), {
      vehicleId: 't-1', timestamp: at(-60), data: { location: { lat: 52.52, lng: 13.405 }, speed: 42.5, battery: 80 },
    });
  });

  test('merges partial records field by field; an older record never overwrites a newer value', async () => {
    await ctx.registerVehicle('t-2');
    await send('t-2', { timestamp: at(-30), data: { speed: 10, battery: 90 } });
    await send('t-2', { timestamp: at(-20), data: { temperature: 21.5 } });
    await send('t-2', { timestamp: at(-40), data: { speed: 99, heading: 180 } });
    const { timestamp, data } = (await ctx.request('GET', '/v2/telemetry/t-2')).json();
    assert.equal(timestamp, at(-20));
    assert.deepEqual(data, { speed: 10, heading: 180, battery: 90, temperature: 21.5 });
  });

  test('fields keeps only the named ones; a field never reported is left out', async () => {
    const res = await ctx.request('GET', '/v2/telemetry/t-2?fields=speed,battery,location');
    assert.deepEqual(res.json().data, { speed: 10, battery: 90 });
  });

  test('an unknown field name: 400 naming the allowed ones', async () => {
    const res = await ctx.request('GET', '/v2/telemetry/t-2?fields=speed,altitude');
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'validation-failed');
    assert.match(res.json().errors[0].message, /"altitude".*allowed: location, speed, heading, battery, temperature, odometer, diagnostics/);
  });

  test('a batch for one vehicle, and a batch for many', async () => {
    await ctx.registerVehicle('t-3');
    await ctx.registerVehicle('t-4');
    const one = await send('t-3', { records: [{ timestamp: at(-3), data: { speed: 1 } }, { timestamp: at(-2), data: { speed: 2 } }] });
    assert.deepEqual(one.json(), { accepted: 2, duplicates: 0 });
    const many = await ctx.request('POST', '/v2/telemetry', {
      body: { records: [{ vehicleId: 't-3', timestamp: at(-1), data: { speed: 3 } }, { vehicleId: 't-4', timestamp: at(-1), data: { odometer: 1200 } }] },
    });
    assert.equal(many.statusCode, 202, many.body);
    assert.deepEqual(many.json(), { accepted: 2, duplicates: 0 });
    assert.equal((await ctx.request('GET', '/v2/telemetry/t-3')).json().data.speed, 3);
    assert.equal((await ctx.request('GET', '/v2/telemetry/t-4')).json().data.odometer, 1200);
  });

  test('a timestamp defaults to the time received', async () => {
    await ctx.registerVehicle('t-5');
    await send('t-5', { data: { battery: 50 } });
    assert.equal((await ctx.request('GET', '/v2/telemetry/t-5')).json().timestamp, at(0));
  });

  test('diagnostics: numbers, strings and booleans', async () => {
    await ctx.registerVehicle('t-6');
    const diagnostics = { dtc: 'P0420', tirePressureLow: false, 'cabin.co2_ppm': 612 };
    assert.equal((await send('t-6', { timestamp: at(-5), data: { diagnostics } })).statusCode, 202);
    assert.deepEqual((await ctx.request('GET', '/v2/telemetry/t-6?fields=diagnostics')).json().data, { diagnostics });
  });

  test('the vehicle list and details show location, battery and lastUpdate from the latest state', async () => {
    const details = (await ctx.request('GET', '/v2/fleet/vehicles/t-1')).json();
    assert.deepEqual([details.location, details.battery, details.lastUpdate], [{ lat: 52.52, lng: 13.405 }, 80, at(-60)]);
    const item = (await ctx.request('GET', '/v2/fleet/vehicles?limit=1000')).json().vehicles.find((v: { id: string }) => v.id === 't-5');
    assert.deepEqual([item.location, item.battery, item.lastUpdate], [null, 50, at(0)]);
  });
});

describe('vehicle status and telemetry', () => {
  test('the first telemetry makes a registered vehicle active, recorded as done by the system', async () => {
    await ctx.registerVehicle('s-1');
    await send('s-1', { timestamp: at(-1), data: { speed: 5 } });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/s-1')).json().status, 'active');
    const [latest] = (await ctx.request('GET', '/v2/fleet/vehicles/s-1/status-history')).json().history;
    assert.deepEqual({ from: latest.from, to: latest.to, by: latest.by }, { from: 'registered', to: 'active', by: 'system' });
  });

  test('telemetry leaves an inactive or maintenance vehicle in its status', async () => {
    await ctx.registerVehicle('s-2');
    await ctx.request('PUT', '/v2/fleet/vehicles/s-2/status', { body: { status: 'maintenance' } });
    await send('s-2', { timestamp: at(-1), data: { speed: 0 } });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/s-2')).json().status, 'maintenance');
  });

  test('a retired vehicle refuses telemetry with 409 and stores nothing', async () => {
    await ctx.registerVehicle('s-3');
    await ctx.request('PUT', '/v2/fleet/vehicles/s-3/status', { body: { status: 'retired' } });
    const res = await send('s-3', { timestamp: at(-1), data: { speed: 0 } });
    assert.equal(res.statusCode, 409);
    assert.equal(res.json().code, 'vehicle-retired');
    assert.equal((await ctx.request('GET', '/v2/telemetry/s-3')).json().code, 'no-telemetry');
  });

  test('a vehicle sending telemetry is refused from the moment it is retired, or deleted, and activated again when registered anew', async () => {
    await ctx.registerVehicle('s-5');
    assert.equal((await send('s-5', { timestamp: at(-3), data: { speed: 1 } })).statusCode, 202);
    await ctx.request('PUT', '/v2/fleet/vehicles/s-5/status', { body: { status: 'retired' } });
    assert.equal((await send('s-5', { timestamp: at(-2), data: { speed: 2 } })).json().code, 'vehicle-retired');
    assert.equal((await ctx.request('DELETE', '/v2/fleet/vehicles/s-5')).statusCode, 204);
    assert.equal((await send('s-5', { timestamp: at(-2), data: { speed: 2 } })).json().code, 'vehicle-not-found');
    await ctx.registerVehicle('s-5');
    assert.equal((await send('s-5', { timestamp: at(-1), data: { speed: 3 } })).statusCode, 202);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/s-5')).json().status, 'active');
    assert.equal((await ctx.request('GET', '/v2/telemetry/s-5')).json().data.speed, 3);
  });

  test('an unknown vehicle: 404 on ingest and on reads; a known one without telemetry: no-telemetry', async () => {
    assert.equal((await send('ghost', { data: { speed: 1 } })).json().code, 'vehicle-not-found');
    assert.equal((await ctx.request('GET', '/v2/telemetry/ghost')).json().code, 'vehicle-not-found');
    assert.equal((await ctx.request('GET', '/v2/telemetry/ghost/history')).json().code, 'vehicle-not-found');
    await ctx.registerVehicle('quiet');
    const res = await ctx.request('GET', '/v2/telemetry/quiet');
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'no-telemetry');
  });

  test('a fleet batch naming one unknown vehicle stores nothing', async () => {
    await ctx.registerVehicle('s-4');
    const res = await ctx.request('POST', '/v2/telemetry', {
      body: { records: [{ vehicleId: 's-4', timestamp: at(-1), data: { speed: 1 } }, { vehicleId: 'nobody', timestamp: at(-1), data: { speed: 1 } }] },
    });
    assert.equal(res.statusCode, 404);
    assert.match(res.json().detail, /"nobody"/);
    assert.equal((await ctx.request('GET', '/v2/telemetry/s-4')).json().code, 'no-telemetry');
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/s-4')).json().status, 'registered');
  });

  test('another organization\'s vehicle is not found, and takes nothing from its key', async () => {
    const other = await ctx.otherOrganization('Telemetry neighbour');
    await ctx.registerVehicle('own-1');
    await send('own-1', { timestamp: at(-1), data: { speed: 7 } });
    assert.equal((await send('own-1', { timestamp: at(0), data: { speed: 70 } }, other.key)).json().code, 'vehicle-not-found');
    assert.equal((await ctx.request('GET', '/v2/telemetry/own-1', { key: other.key })).json().code, 'vehicle-not-found');
    assert.equal((await ctx.request('GET', '/v2/telemetry/own-1')).json().data.speed, 7);
  });

  test('deleting a vehicle drops its latest state', async () => {
    await ctx.registerVehicle('gone-1');
    await send('gone-1', { timestamp: at(-1), data: { speed: 7 } });
    await ctx.request('DELETE', '/v2/fleet/vehicles/gone-1');
    await ctx.registerVehicle('gone-1');
    assert.equal((await ctx.request('GET', '/v2/telemetry/gone-1')).json().code, 'no-telemetry');
  });
});

describe('validation', () => {
  const invalid: [string, unknown, string][] = [
    ['battery above 100', { battery: 100.5 }, '/data/battery'],
    ['negative battery', { battery: -1 }, '/data/battery'],
    ['speed above 1000', { speed: 1000.1 }, '/data/speed'],
    ['negative speed', { speed: -3 }, '/data/speed'],
    ['heading of 360', { heading: 360 }, '/data/heading'],
    ['negative heading', { heading: -0.1 }, '/data/heading'],
    ['temperature below -100', { temperature: -100.1 }, '/data/temperature'],
    ['temperature above 200', { temperature: 201 }, '/data/temperature'],
    ['negative odometer', { odometer: -1 }, '/data/odometer'],
    ['latitude 91', { location: { lat: 91, lng: 0 } }, '/data/location/lat'],
    ['longitude -181', { location: { lat: 0, lng: -181 } }, '/data/location/lng'],
    ['location without lng', { location: { lat: 1 } }, '/data/location/lng'],
    ['speed as a string', { speed: '12' }, '/data/speed'],
    ['battery as null', { battery: null }, '/data/battery'],
    ['an unknown field', { altitude: 30 }, '/data/altitude'],
    ['no field at all', {}, '/data'],
    ['a diagnostic key with a space', { diagnostics: { 'bad key': 1 } }, '/data/diagnostics'],
    ['a diagnostic object value', { diagnostics: { nested: { a: 1 } } }, '/data/diagnostics/nested'],
    ['a diagnostic string over 256', { diagnostics: { note: 'x'.repeat(257) } }, '/data/diagnostics/note'],
    ['65 diagnostics', { diagnostics: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`d${i}`, i])) }, '/data/diagnostics'],
  ];
  for (const [name, data, path] of invalid) {
    test(`refuses ${name}, naming the record and the path`, async () => {
      await ctx.registerVehicle(`v-${name.replaceAll(/[^a-z0-9]/gi, '')}`).catch(() => undefined);
      const vehicleId = `v-${name.replaceAll(/[^a-z0-9]/gi, '')}`;
      const single = await send(vehicleId, { timestamp: at(-1), data });
      assert.equal(single.statusCode, 400, single.body);
      assert.ok(single.json().errors.some((e: { path: string }) => e.path === path), JSON.stringify(single.json().errors));
      const batch = await send(vehicleId, { records: [{ timestamp: at(-2), data: { speed: 1 } }, { timestamp: at(-1), data }] });
      assert.equal(batch.statusCode, 400);
      assert.ok(batch.json().errors.some((e: { path: string }) => e.path === `/records/1${path}`), JSON.stringify(batch.json().errors));
      assert.equal((await ctx.request('GET', `/v2/telemetry/${vehicleId}`)).json().code, 'no-telemetry', 'the good record of the batch was stored');
    });
  }

  test('NaN and Infinity never get in: JSON has no such numbers, and 1e999 overflows to a refusal', async () => {
    await ctx.registerVehicle('nan-1');
    for (const raw of ['{"data":{"speed":NaN}}', '{"data":{"speed":Infinity}}']) {
      assert.equal((await ctx.request('POST', '/v2/telemetry/nan-1', { body: raw })).json().code, 'malformed-json');
    }
    const overflow = await ctx.request('POST', '/v2/telemetry/nan-1', { body: '{"data":{"odometer":1e999}}' });
    assert.equal(overflow.statusCode, 400, overflow.body);
  });

  test('every bad record of a batch is named, and nothing of it is stored', async () => {
    await ctx.registerVehicle('bad-batch');
    const res = await send('bad-batch', {
      records: [
        { timestamp: at(-5), data: { speed: 1 } },
        { timestamp: at(-4), data: { speed: -1 } },
        { timestamp: at(-3), data: { battery: 101 } },
        { timestamp: 'yesterday', data: { speed: 1 } },
      ],
    });
    assert.equal(res.statusCode, 400);
    const paths = res.json().errors.map((e: { path: string }) => e.path);
    assert.ok(paths.includes('/records/1/data/speed'));
    assert.ok(paths.includes('/records/2/data/battery'));
    assert.ok(paths.includes('/records/3/timestamp'));
    assert.equal((await ctx.request('GET', '/v2/telemetry/bad-batch')).json().code, 'no-telemetry');
  });

  test('timestamps more than 5 minutes ahead are refused; just under is accepted', async () => {
    await ctx.registerVehicle('future');
    const ahead = await send('future', { records: [{ timestamp: at(-1), data: { speed: 1 } }, { timestamp: at(301), data: { speed: 1 } }] });
    assert.equal(ahead.statusCode, 400);
    assert.deepEqual(ahead.json().errors, [{ in: 'body', path: '/records/1/timestamp', message: 'is more than 5 minutes in the future' }]);
    assert.equal((await send('future', { timestamp: at(299), data: { speed: 1 } })).statusCode, 202);
  });

  test('batches: at most 1000 records, at least one; unknown body fields refused', async () => {
    await ctx.registerVehicle('sizes');
    const records = Array.from({ length: 1001 }, (_, i) => ({ timestamp: new Date(clock.now() - (i + 1) * 1000).toISOString(), data: { speed: 1 } }));
    assert.equal((await send('sizes', { records })).statusCode, 400);
    assert.deepEqual((await send('sizes', { records: records.slice(0, 1000) })).json(), { accepted: 1000, duplicates: 0 });
    assert.equal((await send('sizes', { records: [] })).statusCode, 400);
    assert.equal((await send('sizes', { data: { speed: 1 }, vehicleId: 'other' })).statusCode, 400);
    assert.equal((await ctx.request('POST', '/v2/telemetry', { body: { records: [{ timestamp: at(0), data: { speed: 1 } }] } })).statusCode, 400);
  });

  test('a timestamp JavaScript cannot hold (a leap second, an hour-only offset) is refused, and fails no one else\'s records', async () => {
    await ctx.registerVehicle('odd-time');
    await ctx.registerVehicle('odd-time-neighbour');
    for (const timestamp of ['2016-12-31T23:59:60Z', '2026-11-22T08:00:00+01', '2026-02-29T08:00:00Z', '2026-11-22T08:00:00']) {
      // Sent together with another client's good record, which may share its group commit.
      const [bad, good] = await Promise.all([
        send('odd-time', { records: [{ timestamp: at(-2), data: { speed: 1 } }, { timestamp, data: { speed: 1 } }] }),
        send('odd-time-neighbour', { data: { speed: 2 } }),
      ]);
      assert.equal(bad.statusCode, 400, `${timestamp}: ${bad.body}`);
      assert.deepEqual(bad.json().errors.map((e: { path: string }) => e.path), ['/records/1/timestamp'], timestamp);
      assert.equal(good.statusCode, 202, good.body);
    }
    assert.equal((await ctx.request('GET', '/v2/telemetry/odd-time')).json().code, 'no-telemetry');
    const history = await ctx.request('GET', '/v2/telemetry/odd-time/history?from=2016-12-31T23:59:60Z');
    assert.equal(history.statusCode, 400, history.body);
  });

  test('time zones are accepted and stored as UTC', async () => {
    await ctx.registerVehicle('tz');
    await send('tz', { timestamp: '2026-11-22T09:59:00.000+02:00', data: { speed: 1 } });
    assert.equal((await ctx.request('GET', '/v2/telemetry/tz')).json().timestamp, '2026-11-22T07:59:00.000Z');
  });
});

describe('duplicates', () => {
  test('a record with a stored vehicle and timestamp is counted, not stored twice', async () => {
    await ctx.registerVehicle('dup');
    const first = await send('dup', { records: [{ timestamp: at(-3), data: { speed: 1 } }, { timestamp: at(-2), data: { speed: 2 } }] });
    assert.deepEqual(first.json(), { accepted: 2, duplicates: 0 });
    const again = await send('dup', { records: [{ timestamp: at(-3), data: { speed: 1 } }, { timestamp: at(-1), data: { speed: 3 } }] });
    assert.deepEqual(again.json(), { accepted: 1, duplicates: 1 });
    const inOne = await send('dup', { records: [{ timestamp: at(0), data: { speed: 4 } }, { timestamp: at(0), data: { speed: 4 } }] });
    assert.deepEqual(inOne.json(), { accepted: 1, duplicates: 1 });
    const history = (await ctx.request('GET', '/v2/telemetry/dup/history')).json();
    assert.deepEqual(history.records.map((r: { data: { speed: number } }) => r.data.speed), [1, 2, 3, 4]);
  });
});

describe('history', () => {
  let times: string[] = [];
  before(async () => {
    await ctx.registerVehicle('h-1');
    times = Array.from({ length: 25 }, (_, i) => at(-1000 + i * 10));
    await send('h-1', { records: times.map((timestamp, i) => ({ timestamp, data: { speed: i, battery: 100 - i } })) });
  });

  test('pages return each record exactly once, in order', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/v2/telemetry/h-1/history?limit=7${cursor === null ? '' : `&cursor=${cursor}`}`;
      const page = (await ctx.request('GET', url)).json();
      assert.ok(page.records.length <= 7);
      seen.push(...page.records.map((r: { timestamp: string }) => r.timestamp));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    assert.equal(pages, 4);
    assert.deepEqual(seen, times);
  });

  test('from is inclusive, to exclusive; fields narrows each record', async () => {
    const page = (await ctx.request('GET', `/v2/telemetry/h-1/history?from=${times[5]}&to=${times[8]}&fields=speed`)).json();
    assert.deepEqual(page.records, [5, 6, 7].map((i) => ({ vehicleId: 'h-1', timestamp: times[i], data: { speed: i } })));
    assert.equal(page.nextCursor, null);
  });

  test('default limit 100, maximum 10000; bad values and cursors are 400', async () => {
    assert.equal((await ctx.request('GET', '/v2/telemetry/h-1/history?limit=10000')).statusCode, 200);
    for (const query of ['limit=10001', 'limit=0', 'cursor=abc', 'cursor=%25%25', 'from=yesterday', `from=${times[9]}&to=${times[2]}`, 'fields=altitude', 'page=2']) {
      const res = await ctx.request('GET', `/v2/telemetry/h-1/history?${query}`);
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
    }
  });
});

describe('restart', () => {
  test('the latest state is rebuilt from the store', async () => {
    const { buildApp } = await import('../src/app.ts');
    const again = await buildApp({ config: ctx.config, stores: ctx.stores, clock });
    try {
      const res = await again.inject({ method: 'GET', url: '/v2/telemetry/t-2', headers: { authorization: `Bearer ${ctx.adminKey}` } });
      assert.deepEqual(res.json().data, { speed: 10, heading: 180, battery: 90, temperature: 21.5 });
    } finally {
      await again.close();
    }
  });
});
