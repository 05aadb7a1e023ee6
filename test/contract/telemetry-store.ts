// The behaviour every TelemetryStore must have (SQLite, PostgreSQL): test/store-contracts.test.ts
// runs it against each backend. The merge is the service's own (telemetry/latest.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Stores } from '../../src/storage/stores.ts';
import { mergeLatest, mergeStates } from '../../src/telemetry/latest.ts';
import type { CommitBatch, LatestState, StoredRecord } from '../../src/telemetry/store.ts';
import type { VehicleStatus } from '../../src/vehicles/schema.ts';
import { type MakeStores, T0, addOrganization, addVehicle, freshStores } from './fixtures.ts';

const ALL = { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 10_000 };
const DAY = 86_400_000;

export function telemetryStoreContract(name: string, makeStores: MakeStores): void {
  describe(`TelemetryStore contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    async function withVehicles(ids: string[], status: VehicleStatus = 'active') {
      const stores = await fresh();
      const org = await addOrganization(stores);
      for (const id of ids) await addVehicle(stores, org, id, status);
      return { stores, org };
    }
    const rec = (vehicleId: string, timestamp: number, data: StoredRecord['data'] = { speed: 1 }): StoredRecord => ({ vehicleId, timestamp, data });
    const commit = (stores: Stores, batches: CommitBatch[]) => stores.telemetry.commit(batches, mergeLatest);

    test('accepted and duplicates are exact: within a batch, across batches of one commit, and across commits', async () => {
      const { stores, org } = await withVehicles(['a', 'b']);
      const [first, second] = await commit(stores, [
        { organizationId: org, at: T0, records: [rec('a', T0), rec('a', T0 + 1), rec('a', T0, { speed: 99 }), rec('b', T0)] },
        { organizationId: org, at: T0, records: [rec('a', T0 + 1), rec('b', T0 + 5)] },
      ]);
      assert.deepEqual([first?.ok && first.accepted, first?.ok && first.duplicates], [3, 1]);
      assert.deepEqual([second?.ok && second.accepted, second?.ok && second.duplicates], [1, 1]);
      const [again] = await commit(stores, [{ organizationId: org, at: T0, records: [rec('a', T0), rec('a', T0 + 2)] }]);
      assert.deepEqual([again?.ok && again.accepted, again?.ok && again.duplicates], [1, 1]);
      const history = await stores.telemetry.history(org, 'a', ALL);
      assert.deepEqual(history.map((r) => [r.timestamp, r.data.speed]), [[T0, 1], [T0 + 1, 1], [T0 + 2, 1]], 'the first of a duplicate stays');
    });

    test('a duplicate sent with other values changes neither the history nor the latest state', async () => {
      const { stores, org } = await withVehicles(['a']);
      await commit(stores, [{ organizationId: org, at: T0, records: [rec('a', T0 + 10, { speed: 1 })] }]);
      const [again] = await commit(stores, [{ organizationId: org, at: T0, records: [rec('a', T0 + 10, { speed: 99, battery: 5 })] }]);
      assert.deepEqual([again?.ok && again.accepted, again?.ok && again.duplicates], [0, 1]);
      for (const state of (again?.ok && again.latest) || []) assert.notEqual(state.fields.speed?.value, 99, 'not in what the commit reports');
      const [state] = await stores.telemetry.loadLatest();
      assert.deepEqual(state?.fields, { speed: { value: 1, at: T0 + 10 } });
      assert.deepEqual((await stores.telemetry.history(org, 'a', ALL)).map((r) => r.data), [{ speed: 1 }]);
    });

    test('history: in time order, from inclusive, to exclusive, after a cursor, limited, and exactly as sent', async () => {
      const { stores, org } = await withVehicles(['a', 'b']);
      const odd = {
        location: { lat: 52.52, lng: 13.405 }, speed: 0.1, odometer: 1e21, heading: -0,
        diagnostics: { z: 'last', a: 'first', nul: 'a\u0000b', lone: '\ud800', emoji: '🚐', quote: '"\\' },
      };
      await commit(stores, [{ organizationId: org, at: T0, records: [rec('a', T0 + 30), rec('a', T0 + 10, odd), rec('a', T0 + 20), rec('b', T0 + 15)] }]);
      const page = (from: number, to: number, after: number | undefined, limit: number) =>
        stores.telemetry.history(org, 'a', { from, to, after, limit }).then((rows) => rows.map((r) => r.timestamp));
      assert.deepEqual(await page(0, Number.MAX_SAFE_INTEGER, undefined, 10), [T0 + 10, T0 + 20, T0 + 30]);
      assert.deepEqual(await page(T0 + 10, T0 + 30, undefined, 10), [T0 + 10, T0 + 20]);
      assert.deepEqual(await page(0, Number.MAX_SAFE_INTEGER, T0 + 10, 10), [T0 + 20, T0 + 30]);
      assert.deepEqual(await page(0, Number.MAX_SAFE_INTEGER, undefined, 2), [T0 + 10, T0 + 20]);
      const [stored] = await stores.telemetry.history(org, 'a', { from: T0 + 10, to: T0 + 11, after: undefined, limit: 1 });
      assert.deepEqual(stored, { vehicleId: 'a', timestamp: T0 + 10, data: JSON.parse(JSON.stringify(odd)) });
      assert.deepEqual(Object.keys(stored.data.diagnostics ?? {}), ['z', 'a', 'nul', 'lone', 'emoji', 'quote'], 'key order kept');
      assert.deepEqual(await stores.telemetry.history(org, 'nobody', ALL), []);
    });

    test('scan: every record of the range in time order, in pages of at most pageSize, nothing of other vehicles', async () => {
      const { stores, org } = await withVehicles(['a', 'b']);
      const other = await addOrganization(stores);
      await addVehicle(stores, other, 'a');
      // A large batch (SQLite writes it straight to the history table) and small ones (kept apart
      // until moved): a scan reads both. Across days, so PostgreSQL reads several partitions.
      const many = Array.from({ length: 20 }, (_, i) => rec('a', T0 + i * 3 * 3_600_000, { speed: i }));
      await commit(stores, [{ organizationId: org, at: T0, records: many }]);
      for (const t of [T0 + 1, T0 + 5 * DAY, T0 + 2 * DAY + 7]) await commit(stores, [{ organizationId: org, at: T0, records: [rec('a', t)] }]);
      await commit(stores, [
        { organizationId: org, at: T0, records: [rec('b', T0 + 2)] },
        { organizationId: other, at: T0, records: [rec('a', T0 + 3)] },
      ]);
      const from = T0 + 1;
      const to = T0 + 57 * 3_600_000; // record 19 at exactly `to` is left out
      const expected = [...many.map((r) => r.timestamp), T0 + 1, T0 + 2 * DAY + 7].filter((t) => t >= from && t < to).sort((x, y) => x - y);
      const pages: number[][] = [];
      for await (const page of stores.telemetry.scan(org, 'a', { from, to }, { pageSize: 4 })) pages.push(page.map((r) => r.timestamp));
      assert.deepEqual(pages.flat(), expected);
      assert.ok(pages.every((p) => p.length > 0 && p.length <= 4), `page sizes ${pages.map((p) => p.length).join(',')}`);
      assert.equal(pages.length, Math.ceil(expected.length / 4));
      // Reads larger than pages (where a store makes them) give the same pages; `decode` is given each record's stored text.
      const texts: string[][] = [];
      for await (const page of stores.telemetry.scan(org, 'a', { from, to }, { pageSize: 3, readSize: 7, decode: (text) => text })) {
        texts.push(page.map((r) => r.data));
      }
      assert.ok(texts.every((p) => p.length > 0 && p.length <= 3), `page sizes ${texts.map((p) => p.length).join(',')}`);
      assert.deepEqual(texts.flat().map((text) => JSON.parse(text) as unknown), pages.flat().map((t) => many.find((r) => r.timestamp === t)?.data ?? rec('a', t).data));
      const [first] = await stores.telemetry.scan(org, 'a', { from: T0 + 3 * 3_600_000, to: T0 + 3 * 3_600_000 + 1 }, { pageSize: 10 }).next().then((r) => r.value ?? []);
      assert.deepEqual(first, many[1], 'records come back as stored');
      const empty = [];
      for await (const page of stores.telemetry.scan(org, 'ghost', { from: 0, to: Number.MAX_SAFE_INTEGER }, { pageSize: 10 })) empty.push(page);
      assert.deepEqual(empty, []);
      // A consumer that stops early ends the scan.
      const scan = stores.telemetry.scan(org, 'a', { from: 0, to: Number.MAX_SAFE_INTEGER }, { pageSize: 2 });
      assert.equal((await scan.next()).value?.length, 2);
      assert.deepEqual(await scan.return(undefined), { done: true, value: undefined });
      assert.equal((await scan.next()).done, true);
    });

    test('aggregate: per aligned bucket, count of records and min, max, avg, last of each field asked for', async () => {
      const { stores, org } = await withVehicles(['a', 'b']);
      const B = 60_000;
      const start = Math.floor(T0 / B) * B;
      const records = [
        rec('a', start + 1000, { speed: 10, battery: 80, odometer: 100.5 }),
        rec('a', start + 2000, { speed: 30.5, heading: 90 }),
        rec('a', start + 3000, { battery: 79, temperature: -4.25 }), // newest of the bucket: no speed
        rec('a', start + 3 * B, { speed: 0, location: { lat: 1, lng: 2 } }), // two empty buckets before it
        rec('a', start + 3 * B + 10, { location: { lat: 1, lng: 2 } }),
      ];
      // Some straight into the history table, some kept apart (SQLite): the aggregate covers both.
      await commit(stores, [{ organizationId: org, at: T0, records: [...records.slice(0, 3), ...Array.from({ length: 16 }, (_, i) => rec('a', start - B * (i + 1)))] }]);
      for (const r of records.slice(3)) await commit(stores, [{ organizationId: org, at: T0, records: [r] }]);
      await commit(stores, [{ organizationId: org, at: T0, records: [rec('b', start + 1500, { speed: 999 })] }]);
      const all = ['speed', 'battery', 'temperature', 'odometer', 'heading'] as const;
      const buckets = await stores.telemetry.aggregate(org, 'a', { from: start, to: start + 10 * B, bucketMs: B, fields: all });
      assert.deepEqual(buckets, [
        {
          start, count: 3, fields: {
            speed: { min: 10, max: 30.5, avg: 20.25, last: 30.5 },
            battery: { min: 79, max: 80, avg: 79.5, last: 79 },
            temperature: { min: -4.25, max: -4.25, avg: -4.25, last: -4.25 },
            odometer: { min: 100.5, max: 100.5, avg: 100.5, last: 100.5 },
            heading: { min: 90, max: 90, avg: 90, last: 90 },
          },
        },
        { start: start + 3 * B, count: 2, fields: { speed: { min: 0, max: 0, avg: 0, last: 0 } } },
      ]);
      const some = await stores.telemetry.aggregate(org, 'a', { from: start + 1500, to: start + 4 * B, bucketMs: B, fields: ['battery'] });
      assert.deepEqual(some, [
        { start, count: 2, fields: { battery: { min: 79, max: 79, avg: 79, last: 79 } } },
        { start: start + 3 * B, count: 2, fields: {} },
      ], 'from and to bound the records, not the buckets');
      const wide = await stores.telemetry.aggregate(org, 'a', { from: start - 3 * B, to: start, bucketMs: 7 * B, fields: ['speed'] });
      assert.deepEqual(wide.map((b) => [b.start % (7 * B), b.count]), [[0, 3]], 'buckets align to multiples of their width');
      await commit(stores, [{ organizationId: org, at: T0, records: [rec('b', -1500, { speed: 5 })] }]);
      const early = await stores.telemetry.aggregate(org, 'b', { from: -10_000, to: 0, bucketMs: 1000, fields: ['speed'] });
      assert.deepEqual(early.map((b) => b.start), [-2000], 'before 1970, a bucket still starts at or before its records');
      assert.deepEqual(await stores.telemetry.aggregate(org, 'ghost', { from: 0, to: start * 2, bucketMs: B, fields: all }), []);
    });

    test('a batch naming an unknown or retired vehicle is refused whole; the others of the commit are stored', async () => {
      const { stores, org } = await withVehicles(['a', 'b']);
      await stores.vehicles.changeStatus(org, 'b', { from: 'active', to: 'retired', reason: null, at: T0, by: 'k' });
      const other = await addOrganization(stores);
      const outcomes = await commit(stores, [
        { organizationId: org, at: T0, records: [rec('a', T0 + 1)] },
        { organizationId: org, at: T0, records: [rec('a', T0 + 2), rec('ghost', T0), rec('ghost2', T0), rec('b', T0)] },
        { organizationId: org, at: T0, records: [rec('a', T0 + 3), rec('b', T0)] },
        { organizationId: other, at: T0, records: [rec('a', T0 + 4)] },
        { organizationId: org, at: T0, records: [rec('a', T0 + 5)] },
      ]);
      assert.deepEqual(outcomes.map((o) => (o.ok ? 'ok' : `${o.reason}: ${o.vehicleIds.join(',')}`)), [
        'ok', 'vehicle-not-found: ghost,ghost2', 'vehicle-retired: b', 'vehicle-not-found: a', 'ok',
      ]);
      assert.deepEqual((await stores.telemetry.history(org, 'a', ALL)).map((r) => r.timestamp), [T0 + 1, T0 + 5]);
      assert.deepEqual(await stores.telemetry.history(other, 'a', ALL), [], 'nothing crossed into the other organization');
    });

    test('the first telemetry activates a registered vehicle once, recording who and when', async () => {
      const { stores, org } = await withVehicles(['r1', 'r2'], 'registered');
      const outcomes = await commit(stores, [
        { organizationId: org, at: T0 + 100, records: [rec('r1', T0), rec('r1', T0 + 1)] },
        { organizationId: org, at: T0 + 200, records: [rec('r1', T0 + 2), rec('r2', T0 + 2)] },
      ]);
      assert.deepEqual(outcomes.map((o) => o.ok && o.activated), [['r1'], ['r2']]);
      const vehicle = await stores.vehicles.get(org, 'r1');
      assert.deepEqual([vehicle?.status, vehicle?.statusChangedAt, vehicle?.updatedAt], ['active', T0 + 100, T0 + 100]);
      const { entries } = await stores.vehicles.statusHistory(org, 'r1', { limit: 10, offset: 0 });
      assert.deepEqual(entries[0], { from: 'registered', to: 'active', reason: 'first telemetry', at: T0 + 100, by: 'system' });
      const [later] = await commit(stores, [{ organizationId: org, at: T0 + 300, records: [rec('r1', T0 + 3)] }]);
      assert.deepEqual(later?.ok && later.activated, []);
      assert.equal((await stores.vehicles.statusHistory(org, 'r1', { limit: 10, offset: 0 })).total, 2);
    });

    test('the latest state merges field by field across batches and commits, and is what loadLatest returns', async () => {
      const { stores, org } = await withVehicles(['a', 'b']);
      const [one, two] = await commit(stores, [
        { organizationId: org, at: T0, records: [rec('a', T0 + 10, { speed: 10, battery: 90 }), rec('b', T0, { heading: 1 })] },
        { organizationId: org, at: T0, records: [rec('a', T0 + 5, { speed: 5, temperature: 20 })] },
      ]);
      assert.deepEqual(one?.ok && one.latest.map((s) => s.vehicleId), ['a', 'b']);
      const expected = {
        organizationId: org, vehicleId: 'a', timestamp: T0 + 10,
        fields: { speed: { value: 10, at: T0 + 10 }, battery: { value: 90, at: T0 + 10 }, temperature: { value: 20, at: T0 + 5 } },
      };
      // Each outcome carries the part of the state its commit stored (a store may keep it in parts):
      // merged in order of arrival, as the service does, they make the vehicle's state.
      let a0: LatestState | undefined;
      for (const outcome of [one, two]) for (const state of (outcome?.ok && outcome.latest) || []) if (state.vehicleId === 'a') a0 = mergeStates(a0, state);
      assert.deepEqual(a0, expected, 'the second batch merged with the first');
      await commit(stores, [{ organizationId: org, at: T0, records: [rec('a', T0 + 20, { diagnostics: { dtc: 'P0420' } })] }]);
      const latest = await stores.telemetry.loadLatest();
      const a = latest.find((s) => s.vehicleId === 'a');
      assert.deepEqual(a, { ...expected, timestamp: T0 + 20, fields: { ...expected.fields, diagnostics: { value: { dtc: 'P0420' }, at: T0 + 20 } } });
      assert.deepEqual(latest.find((s) => s.vehicleId === 'b')?.fields, { heading: { value: 1, at: T0 } });
      assert.equal(latest.length, 2);
    });

    test('prune deletes every record older than the cut, over as many calls as it takes, and keeps the rest', async () => {
      const { stores, org } = await withVehicles(['a', 'b']);
      // Around now, so a store that partitions by day has real partitions to drop or trim.
      const now = Date.now();
      const cut = now - 2 * DAY;
      const old = [rec('a', cut - 3 * DAY), rec('a', cut - DAY), rec('b', cut - 1000), rec('a', cut - 2), rec('a', cut - 1), rec('b', 1000)];
      const kept = [rec('a', cut), rec('a', now - 1000), rec('b', cut + 1)];
      await commit(stores, [{ organizationId: org, at: now, records: [...old, ...kept] }]);
      await stores.telemetry.maintain(now, 3);
      let total = 0;
      let calls = 0;
      for (;;) {
        const deleted = await stores.telemetry.prune(cut, 2);
        assert.ok(deleted >= 0);
        total += deleted;
        if (deleted < 2 || ++calls > 10) break;
      }
      assert.equal(total, old.length);
      assert.equal(await stores.telemetry.prune(cut, 2), 0, 'nothing is left to prune');
      const left = [...await stores.telemetry.history(org, 'a', ALL), ...await stores.telemetry.history(org, 'b', ALL)];
      assert.deepEqual(left.map((r) => r.timestamp).sort(), kept.map((r) => r.timestamp).sort());
      assert.equal((await stores.telemetry.loadLatest()).length, 2, 'latest states stay');
      // Records still arrive for any time after pruning (and before: retention takes them later).
      const [after] = await commit(stores, [{ organizationId: org, at: now, records: [rec('a', cut - 5 * DAY), rec('a', now + 60_000)] }]);
      assert.equal(after?.ok && after.accepted, 2);
    });

    test('maintain can run any number of times, for any time', async () => {
      const { stores, org } = await withVehicles(['a']);
      const now = Date.now();
      await stores.telemetry.maintain(now, 3);
      await stores.telemetry.maintain(now, 3);
      await stores.telemetry.maintain(now + 10 * DAY, 3);
      const [outcome] = await commit(stores, [{ organizationId: org, at: now, records: [rec('a', now), rec('a', now + 12 * DAY)] }]);
      assert.equal(outcome?.ok && outcome.accepted, 2);
    });
  });
}
