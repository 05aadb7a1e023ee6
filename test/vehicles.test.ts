import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { VEHICLE_STATUSES, type VehicleStatus } from '../src/vehicles/schema.ts';
import { TRANSITIONS } from '../src/vehicles/transitions.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
});
after(() => ctx.close());

function assertProblem(res: { statusCode: number; headers: Record<string, unknown>; json: () => any }, status: number, code: string) {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
  const body = res.json();
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.equal(typeof body.title, 'string');
  assert.equal(body.type, `urn:fleet:problem:${code}`);
  return body;
}

describe('registration', () => {
  test('answers 201 with the details, a Location, and the registered status', async () => {
    const res = await ctx.request('POST', '/v2/fleet/vehicles', {
      body: { vehicleId: 'reg-1', type: 'shuttle', configuration: { sensors: ['gps', 'lidar'], capacity: 8, autonomyLevel: 4 } },
    });
    assert.equal(res.statusCode, 201);
    assert.equal(res.headers.location, '/v2/fleet/vehicles/reg-1');
    const body = res.json();
    assert.equal(body.id, 'reg-1');
    assert.equal(body.status, 'registered');
    assert.equal(body.type, 'shuttle');
    assert.deepEqual(body.configuration, { sensors: ['gps', 'lidar'], capacity: 8, autonomyLevel: 4 });
    assert.match(body.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(body.location, null);
    assert.equal(body.battery, null);
    assert.equal(body.lastUpdate, null);
    const read = await ctx.request('GET', '/v2/fleet/vehicles/reg-1');
    assert.deepEqual(read.json(), body);
  });

  test('configuration is optional, and so is each of its fields', async () => {
    const res = await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'reg-2', type: 'robot' } });
    assert.equal(res.statusCode, 201);
    assert.deepEqual(res.json().configuration, {});
    const partial = await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'reg-3', type: 'bus', configuration: { capacity: 0 } } });
    assert.equal(partial.statusCode, 201);
  });

  test('a duplicate id in the same organization answers 409; ids are case-sensitive', async () => {
    await ctx.registerVehicle('dup-1');
    assertProblem(await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'dup-1', type: 'car' } }), 409, 'vehicle-exists');
    assert.equal((await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'DUP-1', type: 'car' } })).statusCode, 201);
  });

  const invalid: [string, unknown, string][] = [
    ['missing vehicleId', { type: 'van' }, '/vehicleId'],
    ['missing type', { vehicleId: 'x1' }, '/type'],
    ['unknown type', { vehicleId: 'x1', type: 'spaceship' }, '/type'],
    ['empty id', { vehicleId: '', type: 'van' }, '/vehicleId'],
    ['id over 64 characters', { vehicleId: 'a'.repeat(65), type: 'van' }, '/vehicleId'],
    ['id with a slash', { vehicleId: 'a/b', type: 'van' }, '/vehicleId'],
    ['id with a space', { vehicleId: 'a b', type: 'van' }, '/vehicleId'],
    ['numeric id', { vehicleId: 42, type: 'van' }, '/vehicleId'],
    ['unknown top-level field', { vehicleId: 'x1', type: 'van', color: 'red' }, '/color'],
    ['status set by the client', { vehicleId: 'x1', type: 'van', status: 'active' }, '/status'],
    ['createdAt set by the client', { vehicleId: 'x1', type: 'van', createdAt: '2020-01-01T00:00:00.000Z' }, '/createdAt'],
    ['unknown configuration field', { vehicleId: 'x1', type: 'van', configuration: { turbo: true } }, '/configuration/turbo'],
    ['capacity as a string', { vehicleId: 'x1', type: 'van', configuration: { capacity: '8' } }, '/configuration/capacity'],
    ['negative capacity', { vehicleId: 'x1', type: 'van', configuration: { capacity: -1 } }, '/configuration/capacity'],
    ['fractional capacity', { vehicleId: 'x1', type: 'van', configuration: { capacity: 1.5 } }, '/configuration/capacity'],
    ['autonomy level 6', { vehicleId: 'x1', type: 'van', configuration: { autonomyLevel: 6 } }, '/configuration/autonomyLevel'],
    ['duplicate sensors', { vehicleId: 'x1', type: 'van', configuration: { sensors: ['gps', 'gps'] } }, '/configuration/sensors'],
    ['bad sensor name', { vehicleId: 'x1', type: 'van', configuration: { sensors: ['GPS!'] } }, '/configuration/sensors/0'],
    ['33 sensors', { vehicleId: 'x1', type: 'van', configuration: { sensors: Array.from({ length: 33 }, (_, i) => `s${i}`) } }, '/configuration/sensors'],
    ['configuration not an object', { vehicleId: 'x1', type: 'van', configuration: [] }, '/configuration'],
    ['body an array', [], ''],
    ['body null', null, ''],
  ];
  for (const [name, body, path] of invalid) {
    test(`refuses ${name} with 400 naming ${path || 'the body'}, and stores nothing`, async () => {
      const res = await ctx.request('POST', '/v2/fleet/vehicles', { body: JSON.stringify(body) });
      const problem = assertProblem(res, 400, 'validation-failed');
      assert.ok(Array.isArray(problem.errors) && problem.errors.length > 0);
      assert.ok(
        problem.errors.some((e: { path: string; in: string }) => e.path === path && e.in === 'body'),
        `no error at ${path}: ${JSON.stringify(problem.errors)}`,
      );
      assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/x1')).statusCode, 404);
    });
  }
});

