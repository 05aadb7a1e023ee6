// What only the PostgreSQL backend has to prove, beyond the shared contracts: migrations and the
// first start raced by two nodes, daily partitions (made ahead, dropped whole by retention,
// repaired when late), commits of two nodes at once, and a lost database answered as
// 'service-unavailable', never as a crash.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { isAppError } from '../src/errors.ts';
import { openPostgres } from '../src/storage/postgres/database.ts';
import { createPostgresStores, postgresStores } from '../src/storage/postgres/index.ts';
import { AHEAD_DAYS, DAY_MS, dayOf, partitionName } from '../src/storage/postgres/partitions.ts';
import type { Stores } from '../src/storage/stores.ts';
import { FOLD_AFTER_MS } from '../src/storage/postgres/telemetry.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { StoredRecord } from '../src/telemetry/store.ts';
import { T0, addOrganization, addVehicle } from './contract/fixtures.ts';
import {
  TEST_DATABASE_URL, adminQuery, freshSchema, openAnotherNode, openPostgresTestStores, skipUnlessPostgres, terminateConnections,
} from './helpers/postgres.ts';
import { freePort } from './helpers/ports.ts';

const skip = await skipUnlessPostgres();
const ALL = { from: 0, to: Number.MAX_SAFE_INTEGER, after: undefined, limit: 100_000 };

async function registered(stores: Stores, ids: string[]) {
  const org = await addOrganization(stores);
  for (const id of ids) await addVehicle(stores, org, id);
  return org;
}

/** Where each stored record of the vehicle lives: partition name by timestamp. */
async function placement(schema: string): Promise<Map<number, string>> {
  const rows = await adminQuery<{ ts: number; part: string }>(`SELECT ts::float8 AS ts, tableoid::regclass::text AS part FROM ${schema}.telemetry`);
  return new Map(rows.map((r) => [r.ts, r.part.replace(`${schema}.`, '')]));
}

