// The embedded store's two telemetry tables: records land in `telemetry_recent` and move into
// `telemetry` in one step once MOVE_AT have gathered. Whichever table holds a record, it is read
// once, counted a duplicate when sent again, and part of the latest state, also after a restart.
// A move folds the latest state the store kept of the recent records in memory: it must agree with
// the records themselves, also when a deletion or a failed write changed them behind its back.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, test } from 'node:test';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { DIRECT_AT, MOVE_AT } from '../src/storage/sqlite/telemetry.ts';
import type { Stores } from '../src/storage/stores.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { StoredRecord } from '../src/telemetry/store.ts';
import { T0, addOrganization, addVehicle } from './contract/fixtures.ts';

const dirs: string[] = [];
const open: Stores[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function storesAt(file: string): Stores {
  const stores = createSqliteStores(file);
  open.push(stores);
  return stores;
}

async function setUp(vehicles: string[]) {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-recent-'));
  dirs.push(dir);
  const file = path.join(dir, 'fleet.db');
  const stores = storesAt(file);
  const org = await addOrganization(stores);
  for (const id of vehicles) await addVehicle(stores, org, id);
  return { file, stores, org };
}

/** Rows in each table, read beside the store through a connection of its own. */
function counts(file: string): { recent: number; moved: number } {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const count = (table: string) => Number(db.prepare(`SELECT count(*) AS n FROM ${table}`).get()!.n);
    return { recent: count('telemetry_recent'), moved: count('telemetry') };
  } finally {
    db.close();
  }
}

/** Every record of a vehicle, paged `limit` at a time with the cursor, as the history route does. */
async function everything(stores: Stores, org: string, vehicleId: string, limit: number): Promise<number[]> {
  const seen: number[] = [];
  for (let after: number | undefined; ;) {
    const page = await stores.telemetry.history(org, vehicleId, { from: 0, to: Number.MAX_SAFE_INTEGER, after, limit });
    seen.push(...page.map((r) => r.timestamp));
    if (page.length < limit) return seen;
    after = page.at(-1)!.timestamp;
  }
}

const record = (vehicleId: string, timestamp: number, speed: number): StoredRecord => ({ vehicleId, timestamp, data: { speed } });