describe('batch registration', () => {
  const batch = (vehicles: unknown[]) => ctx.request('POST', '/v2/fleet/vehicles/batch', { body: { vehicles } });

  test('registers the ids not taken, each as one registration would, and says what became of each in order', async () => {
    await ctx.registerVehicle('bat-2');
    const res = await batch([
      { vehicleId: 'bat-1', type: 'van', configuration: { capacity: 4 } },
      { vehicleId: 'bat-2', type: 'bus' },
      { vehicleId: 'bat-3', type: 'robot', name: 'R3' },
    ]);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), {
      created: 2, existing: 1,
      vehicles: [{ id: 'bat-1', outcome: 'created' }, { id: 'bat-2', outcome: 'exists' }, { id: 'bat-3', outcome: 'created' }],
    });
    const one = (await ctx.request('GET', '/v2/fleet/vehicles/bat-1')).json();
    assert.deepEqual([one.status, one.type, one.configuration], ['registered', 'van', { capacity: 4 }]);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/bat-2')).json().type, 'van', 'a taken id is left as it was');
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/bat-3')).json().name, 'R3');
    const feed = (await ctx.request('GET', '/v2/events', { query: { types: 'vehicle.registered', limit: '1000' } })).json<{ events: Array<{ vehicleId: string }> }>();
    assert.deepEqual(feed.events.map((e) => e.vehicleId).filter((id) => id.startsWith('bat-')).sort(), ['bat-1', 'bat-2', 'bat-3'], 'one event per vehicle registered');
    const again = await batch([{ vehicleId: 'bat-1', type: 'van' }, { vehicleId: 'bat-3', type: 'van' }]);
    assert.deepEqual(again.json(), { created: 0, existing: 2, vehicles: [{ id: 'bat-1', outcome: 'exists' }, { id: 'bat-3', outcome: 'exists' }] }, 'sent again: nothing changes');
  });

  test('all or none: a bad vehicle or an id twice answers 400 naming each by index; an unknown group 404; nothing stored', async () => {
    const bad = assertProblem(await batch([{ vehicleId: 'bad-1', type: 'van' }, { vehicleId: 'bad-2', type: 'plane' }, { vehicleId: 'bad 3', type: 'van' }]), 400, 'validation-failed');
    const paths = bad.errors.map((e: { path: string }) => e.path);
    assert.ok(paths.includes('/vehicles/1/type') && paths.includes('/vehicles/2/vehicleId'), JSON.stringify(bad.errors));
    const twice = assertProblem(await batch([{ vehicleId: 'bad-1', type: 'van' }, { vehicleId: 'bad-4', type: 'van' }, { vehicleId: 'bad-1', type: 'car' }]), 400, 'validation-failed');
    assert.deepEqual(twice.errors, [{ in: 'body', path: '/vehicles/2/vehicleId', message: 'repeats vehicles/0 ("bad-1")' }]);
    assertProblem(await batch([{ vehicleId: 'bad-1', type: 'van' }, { vehicleId: 'bad-5', type: 'van', groupIds: ['grp_7Qm2Lw9ZbT4kX1cNp8Rs'] }]), 404, 'group-not-found');
    for (const empty of [[], undefined]) assertProblem(await ctx.request('POST', '/v2/fleet/vehicles/batch', { body: { vehicles: empty } }), 400, 'validation-failed');
    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ vehicleId: `many-${i}`, type: 'van' }));
    assertProblem(await batch(tooMany), 400, 'validation-failed');
    for (const id of ['bad-1', 'bad-4', 'bad-5', 'many-0']) assert.equal((await ctx.request('GET', `/v2/fleet/vehicles/${id}`)).statusCode, 404, id);
  });

  test('the quota counts the new vehicles only, all or none; a reader may not register; one audit entry', async () => {
    const small = await createTestApp({ env: { FLEET_QUOTA_VEHICLES: '3' } });
    try {
      const send = (vehicles: unknown[], key?: string) => small.request('POST', '/v2/fleet/vehicles/batch', { body: { vehicles }, ...(key === undefined ? {} : { key }) });
      assert.equal((await send([{ vehicleId: 'q-1', type: 'van' }, { vehicleId: 'q-2', type: 'van' }])).statusCode, 200);
      assertProblem(await send([{ vehicleId: 'q-3', type: 'van' }, { vehicleId: 'q-4', type: 'van' }]), 403, 'quota-exceeded');
      assert.equal((await small.request('GET', '/v2/fleet/vehicles/q-3')).statusCode, 404);
      assert.deepEqual((await send([{ vehicleId: 'q-1', type: 'van' }, { vehicleId: 'q-3', type: 'van' }])).json().created, 1);
      assertProblem(await send([{ vehicleId: 'q-9', type: 'van' }], await small.keyWith(['fleet:read'])), 403, 'insufficient-scope');
      await small.app.auditFlush();
      const audit = (await small.request('GET', '/v2/audit-log', { query: { action: 'vehicle.batch_created' } })).json<{ entries: Array<{ outcome: string; status: number }> }>();
      assert.deepEqual(audit.entries.map((e) => [e.outcome, e.status]).sort(), [['denied', 403], ['denied', 403], ['succeeded', 200], ['succeeded', 200]]);
    } finally {
      await small.close();
    }
  });
});