async function partitionsOf(schema: string): Promise<string[]> {
  const rows = await adminQuery<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '${schema}.telemetry'::regclass ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

describe('PostgreSQL backend', { skip }, () => {
  describe('migrations', () => {
    test('nodes starting together apply each migration once; a restart applies nothing', async () => {
      const schema = await freshSchema('migrate');
      try {
        const nodes = await Promise.all([0, 1, 2].map(() => openAnotherNode(schema.name)));
        const applied = await adminQuery<{ version: number }>(`SELECT version FROM ${schema.name}.schema_migrations ORDER BY version`);
        // Every file, once each; numbers need not be contiguous.
        const files = readdirSync(new URL('../src/storage/postgres/migrations/', import.meta.url)).filter((f) => f.endsWith('.sql')).sort();
        assert.ok(files.length >= 4);
        assert.deepEqual(applied.map((r) => r.version), files.map((f) => Number(f.slice(0, 4))));
        await Promise.all(nodes.map((n) => n.close()));
        const again = await openAnotherNode(schema.name);
        assert.equal((await adminQuery(`SELECT * FROM ${schema.name}.schema_migrations`)).length, files.length);
        await again.close();
      } finally {
        await schema.drop();
      }
    });
  });

  describe('telemetry partitions', () => {
    let stores: Stores & { schema: string };
    let org: string;
    const now = Date.now();
    before(async () => {
      stores = await openPostgresTestStores({ label: 'partitions', keepDays: 5 });
      org = await registered(stores, ['a', 'b']);
    });
    after(() => stores.close());

    const rec = (vehicleId: string, timestamp: number): StoredRecord => ({ vehicleId, timestamp, data: { speed: 1 } });

    test('a partition per day exists from the kept window to a week ahead; records land in their day', async () => {
      const names = await partitionsOf(stores.schema);
      for (let day = dayOf(now - 5 * DAY_MS); day <= dayOf(now + AHEAD_DAYS * DAY_MS); day += DAY_MS) {
        assert.ok(names.includes(partitionName(day)), `${partitionName(day)} exists`);
      }
      assert.ok(names.includes('telemetry_default'));
      assert.equal(names.length, 5 + AHEAD_DAYS + 2, 'nothing more');
      await stores.telemetry.commit([{ organizationId: org, at: now, records: [rec('a', now), rec('a', now - 3 * DAY_MS), rec('b', now - 30 * DAY_MS)] }], mergeLatest);
      const where = await placement(stores.schema);
      assert.equal(where.get(now), partitionName(dayOf(now)));
      assert.equal(where.get(now - 3 * DAY_MS), partitionName(dayOf(now - 3 * DAY_MS)));
      assert.equal(where.get(now - 30 * DAY_MS), 'telemetry_default', 'older than any partition');
    });

    test('history reads by (organization, vehicle, time) on the primary key of only the partitions in range', async () => {
      const rows = await adminQuery<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT vehicle_id, ts, data FROM ${stores.schema}.telemetry
         WHERE organization_id = 'o' AND vehicle_id = 'a' AND ts >= ${dayOf(now)} AND ts < ${dayOf(now) + DAY_MS} ORDER BY ts LIMIT 10`,
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      assert.match(plan, new RegExp(`Index Scan using ${partitionName(dayOf(now))}_pkey`), plan);
      assert.doesNotMatch(plan, new RegExp(partitionName(dayOf(now) - DAY_MS)), 'other days are pruned');
    });

    test('retention drops whole partitions older than the cut, trims the boundary one in steps, empties the default one', async () => {
      const cut = dayOf(now - 2 * DAY_MS) + 3_600_000; // 01:00 UTC two days ago
      const boundary = [cut - 3, cut - 2, cut - 1].map((ts) => rec('a', ts));
      await stores.telemetry.commit([{
        organizationId: org, at: now,
        records: [...boundary, rec('a', cut), rec('a', now - 4 * DAY_MS), rec('b', now - 4 * DAY_MS), rec('b', 5)],
      }], mergeLatest);
      const doomed = [partitionName(dayOf(now - 3 * DAY_MS)), partitionName(dayOf(now - 4 * DAY_MS)), partitionName(dayOf(now - 5 * DAY_MS))];
      // Whole partitions first (now-3d: 1 record, now-4d: 2, now-5d: 0), then 2 rows of the boundary day.
      assert.equal(await stores.telemetry.prune(cut, 2), 3 + 2);
      const names = await partitionsOf(stores.schema);
      for (const name of doomed) assert.ok(!names.includes(name), `${name} dropped`);
      assert.ok(names.includes(partitionName(dayOf(cut))), 'the boundary partition stays');
      assert.equal(await stores.telemetry.prune(cut, 2), 2, 'the last boundary row, then the default partition');
      assert.equal(await stores.telemetry.prune(cut, 2), 1);
      assert.equal(await stores.telemetry.prune(cut, 2), 0);
      const left = (await stores.telemetry.history(org, 'a', ALL)).map((r) => r.timestamp);
      assert.deepEqual(left, [cut, now]);
      // Maintenance for the same window does not bring the dropped days back.
      await stores.telemetry.maintain(now, 2);
      assert.ok(!(await partitionsOf(stores.schema)).includes(doomed[0]!));
    });

    test('a day that reached the default partition before its own existed is moved into it when made', async () => {
      const late = dayOf(now + (AHEAD_DAYS + 3) * DAY_MS) + 1234; // beyond the made partitions
      await stores.telemetry.commit([{ organizationId: org, at: now, records: [rec('a', late), rec('b', late + 1)] }], mergeLatest);
      assert.equal((await placement(stores.schema)).get(late), 'telemetry_default');
      await stores.telemetry.maintain(now + 4 * DAY_MS, 2);
      const where = await placement(stores.schema);
      assert.equal(where.get(late), partitionName(dayOf(late)));
      assert.equal(where.get(late + 1), partitionName(dayOf(late)));
      assert.deepEqual((await stores.telemetry.history(org, 'b', { ...ALL, from: late })).map((r) => r.timestamp), [late + 1]);
      const [again] = await stores.telemetry.commit([{ organizationId: org, at: now, records: [rec('a', late)] }], mergeLatest);
      assert.equal(again?.ok && again.duplicates, 1, 'still one record per vehicle and time');
    });
  });

  describe('two nodes', () => {
    test('commit at once for the same vehicles without deadlock; counts are exact and the latest state has every field', async () => {
      const one = await openPostgresTestStores({ label: 'nodes' });
      const two = await openAnotherNode(one.schema);
      try {
        const vehicles = Array.from({ length: 8 }, (_, i) => `v${i}`);
        const org = await registered(one, vehicles);
        // Each request names vehicles in its own order, the overlap that deadlocks unsorted locking.
        const request = (node: Stores, k: number) => {
          const order = k % 2 === 0 ? vehicles : [...vehicles].reverse();
          const records = order.flatMap((vehicleId, i) => [
            { vehicleId, timestamp: T0 + k * 100 + i, data: { speed: k } },
            { vehicleId, timestamp: T0 - 1 - (k % 5), data: { battery: k % 5 } }, // shared: duplicates across nodes
          ]);
          return node.telemetry.commit([{ organizationId: org, at: T0, records }], mergeLatest);
        };
        const outcomes = (await Promise.all(Array.from({ length: 40 }, (_, k) => request(k % 2 === 0 ? one : two, k)))).flat();
        const accepted = outcomes.reduce((sum, o) => sum + (o.ok ? o.accepted : 0), 0);
        const duplicates = outcomes.reduce((sum, o) => sum + (o.ok ? o.duplicates : 0), 0);
        assert.equal(accepted, 40 * 8 + 5 * 8, 'every unique record once');
        assert.equal(duplicates, 35 * 8);
        for (const state of (await two.telemetry.loadLatest()).filter((s) => s.organizationId === org)) {
          assert.equal(state.fields.speed?.value, 39, `${state.vehicleId}: the newest speed (request 39) won`);
          assert.deepEqual(state.fields.battery, { value: 0, at: T0 - 1 });
        }
      } finally {
        await two.close();
        await one.close();
      }
    });

    test("each node writes its own latest-state rows: a commit never waits for the other node's, and reads merge them field by field", async () => {
      const one = await openPostgresTestStores({ label: 'writers' });
      const two = await openAnotherNode(one.schema);
      const holder = openPostgres({ url: TEST_DATABASE_URL, poolSize: 1, schema: one.schema });
      try {
        const org = await registered(one, ['a']);
        const commit = (node: Stores, records: StoredRecord[]) => node.telemetry.commit([{ organizationId: org, at: T0, records }], mergeLatest);
        await commit(one, [{ vehicleId: 'a', timestamp: T0 + 10, data: { speed: 10 } }]);
        const rows = () => adminQuery<{ writer: string }>(`SELECT writer FROM ${one.schema}.telemetry_latest WHERE vehicle_id = 'a' ORDER BY writer`);
        const [own] = await rows();
        // A transaction holds node one's row of the vehicle, as node one's commit does until COMMIT.
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        let held!: () => void;
        const holding = new Promise<void>((resolve) => (held = resolve));
        const lock = holder.transaction(async (client) => {
          await client.query(`SELECT 1 FROM telemetry_latest WHERE vehicle_id = 'a' AND writer = $1 FOR UPDATE`, [own!.writer]);
          held();
          await released;
        });
        await holding;
        const [outcome] = await Promise.race([
          commit(two, [{ vehicleId: 'a', timestamp: T0 + 5, data: { speed: 5, battery: 80 } }]),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error("node two's commit waited for node one's row")), 3000)),
        ]);
        release();
        await lock;
        assert.equal(outcome?.ok && outcome.accepted, 1);
        assert.equal((await rows()).length, 2, 'one row per writer');
        for (const node of [one, two]) {
          const [state] = (await node.telemetry.loadLatest()).filter((s) => s.organizationId === org);
          assert.deepEqual(state?.fields, { speed: { value: 10, at: T0 + 10 }, battery: { value: 80, at: T0 + 5 } });
          assert.equal(state?.timestamp, T0 + 10);
        }
      } finally {
        await holder.end();
        await two.close();
        await one.close();
      }
    });

    test('rows not written for an hour are folded into one per vehicle; the merged state stays, and folded writers start new rows', async () => {
      const one = await openPostgresTestStores({ label: 'fold' });
      const two = await openAnotherNode(one.schema);
      try {
        const org = await registered(one, ['a', 'b']);
        const commit = (node: Stores, at: number, records: StoredRecord[]) => node.telemetry.commit([{ organizationId: org, at, records }], mergeLatest);
        // Commit times on the real clock: the stores ran their first maintenance when they opened.
        const now = Date.now();
        await commit(one, now, [{ vehicleId: 'a', timestamp: T0 - 10, data: { speed: 1, battery: 50 } }, { vehicleId: 'b', timestamp: T0 - 10, data: { speed: 7 } }]);
        await commit(two, now, [{ vehicleId: 'a', timestamp: T0 - 5, data: { speed: 2 } }]);
        const later = now + FOLD_AFTER_MS + 60_000;
        // Node two wrote vehicle b just now: that row stays as it is.
        await commit(two, later, [{ vehicleId: 'b', timestamp: T0 - 20, data: { battery: 9 } }]);
        const states = async (node: Stores) =>
          (await node.telemetry.loadLatest()).filter((s) => s.organizationId === org).sort((x, y) => (x.vehicleId < y.vehicleId ? -1 : 1));
        const before = await states(one);
        await one.telemetry.maintain(later, 30);
        const rows = await adminQuery<{ vehicle_id: string; writer: string }>(
          `SELECT vehicle_id, writer FROM ${one.schema}.telemetry_latest WHERE organization_id = $1 ORDER BY vehicle_id, writer`, [org],
        );
        assert.deepEqual(rows.map((r) => `${r.vehicle_id}:${r.writer === '' ? 'shared' : 'own'}`), ['a:shared', 'b:shared', 'b:own']);
        assert.deepEqual(await states(two), before, 'the merged states are unchanged');
        // A writer whose row was folded writes a new one; reads still merge everything.
        await commit(one, later, [{ vehicleId: 'a', timestamp: T0 - 7, data: { speed: 3, heading: 90 } }]);
        const [a] = (await two.telemetry.loadLatest()).filter((s) => s.organizationId === org && s.vehicleId === 'a');
        assert.deepEqual(a?.fields, { speed: { value: 2, at: T0 - 5 }, battery: { value: 50, at: T0 - 10 }, heading: { value: 90, at: T0 - 7 } });
        assert.equal((await adminQuery(`SELECT 1 FROM ${one.schema}.telemetry_latest WHERE vehicle_id = 'a'`)).length, 2);
      } finally {
        await two.close();
        await one.close();
      }
    });

    test('starting together on an empty database, one node bootstraps the platform organization; the other finds it made', async () => {
      const one = await openPostgresTestStores({ label: 'bootstrap' });
      const two = await openAnotherNode(one.schema);
      try {
        const services = [one, two].map((node) => createAuthService({ store: node.auth, clock: systemClock }));
        const results = await Promise.all(services.map((service) => service.bootstrap(undefined)));
        const made = results.filter((r) => r !== undefined);
        assert.equal(made.length, 1, 'one caller gets the key');
        assert.equal(results.filter((r) => r === undefined).length, 1, 'the other gets undefined');
        const { organizations, total } = await two.auth.listOrganizations({ limit: 10, offset: 0 });
        assert.equal(total, 1);
        assert.equal(organizations[0]!.platform, true);
        // The key printed by the winner works on either node.
        for (const service of services) assert.equal((await service.authenticate(made[0]!.secret)).organizationId, organizations[0]!.id);
      } finally {
        await two.close();
        await one.close();
      }
    });
  });

  describe('retention on every node', () => {
    test('nodes pruning at once drop each old partition once, without errors, and count each record once', async () => {
      const one = await openPostgresTestStores({ label: 'prune_nodes', keepDays: 6 });
      const two = await openAnotherNode(one.schema, { keepDays: 6 });
      try {
        const org = await registered(one, ['a']);
        const now = Date.now();
        const records = [1, 2, 3, 4, 5].flatMap((days) => [0, 1, 2].map((i) => ({ vehicleId: 'a', timestamp: now - days * DAY_MS - i, data: {} })));
        await one.telemetry.commit([{ organizationId: org, at: now, records }], mergeLatest);
        const cut = dayOf(now - DAY_MS); // the partitions of 2 to 5 days ago are wholly older
        const drain = async (node: Stores) => {
          let total = 0;
          for (;;) {
            const deleted = await node.telemetry.prune(cut, 1000);
            total += deleted;
            if (deleted < 1000) return total;
          }
        };
        const [a, b] = await Promise.all([drain(one), drain(two)]);
        assert.equal(a + b, 12);
        assert.equal((await one.telemetry.history(org, 'a', ALL)).length, 3);
      } finally {
        await two.close();
        await one.close();
      }
    });
  });

  describe('a database that cannot be reached', () => {
    test('every store call fails as service-unavailable with Retry-After, promptly', async () => {
      const schema = await freshSchema('down');
      const stores = await openAnotherNode(schema.name);
      // Point a second pool at a port where nothing listens: what every call meets when the host is gone.
      const closed = await freePort();
      const down = await createPostgresStores({ url: withPort(TEST_DATABASE_URL, closed), poolSize: 2, schema: schema.name, keepDays: 1 })
        .then(() => assert.fail('opened a store on a closed port'), (error: unknown) => error);
      assert.ok(isAppError(down) && down.code === 'service-unavailable', String(down));
      try {
        // The same stores, with their pool's connections going to the closed port instead.
        const broken = storesAt(schema.name, closed);
        const started = Date.now();
        const calls: Array<[string, () => Promise<unknown>]> = [
          ['ping', () => broken.ping()],
          ['vehicles.get', () => broken.vehicles.get('o', 'v')],
          ['vehicles.insert', () => broken.vehicles.insert(
            { organizationId: 'o', id: 'v', type: 'van', name: null, status: 'registered', configuration: {}, createdAt: 0, updatedAt: 0, statusChangedAt: 0, groupIds: [], driverId: null },
            { from: null, to: 'registered', reason: null, at: 0, by: 'k' }, 10)],
          ['auth.findKey', () => broken.auth.findKey('x')],
          ['oauth.listSigningKeys', () => broken.oauth.listSigningKeys()],
          ['telemetry.commit', () => broken.telemetry.commit([{ organizationId: 'o', at: 0, records: [{ vehicleId: 'v', timestamp: 0, data: {} }] }], mergeLatest)],
          ['telemetry.history', () => broken.telemetry.history('o', 'v', ALL)],
        ];
        for (const [name, call] of calls) {
          await assert.rejects(call(), (error: unknown) => {
            assert.ok(isAppError(error), `${name}: ${String(error)}`);
            assert.equal(error.code, 'service-unavailable', name);
            assert.equal(error.headers?.['retry-after'], '5', name);
            return true;
          });
        }
        assert.ok(Date.now() - started < 5000, 'refused connections fail at once, not after a timeout');
        await broken.close();
        // Other errors are not disguised as unavailability.
        await assert.rejects(stores.vehicles.insert(
          { organizationId: 'org_missing', id: 'v', type: 'van', name: null, status: 'registered', configuration: {}, createdAt: 0, updatedAt: 0, statusChangedAt: 0, groupIds: [], driverId: null },
          { from: null, to: 'registered', reason: null, at: 0, by: 'k' },
        ), (error: unknown) => !isAppError(error) && (error as { code?: string }).code === '23503');
      } finally {
        await stores.close();
        await schema.drop();
      }
    });

    test('connections killed under the pool (server restart, failover) are replaced; calls never crash the process', async () => {
      const stores = await openPostgresTestStores({ label: 'killed' });
      try {
        const org = await registered(stores, ['a']);
        let ok = 0;
        for (let round = 0; round < 5; round++) {
          // Commits in flight while their connections are terminated: each is stored or answered
          // 'service-unavailable' (and then not acknowledged), nothing else.
          const inFlight = Promise.allSettled(Array.from({ length: 5 }, (_, i) => stores.telemetry.commit(
            [{ organizationId: org, at: T0, records: [{ vehicleId: 'a', timestamp: T0 + round * 10 + i, data: { speed: i } }] }], mergeLatest,
          )));
          await terminateConnections(stores.schema);
          for (const outcome of await inFlight) {
            if (outcome.status === 'fulfilled') ok++;
            else assert.ok(isAppError(outcome.reason) && outcome.reason.code === 'service-unavailable', String(outcome.reason));
          }
        }
        // Then everything works again, on new connections: a call may still meet a connection whose
        // end has not reached the pool yet (503), but not for long.
        const stored = await eventually(() => stores.telemetry.history(org, 'a', ALL));
        assert.ok(stored.length >= ok, `${stored.length} stored, ${ok} acknowledged`);
        const [outcome] = await stores.telemetry.commit([{ organizationId: org, at: T0, records: [{ vehicleId: 'a', timestamp: T0 - 1, data: {} }] }], mergeLatest);
        assert.equal(outcome?.ok, true);
        await stores.ping();
      } finally {
        await stores.close();
      }
    });
  });
});

/** `fn`'s result once it stops failing as service-unavailable (within 2 s). */
async function eventually<T>(fn: () => Promise<T>): Promise<T> {
  for (let waited = 0; ; waited += 50) {
    try {
      return await fn();
    } catch (error) {
      if (!isAppError(error) || error.code !== 'service-unavailable' || waited > 2000) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

function withPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.port = String(port);
  return parsed.toString();
}


/** Stores on an already migrated schema whose pool connects to `port` (nothing is opened at start). */
function storesAt(schema: string, port: number): Stores {
  return postgresStores(openPostgres({ url: withPort(TEST_DATABASE_URL, port), poolSize: 2, schema }));
}
