// Devices (docs/API.md "Devices and protocols"): registration, uniqueness across organizations,
// isolation, paging, deletion (with the vehicle's), and the last-seen time kept without a write per report.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDeviceService } from '../src/devices/service.ts';
import { createTestApp, manualClock, type TestApp } from './helpers/app.ts';

const clock = manualClock(Date.parse('2026-11-22T08:00:00.000Z'));
let ctx: TestApp;
before(async () => {
  ctx = await createTestApp({ clock });
});
after(() => ctx.close());

const register = (body: Record<string, unknown>, key?: string) => ctx.request('POST', '/v2/devices', { body, key });

describe('registration', () => {
  test('201 with the device and its Location; readable there', async () => {
    await ctx.registerVehicle('d-1');
    const res = await register({ protocol: 'teltonika', identifier: '356307042441013', vehicleId: 'd-1' });
    assert.equal(res.statusCode, 201, res.body);
    const device = res.json();
    assert.match(device.id, /^dev_[A-Za-z0-9_-]{16}$/);
    assert.deepEqual(device, {
      id: device.id, protocol: 'teltonika', identifier: '356307042441013', vehicleId: 'd-1',
      createdAt: '2026-11-22T08:00:00.000Z', lastSeenAt: null,
    });
    assert.equal(res.headers.location, `/v2/devices/${device.id}`);
    const read = await ctx.request('GET', String(res.headers.location));
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), device);
  });

  test('an identifier is unique per protocol across organizations: 409 that does not say by whom', async () => {
    await ctx.registerVehicle('d-2');
    const other = await ctx.otherOrganization('Device rival');
    await ctx.registerVehicle('rival-1', {}, other.key);
    assert.equal((await register({ protocol: 'osmand', identifier: 'phone-77', vehicleId: 'd-2' })).statusCode, 201);
    const taken = await register({ protocol: 'osmand', identifier: 'phone-77', vehicleId: 'rival-1' }, other.key);
    assert.equal(taken.statusCode, 409);
    assert.equal(taken.json().code, 'device-exists');
    // The request's random id aside (its hex can spell "d-2"), nothing names the owner.
    const { requestId, ...said } = taken.json<Record<string, unknown>>();
    assert.equal(typeof requestId, 'string');
    assert.doesNotMatch(JSON.stringify(said), new RegExp(`${ctx.organizationId}|d-2|dev_`));
    assert.equal((await register({ protocol: 'teltonika', identifier: '123456789012345', vehicleId: 'rival-1' }, other.key)).statusCode, 201);
    const sameOtherProtocol = await register({ protocol: 'osmand', identifier: '123456789012345', vehicleId: 'd-2' });
    assert.equal(sameOtherProtocol.statusCode, 201, 'identifiers are per protocol');
  });

  test('400 for a Teltonika identifier that is not a 15-digit IMEI, bad fields or unknown ones; 404 for an unknown vehicle', async () => {
    await ctx.registerVehicle('d-3');
    for (const identifier of ['35630704244101', '3563070424410133', 'phone-1']) {
      const res = await register({ protocol: 'teltonika', identifier, vehicleId: 'd-3' });
      assert.equal(res.statusCode, 400, identifier);
      assert.equal(res.json().errors[0].path, '/identifier');
    }
    for (const body of [
      { protocol: 'gt06', identifier: 'x', vehicleId: 'd-3' },
      { protocol: 'osmand', identifier: 'has space', vehicleId: 'd-3' },
      { protocol: 'osmand', identifier: 'ok', vehicleId: 'd-3', lastSeenAt: '2026-01-01T00:00:00.000Z' },
      { protocol: 'osmand', vehicleId: 'd-3' },
    ]) {
      assert.equal((await register(body)).statusCode, 400, JSON.stringify(body));
    }
    const unknown = await register({ protocol: 'osmand', identifier: 'phone-x', vehicleId: 'nowhere' });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().code, 'vehicle-not-found');
  });
});