describe('status transitions', () => {
  // Reach `from` from a freshly registered vehicle: every state is one step from `registered`.
  async function vehicleIn(from: VehicleStatus, id: string) {
    await ctx.registerVehicle(id);
    if (from !== 'registered') {
      const res = await ctx.request('PUT', `/v2/fleet/vehicles/${id}/status`, { body: { status: from } });
      assert.equal(res.statusCode, 200, res.body);
    }
  }

  for (const from of VEHICLE_STATUSES) {
    for (const to of VEHICLE_STATUSES) {
      const allowed = TRANSITIONS[from].includes(to);
      const same = from === to;
      const expectation = same ? '200, a no-op' : allowed ? '200' : '409';
      test(`${from} → ${to}: ${expectation}`, async () => {
        const id = `t-${from}-${to}`;
        await vehicleIn(from, id);
        const before = (await ctx.request('GET', `/v2/fleet/vehicles/${id}/status-history`)).json();
        const res = await ctx.request('PUT', `/v2/fleet/vehicles/${id}/status`, { body: { status: to, reason: 'test' } });
        const history = (await ctx.request('GET', `/v2/fleet/vehicles/${id}/status-history`)).json();
        const current = (await ctx.request('GET', `/v2/fleet/vehicles/${id}`)).json();
        if (same || allowed) {
          assert.equal(res.statusCode, 200, res.body);
          assert.equal(res.json().status, to);
          assert.equal(current.status, to);
          assert.equal(history.total, before.total + (same ? 0 : 1));
          if (!same) assert.deepEqual({ ...history.history[0], at: undefined, by: undefined }, { from, to, reason: 'test', at: undefined, by: undefined });
        } else {
          const problem = assertProblem(res, 409, 'invalid-status-transition');
          assert.match(problem.detail, new RegExp(`"${from}".*"${to}"`));
          assert.equal(current.status, from);
          assert.deepEqual(history, before);
        }
      });
    }
  }

  test('the table is the contract\'s', () => {
    assert.deepEqual(TRANSITIONS, {
      registered: ['active', 'inactive', 'maintenance', 'retired'],
      active: ['inactive', 'maintenance', 'retired'],
      inactive: ['active', 'maintenance', 'retired'],
      maintenance: ['active', 'inactive', 'retired'],
      retired: [],
    });
  });

  test('a change updates statusChangedAt and updatedAt, and is answered with the details', async () => {
    const created = await ctx.registerVehicle('ts-1');
    await new Promise((r) => setTimeout(r, 5));
    const res = await ctx.request('PUT', '/v2/fleet/vehicles/ts-1/status', { body: { status: 'inactive' } });
    const body = res.json();
    assert.equal(body.createdAt, created.createdAt);
    assert.ok(body.statusChangedAt > created.statusChangedAt);
    assert.equal(body.updatedAt, body.statusChangedAt);
    assert.deepEqual(Object.keys(body).sort(), Object.keys(created).sort());
  });

  test('bad bodies are refused: unknown status, long reason, extra fields, missing status', async () => {
    await ctx.registerVehicle('sb-1');
    for (const body of [{ status: 'flying' }, { status: 'active', reason: 'x'.repeat(501) }, { status: 'active', by: 'me' }, {}, { status: 1 }]) {
      assertProblem(await ctx.request('PUT', '/v2/fleet/vehicles/sb-1/status', { body }), 400, 'validation-failed');
    }
    assert.equal((await ctx.request('PUT', '/v2/fleet/vehicles/sb-1/status', { body: { status: 'active', reason: 'x'.repeat(500) } })).statusCode, 200);
  });

  test('an unknown vehicle answers 404', async () => {
    assertProblem(await ctx.request('PUT', '/v2/fleet/vehicles/nope/status', { body: { status: 'active' } }), 404, 'vehicle-not-found');
    assertProblem(await ctx.request('GET', '/v2/fleet/vehicles/nope/status-history'), 404, 'vehicle-not-found');
  });

  test('concurrent changes never skip the table: exactly one of two racing retire→ and →active wins consistently', async () => {
    await ctx.registerVehicle('race-1');
    const results = await Promise.all([
      ctx.request('PUT', '/v2/fleet/vehicles/race-1/status', { body: { status: 'retired' } }),
      ctx.request('PUT', '/v2/fleet/vehicles/race-1/status', { body: { status: 'active' } }),
    ]);
    const history = (await ctx.request('GET', '/v2/fleet/vehicles/race-1/status-history')).json().history;
    // Each recorded change must be a legal step from the one before it.
    for (let i = history.length - 1; i > 0; i--) {
      const older = history[i];
      const newer = history[i - 1];
      assert.equal(newer.from, older.to);
      assert.ok(TRANSITIONS[older.to as VehicleStatus].includes(newer.to), `${older.to} → ${newer.to}`);
    }
    assert.ok(results.every((r) => r.statusCode === 200 || r.statusCode === 409));
  });
});

