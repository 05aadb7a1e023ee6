// Upgrading an embedded store made when events kept only their `data`: the migration writes each
// recorded event's public envelope, the same text the service writes for a new one.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { envelopeJson } from '../src/events/types.ts';
import { migrate } from '../src/storage/sqlite/database.ts';

const MIGRATIONS = new URL('../src/storage/sqlite/migrations/', import.meta.url);

test('events recorded before envelopes were kept get the envelope the service writes', () => {
  const db = new DatabaseSync(':memory:');
  db.exec('PRAGMA foreign_keys = ON');
  // The schema as it was before envelopes: the migrations up to 0009.
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
  for (const name of readdirSync(MIGRATIONS).filter((n) => /^\d{4}_/.test(n)).sort()) {
    const version = Number(name.slice(0, 4));
    if (version > 9) continue;
    db.exec(readFileSync(new URL(name, MIGRATIONS), 'utf8'));
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)').run(version, name);
  }
  // Any time a client can send (years 0000 to 9999, before 1970 too), events with and without a vehicle.
  const times = [0, 1, 999, 1000, -1, -999, -1000, -1001, 1764090000123, -62167219200000, 253402300799999, 951782400000];
  const events = times.map((at, i) => ({
    id: `evt_${String(i).padStart(24, '0')}`, type: 'vehicle.status_changed' as const, occurredAt: at, vehicleId: i % 5 === 4 ? null : `veh-${i}`,
    dataJson: JSON.stringify({ from: 'active', to: 'inactive', reason: i % 2 === 0 ? null : 'quote " and \\ and é', by: 'key_x' }),
  }));
  const insert = db.prepare('INSERT INTO events (id, organization_id, type, vehicle_id, occurred_at, recorded_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)');
  for (const e of events) insert.run(e.id, 'org_a', e.type, e.vehicleId, e.occurredAt, 0, e.dataJson);

  migrate(db);

  const rows = db.prepare('SELECT id, envelope FROM events ORDER BY seq').all();
  assert.deepEqual(rows.map((row) => row.envelope), events.map(envelopeJson));
  assert.equal(db.prepare("SELECT count(*) AS n FROM pragma_table_info('events') WHERE name = 'data'").get()!.n, 0, 'data is now only in the envelope');
  db.close();
});
