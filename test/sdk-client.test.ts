// The SDK (sdk/) against a running service on a real port: typed calls with the credential sent,
// problems as errors, and the paging iterators walking more than one page of each paging shape.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FleetApiError, createFleetClient, ok, type FleetClient, type FleetEvent, type Vehicle } from '../sdk/src/index.ts';
import { createStreamApp, type StreamApp } from './helpers/streams.ts';

let ctx: StreamApp;
let fleet: FleetClient;

before(async () => {
  ctx = await createStreamApp();
  fleet = createFleetClient({ baseUrl: ctx.publicUrl, apiKey: ctx.adminKey });
});
after(() => ctx.close());

describe('typed calls', () => {
  test('register, read, patch, change status, send telemetry, read it back, delete', async () => {
    const created = await fleet.POST('/v2/fleet/vehicles', {
      body: { vehicleId: 'sdk-van-1', type: 'van', configuration: { sensors: ['gps'], capacity: 8 } },
    });
    assert.equal(created.response.status, 201, JSON.stringify(created.error));
    assert.equal(created.response.headers.get('location'), '/v2/fleet/vehicles/sdk-van-1');
    const vehicle: Vehicle = ok(created);
    assert.equal(vehicle.status, 'registered');

    const patched = ok(await fleet.PATCH('/v2/fleet/vehicles/{id}', {
      params: { path: { id: 'sdk-van-1' } }, body: { name: 'Van one', configuration: { capacity: 6 } },
    }));
    assert.equal(patched.name, 'Van one');
    assert.equal(patched.configuration.capacity, 6);

    const accepted = ok(await fleet.POST('/v2/telemetry/{vehicleId}', {
      params: { path: { vehicleId: 'sdk-van-1' } },
      body: { timestamp: '2026-11-25T08:00:00.000Z', data: { location: { lat: 52.52, lng: 13.405 }, speed: 30, battery: 80 } },
    }));
    assert.deepEqual(accepted, { accepted: 1, duplicates: 0 });
    const latest = ok(await fleet.GET('/v2/telemetry/{vehicleId}', { params: { path: { vehicleId: 'sdk-van-1' }, query: { fields: 'battery' } } }));
    assert.deepEqual(latest.data, { battery: 80 });

    const active = ok(await fleet.GET('/v2/fleet/vehicles/{id}', { params: { path: { id: 'sdk-van-1' } } }));
    assert.equal(active.status, 'active', 'the first telemetry activates');
    const changed = ok(await fleet.PUT('/v2/fleet/vehicles/{id}/status', {
      params: { path: { id: 'sdk-van-1' } }, body: { status: 'maintenance', reason: 'brakes' },
    }));
    assert.equal(changed.status, 'maintenance');

    const deleted = await fleet.DELETE('/v2/fleet/vehicles/{id}', { params: { path: { id: 'sdk-van-1' } } });
    assert.equal(deleted.response.status, 204);
    const gone = await fleet.GET('/v2/fleet/vehicles/{id}', { params: { path: { id: 'sdk-van-1' } } });
    assert.equal(gone.response.status, 404);
    assert.equal(gone.error?.code, 'vehicle-not-found', 'errors are typed problems');
    assert.throws(() => ok(gone), (error: unknown) => error instanceof FleetApiError && error.status === 404 && error.problem?.code === 'vehicle-not-found');
  });

  test('the credential goes on every request: a wrong key is refused, a token function is asked each time', async () => {
    const wrong = createFleetClient({ baseUrl: ctx.publicUrl, apiKey: 'fleet_nope' });
    const refused = await wrong.GET('/v2/fleet/vehicles', {});
    assert.equal(refused.response.status, 401);
    let asked = 0;
    const withToken = createFleetClient({ baseUrl: ctx.publicUrl, token: () => (asked++, ctx.adminKey) });
    ok(await withToken.GET('/v2/fleet/vehicles', {}));
    ok(await withToken.GET('/v2/fleet/vehicles', {}));
    assert.equal(asked, 2);
    assert.throws(() => createFleetClient({ baseUrl: ctx.publicUrl }), TypeError);
  });

  test('an OAuth access token from the client-credentials grant works as the credential', async () => {
    const oauthClient = ok(await fleet.POST('/v2/oauth-clients', { body: { name: 'sdk test', scopes: ['fleet:read'] } }));
    let issued = 0;
    const accessToken = async () => {
      const res = await fetch(`${ctx.publicUrl}/oauth/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${btoa(`${oauthClient.id}:${oauthClient.clientSecret}`)}` },
        body: new URLSearchParams({ grant_type: 'client_credentials' }),
      });
      assert.equal(res.status, 200);
      issued++;
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const withOAuth = createFleetClient({ baseUrl: ctx.publicUrl, token: await accessToken() });
    assert.equal((await withOAuth.GET('/v2/fleet/vehicles', {})).response.status, 200);
    const refused = await withOAuth.POST('/v2/fleet/vehicles', { body: { vehicleId: 'oauth-van', type: 'van' } });
    assert.equal(refused.response.status, 403, 'the token has fleet:read only');
    assert.equal(refused.error?.code, 'insufficient-scope');
    assert.equal(issued, 1);
  });

  test('validation failures come back as problems with their errors', async () => {
    const bad = await fleet.POST('/v2/fleet/vehicles', { body: { vehicleId: 'x', type: 'spaceship' as 'van' } });
    assert.equal(bad.response.status, 400);
    assert.equal(bad.error?.code, 'validation-failed');
    assert.ok(Array.isArray(bad.error?.errors) && bad.error.errors.length > 0);
  });
});