describe('status history', () => {
  test('lists every change newest first with from, to, reason, at and by', async () => {
    await ctx.registerVehicle('hist-1');
    for (const [status, reason] of [['active', 'in service'], ['maintenance', 'brakes'], ['active', undefined]] as const) {
      await ctx.request('PUT', '/v2/fleet/vehicles/hist-1/status', { body: reason === undefined ? { status } : { status, reason } });
    }
    const res = await ctx.request('GET', '/v2/fleet/vehicles/hist-1/status-history');
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.vehicleId, 'hist-1');
    assert.equal(body.total, 4);
    assert.deepEqual(
      body.history.map((e: { from: string; to: string; reason: string }) => [e.from, e.to, e.reason]),
      [['maintenance', 'active', null], ['active', 'maintenance', 'brakes'], ['registered', 'active', 'in service'], [null, 'registered', null]],
    );
    const times = body.history.map((e: { at: string }) => e.at);
    assert.deepEqual([...times].sort().reverse(), times);
    assert.ok(body.history.every((e: { by: string }) => /^key_/.test(e.by)));

    const page = (await ctx.request('GET', '/v2/fleet/vehicles/hist-1/status-history?limit=2&offset=1')).json();
    assert.deepEqual(page.history, body.history.slice(1, 3));
    assert.equal(page.total, 4);
  });

  test('the credential that made a change is recorded as `by`', async () => {
    const writer = await ctx.keyWith(['fleet:write', 'fleet:read']);
    await ctx.registerVehicle('hist-2');
    await ctx.request('PUT', '/v2/fleet/vehicles/hist-2/status', { body: { status: 'inactive' }, key: writer });
    const [latest, first] = (await ctx.request('GET', '/v2/fleet/vehicles/hist-2/status-history')).json().history;
    assert.notEqual(latest.by, first.by);
  });
});