describe('embedded store: recent records and their move', () => {
  test('records gather, then move in one step; each is read once and in order, on either side of the move, and duplicates are told on both', async () => {
    const vehicles = Array.from({ length: 10 }, (_, i) => `v${i}`); // 10 records each per request: below DIRECT_AT
    const { file, stores, org } = await setUp(vehicles);
    const commit = (records: StoredRecord[]) => stores.telemetry.commit([{ organizationId: org, at: T0, records }], mergeLatest);
    // Timestamps interleave across vehicles and arrive out of order within each request.
    const batch = (k: number) => Array.from({ length: 100 }, (_, i) => record(vehicles[i % 10]!, T0 + k * 1000 + (99 - i), k));
    let k = 0;
    for (; (k + 1) * 100 < MOVE_AT; k++) assert.equal((await commit(batch(k)))[0]?.ok, true);
    assert.deepEqual(counts(file), { recent: k * 100, moved: 0 }, 'gathered below the threshold');
    const beforeMove = await everything(stores, org, 'v0', 7);
    assert.equal(beforeMove.length, 10 * k);

    const [crossing] = await commit(batch(k++));
    assert.equal(crossing?.ok && crossing.accepted, 100);
    assert.deepEqual(counts(file), { recent: 0, moved: k * 100 }, 'all moved by the commit that crossed it');
    const [after] = await commit(batch(k++));
    assert.equal(after?.ok && after.accepted, 100);
    assert.deepEqual(counts(file), { recent: 100, moved: (k - 1) * 100 });

    for (const vehicleId of vehicles) {
      const seen = await everything(stores, org, vehicleId, 7);
      const expected = Array.from({ length: k * 100 }, (_, n) => ({ n, ts: T0 + Math.floor(n / 100) * 1000 + (99 - (n % 100)) }))
        .filter(({ n }) => vehicles[n % 100 % 10] === vehicleId)
        .map(({ ts }) => ts)
        .sort((x, y) => x - y);
      assert.deepEqual(seen, expected, `${vehicleId}: every record once, in time order, across both tables`);
    }

    // One record that has moved, one still recent, one new: two duplicates.
    const [again] = await commit([record('v0', T0 + 99, 0), record('v0', T0 + (k - 1) * 1000 + 99, k - 1), record('v0', T0 - 1, -1)]);
    assert.deepEqual([again?.ok && again.accepted, again?.ok && again.duplicates], [1, 2]);

    const latest = (await stores.telemetry.loadLatest()).find((s) => s.vehicleId === 'v1');
    assert.deepEqual(latest?.fields.speed?.value, k - 1, 'the newest speed, from the recent table');
  });

  test("a request's many records of one vehicle go straight to the history table; duplicates are told against either table", async () => {
    const { file, stores, org } = await setUp(['a']);
    const commit = (records: StoredRecord[]) => stores.telemetry.commit([{ organizationId: org, at: T0, records }], mergeLatest);
    const [few] = await commit([record('a', T0 + 1, 1), record('a', T0 + 3, 3)]);
    assert.equal(few?.ok && few.accepted, 2);
    assert.deepEqual(counts(file), { recent: 2, moved: 0 });
    // DIRECT_AT records, two of them already recent: those are duplicates and stay where they are.
    const many = Array.from({ length: DIRECT_AT }, (_, i) => record('a', T0 + i, 100 + i));
    const [direct] = await commit(many);
    assert.deepEqual([direct?.ok && direct.accepted, direct?.ok && direct.duplicates], [DIRECT_AT - 2, 2]);
    assert.deepEqual(counts(file), { recent: 2, moved: DIRECT_AT - 2 });
    // A few again, one of them now in the history table: a duplicate too.
    const [again] = await commit([record('a', T0 + 5, 0), record('a', T0 + DIRECT_AT, 0)]);
    assert.deepEqual([again?.ok && again.accepted, again?.ok && again.duplicates], [1, 1]);
    assert.deepEqual(await everything(stores, org, 'a', 4), Array.from({ length: DIRECT_AT + 1 }, (_, i) => T0 + i));
    const speeds = new Map((await stores.telemetry.history(org, 'a', { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 100 }))
      .map((r) => [r.timestamp, r.data.speed]));
    assert.equal(speeds.get(T0 + 1), 1, 'the first of a duplicate stays');
    assert.equal(speeds.get(T0 + 2), 102);
    const [state] = await stores.telemetry.loadLatest();
    assert.deepEqual(state?.fields.speed, { value: 0, at: T0 + DIRECT_AT });
  });

  test('after a restart, records not yet moved are in history and in the latest state, and move later', async () => {
    const { file, stores, org } = await setUp(['a']);
    await stores.telemetry.commit([{ organizationId: org, at: T0, records: [record('a', T0, 1), record('a', T0 + 2, 2)] }], mergeLatest);
    await stores.telemetry.commit([{ organizationId: org, at: T0, records: [{ vehicleId: 'a', timestamp: T0 + 1, data: { battery: 50 } }] }], mergeLatest);
    await stores.close();

    const reopened = storesAt(file);
    assert.deepEqual(counts(file), { recent: 3, moved: 0 });
    const [state] = await reopened.telemetry.loadLatest();
    assert.deepEqual(state?.fields, { speed: { value: 2, at: T0 + 2 }, battery: { value: 50, at: T0 + 1 } });
    assert.equal(state?.timestamp, T0 + 2);
    assert.deepEqual(await everything(reopened, org, 'a', 2), [T0, T0 + 1, T0 + 2]);
    // Retention moves them first, and the latest state stays the same once they have moved.
    assert.equal(await reopened.telemetry.prune(T0 + 1, 100), 1);
    assert.deepEqual(counts(file), { recent: 0, moved: 2 });
    assert.deepEqual((await reopened.telemetry.loadLatest())[0], state);
  });

  test('duplicates of moved records are told after a restart, and a vehicle registered again after its records moved starts with none', async () => {
    const { file, stores, org } = await setUp(['a', 'b']);
    const commit = (on: Stores, records: StoredRecord[]) => on.telemetry.commit([{ organizationId: org, at: T0, records }], mergeLatest);
    const many = (vehicleId: string, from: number) => Array.from({ length: DIRECT_AT }, (_, i) => record(vehicleId, from + i, i));
    await commit(stores, many('a', T0));
    await commit(stores, many('b', T0));
    assert.deepEqual(counts(file), { recent: 0, moved: 2 * DIRECT_AT });
    await stores.close();
    const reopened = storesAt(file);
    // Older than, equal to and newer than the newest moved record.
    const [again] = await commit(reopened, [record('a', T0 + 1, 0), record('a', T0 + DIRECT_AT - 1, 0), record('a', T0 + DIRECT_AT, 0)]);
    assert.deepEqual([again?.ok && again.accepted, again?.ok && again.duplicates], [1, 2]);
    assert.equal(await reopened.vehicles.delete(org, 'b'), true);
    await addVehicle(reopened, org, 'b');
    const [fresh] = await commit(reopened, [record('b', T0 + 1, 7), record('b', T0 + DIRECT_AT + 5, 7)]);
    assert.deepEqual([fresh?.ok && fresh.accepted, fresh?.ok && fresh.duplicates], [2, 0], 'the old times are free again');
    const [twice] = await commit(reopened, [record('b', T0 + 1, 8)]);
    assert.equal(twice?.ok && twice.duplicates, 1);
  });

  test('deleting a vehicle takes its recent records with it; registered again, it starts with nothing', async () => {
    const { file, stores, org } = await setUp(['a', 'b']);
    await stores.telemetry.commit([{ organizationId: org, at: T0, records: [record('a', T0, 1), record('b', T0, 2)] }], mergeLatest);
    assert.equal(await stores.vehicles.delete(org, 'a'), true);
    assert.deepEqual(counts(file), { recent: 1, moved: 0 });
    await addVehicle(stores, org, 'a');
    assert.deepEqual(await everything(stores, org, 'a', 10), []);
    assert.deepEqual((await stores.telemetry.loadLatest()).map((s) => s.vehicleId), ['b']);
    const [outcome] = await stores.telemetry.commit([{ organizationId: org, at: T0, records: [record('a', T0, 3)] }], mergeLatest);
    assert.equal(outcome?.ok && outcome.accepted, 1, 'not a duplicate of the deleted vehicle\'s record');
  });

  test('a vehicle deleted before its records moved and registered again: the move folds only its new records', async () => {
    const { file, stores, org } = await setUp(['a', 'b']);
    const commit = (records: StoredRecord[]) => stores.telemetry.commit([{ organizationId: org, at: T0, records }], mergeLatest);
    await commit([{ vehicleId: 'a', timestamp: T0, data: { speed: 1, battery: 50 } }, record('b', T0, 5)]);
    assert.equal(await stores.vehicles.delete(org, 'a'), true);
    await addVehicle(stores, org, 'a');
    await commit([record('a', T0 + 1, 2)]);
    assert.equal(await stores.telemetry.prune(T0 - 1, 100), 0, 'retention moves the recent records first');
    assert.deepEqual(counts(file), { recent: 0, moved: 2 });
    const states = new Map((await stores.telemetry.loadLatest()).map((s) => [s.vehicleId, s.fields]));
    assert.deepEqual(states.get('a'), { speed: { value: 2, at: T0 + 1 } }, 'nothing of the deleted vehicle\'s battery');
    assert.deepEqual(states.get('b'), { speed: { value: 5, at: T0 } });
  });

  test('a write that failed after a restart is not folded in place of the records left from before it', async () => {
    const { file, stores, org } = await setUp(['a']);
    await stores.telemetry.commit([{ organizationId: org, at: T0, records: [record('a', T0, 1)] }], mergeLatest);
    await stores.close();
    const reopened = storesAt(file);
    // A trigger fails the next group's second request, after its first was written and counted:
    // the transaction rolls back, and the store's count for `a` (one) equals the rows left (one).
    const admin = new DatabaseSync(file);
    admin.exec(`CREATE TRIGGER refuse AFTER INSERT ON telemetry_recent WHEN NEW.ts = ${T0 + 2} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    const failing = [
      { organizationId: org, at: T0, records: [{ vehicleId: 'a', timestamp: T0 + 1, data: { speed: 99, battery: 5 } }] },
      { organizationId: org, at: T0, records: [record('a', T0 + 2, 98)] },
    ];
    await assert.rejects(reopened.telemetry.commit(failing, mergeLatest), /refused by the test/);
    admin.exec('DROP TRIGGER refuse');
    admin.close();
    assert.deepEqual(counts(file), { recent: 1, moved: 0 });
    assert.equal(await reopened.telemetry.prune(T0 - 1, 100), 0);
    assert.deepEqual(counts(file), { recent: 0, moved: 1 });
    assert.deepEqual((await reopened.telemetry.loadLatest())[0]?.fields, { speed: { value: 1, at: T0 } });
  });

  test('after every move, each vehicle\'s latest state is what its stored records say (random writes, deletions, a restart)', async () => {
    const vehicles = ['a', 'b', 'c', 'd', 'e'];
    const { file, stores: first, org } = await setUp(vehicles);
    let stores = first;
    let seed = 20261123;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const below = (n: number) => Math.floor(random() * n);
    const fields = ['speed', 'battery', 'heading', 'temperature'] as const;
    const data = () => Object.fromEntries(fields.filter(() => random() < 0.5).map((f) => [f, below(100)]));
    let time = T0;
    // Mostly forward in time; one in eight goes back, now and then onto a stored record (a duplicate).
    const stamp = () => (random() < 0.125 ? time - below(40) : (time += 1 + below(3)));
    const records = (vehicleId: string, n: number) => Array.from({ length: n }, (): StoredRecord => ({ vehicleId, timestamp: stamp(), data: data() }));
    const batch = () => ({
      organizationId: org, at: T0,
      records: random() < 0.03 ? records(vehicles[below(5)]!, DIRECT_AT + below(4)) : vehicles.flatMap((v) => (random() < 0.3 ? records(v, 1 + below(3)) : [])),
    });

    async function agreesWithHistory(when: string) {
      const states = new Map((await stores.telemetry.loadLatest()).map((s) => [s.vehicleId, s]));
      for (const vehicleId of vehicles) {
        const stored = await stores.telemetry.history(org, vehicleId, { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 1_000_000 });
        const expected = stored.length === 0 ? undefined : mergeLatest(undefined, org, vehicleId, stored);
        assert.deepEqual(states.get(vehicleId), expected, `${vehicleId}, ${when}`);
      }
    }

    let moves = 0;
    let recent = 0;
    for (let step = 1; moves < 5; step++) {
      const group = Array.from({ length: 1 + below(4) }, batch).filter((b) => b.records.length > 0);
      for (const outcome of await stores.telemetry.commit(group, mergeLatest)) assert.equal(outcome.ok, true);
      if (step % 97 === 0) {
        const vehicleId = vehicles[below(5)]!;
        assert.equal(await stores.vehicles.delete(org, vehicleId), true);
        await addVehicle(stores, org, vehicleId);
      }
      if (step === 300) {
        await stores.close();
        stores = storesAt(file);
        await agreesWithHistory('after a restart');
      }
      const now = counts(file).recent;
      if (now < recent) {
        moves++;
        await agreesWithHistory(`after move ${moves} (step ${step})`);
      }
      recent = now;
    }
    await agreesWithHistory('at the end');
  });
});
