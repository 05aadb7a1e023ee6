// Group commit and retention, against the real SQLite telemetry store.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { createAuthService } from '../src/auth/service.ts';
import { AppError } from '../src/errors.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { createLatestView } from '../src/telemetry/latest.ts';
import { startRetention } from '../src/telemetry/retention.ts';
import { createTelemetryService } from '../src/telemetry/service.ts';
import type { TelemetryStore } from '../src/telemetry/store.ts';
import { createVehicleService } from '../src/vehicles/service.ts';
import { manualClock } from './helpers/app.ts';

const DAY = 86_400_000;
let dir: string;
let stores: Stores;
let organizationId: string;
const clock = manualClock();
const commits: number[] = [];
let failNext = false;

/** The real store, with its commits counted and, on demand, one made to fail. */
function observed(store: TelemetryStore): TelemetryStore {
  return {
    ...store,
    async commit(batches, merge) {
      commits.push(batches.length);
      if (failNext) {
        failNext = false;
        // What the store throws for a full disk: nothing of the group could commit.
        throw new AppError('service-unavailable', 'disk full');
      }
      return store.commit(batches, merge);
    },
  };
}

function service() {
  return createTelemetryService({ store: observed(stores.telemetry), vehicles: stores.vehicles, latest: createLatestView(), clock });
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'fleet-telemetry-'));
  stores = createSqliteStores(path.join(dir, 'fleet.db'));
  const first = await createAuthService({ store: stores.auth, clock }).bootstrap(undefined);
  organizationId = first!.organization.id;
  const vehicles = createVehicleService({ store: stores.vehicles, clock });
  const who = { organizationId, credentialId: 'key_test', scopes: new Set<never>(), platform: true };
  for (let i = 0; i < 50; i++) await vehicles.register(who, { vehicleId: `g-${i}`, type: 'van' });
  await vehicles.register(who, { vehicleId: 'old', type: 'van' });
});
after(async () => {
  await stores.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('group commit', () => {
  test('concurrent requests share transactions, and each gets its own answer', async () => {
    const telemetry = service();
    commits.length = 0;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        telemetry.ingestForVehicle(organizationId, `g-${i}`, { timestamp: new Date(clock.now() - 1000).toISOString(), data: { speed: i } })),
    );
    assert.ok(results.every((r) => r.accepted === 1 && r.duplicates === 0));
    assert.ok(commits.length <= 2, `50 concurrent requests took ${commits.length} transactions`);
    assert.equal(commits.reduce((a, b) => a + b, 0), 50);
    for (let i = 0; i < 50; i++) {
      assert.equal((await telemetry.latestFor(organizationId, `g-${i}`, undefined)).data.speed, i);
    }
  });

  test('a refused request in a group does not sink the others', async () => {
    const telemetry = service();
    const at = new Date(clock.now() - 500).toISOString();
    const [good, missing, alsoGood] = await Promise.allSettled([
      telemetry.ingestForVehicle(organizationId, 'g-1', { timestamp: at, data: { battery: 10 } }),
      telemetry.ingestForVehicle(organizationId, 'nobody', { timestamp: at, data: { battery: 10 } }),
      telemetry.ingestForVehicle(organizationId, 'g-2', { timestamp: at, data: { battery: 20 } }),
    ]);
    assert.equal(good.status, 'fulfilled');
    assert.equal(alsoGood.status, 'fulfilled');
    assert.equal(missing.status, 'rejected');
  });

  test('a store that cannot write fails every request of the group at once, stores nothing, and the next one works', async () => {
    const telemetry = service();
    const at = new Date(clock.now() - 200).toISOString();
    failNext = true;
    const outcomes = await Promise.allSettled([
      telemetry.ingestForVehicle(organizationId, 'g-3', { timestamp: at, data: { battery: 33 } }),
      telemetry.ingestForVehicle(organizationId, 'g-4', { timestamp: at, data: { battery: 44 } }),
    ]);
    assert.deepEqual(outcomes.map((o) => o.status), ['rejected', 'rejected']);
    assert.deepEqual(commits.slice(-1), [2], 'one try: no split would commit');
    const history = await telemetry.history(organizationId, 'g-3', {});
    assert.ok(!history.records.some((r) => r.data.battery === 33));
    const retry = await telemetry.ingestForVehicle(organizationId, 'g-3', { timestamp: at, data: { battery: 33 } });
    assert.deepEqual(retry, { accepted: 1, duplicates: 0 });
  });
});

describe('retention', () => {
  test('deletes records older than the retention, in steps, and keeps the rest and the latest state', async () => {
    const telemetry = service();
    const old = Array.from({ length: 2500 }, (_, i) => ({ timestamp: new Date(clock.now() - 40 * DAY - i * 1000).toISOString(), data: { speed: 1 } }));
    for (let i = 0; i < old.length; i += 1000) {
      await telemetry.ingestForVehicle(organizationId, 'old', { records: old.slice(i, i + 1000) });
    }
    await telemetry.ingestForVehicle(organizationId, 'old', { timestamp: new Date(clock.now() - 10 * DAY).toISOString(), data: { speed: 2 } });
    const retention = startRetention({ store: stores.telemetry, clock, days: 30, log: pino({ level: 'silent' }), intervalMs: 3_600_000 });
    try {
      assert.equal(await retention.runOnce(), 2500);
      const left = await telemetry.history(organizationId, 'old', { limit: 10_000 });
      assert.deepEqual(left.records.map((r) => r.data.speed), [2]);
      assert.equal(await retention.runOnce(), 0);
    } finally {
      retention.stop();
    }
  });
});