describe('list, pagination and filters', () => {
  let list: TestApp;
  const ids = ['p-07', 'p-03', 'p-10', 'p-01', 'p-05', 'p-02', 'p-09', 'p-04', 'p-08', 'p-06'];
  before(async () => {
    list = await createTestApp();
    for (const [i, id] of ids.entries()) {
      await list.registerVehicle(id, { type: i % 2 === 0 ? 'van' : 'bus' });
    }
    await list.request('PUT', '/v2/fleet/vehicles/p-01/status', { body: { status: 'active' } });
    await list.request('PUT', '/v2/fleet/vehicles/p-02/status', { body: { status: 'maintenance' } });
    await list.request('PUT', '/v2/fleet/vehicles/p-03/status', { body: { status: 'active' } });
  });
  after(() => list.close());

  const get = async (query: string) => list.request('GET', `/v2/fleet/vehicles${query}`);

  test('defaults: limit 50, offset 0, ordered by id, with total', async () => {
    const body = (await get('')).json();
    assert.equal(body.limit, 50);
    assert.equal(body.offset, 0);
    assert.equal(body.total, 10);
    assert.deepEqual(body.vehicles.map((v: { id: string }) => v.id), [...ids].sort());
    assert.deepEqual(Object.keys(body.vehicles[0]).sort(), ['battery', 'groupIds', 'id', 'lastUpdate', 'location', 'name', 'status', 'type']);
  });

  test('pages are stable and disjoint, and cover the list', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 10; offset += 3) {
      const body = (await get(`?limit=3&offset=${offset}`)).json();
      assert.equal(body.total, 10);
      assert.equal(body.limit, 3);
      assert.equal(body.offset, offset);
      seen.push(...body.vehicles.map((v: { id: string }) => v.id));
    }
    assert.deepEqual(seen, [...ids].sort());
  });

  test('an offset past the end gives an empty page with the true total', async () => {
    const body = (await get('?offset=500')).json();
    assert.deepEqual(body.vehicles, []);
    assert.equal(body.total, 10);
  });

  test('the maximum limit is 1000', async () => {
    assert.equal((await get('?limit=1000')).statusCode, 200);
    assertProblem(await get('?limit=1001'), 400, 'validation-failed');
  });

  for (const query of ['?limit=0', '?limit=-1', '?limit=abc', '?limit=1.5', '?limit=', '?offset=-1', '?offset=x', '?limit=1&limit=2', '?status=flying', '?status=active,', '?type=boat', '?sort=id']) {
    test(`malformed or out-of-range ${query} answers 400, never a silent clamp`, async () => {
      const problem = assertProblem(await get(query), 400, 'validation-failed');
      assert.ok(problem.errors.every((e: { in: string }) => e.in === 'query'));
    });
  }

  test('filters by one status, by several, by type, and both; total follows the filter', async () => {
    const idsOf = (body: { vehicles: { id: string }[] }) => body.vehicles.map((v) => v.id);
    const active = (await get('?status=active')).json();
    assert.deepEqual(idsOf(active), ['p-01', 'p-03']);
    assert.equal(active.total, 2);
    const two = (await get('?status=active,maintenance')).json();
    assert.deepEqual(idsOf(two), ['p-01', 'p-02', 'p-03']);
    const buses = (await get('?type=bus')).json();
    assert.equal(buses.total, 5);
    assert.ok(buses.vehicles.every((v: { type: string }) => v.type === 'bus'));
    // The vans are ids[0,2,4,6,8], all still registered; the status changes above were buses.
    const both = (await get('?type=van&status=registered,active&limit=1')).json();
    assert.deepEqual(idsOf(both), ['p-05']);
    assert.equal(both.total, 5);
  });
});

