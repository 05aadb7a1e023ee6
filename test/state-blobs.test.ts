// The embedded store's binary form of the meters and the rollups' state (storage/state-blobs.ts):
// every state reads back as it was written, JSON text written before reads the same, and a store
// whose rule states are JSON (before migration 0027) keeps them through the migration, readable,
// and rewritten in the new form at their next change.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DatabaseSync } from 'node:sqlite';
import type { MeterState } from '../src/meters/state.ts';
import type { PackedTally, RollupState } from '../src/reports/rollup.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { decodeMeters, decodeRoll, encodeMeters, encodeRoll } from '../src/storage/state-blobs.ts';
import { createTestApp } from './helpers/app.ts';
import { manualClock } from './helpers/clock.ts';
import { rng } from './helpers/random.ts';

const TEXTS = ['drv_MBlOC5HmorxChPA6Eypt', '', '0000000000000001', 'Fahrerin Jürgen-Ölçü', '運転手 🚚', 'x'.repeat(300)];

function states(seed: number): { meters: MeterState; roll: RollupState } {
  const r = rng(seed);
  const maybe = <T>(value: T): T | null => (r() < 0.3 ? null : value);
  const text = () => maybe(TEXTS[Math.floor(r() * TEXTS.length)]!);
  const number = () => (r() < 0.5 ? Math.floor(r() * 1e13) : (r() - 0.5) * 1e5);
  const driver = text();
  const pend: PackedTally[] = Array.from({ length: Math.floor(r() * 4) }, () =>
    [Math.floor(r() * 500_000), r() < 0.5 ? (driver ?? '') : (text() ?? ''), number(), number(), number(), number(), Math.floor(r() * 9), maybe(number())]);
  return {
    meters: { odo: maybe(number()), off: number(), gps: number(), eng: number(), lat: maybe(number()), lng: maybe(number()), ign: r() < 0.5, ident: text(), up: maybe(number()) },
    roll: {
      t: maybe(number()), ign: r() < 0.5, loc: maybe({ lat: number(), lng: number() }),
      drv: driver, cur: r() < 0.7 ? driver : text(), tdrv: r() < 0.7 ? driver : text(), pend,
    },
  };
}

test('meters and rollup states read back as written, in the binary form and as JSON text', () => {
  for (let seed = 1; seed <= 500; seed++) {
    const { meters, roll } = states(seed);
    assert.deepEqual(decodeMeters(encodeMeters(meters)), meters, `meters, seed ${seed}`);
    assert.deepEqual(decodeRoll(encodeRoll(roll)), roll, `rollup state, seed ${seed}`);
    assert.deepEqual(decodeMeters(JSON.stringify(meters)), meters, `meters as JSON, seed ${seed}`);
    assert.deepEqual(decodeRoll(JSON.stringify(roll)), roll, `rollup state as JSON, seed ${seed}`);
  }
  // A driver named four times is written once.
  const once = encodeRoll({ t: 1, ign: true, loc: null, drv: TEXTS[0]!, cur: TEXTS[0]!, tdrv: TEXTS[0]!, pend: [[1, TEXTS[0]!, 0, 0, 0, 0, 0, null]] });
  assert.ok(once.length < 2 * TEXTS[0]!.length + 100, `${once.length} bytes`);
  assert.throws(() => decodeRoll(Uint8Array.of(9, 0, 0)), /unknown layout 9/);
});

test('a store whose rule states are JSON keeps them through migration 0027, and writes each anew in the binary form', async () => {
  const T0 = Date.parse('2026-11-22T06:00:00.000Z');
  const ctx = await createTestApp({ clock: manualClock(T0 + 7_200_000) });
  const { organizationId, file } = ctx;
  try {
    await ctx.registerVehicle('van-1');
    const records = [0, 60, 120, 180].map((s, i) => ({
      timestamp: new Date(T0 + s * 1000).toISOString(), data: { location: { lat: 52.5 + i * 0.001, lng: 13.4 }, speed: 30, ignition: true },
    }));
    const res = await ctx.request('POST', '/v2/telemetry/van-1', { body: { records } });
    assert.equal(res.statusCode, 202, res.body);
  } finally {
    await ctx.app.close();
    await ctx.stores.close();
  }
  const before = (() => {
    const db = new DatabaseSync(file);
    try {
      const row = db.prepare("SELECT typeof(meters) AS mt, typeof(rollup) AS rt, meters, rollup FROM vehicle_rule_state WHERE vehicle_id = 'van-1'").get()!;
      assert.deepEqual([row.mt, row.rt], ['blob', 'blob'], 'written in the binary form');
      const state = { meters: decodeMeters(row.meters), roll: decodeRoll(row.rollup) };
      assert.ok(state.meters.gps > 0 && state.meters.eng === 180 && state.roll.pend.length > 0, JSON.stringify(state));
      // The table as the migrations before 0027 left it, with its states in JSON.
      db.exec(`
        DROP TABLE vehicle_rule_state;
        CREATE TABLE vehicle_rule_state (
          organization_id TEXT NOT NULL, vehicle_id TEXT NOT NULL, ts INTEGER NOT NULL, inside TEXT NOT NULL, held TEXT NOT NULL,
          PRIMARY KEY (organization_id, vehicle_id),
          FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
        ) STRICT;
        ALTER TABLE vehicle_rule_state ADD COLUMN trip TEXT;
        ALTER TABLE vehicle_rule_state ADD COLUMN meters TEXT;
        ALTER TABLE vehicle_rule_state ADD COLUMN rollup TEXT;
        DELETE FROM schema_migrations WHERE version = 27;`);
      db.prepare(`INSERT INTO vehicle_rule_state (organization_id, vehicle_id, ts, inside, held, trip, meters, rollup) VALUES (?, 'van-1', ?, '[]', '{}', NULL, ?, ?)`)
        .run(organizationId, T0 + 180_000, JSON.stringify(state.meters), JSON.stringify(state.roll));
      return state;
    } finally {
      db.close();
    }
  })();

  const stores = createSqliteStores(file);
  try {
    assert.deepEqual(await stores.meters.meters(organizationId, 'van-1'), before.meters, 'the meters as they were');
    const pending = await stores.rollups.pending(organizationId, null);
    assert.deepEqual(pending.map((p) => p.tallies.length), [before.roll.pend.length], 'the pending tallies as they were');
    const set = await stores.meters.setMeters(organizationId, 'van-1', (m) => ({ ...m!, off: 5 }));
    assert.deepEqual(set, { ...before.meters, off: 5 });
  } finally {
    await stores.close();
  }
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const row = db.prepare("SELECT typeof(meters) AS mt, typeof(rollup) AS rt, meters, rollup FROM vehicle_rule_state WHERE vehicle_id = 'van-1'").get()!;
    assert.deepEqual([row.mt, row.rt], ['blob', 'blob'], 'rewritten in the binary form');
    assert.deepEqual(decodeMeters(row.meters), { ...before.meters, off: 5 });
    assert.deepEqual(decodeRoll(row.rollup), before.roll);
    assert.ok(db.prepare('SELECT 1 FROM schema_migrations WHERE version = 27').get() !== undefined, 'migration 0027 applied again');
  } finally {
    db.close();
  }
});
