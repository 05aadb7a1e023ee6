// The behaviour every VehicleStore must have (SQLite, PostgreSQL): test/store-contracts.test.ts
// runs it against each backend.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { StatusChange, VehicleRecord } from '../../src/vehicles/store.ts';
import { type MakeStores, T0, addGroups, addOrganization, freshStores } from './fixtures.ts';

export function vehicleStoreContract(name: string, makeStores: MakeStores): void {
  describe(`VehicleStore contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    const vehicle = (organizationId: string, id: string, overrides: Partial<VehicleRecord> = {}): VehicleRecord => ({
      organizationId, id, type: 'van', name: null, status: 'registered', configuration: { sensors: ['gps', 'lidar'], capacity: 8, autonomyLevel: 4 },
      createdAt: T0, updatedAt: T0, statusChangedAt: T0, groupIds: [], driverId: null, ...overrides,
    });
    const registration = (at = T0): StatusChange => ({ from: null, to: 'registered', reason: null, at, by: 'key_test' });

    test('insert stores the vehicle as given, once per organization, with its registration entry', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const v = vehicle(a, 'van-1');
      assert.equal(await stores.vehicles.insert(v, registration()), 'created');
      assert.deepEqual(await stores.vehicles.get(a, 'van-1'), v);
      assert.equal(await stores.vehicles.insert(vehicle(a, 'van-1', { type: 'bus' }), registration()), 'exists');
      assert.equal((await stores.vehicles.get(a, 'van-1'))?.type, 'van', 'the first one stays');
      assert.equal(await stores.vehicles.insert(vehicle(b, 'van-1'), registration()), 'created', 'ids are per organization');
      assert.equal(await stores.vehicles.get(b, 'nope'), undefined);
      assert.deepEqual(await stores.vehicles.statusHistory(a, 'van-1', { limit: 10, offset: 0 }), { entries: [registration()], total: 1 });
      const bare = vehicle(a, 'bare', { configuration: {} });
      await stores.vehicles.insert(bare, registration());
      assert.deepEqual((await stores.vehicles.get(a, 'bare'))?.configuration, {});
    });

    test('the quota is counted with the insert: at the limit a new id is refused, a taken one still "exists"', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v1'), registration(), 2), 'created');
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v2'), registration(), 2), 'created');
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v3'), registration(), 2), 'quota');
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v1'), registration(), 2), 'exists');
      assert.equal(await stores.vehicles.insert(vehicle(b, 'v1'), registration(), 2), 'created', 'another organization counts apart');
      assert.equal(await stores.vehicles.insert(vehicle(b, 'v9'), registration(), 0), 'quota');
      assert.equal(await stores.vehicles.delete(a, 'v1'), true);
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v3'), registration(), 2), 'created', 'deleting freed a place');
    });

    test('insertMany: the ids not taken are stored, each as insert would; the taken ones left as they were', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await addGroups(stores, a, ['g1']);
      assert.equal(await stores.vehicles.insert(vehicle(a, 'm-2'), registration()), 'created');
      const many = ['m-1', 'm-2', 'm-3'].map((id) => ({ vehicle: vehicle(a, id, { type: 'bus', groupIds: id === 'm-3' ? ['g1'] : [] }), registration: registration(), events: [] }));
      assert.deepEqual(await stores.vehicles.insertMany(many), ['created', 'exists', 'created']);
      assert.deepEqual(await stores.vehicles.get(a, 'm-1'), many[0]!.vehicle);
      assert.equal((await stores.vehicles.get(a, 'm-2'))?.type, 'van', 'the taken one stays');
      assert.deepEqual((await stores.vehicles.get(a, 'm-3'))?.groupIds, ['g1']);
      assert.deepEqual(await stores.vehicles.statusHistory(a, 'm-3', { limit: 10, offset: 0 }), { entries: [registration()], total: 1 });
      assert.deepEqual(await stores.vehicles.insertMany([]), []);
      // A full batch, half of it in a group, every one with its registration entry.
      const batch = Array.from({ length: 1000 }, (_, i) => ({ vehicle: vehicle(a, `b-${String(i).padStart(4, '0')}`, { groupIds: i % 2 === 0 ? ['g1'] : [] }), registration: registration(), events: [] }));
      const outcomes = await stores.vehicles.insertMany(batch);
      assert.ok(Array.isArray(outcomes) && outcomes.length === 1000 && outcomes.every((o) => o === 'created'));
      assert.equal((await stores.vehicles.list(a, { limit: 1, offset: 0, groupId: 'g1' })).total, 501, 'm-3 and the 500');
      assert.deepEqual(await stores.vehicles.get(a, 'b-0998'), batch[998]!.vehicle);
      assert.deepEqual(await stores.vehicles.statusHistory(a, 'b-0999', { limit: 10, offset: 0 }), { entries: [registration()], total: 1 });
    });

    test('insertMany: all or none past the quota or with an unknown group', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await addGroups(stores, a, ['g1']);
      const of = (ids: string[], groupIds: string[] = []) => ids.map((id) => ({ vehicle: vehicle(a, id, { groupIds }), registration: registration(), events: [] }));
      assert.deepEqual(await stores.vehicles.insertMany(of(['q-1', 'q-2']), 3), ['created', 'created']);
      assert.equal(await stores.vehicles.insertMany(of(['q-3', 'q-4']), 3), 'quota', 'two new would make four');
      assert.equal(await stores.vehicles.get(a, 'q-3'), undefined, 'nothing of a refused batch is stored');
      assert.deepEqual(await stores.vehicles.insertMany(of(['q-1', 'q-2', 'q-3']), 3), ['exists', 'exists', 'created'], 'taken ids do not count');
      assert.deepEqual(await stores.vehicles.insertMany(of(['q-1']), 3), ['exists'], 'at the quota, taken ids still answer');
      assert.equal(await stores.vehicles.insertMany([...of(['u-1']), ...of(['u-2'], ['nope'])]), 'unknown-group');
      assert.equal(await stores.vehicles.get(a, 'u-1'), undefined);
      assert.equal((await stores.vehicles.list(a, { limit: 100, offset: 0 })).total, 3);
    });

    test('concurrent inserts never pass the quota', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => stores.vehicles.insert(vehicle(a, `c-${i}`), registration(), 5)));
      assert.equal(outcomes.filter((o) => o === 'created').length, 5);
      assert.equal(outcomes.filter((o) => o === 'quota').length, 7);
      assert.equal((await stores.vehicles.list(a, { limit: 100, offset: 0 })).total, 5);
    });

    test('list: by id in byte order, filtered by status and type, paged, with the total', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      // Byte order, whatever the database's locale: upper case, then '_', then lower case; '1' < 'a'.
      for (const [id, type] of [['b-2', 'car'], ['B-1', 'van'], ['a10', 'van'], ['_x', 'bus'], ['a-1', 'car'], ['a2', 'van']] as const) {
        await stores.vehicles.insert(vehicle(a, id, { type }), registration());
      }
      await stores.vehicles.insert(vehicle(b, 'other'), registration());
      await stores.vehicles.changeStatus(a, 'a2', { from: 'registered', to: 'active', reason: null, at: T0 + 1, by: 'k' });
      const ids = async (filter: Parameters<typeof stores.vehicles.list>[1]) => {
        const { vehicles, total } = await stores.vehicles.list(a, filter);
        return { ids: vehicles.map((v) => v.id), total };
      };
      assert.deepEqual(await ids({ limit: 10, offset: 0 }), { ids: ['B-1', '_x', 'a-1', 'a10', 'a2', 'b-2'], total: 6 });
      assert.deepEqual(await ids({ limit: 2, offset: 2 }), { ids: ['a-1', 'a10'], total: 6 });
      assert.deepEqual(await ids({ limit: 2, offset: 10 }), { ids: [], total: 6 });
      assert.deepEqual(await ids({ limit: 10, offset: 0, types: ['van'] }), { ids: ['B-1', 'a10', 'a2'], total: 3 });
      assert.deepEqual(await ids({ limit: 10, offset: 0, types: ['van', 'bus'] }), { ids: ['B-1', '_x', 'a10', 'a2'], total: 4 });
      assert.deepEqual(await ids({ limit: 10, offset: 0, statuses: ['active'] }), { ids: ['a2'], total: 1 });
      assert.deepEqual(await ids({ limit: 10, offset: 0, statuses: ['registered'], types: ['van'] }), { ids: ['B-1', 'a10'], total: 2 });
      assert.deepEqual(await ids({ limit: 10, offset: 0, statuses: ['retired'] }), { ids: [], total: 0 });
      assert.deepEqual((await stores.vehicles.list(b, { limit: 10, offset: 0 })).vehicles.map((v) => v.id), ['other']);
    });

    test('list totals and the quota follow every change: registrations, status and type changes, deletions', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const filters: Omit<Parameters<typeof stores.vehicles.list>[1], 'limit' | 'offset'>[] = [
        {}, { statuses: ['active'] }, { statuses: ['registered'] }, { types: ['car'] }, { statuses: ['active', 'maintenance'], types: ['van', 'car'] },
      ];
      // Each total against the vehicles listed, counted here.
      const check = async (step: string) => {
        for (const filter of filters) {
          const { vehicles, total } = await stores.vehicles.list(a, { limit: 1000, offset: 0, ...filter });
          assert.equal(total, vehicles.length, `${step}: ${JSON.stringify(filter)}`);
        }
      };
      for (let i = 0; i < 6; i++) await stores.vehicles.insert(vehicle(a, `v${i}`, { type: i % 2 === 0 ? 'van' : 'car' }), registration());
      await stores.vehicles.insert(vehicle(b, 'v0'), registration());
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v0'), registration()), 'exists');
      await check('registered');
      await stores.vehicles.changeStatus(a, 'v1', { from: 'registered', to: 'active', reason: null, at: T0 + 1, by: 'k' });
      await stores.vehicles.changeStatus(a, 'v2', { from: 'registered', to: 'active', reason: null, at: T0 + 1, by: 'k' });
      await stores.vehicles.changeStatus(a, 'v2', { from: 'active', to: 'maintenance', reason: null, at: T0 + 2, by: 'k' });
      await check('status changes');
      const v3 = (await stores.vehicles.get(a, 'v3'))!;
      await stores.vehicles.update(a, 'v3', v3.updatedAt, { ...v3, type: 'van', updatedAt: T0 + 3 });
      await check('a type changed');
      assert.equal(await stores.vehicles.delete(a, 'v1'), true);
      assert.equal(await stores.vehicles.delete(b, 'v0'), true);
      await check('deletions');
      assert.equal((await stores.vehicles.list(a, { limit: 1, offset: 0 })).total, 5);
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v9'), registration(), 5), 'quota', 'five of five');
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v9'), registration(), 6), 'created');
      assert.equal(await stores.vehicles.insert(vehicle(b, 'w'), registration(), 1), 'created', 'the other organization has none left');
    });

    test('changeStatus is compare-and-set, records history newest first, and stays in its organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      await stores.vehicles.insert(vehicle(a, 'v'), registration());
      const activate = { from: 'registered', to: 'active', reason: 'in service', at: T0 + 1000, by: 'key_a' } as const;
      assert.equal(await stores.vehicles.changeStatus(b, 'v', activate), undefined, 'not from another organization');
      assert.equal(await stores.vehicles.changeStatus(a, 'nope', activate), undefined);
      const changed = await stores.vehicles.changeStatus(a, 'v', activate);
      assert.deepEqual(changed, { ...vehicle(a, 'v'), status: 'active', updatedAt: T0 + 1000, statusChangedAt: T0 + 1000 });
      assert.deepEqual(await stores.vehicles.get(a, 'v'), changed);
      assert.equal(await stores.vehicles.changeStatus(a, 'v', { ...activate, at: T0 + 2000 }), undefined, 'the status moved on');
      const repair = { from: 'active', to: 'maintenance', reason: null, at: T0 + 3000, by: 'key_b' } as const;
      await stores.vehicles.changeStatus(a, 'v', repair);

      const history = await stores.vehicles.statusHistory(a, 'v', { limit: 10, offset: 0 });
      assert.deepEqual(history, { entries: [repair, activate, registration()], total: 3 });
      assert.deepEqual(await stores.vehicles.statusHistory(a, 'v', { limit: 1, offset: 1 }), { entries: [activate], total: 3 });
      assert.deepEqual(await stores.vehicles.statusHistory(b, 'v', { limit: 10, offset: 0 }), { entries: [], total: 0 });
    });

    test('of concurrent changes from one status, exactly one wins', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await stores.vehicles.insert(vehicle(a, 'v'), registration());
      const results = await Promise.all(
        (['active', 'inactive', 'maintenance', 'retired', 'active'] as const).map((to, i) =>
          stores.vehicles.changeStatus(a, 'v', { from: 'registered', to, reason: null, at: T0 + i, by: 'k' })),
      );
      const winners = results.filter((r) => r !== undefined);
      assert.equal(winners.length, 1);
      assert.equal((await stores.vehicles.get(a, 'v'))?.status, winners[0]!.status);
      assert.equal((await stores.vehicles.statusHistory(a, 'v', { limit: 10, offset: 0 })).total, 2);
    });

    test('delete removes the vehicle with its history, telemetry and latest state, only in its organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      await stores.vehicles.insert(vehicle(a, 'v'), registration());
      await stores.vehicles.insert(vehicle(a, 'keep'), registration());
      const merge = (_p: unknown, organizationId: string, vehicleId: string) => ({ organizationId, vehicleId, timestamp: T0, fields: {} });
      const [outcome] = await stores.telemetry.commit([{
        organizationId: a, at: T0, records: [{ vehicleId: 'v', timestamp: T0, data: { speed: 1 } }, { vehicleId: 'keep', timestamp: T0, data: { speed: 2 } }],
      }], merge);
      assert.equal(outcome?.ok, true);

      assert.equal(await stores.vehicles.delete(b, 'v'), false, 'not from another organization');
      assert.equal(await stores.vehicles.delete(a, 'v'), true);
      assert.equal(await stores.vehicles.delete(a, 'v'), false);
      assert.equal(await stores.vehicles.get(a, 'v'), undefined);
      assert.deepEqual(await stores.vehicles.statusHistory(a, 'v', { limit: 10, offset: 0 }), { entries: [], total: 0 });
      const range = { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 10 };
      assert.deepEqual(await stores.telemetry.history(a, 'v', range), []);
      assert.equal((await stores.telemetry.history(a, 'keep', range)).length, 1);
      assert.deepEqual((await stores.telemetry.loadLatest()).map((s) => s.vehicleId), ['keep']);

      // The id can be registered again, and starts with nothing.
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v'), registration(T0 + 5)), 'created');
      assert.equal((await stores.vehicles.statusHistory(a, 'v', { limit: 10, offset: 0 })).total, 1);
    });
  });
}