describe('paging iterators', () => {
  before(async () => {
    for (let i = 0; i < 7; i++) await ctx.registerVehicle(`page-${i}`, { type: i % 2 === 0 ? 'van' : 'car' });
  });

  test('offset lists: every vehicle once, in id order, over several pages', async () => {
    const requests: string[] = [];
    const counting = createFleetClient({
      baseUrl: ctx.publicUrl, apiKey: ctx.adminKey,
      fetch: (request, init) => (requests.push(request.url), fetch(request, init)),
    });
    const ids: string[] = [];
    for await (const vehicle of counting.paginate.vehicles({ limit: 2 })) ids.push(vehicle.id);
    const all = ok(await fleet.GET('/v2/fleet/vehicles', { params: { query: { limit: 1000 } } })).vehicles.map((v) => v.id);
    assert.deepEqual(ids, all);
    assert.ok(ids.length >= 7);
    assert.equal(requests.length, Math.ceil(all.length / 2), requests.join('\n'));
    const vans: string[] = [];
    for await (const vehicle of fleet.paginate.vehicles({ type: 'van', limit: 3 })) vans.push(vehicle.id);
    assert.deepEqual(vans, all.filter((id) => ['page-0', 'page-2', 'page-4', 'page-6'].includes(id)));
  });

  test('breaking out of the loop stops asking for pages', async () => {
    const requests: string[] = [];
    const counting = createFleetClient({
      baseUrl: ctx.publicUrl, apiKey: ctx.adminKey,
      fetch: (request, init) => (requests.push(request.url), fetch(request, init)),
    });
    const seen: string[] = [];
    for await (const vehicle of counting.paginate.vehicles({ limit: 2 })) if (seen.push(vehicle.id) === 3) break;
    assert.equal(requests.length, 2);
  });

  test('cursor lists: telemetry history in time order across pages', async () => {
    const base = Date.parse('2026-11-25T07:00:00.000Z');
    const records = Array.from({ length: 25 }, (_, i) => ({ timestamp: new Date(base + i * 1000).toISOString(), data: { speed: i } }));
    ok(await fleet.POST('/v2/telemetry/{vehicleId}', { params: { path: { vehicleId: 'page-0' } }, body: { records } }));
    const speeds: number[] = [];
    for await (const record of fleet.paginate.history('page-0', { limit: 10 })) speeds.push(record.data.speed!);
    assert.deepEqual(speeds, records.map((r) => r.data.speed));
  });

  test('the event feed: pages up to now, then following it as it grows', async () => {
    const seen: FleetEvent[] = [];
    let next: string | undefined;
    let pages = 0;
    for await (const page of fleet.events.pages({ limit: 3 })) {
      seen.push(...page.events);
      next = page.next;
      pages++;
    }
    assert.ok(pages >= 3, `${pages} pages`);
    const registered = seen.filter((e) => e.type === 'vehicle.registered').map((e) => e.vehicleId);
    for (let i = 0; i < 7; i++) assert.ok(registered.includes(`page-${i}`));
    assert.equal(new Set(seen.map((e) => e.id)).size, seen.length, 'no event twice');

    // Following from where the pages ended: only what happens next, each once.
    const controller = new AbortController();
    const followed: FleetEvent[] = [];
    const following = (async () => {
      for await (const page of fleet.events.follow({ after: next!, pollIntervalMs: 50, signal: controller.signal })) {
        followed.push(...page.events);
        if (followed.length >= 2) controller.abort();
      }
    })();
    await ctx.registerVehicle('late-1');
    await ctx.registerVehicle('late-2');
    await following;
    assert.deepEqual(followed.map((e) => [e.type, e.vehicleId]), [['vehicle.registered', 'late-1'], ['vehicle.registered', 'late-2']]);
  });

  test('alerts and webhook deliveries page by cursor too', async () => {
    const webhook = ok(await fleet.POST('/v2/webhooks', { body: { url: 'https://hooks.example.com/fleet', eventTypes: ['*'], enabled: false } }));
    for (let i = 0; i < 5; i++) ok(await fleet.POST('/v2/webhooks/{id}/test', { params: { path: { id: webhook.id } } }));
    const deliveries: string[] = [];
    for await (const delivery of fleet.paginate.deliveries(webhook.id, { limit: 2 })) deliveries.push(delivery.id);
    assert.equal(deliveries.length, 5);
    assert.equal(new Set(deliveries).size, 5);

    const rule = ok(await fleet.POST('/v2/alert-rules', {
      body: { name: 'Fast', condition: { kind: 'threshold', field: 'speed', op: '>', value: 90, forSeconds: 0 } },
    }));
    const speeding = ['page-1', 'page-2', 'page-3', 'page-4', 'page-5'];
    ok(await fleet.POST('/v2/telemetry', {
      body: { records: speeding.map((vehicleId) => ({ vehicleId, timestamp: '2026-11-25T09:00:00.000Z', data: { speed: 120 } })) },
    }));
    const alerts: string[] = [];
    for await (const alert of fleet.paginate.alerts({ ruleId: rule.id, limit: 2 })) {
      assert.equal(alert.status, 'open');
      alerts.push(alert.vehicleId);
    }
    assert.deepEqual(alerts.sort(), speeding);
  });
});
