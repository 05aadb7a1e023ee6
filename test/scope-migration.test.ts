// Upgrading a store made before newer scopes existed (events:read, rules, webhooks and metrics:read;
// then users, audit:read, commands, dispatch and alerts:write): the first admin key of each
// organization gains them, every other key keeps what it has.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { openSqlite } from '../src/storage/sqlite/database.ts';
import { adminQuery, openPostgresTestStores, skipUnlessPostgres } from './helpers/postgres.ts';

const OLD = ['fleet:read', 'fleet:write', 'telemetry:read', 'telemetry:write', 'streams', 'admin'];
const ALL = [...OLD, 'events:read', 'rules', 'webhooks', 'metrics:read'].sort();

/** The migration's grant to first admin keys, its last statement. */
function grant(file: string): string {
  const sql = readFileSync(new URL(file, import.meta.url), 'utf8');
  return sql.slice(sql.lastIndexOf('-- The first admin key'));
}

const KEYS = [
  // [id, name, created_at]: the organization's first key, a later one with the same name, another.
  ['key_first', 'First admin key', 1], ['key_later', 'First admin key', 2], ['key_other', 'ops', 0.5],
] as const;

const skip = await skipUnlessPostgres();

describe('first admin keys gain the new scopes', () => {
  test('SQLite', () => {
    const db = openSqlite(':memory:');
    db.exec("INSERT INTO organizations (id, name, platform, created_at) VALUES ('org_a', 'A', 0, 0)");
    for (const [id, name, at] of KEYS) {
      db.prepare(`INSERT INTO api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, created_at)
                  VALUES (?, 'org_a', ?, ?, 'fleet_x', x'00', ?, ?)`).run(id, name, id, (id === 'key_other' ? ['fleet:read'] : OLD).join(' '), at * 1000);
    }
    db.exec(grant('../src/storage/sqlite/migrations/0006_events.sql'));
    db.exec(grant('../src/storage/sqlite/migrations/0006_events.sql'));
    const scopes = Object.fromEntries(db.prepare('SELECT id, scopes FROM api_keys').all().map((r) => [r.id, String(r.scopes).split(' ').sort()]));
    db.close();
    // key_other is older but is not a first admin key: key_first is not the oldest, so nothing is granted.
    assert.deepEqual(scopes.key_first, [...OLD].sort());
    const db2 = openSqlite(':memory:');
    db2.exec("INSERT INTO organizations (id, name, platform, created_at) VALUES ('org_a', 'A', 0, 0)");
    for (const [id, name, at] of KEYS.filter(([id]) => id !== 'key_other')) {
      db2.prepare(`INSERT INTO api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, created_at)
                   VALUES (?, 'org_a', ?, ?, 'fleet_x', x'00', ?, ?)`).run(id, name, id, OLD.join(' '), at * 1000);
    }
    db2.exec(grant('../src/storage/sqlite/migrations/0006_events.sql'));
    db2.exec(grant('../src/storage/sqlite/migrations/0006_events.sql'));
    const after = Object.fromEntries(db2.prepare('SELECT id, scopes FROM api_keys').all().map((r) => [r.id, String(r.scopes).split(' ').sort()]));
    db2.close();
    assert.deepEqual(after.key_first, ALL);
    assert.deepEqual(after.key_later, [...OLD].sort());
  });

  test('PostgreSQL', { skip }, async () => {
    const stores = await openPostgresTestStores({ label: 'scopes' });
    try {
      const s = stores.schema;
      await adminQuery(`INSERT INTO ${s}.organizations (id, name, platform, created_at) VALUES ('org_a', 'A', false, 0)`);
      for (const [id, name, at] of KEYS.filter(([id]) => id !== 'key_other')) {
        await adminQuery(`INSERT INTO ${s}.api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, created_at)
                          VALUES ($1, 'org_a', $2, $1, 'fleet_x', '\\x00', $3, $4)`, [id, name, OLD, at * 1000]);
      }
      const sql = `SET search_path TO ${s}; ${grant('../src/storage/postgres/migrations/0005_events.sql')}`;
      await adminQuery(sql);
      await adminQuery(sql);
      const rows = await adminQuery<{ id: string; scopes: string[] }>(`SELECT id, scopes FROM ${s}.api_keys`);
      const after = Object.fromEntries(rows.map((r) => [r.id, [...r.scopes].sort()]));
      assert.deepEqual(after.key_first, ALL);
      assert.deepEqual(after.key_later, [...OLD].sort());
    } finally {
      await stores.close();
    }
  });
});