describe('isolation, listing and deletion', () => {
  test('another organization\'s device answers 404 exactly like a missing one, and is not listed', async () => {
    await ctx.registerVehicle('d-4');
    const mine = (await register({ protocol: 'osmand', identifier: 'iso-phone', vehicleId: 'd-4' })).json();
    const other = await ctx.otherOrganization('Device outsider');
    await ctx.registerVehicle('d-4', {}, other.key);
    const ghost = 'dev_AAAAAAAAAAAAAAAA';
    for (const method of ['GET', 'DELETE'] as const) {
      const foreign = await ctx.request(method, `/v2/devices/${mine.id}`, { key: other.key });
      const missing = await ctx.request(method, `/v2/devices/${ghost}`, { key: other.key });
      assert.equal(foreign.statusCode, 404);
      assert.equal(foreign.json().code, 'device-not-found');
      assert.equal(foreign.json().detail.replace(mine.id, '<id>'), missing.json().detail.replace(ghost, '<id>'));
    }
    const list = (await ctx.request('GET', '/v2/devices', { key: other.key })).json();
    assert.deepEqual(list, { devices: [], total: 0, limit: 50, offset: 0 });
    // Registering for another organization's vehicle is a 404 too.
    const onForeign = await register({ protocol: 'osmand', identifier: 'sneaky', vehicleId: 'd-4' }, other.key);
    assert.equal(onForeign.statusCode, 201, 'its own d-4');
    assert.equal((await ctx.request('GET', `/v2/devices/${mine.id}`)).statusCode, 200, 'A\'s device untouched');
  });

  test('list: oldest first, paged with the true total, filtered by vehicle; limit is checked, never clamped', async () => {
    const other = await ctx.otherOrganization('Device lister');
    await ctx.registerVehicle('l-1', {}, other.key);
    await ctx.registerVehicle('l-2', {}, other.key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      const res = await register({ protocol: 'osmand', identifier: `lister-${i}`, vehicleId: i % 2 === 0 ? 'l-1' : 'l-2' }, other.key);
      ids.push(res.json().id);
    }
    const page = (await ctx.request('GET', '/v2/devices', { key: other.key, query: { limit: '2', offset: '1' } })).json();
    assert.deepEqual({ ids: page.devices.map((d: { id: string }) => d.id), total: page.total }, { ids: ids.slice(1, 3), total: 5 });
    const l1 = (await ctx.request('GET', '/v2/devices', { key: other.key, query: { vehicleId: 'l-1' } })).json();
    assert.deepEqual(l1.devices.map((d: { identifier: string }) => d.identifier), ['lister-0', 'lister-2', 'lister-4']);
    for (const limit of ['0', '1001', 'x']) {
      assert.equal((await ctx.request('GET', '/v2/devices', { key: other.key, query: { limit } })).statusCode, 400, limit);
    }
  });

  test('DELETE answers 204 and frees the identifier; deleting the vehicle deletes its devices', async () => {
    await ctx.registerVehicle('d-5');
    const device = (await register({ protocol: 'osmand', identifier: 'gone-phone', vehicleId: 'd-5' })).json();
    assert.equal((await ctx.request('DELETE', `/v2/devices/${device.id}`)).statusCode, 204);
    assert.equal((await ctx.request('GET', `/v2/devices/${device.id}`)).statusCode, 404);
    const again = (await register({ protocol: 'osmand', identifier: 'gone-phone', vehicleId: 'd-5' })).json();
    assert.equal((await ctx.request('DELETE', '/v2/fleet/vehicles/d-5')).statusCode, 204);
    assert.equal((await ctx.request('GET', `/v2/devices/${again.id}`)).statusCode, 404);
    await ctx.registerVehicle('d-6');
    assert.equal((await register({ protocol: 'osmand', identifier: 'gone-phone', vehicleId: 'd-6' })).statusCode, 201);
  });
});

describe('last seen', () => {
  test('an OsmAnd report sets lastSeenAt at once in reads, and in the store only when flushed', async () => {
    await ctx.registerVehicle('d-7');
    const device = (await register({ protocol: 'osmand', identifier: 'seen-phone', vehicleId: 'd-7' })).json();
    clock.advance(5000);
    const report = await ctx.request('GET', '/osmand', { key: null, query: { id: 'seen-phone', lat: '52.5', lon: '13.4' } });
    assert.equal(report.statusCode, 200, report.body);
    const seen = new Date(clock.now()).toISOString();
    assert.equal((await ctx.request('GET', `/v2/devices/${device.id}`)).json().lastSeenAt, seen);
    assert.equal((await ctx.stores.devices.get(ctx.organizationId, device.id))?.lastSeenAt, null, 'no write per report');
  });

  test('the service writes the gathered times in one call per flush, keeps them when the write fails, never moves one back', async () => {
    const calls: Array<Array<{ id: string; at: number }>> = [];
    let fail = true;
    const store = {
      ...ctx.stores.devices,
      async touch(seen: ReadonlyArray<{ id: string; at: number }>) {
        calls.push([...seen]);
        if (fail) throw new Error('store down');
      },
    };
    const errors: unknown[] = [];
    const service = createDeviceService({ store, clock, maxDevices: 10_000, flushMs: 3_600_000, onFlushError: (e) => errors.push(e) });
    service.seen('dev_a', 100);
    service.seen('dev_b', 200);
    service.seen('dev_a', 50);
    await service.flush();
    assert.equal(errors.length, 1);
    fail = false;
    service.seen('dev_b', 300);
    await service.flush();
    await service.flush();
    await service.stop();
    assert.deepEqual(calls, [[{ id: 'dev_a', at: 100 }, { id: 'dev_b', at: 200 }], [{ id: 'dev_a', at: 100 }, { id: 'dev_b', at: 300 }]]);
  });
});
