// Reads on a streaming replica (FLEET_DATABASE_READ_URL, docs/OPERATIONS.md "Read replica"): a
// real primary and a real replica made by the suite (initdb, pg_basebackup -R). The router's lag is
// judged on a clock the test moves, with the replica's replay paused and resumed; then a service
// process reads history from the replica (held back, it shows the older history) and from the
// primary once the replica is gone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateApiKey } from '../src/auth/keys.ts';
import { openPostgres } from '../src/storage/postgres/database.ts';
import { lagFrom, lsnValue, readRouter, thin } from '../src/storage/postgres/replica.ts';
import { type RunningFleet, request, startFleet } from './helpers/process.ts';
import { type ReplicaPair, postgresBin, startReplicaPair } from './helpers/replica.ts';
import { skipUnless } from './helpers/skip.ts';
import { waitUntil } from './helpers/wait.ts';

const BIN = postgresBin();
const skip = skipUnless(BIN === undefined ? 'not installed' : undefined, 'PostgreSQL\'s server binaries (/usr/lib/postgresql/<version>/bin)',
  'the read replica tests', 'Install Debian\'s postgresql package');

describe('WAL positions and lag', () => {
  test('positions order as PostgreSQL orders them, across the 32-bit boundary', () => {
    assert.ok(lsnValue('0/FFFFFFFF') < lsnValue('1/0'));
    assert.ok(lsnValue('16/B374D848') > lsnValue('16/B374D847'));
    assert.equal(lsnValue('0/3000000'), 0x3000000n);
  });

  test('thinned samples overstate the lag, never understate it', () => {
    const samples = Array.from({ length: 5 }, (_, i) => ({ lsn: BigInt(10 * (i + 1)), at: 1_000 * (i + 1) }));
    thin(samples);
    assert.deepEqual(samples, [{ lsn: 20n, at: 1_000 }, { lsn: 40n, at: 3_000 }, { lsn: 50n, at: 5_000 }]);
    // Replayed up to 15: the true lag is the age of the sample at 2,000 (position 20); read as 1,000's.
    assert.equal(lagFrom(samples, 15n, 6_000), 5_000);
  });

  test('the lag is the age of the oldest position not replayed yet; replayed ones are dropped', () => {
    const samples = [{ lsn: 10n, at: 1_000 }, { lsn: 20n, at: 2_000 }, { lsn: 30n, at: 3_000 }];
    assert.equal(lagFrom(samples, 15n, 3_500), 1_500);
    assert.deepEqual(samples.map((s) => s.lsn), [20n, 30n]);
    assert.equal(lagFrom(samples, 30n, 4_000), 0);
    assert.deepEqual(samples, []);
  });
});

describe('a streaming replica', { skip, timeout: 120_000 }, () => {
  let pair: ReplicaPair;
  before(async () => {
    pair = await startReplicaPair(BIN!);
  });
  after(() => pair?.close());

  const replayed = async (table: string, rows: number) => {
    await waitUntil(async () => {
      const [row] = await pair.onReplica(`SELECT count(*)::int AS n FROM ${table}`).catch(() => [{ n: -1 }]) as { n: number }[];
      return row!.n === rows;
    }, `${rows} rows of ${table} on the replica`, 30_000);
  };

  test('reads follow the lag: on the replica while it is within bound, on the primary past it or when the replica is gone', async () => {
    await pair.onPrimary('CREATE TABLE seen (n int); INSERT INTO seen VALUES (1)');
    await replayed('seen', 1);
    let clock = 1_000_000;
    const changes: boolean[] = [];
    const primary = openPostgres({ url: pair.primaryUrl, poolSize: 2 });
    const router = readRouter(primary, openPostgres({ url: pair.replicaUrl, poolSize: 2 }), {
      maxLagMs: 1_000, probeMs: 3_600_000, now: () => clock, onChange: (onReplica) => changes.push(onReplica),
    });
    const count = async () => ((await router.query<{ n: number }>('SELECT count(*)::int AS n FROM seen')).rows[0]!.n);
    try {
      await router.probe();
      assert.equal(router.lagMs(), 0);
      assert.equal(router.onReplica(), true);

      // Replay held back: a row written on the primary is not on the replica.
      await pair.onReplica('SELECT pg_wal_replay_pause()');
      await pair.onPrimary('INSERT INTO seen VALUES (2)');
      await router.probe();
      assert.equal(router.onReplica(), true, 'not behind for longer than the bound yet');
      assert.equal(await count(), 1, 'read on the replica, which has not the new row');

      clock += 1_001;
      await router.probe();
      assert.equal(router.lagMs(), 1_001);
      assert.equal(router.onReplica(), false);
      assert.equal(await count(), 2, 'read on the primary');

      await pair.onReplica('SELECT pg_wal_replay_resume()');
      await replayed('seen', 2);
      await router.probe();
      assert.equal(router.lagMs(), 0);
      assert.equal(router.onReplica(), true);
      assert.equal(await count(), 2);

      // The replica gone: the read in hand is made on the primary, and so are the next ones.
      await pair.stopReplica();
      assert.equal(await count(), 2);
      assert.equal(router.onReplica(), false);
      await router.probe();
      assert.equal(router.lagMs(), undefined);
      assert.deepEqual(changes, [true, false, true, false]);
    } finally {
      await router.end();
      await primary.end();
    }
  });
});

