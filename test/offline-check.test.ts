// The offline check across organizations, on both stores: an organization with more offline rules
// than one SQL statement may name (SQLite's limit on variables) is checked like any other, and an
// organization whose check fails (a rule the service cannot read) is logged and passed over while
// the others' alerts open.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import { startOfflineChecks } from '../src/rules/offline.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { T0, addOrganization, addVehicle } from './contract/fixtures.ts';
import { adminQuery, openPostgresTestStores, skipUnlessPostgres } from './helpers/postgres.ts';
import { manualClock } from './helpers/clock.ts';

/** More than SQLite's default limit of 32,766 variables in one statement. */
const MANY = 33_000;
const OFFLINE = JSON.stringify({ kind: 'offline', afterSeconds: 60 });

interface Backend {
  stores: Stores;
  /** Writes rule rows straight into the database (many at once, or ones the service would never write). */
  rawRules(organizationId: string, rules: { id: string; condition: string; vehicleIds: string[] | null }[]): Promise<void>;
  close(): Promise<void>;
}

function sqlite(): Backend {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-offline-'));
  const file = path.join(dir, 'fleet.db');
  const stores = createSqliteStores(file);
  return {
    stores,
    async rawRules(organizationId, rules) {
      const db = new DatabaseSync(file);
      try {
        const insert = db.prepare(
          `INSERT INTO alert_rules (id, organization_id, name, condition, vehicle_ids, enabled, created_at, updated_at, kind)
           VALUES (?, ?, ?, ?, ?, 1, ?, ?, 'offline')`,
        );
        db.exec('BEGIN');
        for (const r of rules) insert.run(r.id, organizationId, r.id, r.condition, r.vehicleIds === null ? null : JSON.stringify(r.vehicleIds), T0, T0);
        db.exec('COMMIT');
      } finally {
        db.close();
      }
    },
    async close() {
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgres(): Promise<Backend> {
  const stores = await openPostgresTestStores({ label: 'offline' });
  return {
    stores,
    async rawRules(organizationId, rules) {
      await adminQuery(
        `INSERT INTO ${stores.schema}.alert_rules (id, organization_id, name, condition, vehicle_ids, enabled, created_at, updated_at, kind)
         SELECT r.id, $1, r.id, r.condition::json, CASE WHEN r.vehicles IS NULL THEN NULL ELSE ARRAY(SELECT json_array_elements_text(r.vehicles::json)) END,
                true, $2, $2, 'offline'
         FROM unnest($3::text[], $4::text[], $5::text[]) AS r (id, condition, vehicles)`,
        [organizationId, T0, rules.map((r) => r.id), rules.map((r) => r.condition), rules.map((r) => (r.vehicleIds === null ? null : JSON.stringify(r.vehicleIds)))],
      );
    },
    close: () => stores.close(),
  };
}

function suite(open: () => Backend | Promise<Backend>) {
  test('every organization is checked: one with more rules than a statement may name, and past one whose check fails', { timeout: 120_000 }, async () => {
    const backend = await open();
    try {
      const { stores } = backend;
      const big = await addOrganization(stores);
      await addVehicle(stores, big, 'v-1');
      // Every rule of the big organization is read and its unresolved alerts looked up; only the
      // last one names the vehicle, so the check opens one alert there.
      await backend.rawRules(big, Array.from({ length: MANY }, (_, i) => ({
        id: `rul_big${String(i).padStart(6, '0')}`, condition: OFFLINE, vehicleIds: i === MANY - 1 ? null : ['elsewhere'],
      })));
      const good: string[] = [];
      const broken: string[] = [];
      // Interleaved, so that whatever order the organizations are visited in, a failure that ended
      // the whole check would leave some of the good ones unchecked.
      for (let i = 0; i < 5; i++) {
        const ok = await addOrganization(stores);
        await addVehicle(stores, ok, 'v-1');
        await backend.rawRules(ok, [{ id: `rul_ok${i}`, condition: OFFLINE, vehicleIds: null }]);
        good.push(ok);
        const bad = await addOrganization(stores);
        await addVehicle(stores, bad, 'v-1');
        await backend.rawRules(bad, [{ id: `rul_bad${i}`, condition: 'null', vehicleIds: null }]);
        broken.push(bad);
      }

      const warnings: { organizationId?: string }[] = [];
      const checks = startOfflineChecks({
        store: stores.rules, vehicles: stores.vehicles, clock: manualClock(T0 + 120_000), events: { emit: () => {} },
        log: { warn: (obj) => warnings.push(obj) },
        lastTelemetry: () => T0, intervalMs: 3_600_000,
      });
      try {
        await checks.runOnce();
      } finally {
        checks.stop();
      }

      for (const organizationId of [big, ...good]) {
        const { alerts } = await stores.rules.listAlerts(organizationId, { limit: 10 });
        assert.deepEqual(alerts.map((a) => [a.vehicleId, a.status]), [['v-1', 'open']], `the offline alert of ${organizationId === big ? 'the big organization' : organizationId}`);
      }
      assert.deepEqual(warnings.map((w) => w.organizationId).sort(), [...broken].sort(), 'each failed organization logged by name');
    } finally {
      await backend.close();
    }
  });
}

// Asked before the SQLite suite starts: its set-up holds the event loop longer than the question may wait.
const skip = await skipUnlessPostgres();
describe('offline check on SQLite', () => suite(sqlite));
describe('offline check on PostgreSQL', { skip }, () => suite(postgres));