describe('delete', () => {
  test('answers 204, then the vehicle and its history are gone', async () => {
    await ctx.registerVehicle('del-1');
    const res = await ctx.request('DELETE', '/v2/fleet/vehicles/del-1');
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    assertProblem(await ctx.request('GET', '/v2/fleet/vehicles/del-1'), 404, 'vehicle-not-found');
    assertProblem(await ctx.request('GET', '/v2/fleet/vehicles/del-1/status-history'), 404, 'vehicle-not-found');
    assertProblem(await ctx.request('DELETE', '/v2/fleet/vehicles/del-1'), 404, 'vehicle-not-found');
    // The id is free again, with a fresh history.
    await ctx.registerVehicle('del-1');
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/del-1/status-history')).json().total, 1);
  });
});

describe('/api/v1', () => {
  test('list, register, read and change status with the same representations as /v2', async () => {
    const created = await ctx.request('POST', '/api/v1/fleet', { body: { vehicleId: 'v1-1', type: 'truck' } });
    assert.equal(created.statusCode, 201);
    assert.equal(created.headers.location, '/api/v1/vehicles/v1-1');
    const v1 = (await ctx.request('GET', '/api/v1/vehicles/v1-1')).json();
    const v2 = (await ctx.request('GET', '/v2/fleet/vehicles/v1-1')).json();
    assert.deepEqual(v1, v2);
    assert.deepEqual(created.json(), v2);
    const changed = await ctx.request('PUT', '/api/v1/vehicles/v1-1/status', { body: { status: 'active' } });
    assert.equal(changed.statusCode, 200);
    assert.equal(changed.json().status, 'active');
    const v1List = (await ctx.request('GET', '/api/v1/fleet?limit=1000')).json();
    const v2List = (await ctx.request('GET', '/v2/fleet/vehicles?limit=1000')).json();
    assert.deepEqual(v1List, v2List);
  });

  const cases: [string, string, unknown, string][] = [
    ['GET', '/api/v1/fleet', undefined, '/v2/fleet/vehicles'],
    ['POST', '/api/v1/fleet', { vehicleId: 'v1-2', type: 'van' }, '/v2/fleet/vehicles'],
    ['GET', '/api/v1/vehicles/v1-2', undefined, '/v2/fleet/vehicles/v1-2'],
    ['PUT', '/api/v1/vehicles/v1-2/status', { status: 'inactive' }, '/v2/fleet/vehicles/v1-2/status'],
    ['GET', '/api/v1/vehicles/missing', undefined, '/v2/fleet/vehicles/missing'],
    ['PUT', '/api/v1/vehicles/v1-2/status', { status: 'bogus' }, '/v2/fleet/vehicles/v1-2/status'],
  ];
  for (const [method, url, body, successor] of cases) {
    test(`${method} ${url} carries Deprecation, Sunset and the successor Link, errors included`, async () => {
      const res = await ctx.request(method, url, body === undefined ? {} : { body });
      assert.match(String(res.headers.deprecation), /^@\d+$/);
      assert.ok(!Number.isNaN(Date.parse(String(res.headers.sunset))));
      assert.ok(Date.parse(String(res.headers.sunset)) > Number(String(res.headers.deprecation).slice(1)) * 1000);
      assert.equal(res.headers.link, `<${successor}>; rel="successor-version"`);
    });
  }

  test('/v2 responses carry no deprecation headers', async () => {
    const res = await ctx.request('GET', '/v2/fleet/vehicles');
    assert.equal(res.headers.deprecation, undefined);
    assert.equal(res.headers.sunset, undefined);
  });
});