describe('a service process with FLEET_DATABASE_READ_URL', { skip, timeout: 120_000 }, () => {
  let pair: ReplicaPair;
  let fleet: RunningFleet;
  const key = generateApiKey();
  const cleanups: (() => Promise<void>)[] = [];
  before(async () => {
    pair = await startReplicaPair(BIN!);
    const ctx = { after: (fn: () => Promise<void> | void) => void cleanups.push(async () => fn()) } as unknown as Parameters<typeof startFleet>[0];
    fleet = await startFleet(ctx, {
      env: { FLEET_DATABASE_URL: pair.primaryUrl, FLEET_DATABASE_READ_URL: pair.replicaUrl, FLEET_DATABASE_READ_MAX_LAG_SECONDS: '3600', FLEET_ADMIN_KEY: key, FLEET_LOG_LEVEL: 'info' },
    });
  });
  after(async () => {
    await fleet?.stop('SIGTERM');
    for (const fn of cleanups) await fn();
    await pair?.close();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await request(fleet, method, path, { key, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  };
  const history = async () => (await call('GET', '/v2/telemetry/van-1/history')).body.records.length as number;
  const logged = (msg: string) => fleet.logs().filter((line) => line.msg === msg).length;

  test('history is read on the replica (a held-back replica shows it), and on the primary once the replica is gone', async () => {
    await fleet.waitFor(() => logged('reads go to the replica (FLEET_DATABASE_READ_URL)') === 1, 'reads on the replica', 20_000);
    const made = await call('POST', '/v2/fleet/vehicles', { vehicleId: 'van-1', type: 'van', name: 'Van 1' });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal((await call('POST', '/v2/telemetry/van-1', { timestamp: new Date().toISOString(), data: { speed: 10 } })).status, 202);
    await waitUntil(async () => (await history()) === 1, 'the record in history', 20_000);

    // Replay held back, within the bound (an hour here): history is read where the record is not.
    await pair.onReplica('SELECT pg_wal_replay_pause()');
    assert.equal((await call('POST', '/v2/telemetry/van-1', { timestamp: new Date().toISOString(), data: { speed: 20 } })).status, 202);
    assert.equal((await call('GET', '/v2/telemetry/van-1')).body.data.speed, 20, 'the latest state is the primary\'s');
    assert.equal(await history(), 1, 'history read on the replica');
    await pair.onReplica('SELECT pg_wal_replay_resume()');
    await waitUntil(async () => (await history()) === 2, 'the second record in history once replayed', 20_000);

    const metrics = async () => (await (await request(fleet, 'GET', '/metrics', { key })).text());
    assert.match(await metrics(), /^fleet_database_reads_on_replica 1$/m);
    assert.match(await metrics(), /^fleet_database_replica_lag_seconds \d/m);

    await pair.stopReplica();
    assert.equal(await history(), 2, 'read on the primary');
    await fleet.waitFor(() => logged('reads go to the primary: the replica is behind or unreachable') === 1, 'the warning', 20_000);
    assert.match(await metrics(), /^fleet_database_reads_on_replica 0$/m);
  });
});
