// The summary half of `npm run bench -- reports` (see the top of bench/reports.bench.ts): a year
// of rollups for 10,000 vehicles summed, and the same rows from rollups and from history on a
// fleet whose records went through the commit.
import type { Principal } from '../src/auth/scopes.ts';
import { createRuleEngine } from '../src/rules/engine.ts';
import { summaryServiceOf } from '../src/reports/summary.ts';
import type { SummaryRequest } from '../src/reports/model.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { CommitBatch } from '../src/telemetry/store.ts';
import { median, startBenchFleet, tempDatabases } from './lib.ts';
import { trackDataText } from './rows.ts';

const FLEET = 10_000;
const SAMPLE_VEHICLES = 20;
const SAMPLE_DAYS = 14;
const TIMES = 5;

async function timed(times: number, fn: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await fn();
    ms.push(performance.now() - started);
  }
  return median(ms);
}

function serviceOf(stores: ReturnType<typeof createSqliteStores>, organizationId: string) {
  const service = summaryServiceOf(stores);
  const who: Principal = { organizationId, credentialId: 'bench', scopes: new Set(), platform: false };
  return { service, who };
}

export async function summaryBench(print: (line?: string) => void): Promise<void> {
  const databases = tempDatabases();
  print('| summary | rows read | ms (median of 5) |');
  print('|---|---|---|');

  // A year of 10,000 vehicles' rollups, one driver each: a day row per vehicle and day, their
  // months, and the hours of the days at the range's two ends (what a zone other than UTC reads besides).
  {
    const stores = createSqliteStores(databases.file());
    const fleet = await startBenchFleet(stores, ['veh-00000']);
    const { db } = stores;
    const org = fleet.organizationId;
    const first = Date.parse('2025-01-01T00:00:00Z') / 86_400_000;
    db.exec('BEGIN');
    db.prepare(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${FLEET - 1})
      INSERT INTO vehicles (organization_id, id, type, status, configuration, created_at, updated_at, status_changed_at, name)
      SELECT organization_id, printf('veh-%05d', i), type, status, configuration, created_at, updated_at, status_changed_at, name FROM vehicles, n WHERE id = 'veh-00000'`).run();
    db.prepare(`WITH RECURSIVE d(day) AS (SELECT ${first} UNION ALL SELECT day + 1 FROM d WHERE day < ${first + 365})
      INSERT INTO rollup_days (organization_id, vehicle_id, day, driver_id, distance_m, driving_s, idle_s, engine_s, trips, max_speed)
      SELECT v.organization_id, v.id, d.day, 'drv_' || v.id, 120000 + abs(random() % 50000), 20000, 1800, 21800, 6, 90 FROM vehicles v, d WHERE v.organization_id = ?`).run(org);
    db.prepare(`WITH RECURSIVE h(hour) AS (SELECT ${(first - 1) * 24} UNION ALL SELECT hour + 1 FROM h WHERE hour < ${(first + 1) * 24 - 1}),
      e(hour) AS (SELECT hour FROM h UNION ALL SELECT hour + 365 * 24 FROM h)
      INSERT INTO rollup_hours (organization_id, vehicle_id, hour, driver_id, distance_m, driving_s, idle_s, engine_s, trips, max_speed)
      SELECT v.organization_id, v.id, e.hour, 'drv_' || v.id, 5000, 800, 75, 875, 0, 90 FROM vehicles v, e WHERE v.organization_id = ?`).run(org);
    db.prepare(`INSERT INTO rollup_months (organization_id, vehicle_id, month, driver_id, distance_m, driving_s, idle_s, engine_s, trips, max_speed)
      SELECT organization_id, vehicle_id, (CAST(strftime('%Y', day * 86400, 'unixepoch') AS INTEGER) - 1970) * 12 + CAST(strftime('%m', day * 86400, 'unixepoch') AS INTEGER) - 1 AS m,
        driver_id, sum(distance_m), sum(driving_s), sum(idle_s), sum(engine_s), sum(trips), max(max_speed)
      FROM rollup_days WHERE organization_id = ? GROUP BY organization_id, vehicle_id, m, driver_id`).run(org);
    db.exec('COMMIT');
    db.exec('ANALYZE');
    const { service, who } = serviceOf(stores, org);
    for (const [label, request] of [
      ['a year, 10,000 vehicles, by vehicle, UTC', { from: '2025-01-01', to: '2026-01-01', timezone: 'UTC', groupBy: 'vehicle' }],
      ['a year, 10,000 vehicles, by vehicle, Europe/Berlin', { from: '2025-01-01', to: '2026-01-01', timezone: 'Europe/Berlin', groupBy: 'vehicle' }],
      ['a year, 10,000 vehicles, by driver, UTC', { from: '2025-01-01', to: '2026-01-01', timezone: 'UTC', groupBy: 'driver' }],
      ['a year, 10,000 vehicles, by day, UTC', { from: '2025-01-01', to: '2026-01-01', timezone: 'UTC', groupBy: 'day' }],
    ] as const satisfies readonly (readonly [string, SummaryRequest])[]) {
      let rows = 0;
      const ms = await timed(TIMES, async () => {
        rows = (await service.summary(who, request)).rows.length;
      });
      const read = request.groupBy === 'day' ? '3,650,000 days' : request.timezone === 'UTC' ? '120,000 months' : '110,000 months + 300,000 days + 240,000 hours';
      print(`| ${label} (${rows} rows) | ${read} | ${ms.toFixed(0)} |`);
    }
    await fleet.app.close();
    await stores.close();
  }

  // The same rows from rollups and from history, on records that went through the commit.
  {
    const stores = createSqliteStores(databases.file());
    const vehicles = Array.from({ length: SAMPLE_VEHICLES }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
    const fleet = await startBenchFleet(stores, vehicles);
    const engine = createRuleEngine({ store: stores.rules, trips: true, meters: true });
    await engine.prepare(fleet.organizationId);
    const start = Date.parse('2026-10-01T00:00:00Z');
    const perVehicle = SAMPLE_DAYS * 1440;
    for (let n = 0; n < perVehicle; n += 1000) {
      const batches: CommitBatch[] = vehicles.map((vehicleId, v) => ({
        organizationId: fleet.organizationId, at: Date.now(),
        records: Array.from({ length: Math.min(1000, perVehicle - n) }, (_, i) => {
          const k = n + i;
          const data = JSON.parse(trackDataText(v, k)) as CommitBatch['records'][number]['data'];
          data.ignition = k % 30 !== 0;
          return { vehicleId, timestamp: start + k * 60_000, data };
        }),
      }));
      await stores.telemetry.commit(batches, mergeLatest, engine.commitRules);
    }
    const { service, who } = serviceOf(stores, fleet.organizationId);
    const request: SummaryRequest = { from: '2026-10-01', to: '2026-10-15', timezone: 'UTC', groupBy: 'vehicle' };
    const fromRollups = await timed(TIMES, () => service.summary(who, request));
    const fromHistory = await timed(3, () => service.fromHistory(who, request));
    const records = (SAMPLE_VEHICLES * perVehicle).toLocaleString('en');
    print(`| ${SAMPLE_DAYS} days, ${SAMPLE_VEHICLES} vehicles (${records} records), by vehicle, from rollups | ${SAMPLE_VEHICLES * SAMPLE_DAYS} days | ${fromRollups.toFixed(1)} |`);
    print(`| the same rows from history | ${records} records | ${fromHistory.toFixed(0)} |`);
    print();
    print(`From rollups **${(fromHistory / fromRollups).toFixed(0)} ×** faster than from history on the same records ` +
      `(history costs ${((fromHistory * 1000) / (SAMPLE_VEHICLES * perVehicle)).toFixed(2)} µs a record).`);
    await fleet.app.close();
    await stores.close();
  }
  databases.removeAll();
}
