// Crash safety (docs/API.md "Telemetry": 202 only after a durable commit). Several HTTP clients ingest
// concurrently into a real Fleet process, the process is SIGKILLed mid-stream, and a new process on
// the same data must hold every record that was acknowledged, a latest state equal to the
// newest stored record of each vehicle, and summary rollups that agree with that history. Processes are killed in t.after; every wait is bounded.
import assert from 'node:assert/strict';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateApiKey } from '../src/auth/keys.ts';
import { historyOf as history, request, startFleet, tempDir, withTimeout } from './helpers/process.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { summaryServiceOf } from '../src/reports/summary.ts';

const VEHICLES = Array.from({ length: 8 }, (_, i) => `crash-${i + 1}`);
/** Clients and what each sends per request. */
const CLIENTS = [
  { kind: 'single' }, { kind: 'single' },
  { kind: 'vehicle-batch', size: 25 }, { kind: 'vehicle-batch', size: 25 },
  { kind: 'fleet-batch', size: 40 }, { kind: 'fleet-batch', size: 40 },
] as const;

type Data = Record<string, unknown>;

test('every acknowledged record survives SIGKILL; the latest state is the newest record; the rollups agree with the history', { timeout: 90_000 }, async (t) => {
  const key = generateApiKey();
  const cwd = tempDir(t, 'fleet-crash-');
  const env = { FLEET_ADMIN_KEY: key, FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0' };
  const first = await startFleet(t, { cwd, env });
  for (const vehicleId of VEHICLES) {
    const res = await request(first, 'POST', '/v2/fleet/vehicles', { key, body: { vehicleId, type: 'van' } });
    assert.equal(res.status, 201, await res.text());
  }

  // Every record ever sent (vehicle -> timestamp -> data), and the acknowledged ones. Timestamps
  // come from one counter, so they are unique across clients; each record carries every field, so
  // the latest state of a vehicle is exactly its newest record's data.
  const T0 = Date.now() - 3_600_000;
  let counter = 0;
  const sent = new Map<string, Map<number, Data>>(VEHICLES.map((id) => [id, new Map()]));
  const acked = new Map<string, Set<number>>(VEHICLES.map((id) => [id, new Set()]));
  let ackedCount = 0;
  let inFlight = 0;
  let stopped = false;
  const failures: string[] = [];

  function record(vehicleId: string) {
    const ts = T0 + counter++;
    const n = ts - T0;
    const data: Data = {
      location: { lat: 52.5 + (n % 1000) / 100_000, lng: 13.4 + (n % 997) / 100_000 },
      speed: n % 120,
      heading: n % 360,
      battery: n % 101,
      temperature: (n % 400) / 10,
      odometer: n / 10,
    };
    sent.get(vehicleId)!.set(ts, data);
    return { vehicleId, ts, data };
  }

  async function client(index: number) {
    const spec = CLIENTS[index]!;
    let round = 0;
    while (!stopped) {
      const vehicleId = VEHICLES[(index + round++) % VEHICLES.length]!;
      let pathname: string;
      let body: unknown;
      let records: ReturnType<typeof record>[];
      if (spec.kind === 'single') {
        records = [record(vehicleId)];
        pathname = `/v2/telemetry/${vehicleId}`;
        body = { timestamp: new Date(records[0]!.ts).toISOString(), data: records[0]!.data };
      } else if (spec.kind === 'vehicle-batch') {
        records = Array.from({ length: spec.size }, () => record(vehicleId));
        pathname = `/v2/telemetry/${vehicleId}`;
        body = { records: records.map((r) => ({ timestamp: new Date(r.ts).toISOString(), data: r.data })) };
      } else {
        records = Array.from({ length: spec.size }, (_, i) => record(VEHICLES[(index + round + i) % VEHICLES.length]!));
        pathname = '/v2/telemetry';
        body = { records: records.map((r) => ({ vehicleId: r.vehicleId, timestamp: new Date(r.ts).toISOString(), data: r.data })) };
      }
      inFlight++;
      try {
        const res = await request(first, 'POST', pathname, { key, body });
        const answer = (await res.json()) as { accepted?: number; duplicates?: number };
        if (res.status === 202) {
          assert.deepEqual(answer, { accepted: records.length, duplicates: 0 });
          for (const r of records) acked.get(r.vehicleId)!.add(r.ts);
          ackedCount += records.length;
        } else {
          failures.push(`${res.status} ${JSON.stringify(answer)}`);
        }
      } catch {
        // The process was killed under this request: not acknowledged, so not promised.
      } finally {
        inFlight--;
      }
    }
  }

  const clients = CLIENTS.map((_, i) => client(i));
  const started = Date.now();
  await first.waitFor(() => ackedCount >= 2_000 && Date.now() - started >= 1_000, '2000 acknowledged records', 20_000);
  // Mid-stream: several requests are on their way in when the process dies.
  const deadline = Date.now() + 2_000;
  while (inFlight < 3 && Date.now() < deadline) await sleep(1);
  const inFlightAtKill = inFlight;
  first.child.kill('SIGKILL');
  const exit = await withTimeout(first.closed, 5_000, 'the killed process to exit');
  stopped = true;
  await withTimeout(Promise.all(clients), 15_000, 'the clients to stop');

  assert.equal(exit.signal, 'SIGKILL');
  assert.deepEqual(failures, [], 'every request before the kill was accepted');
  assert.ok(inFlightAtKill >= 1, 'the kill came with requests in flight');
  const ackedBeforeRestart = ackedCount;
  assert.ok(ackedBeforeRestart >= 2_000);

  const sentCount = [...sent.values()].reduce((n, m) => n + m.size, 0);
  t.diagnostic(`${ackedBeforeRestart} of ${sentCount} records acknowledged; ${inFlightAtKill} requests in flight at the kill`);

  const second = await startFleet(t, { cwd, env });
  for (const vehicleId of VEHICLES) {
    const stored = await history(second, key, vehicleId);
    const timestamps = stored.map((r) => Date.parse(r.timestamp as string));
    assert.ok(timestamps.every((ts, i) => i === 0 || ts > timestamps[i - 1]!), `${vehicleId}: history in time order, no duplicates`);
    const have = new Set(timestamps);
    const lost = [...acked.get(vehicleId)!].filter((ts) => !have.has(ts));
    assert.deepEqual(lost.map((ts) => new Date(ts).toISOString()), [], `${vehicleId}: acknowledged records lost`);
    for (const r of stored) {
      // Nothing invented, nothing torn: each stored record is one that was sent, intact.
      assert.deepEqual(r.data, sent.get(vehicleId)!.get(Date.parse(r.timestamp as string)), `${vehicleId} ${r.timestamp as string}`);
    }

    const newestStored = Math.max(...timestamps);
    assert.ok(newestStored >= Math.max(...acked.get(vehicleId)!), `${vehicleId}: newest acknowledged record is the latest or older`);
    const latest = await request(second, 'GET', `/v2/telemetry/${vehicleId}`, { key });
    assert.equal(latest.status, 200);
    const body = (await latest.json()) as { timestamp: string; data: Data };
    assert.equal(body.timestamp, new Date(newestStored).toISOString(), `${vehicleId}: latest timestamp`);
    assert.deepEqual(body.data, sent.get(vehicleId)!.get(newestStored), `${vehicleId}: latest data is the newest record's`);
  }

  assert.deepEqual(await second.stop('SIGTERM'), { code: 0, signal: null });
  const db = new DatabaseSync(path.join(cwd, 'data', 'fleet.db'), { readOnly: true });
  try {
    assert.deepEqual(db.prepare('PRAGMA integrity_check').all().map((row) => row.integrity_check), ['ok']);
  } finally {
    db.close();
  }

  // The summary rollups, written in the same commits, agree with the history that survived.
  const stores = createSqliteStores(path.join(cwd, 'data', 'fleet.db'));
  try {
    const organizationId = (stores.db.prepare('SELECT organization_id FROM vehicles LIMIT 1').get() as { organization_id: string }).organization_id;
    const service = summaryServiceOf(stores);
    const who = { organizationId, credentialId: 'test', scopes: new Set<never>(), platform: false };
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const request = { from: day(T0), to: day(Date.now() + 86_400_000), timezone: 'UTC', groupBy: 'vehicle' as const };
    const fromRollups = (await service.summary(who, request)).rows;
    const fromHistory = (await service.fromHistory(who, request)).rows;
    assert.equal(fromRollups.length, VEHICLES.length);
    for (const [i, row] of fromHistory.entries()) {
      const kept = fromRollups[i]!;
      assert.equal(kept.vehicleId, row.vehicleId);
      assert.ok(Math.abs(kept.distanceKm - row.distanceKm) <= 0.002 && Math.abs(kept.drivingSeconds - row.drivingSeconds) <= 0.002, `${JSON.stringify(kept)} vs ${JSON.stringify(row)}`);
      assert.deepEqual([kept.trips, kept.maxSpeed], [row.trips, row.maxSpeed], row.vehicleId);
    }
  } finally {
    await stores.close();
  }
});