describe('HTTP errors', () => {
  test('unknown route: 404 problem', async () => {
    assertProblem(await ctx.request('GET', '/v2/nothing-here'), 404, 'route-not-found');
    assertProblem(await ctx.request('GET', '/v2/nothing-here', { key: null }), 404, 'route-not-found');
  });

  test('wrong method on a known path: 405 with Allow', async () => {
    const res = await ctx.request('POST', '/v2/fleet/vehicles/x');
    assertProblem(res, 405, 'method-not-allowed');
    assert.deepEqual(String(res.headers.allow).split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'PATCH']);
    const collection = await ctx.request('DELETE', '/v2/fleet/vehicles');
    assertProblem(collection, 405, 'method-not-allowed');
    assert.deepEqual(String(collection.headers.allow).split(', ').sort(), ['GET', 'HEAD', 'POST']);
  });

  test('malformed JSON: 400', async () => {
    assertProblem(await ctx.request('POST', '/v2/fleet/vehicles', { body: '{"vehicleId": "a",' }), 400, 'malformed-json');
    assertProblem(await ctx.request('POST', '/v2/fleet/vehicles', { body: '', headers: { 'content-type': 'application/json' } }), 400, 'malformed-json');
  });

  test('prototype pollution attempts are refused', async () => {
    const res = await ctx.request('POST', '/v2/fleet/vehicles', { body: '{"vehicleId":"pp","type":"van","__proto__":{"admin":true}}' });
    assert.equal(res.statusCode, 400);
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/pp')).statusCode, 404);
  });

  test('a body that is not JSON: 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      assertProblem(
        await ctx.request('POST', '/v2/fleet/vehicles', { body: 'vehicleId=a&type=van', headers: { 'content-type': type } }),
        415,
        'unsupported-media-type',
      );
    }
  });

  test('a body over 1 MiB: 413, and nothing stored', async () => {
    const body = JSON.stringify({ vehicleId: 'big-1', type: 'van', configuration: { sensors: ['x'.repeat(1024 * 1024)] } });
    assertProblem(await ctx.request('POST', '/v2/fleet/vehicles', { body }), 413, 'payload-too-large');
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/big-1')).statusCode, 404);
  });

  test('a bad path parameter: 400', async () => {
    const problem = assertProblem(await ctx.request('GET', `/v2/fleet/vehicles/${'a'.repeat(65)}`), 400, 'validation-failed');
    assert.equal(problem.errors[0].in, 'path');
  });

  test('every response carries X-Request-Id; a sane caller id is kept', async () => {
    const res = await ctx.request('GET', '/v2/fleet/vehicles', { headers: { 'x-request-id': 'trace-123' } });
    assert.equal(res.headers['x-request-id'], 'trace-123');
    const generated = await ctx.request('GET', '/v2/fleet/vehicles', { headers: { 'x-request-id': 'bad id with spaces' } });
    assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const problem = await ctx.request('GET', '/v2/fleet/vehicles/nope');
    assert.equal(problem.json().requestId, problem.headers['x-request-id']);
  });

  test('a 500 carries no internal detail, and /readyz reports the store down', async () => {
    const broken = await createTestApp();
    try {
      await broken.stores.close();
      const res = await broken.request('GET', '/v2/fleet/vehicles/anything', { key: broken.adminKey });
      // Authentication itself needs the store, so the very first query fails.
      const problem = assertProblem(res, 500, 'internal-error');
      assert.doesNotMatch(res.body, /sqlite|database|stack|at \w+ \(/i);
      assert.ok(problem.detail.includes(problem.requestId));
      const ready = await broken.request('GET', '/readyz', { key: null });
      assertProblem(ready, 503, 'service-unavailable');
      assert.ok(ready.headers['retry-after']);
    } finally {
      await broken.app.close();
    }
  });
});

describe('health', () => {
  test('/healthz and /readyz answer without credentials', async () => {
    assert.deepEqual((await ctx.request('GET', '/healthz', { key: null })).json(), { status: 'ok' });
    assert.deepEqual((await ctx.request('GET', '/readyz', { key: null })).json(), { status: 'ready', checks: { store: 'up', mqtt: 'disabled', osmand: 'disabled', teltonika: 'disabled', cluster: 'disabled' } });
  });

  test('/metrics counts requests by route pattern, method and status', async () => {
    await ctx.request('GET', '/v2/fleet/vehicles/metric-probe');
    const res = await ctx.request('GET', '/metrics');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(res.body, /fleet_http_requests_total\{method="GET",route="\/v2\/fleet\/vehicles\/:id",status_code="404"\} \d+/);
    assert.match(res.body, /fleet_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/v2\/fleet\/vehicles\/:id",status_code="404"\}/);
    assert.doesNotMatch(res.body, /metric-probe/);
  });
});