// The scopes of users and roles (users, audit:read, commands, dispatch, alerts:write), granted the same
// way to first admin keys that hold every scope before them.
const PREVIOUS = ALL;
const NOW = [...PREVIOUS, 'users', 'audit:read', 'commands', 'dispatch', 'alerts:write'].sort();

describe('first admin keys gain the scopes of users and roles', () => {
  /** org_a: its first key holds the previous set; org_b: its first key lacks one of it; org_c: an older key of another name. */
  const ORGS = [
    ['org_a', KEYS.filter(([id]) => id !== 'key_other'), PREVIOUS],
    ['org_b', KEYS.filter(([id]) => id !== 'key_other'), PREVIOUS.filter((s) => s !== 'metrics:read')],
    ['org_c', KEYS, PREVIOUS],
  ] as const;
  const expected = {
    org_a: { key_first: NOW, key_later: PREVIOUS },
    org_b: { key_first: PREVIOUS.filter((s) => s !== 'metrics:read'), key_later: PREVIOUS.filter((s) => s !== 'metrics:read') },
    org_c: { key_first: PREVIOUS, key_later: PREVIOUS, key_other: ['fleet:read'] },
  };

  test('SQLite', () => {
    const db = openSqlite(':memory:');
    for (const [org, keys, scopes] of ORGS) {
      db.prepare("INSERT INTO organizations (id, name, platform, created_at) VALUES (?, 'A', 0, 0)").run(org);
      for (const [id, name, at] of keys) {
        db.prepare(`INSERT INTO api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, created_at)
                    VALUES (?, ?, ?, ?, 'fleet_x', x'00', ?, ?)`).run(`${org}_${id}`, org, name, `${org}_${id}`, (id === 'key_other' ? ['fleet:read'] : scopes).join(' '), at * 1000);
      }
    }
    db.exec(grant('../src/storage/sqlite/migrations/0015_people.sql'));
    db.exec(grant('../src/storage/sqlite/migrations/0015_people.sql'));
    const after = Object.fromEntries(db.prepare('SELECT id, scopes FROM api_keys').all().map((r) => [r.id, String(r.scopes).split(' ').sort()]));
    db.close();
    for (const [org, keys] of Object.entries(expected)) {
      for (const [id, scopes] of Object.entries(keys)) assert.deepEqual(after[`${org}_${id}`], [...scopes].sort(), `${org} ${id}`);
    }
  });

  test('PostgreSQL', { skip }, async () => {
    const stores = await openPostgresTestStores({ label: 'scopes' });
    try {
      const s = stores.schema;
      for (const [org, keys, scopes] of ORGS) {
        await adminQuery(`INSERT INTO ${s}.organizations (id, name, platform, created_at) VALUES ($1, 'A', false, 0)`, [org]);
        for (const [id, name, at] of keys) {
          await adminQuery(`INSERT INTO ${s}.api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, created_at)
                            VALUES ($1, $2, $3, $1, 'fleet_x', '\\x00', $4, $5)`, [`${org}_${id}`, org, name, id === 'key_other' ? ['fleet:read'] : scopes, at * 1000]);
        }
      }
      const sql = `SET search_path TO ${s}; ${grant('../src/storage/postgres/migrations/0013_people.sql')}`;
      await adminQuery(sql);
      await adminQuery(sql);
      const rows = await adminQuery<{ id: string; scopes: string[] }>(`SELECT id, scopes FROM ${s}.api_keys`);
      const after = Object.fromEntries(rows.map((r) => [r.id, [...r.scopes].sort()]));
      for (const [org, keys] of Object.entries(expected)) {
        for (const [id, scopes] of Object.entries(keys)) assert.deepEqual(after[`${org}_${id}`], [...scopes].sort(), `${org} ${id}`);
      }
    } finally {
      await stores.close();
    }
  });
});
