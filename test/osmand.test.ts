// OsmAnd over HTTP (docs/API.md "Devices and protocols"): /osmand on the main port and the root of
// the OsmAnd port, through the whole stack, into the same telemetry as every other path.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { captureLogs } from './helpers/logs.ts';
import { createTestApp, manualClock, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';

const clock = manualClock(Date.parse('2026-11-22T08:00:00.000Z'));
let ctx: TestApp;
let port: number;
before(async () => {
  port = await freePort();
  ctx = await createTestApp({ clock, env: { FLEET_OSMAND_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1' } });
});
after(() => ctx.close());

const seconds = (offset: number) => String(Math.floor(clock.now() / 1000) + offset);

async function device(vehicleId: string, identifier: string) {
  await ctx.registerVehicle(vehicleId);
  const res = await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier, vehicleId } });
  assert.equal(res.statusCode, 201, res.body);
}

const osmand = (method: 'GET' | 'POST', query: Record<string, string>, body?: string, headers?: Record<string, string>) =>
  ctx.request(method, '/osmand', { key: null, query, ...(body === undefined ? {} : { body, headers }) });

async function history(vehicleId: string) {
  return (await ctx.request('GET', `/v2/telemetry/${vehicleId}/history`)).json().records as Array<{ timestamp: string; data: Record<string, unknown> }>;
}

describe('/osmand on the main port', () => {
  test('GET with query parameters: 200 once committed, converted, and the vehicle activated', async () => {
    await device('o-1', 'phone-o1');
    const res = await osmand('GET', { id: 'phone-o1', lat: '52.52', lon: '13.405', timestamp: seconds(-60), speed: '10', bearing: '90', batt: '80', altitude: '34' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { accepted: 1, duplicates: 0 });
    assert.equal(res.headers['www-authenticate'], undefined);
    const latest = (await ctx.request('GET', '/v2/telemetry/o-1')).json();
    assert.deepEqual(latest, {
      vehicleId: 'o-1', timestamp: new Date(clock.now() - 60_000).toISOString(),
      data: { location: { lat: 52.52, lng: 13.405 }, speed: 18.52, heading: 90, battery: 80, diagnostics: { altitude: 34 } },
    });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/o-1')).json().status, 'active');
    const again = await osmand('GET', { id: 'phone-o1', lat: '52.52', lon: '13.405', timestamp: seconds(-60) });
    assert.deepEqual(again.json(), { accepted: 0, duplicates: 1 }, 'a resent report is a duplicate');
  });

  test('POST with a form body, or parameters in the query and no body; no timestamp means the time received', async () => {
    await device('o-2', 'phone-o2');
    const form = await osmand('POST', {}, `id=phone-o2&lat=1.5&lon=2.5&timestamp=${seconds(-30)}`, { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(form.statusCode, 200, form.body);
    const bare = await ctx.request('POST', '/osmand', { key: null, query: { id: 'phone-o2', lat: '1.6', lon: '2.6' } });
    assert.equal(bare.statusCode, 200, bare.body);
    const records = await history('o-2');
    assert.deepEqual(records.map((r) => [r.timestamp, r.data.location]), [
      [new Date(clock.now() - 30_000).toISOString(), { lat: 1.5, lng: 2.5 }],
      [new Date(clock.now()).toISOString(), { lat: 1.6, lng: 2.6 }],
    ]);
    const clash = await osmand('POST', { id: 'phone-o2' }, 'id=phone-o2&lat=1&lon=1', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(clash.statusCode, 400);
  });

  test('POST with Traccar Client 9 JSON: m/s, level and odometer converted', async () => {
    await device('o-3', 'phone-o3');
    const body = JSON.stringify({
      device_id: 'phone-o3',
      location: {
        timestamp: new Date(clock.now() - 10_000).toISOString(), odometer: 1500,
        coords: { latitude: 48.85, longitude: 2.35, speed: 5, heading: 180, accuracy: 3 }, battery: { level: 0.5, is_charging: true },
        activity: { type: 'still' },
      },
    });
    const res = await osmand('POST', {}, body);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual((await history('o-3'))[0]!.data, {
      location: { lat: 48.85, lng: 2.35 }, speed: 18, heading: 180, battery: 50, odometer: 1.5, diagnostics: { accuracy: 3, is_charging: true },
    });
  });

  test('refusals store nothing: 400 invalid, 404 unknown identifier (or another protocol\'s), 409 retired, 415 other bodies', async () => {
    await device('o-4', 'phone-o4');
    const invalid = await osmand('GET', { id: 'phone-o4', lat: 'x', lon: '1' });
    assert.equal(invalid.statusCode, 400);
    assert.equal(invalid.json().code, 'validation-failed');
    assert.deepEqual(invalid.json().errors, [{ in: 'query', path: '/lat', message: 'must be a finite number' }]);
    const tooFast = await osmand('GET', { id: 'phone-o4', speed: '700' });
    assert.equal(tooFast.statusCode, 400, '1296 km/h is out of range');
    const future = await osmand('GET', { id: 'phone-o4', speed: '1', timestamp: seconds(3600) });
    assert.equal(future.statusCode, 400);
    for (const timestamp of ['2026-02-29T00:00:00Z', '2026-11-22T07:00:00']) {
      const res = await osmand('GET', { id: 'phone-o4', lat: '1', lon: '1', timestamp });
      assert.equal(res.statusCode, 400, `${timestamp}: not a real date, or no zone`);
      assert.deepEqual(res.json().errors, [{ in: 'query', path: '/timestamp', message: 'must be Unix seconds, Unix milliseconds or ISO 8601' }]);
    }
    const unknown = await osmand('GET', { id: 'nobody', lat: '1', lon: '1' });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().code, 'device-not-found');
    await ctx.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: '111111111111111', vehicleId: 'o-4' } });
    assert.equal((await osmand('GET', { id: '111111111111111', lat: '1', lon: '1' })).statusCode, 404, 'identifiers are per protocol');
    assert.equal((await osmand('POST', { id: 'phone-o4' }, 'lat=1', { 'content-type': 'text/plain' })).statusCode, 415);
    assert.equal((await history('o-4')).length, 0);
    await ctx.request('PUT', '/v2/fleet/vehicles/o-4/status', { body: { status: 'retired' } });
    const retired = await osmand('GET', { id: 'phone-o4', lat: '1', lon: '1' });
    assert.equal(retired.statusCode, 409);
    assert.equal(retired.json().code, 'vehicle-retired');
    assert.equal((await history('o-4')).length, 0);
  });

  test('records are counted by source in the metrics', async () => {
    await device('o-5', 'phone-o5');
    await osmand('GET', { id: 'phone-o5', speed: '1', timestamp: seconds(-5) });
    await osmand('GET', { id: 'phone-o5', speed: '1', timestamp: seconds(-5) });
    await ctx.request('POST', '/v2/telemetry/o-5', { body: { data: { speed: 2 } } });
    const text = (await ctx.request('GET', '/metrics')).body;
    const value = (labels: string) => Number(new RegExp(`fleet_telemetry_records_total\\{${labels}\\} (\\d+)`).exec(text)?.[1]);
    assert.ok(value('source="osmand",outcome="accepted"') >= 1);
    assert.ok(value('source="osmand",outcome="duplicate"') >= 1);
    assert.ok(value('source="http",outcome="accepted"') >= 1);
    assert.equal(value('source="teltonika",outcome="accepted"'), 0);
  });
});

describe('the OsmAnd port', () => {
  test('GET and POST on the root path over real HTTP with keep-alive; /readyz says up', async () => {
    await device('p-1', 'phone-p1');
    const base = `http://127.0.0.1:${port}`;
    const get = await fetch(`${base}/?id=phone-p1&lat=10&lon=20&timestamp=${seconds(-20)}`);
    assert.equal(get.status, 200, await get.clone().text());
    assert.deepEqual(await get.json(), { accepted: 1, duplicates: 0 });
    const post = await fetch(base, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `id=phone-p1&lat=11&lon=21&timestamp=${seconds(-10)}`,
    });
    assert.equal(post.status, 200);
    const unknown = await fetch(`${base}/?id=nobody&lat=1&lon=1`);
    assert.equal(unknown.status, 404);
    assert.match(String(unknown.headers.get('content-type')), /^application\/problem\+json/);
    assert.equal((await fetch(`${base}/v2/fleet/vehicles`)).status, 404, 'the API is not served there');
    assert.equal((await history('p-1')).length, 2);
    assert.equal((await ctx.request('GET', '/readyz', { key: null })).json().checks.osmand, 'up');
  });

  test('a taken port: a warning, /readyz degraded, /osmand on the main port still works', async (t) => {
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => squatter.close(() => resolve())));
    const taken = (squatter.address() as net.AddressInfo).port;
    const logs = captureLogs('debug');
    const app = await createTestApp({ logger: logs.logger, env: { FLEET_OSMAND_PORT: String(taken), FLEET_PROTOCOLS_HOST: '127.0.0.1' } });
    t.after(() => app.close());
    assert.ok(logs.lines().some((l) => l.level === 40 && String(l.msg).includes(`OsmAnd listener not started: port ${taken} on 127.0.0.1 is in use`)));
    const ready = await app.request('GET', '/readyz', { key: null });
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().status, 'degraded');
    assert.equal(ready.json().checks.osmand, `degraded: port ${taken} on 127.0.0.1 is in use; OsmAnd port ingestion is off`);
    await app.registerVehicle('still');
    await app.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'still-phone', vehicleId: 'still' } });
    assert.equal((await app.request('GET', '/osmand', { key: null, query: { id: 'still-phone', speed: '3' } })).statusCode, 200);
  });
});
