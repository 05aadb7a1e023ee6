// The behaviour every DeviceStore must have (SQLite, PostgreSQL): test/store-contracts.test.ts
// runs it against each backend.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DeviceRecord } from '../../src/devices/store.ts';
import { type MakeStores, T0, addOrganization, addVehicle, freshStores } from './fixtures.ts';

let n = 0;
export function deviceRecord(organizationId: string, vehicleId: string, overrides: Partial<DeviceRecord> = {}): DeviceRecord {
  n++;
  return {
    id: `dev_${String(n).padStart(16, '0')}`, organizationId, vehicleId, protocol: 'osmand', identifier: `phone-${n}`,
    createdAt: T0 + n, lastSeenAt: null, ...overrides,
  };
}

export function deviceStoreContract(name: string, makeStores: MakeStores): void {
  describe(`DeviceStore contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    test('insert stores the device as given; get and find return it; another organization cannot get it', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      await addVehicle(stores, a, 'van-1');
      const d = deviceRecord(a, 'van-1', { protocol: 'teltonika', identifier: '356307042441013' });
      assert.equal(await stores.devices.insert(d), 'created');
      assert.deepEqual(await stores.devices.get(a, d.id), d);
      assert.equal(await stores.devices.get(b, d.id), undefined);
      assert.deepEqual(await stores.devices.find('teltonika', '356307042441013'), d);
      assert.equal(await stores.devices.find('osmand', '356307042441013'), undefined, 'identifiers are per protocol');
      assert.equal(await stores.devices.find('teltonika', '356307042441014'), undefined);
    });

    test('an identifier is unique per protocol across organizations; the vehicle must exist in the organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      await addVehicle(stores, a, 'van-1');
      await addVehicle(stores, b, 'van-1');
      assert.equal(await stores.devices.insert(deviceRecord(a, 'van-1', { identifier: 'same' })), 'created');
      assert.equal(await stores.devices.insert(deviceRecord(b, 'van-1', { identifier: 'same' })), 'exists');
      assert.equal(await stores.devices.insert(deviceRecord(a, 'van-1', { identifier: 'same' })), 'exists');
      assert.equal(await stores.devices.insert(deviceRecord(b, 'van-1', { identifier: 'same', protocol: 'teltonika' })), 'created');
      assert.equal(await stores.devices.insert(deviceRecord(a, 'ghost')), 'no-vehicle');
      await addVehicle(stores, b, 'only-b');
      assert.equal(await stores.devices.insert(deviceRecord(a, 'only-b')), 'no-vehicle', 'another organization\'s vehicle');
      assert.equal((await stores.devices.list(a, { limit: 10, offset: 0 })).total, 1);
    });

    test('list: oldest first, paged, filtered by vehicle, with the total, within the organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      await addVehicle(stores, a, 'v1');
      await addVehicle(stores, a, 'v2');
      await addVehicle(stores, b, 'v1');
      const made = [];
      for (const vehicle of ['v1', 'v2', 'v1', 'v2', 'v1']) {
        const d = deviceRecord(a, vehicle);
        await stores.devices.insert(d);
        made.push(d);
      }
      await stores.devices.insert(deviceRecord(b, 'v1'));
      const ids = (page: { devices: DeviceRecord[] }) => page.devices.map((d) => d.id);
      assert.deepEqual(ids(await stores.devices.list(a, { limit: 10, offset: 0 })), made.map((d) => d.id));
      const second = await stores.devices.list(a, { limit: 2, offset: 2 });
      assert.deepEqual({ ids: ids(second), total: second.total }, { ids: [made[2]!.id, made[3]!.id], total: 5 });
      const v1 = await stores.devices.list(a, { vehicleId: 'v1', limit: 10, offset: 1 });
      assert.deepEqual({ ids: ids(v1), total: v1.total }, { ids: [made[2]!.id, made[4]!.id], total: 3 });
      assert.deepEqual(await stores.devices.list(a, { limit: 10, offset: 10 }), { devices: [], total: 5 });
    });

    test('protocolsOf: the protocols of one vehicle\'s devices, each once, in its organization only', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      for (const [org, vehicle] of [[a, 'v1'], [a, 'v2'], [a, 'v3'], [b, 'v1']] as const) await addVehicle(stores, org, vehicle);
      await stores.devices.insert(deviceRecord(a, 'v1'));
      await stores.devices.insert(deviceRecord(a, 'v1', { protocol: 'teltonika' }));
      await stores.devices.insert(deviceRecord(a, 'v1'));
      await stores.devices.insert(deviceRecord(a, 'v2'));
      await stores.devices.insert(deviceRecord(b, 'v1', { protocol: 'teltonika' }));
      assert.deepEqual((await stores.devices.protocolsOf(a, 'v1')).sort(), ['osmand', 'teltonika']);
      assert.deepEqual(await stores.devices.protocolsOf(a, 'v2'), ['osmand']);
      assert.deepEqual(await stores.devices.protocolsOf(a, 'v3'), []);
      assert.deepEqual(await stores.devices.protocolsOf(b, 'v2'), []);
    });

    test('delete removes only the organization\'s own device; deleting the vehicle deletes its devices', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      await addVehicle(stores, a, 'v1');
      await addVehicle(stores, a, 'v2');
      const [d1, d2, d3] = [deviceRecord(a, 'v1'), deviceRecord(a, 'v1'), deviceRecord(a, 'v2')];
      for (const d of [d1, d2, d3]) await stores.devices.insert(d);
      assert.equal(await stores.devices.delete(b, d1.id), false);
      assert.equal(await stores.devices.delete(a, d1.id), true);
      assert.equal(await stores.devices.delete(a, d1.id), false);
      assert.equal(await stores.devices.find('osmand', d1.identifier), undefined);
      assert.equal(await stores.devices.insert({ ...deviceRecord(a, 'v2'), identifier: d1.identifier }), 'created', 'a freed identifier is free');
      assert.equal(await stores.vehicles.delete(a, 'v1'), true);
      assert.equal(await stores.devices.get(a, d2.id), undefined, 'cascaded with its vehicle');
      assert.deepEqual((await stores.devices.get(a, d3.id))?.id, d3.id);
    });

    test('touch sets last-seen times in one call and never moves one back', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await addVehicle(stores, a, 'v1');
      const [d1, d2] = [deviceRecord(a, 'v1'), deviceRecord(a, 'v1')];
      for (const d of [d1, d2]) await stores.devices.insert(d);
      await stores.devices.touch([{ id: d1.id, at: T0 + 5000 }, { id: d2.id, at: T0 + 7000 }, { id: 'dev_gone000000000000', at: T0 }]);
      assert.equal((await stores.devices.get(a, d1.id))?.lastSeenAt, T0 + 5000);
      assert.equal((await stores.devices.get(a, d2.id))?.lastSeenAt, T0 + 7000);
      await stores.devices.touch([{ id: d1.id, at: T0 + 1000 }, { id: d2.id, at: T0 + 9000 }]);
      assert.equal((await stores.devices.get(a, d1.id))?.lastSeenAt, T0 + 5000, 'an older time is ignored');
      assert.equal((await stores.devices.get(a, d2.id))?.lastSeenAt, T0 + 9000);
      await stores.devices.touch([]);
    });
  });
}
