import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { isScope } from '../../auth/scopes.ts';
import type { ApiKeyRecord, AuthStore, OrganizationRecord } from '../../auth/store.ts';
import { transaction } from './database.ts';

type Row = Record<string, SQLInputValue>;

function toKey(row: Row): ApiKeyRecord {
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    lookupId: row.lookup_id as string,
    displayPrefix: row.display_prefix as string,
    hash: row.hash as Uint8Array,
    scopes: (row.scopes as string).split(' ').filter(isScope),
    createdAt: row.created_at as number,
    expiresAt: (row.expires_at as number | null) ?? null,
    revokedAt: (row.revoked_at as number | null) ?? null,
    lastUsedAt: (row.last_used_at as number | null) ?? null,
  };
}

export function createSqliteAuthStore(db: DatabaseSync): AuthStore {
  const insertOrg = db.prepare('INSERT INTO organizations (id, name, platform, created_at) VALUES (?, ?, ?, ?)');
  const insertKey = db.prepare(
    `INSERT INTO api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, created_at, expires_at, revoked_at, last_used_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const countOrgs = db.prepare('SELECT count(*) AS n FROM organizations');
  const findKey = db.prepare(
    `SELECT k.*, o.name AS org_name, o.platform AS org_platform, o.created_at AS org_created_at
     FROM api_keys k JOIN organizations o ON o.id = k.organization_id WHERE k.lookup_id = ?`,
  );
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');

  function addKey(key: ApiKeyRecord) {
    insertKey.run(
      key.id, key.organizationId, key.name, key.lookupId, key.displayPrefix, key.hash, key.scopes.join(' '),
      key.createdAt, key.expiresAt, key.revokedAt, key.lastUsedAt,
    );
  }

  return {
    async createOrganizationWithKey(org: OrganizationRecord, key: ApiKeyRecord) {
      transaction(db, () => {
        insertOrg.run(org.id, org.name, org.platform ? 1 : 0, org.createdAt);
        addKey(key);
      });
    },

    async insertKey(key) {
      addKey(key);
    },

    async countOrganizations() {
      return Number(countOrgs.get()?.n ?? 0);
    },

    async findKey(lookupId) {
      const row = findKey.get(lookupId);
      if (row === undefined) return undefined;
      return {
        key: toKey(row),
        organization: {
          id: row.organization_id as string,
          name: row.org_name as string,
          platform: row.org_platform === 1,
          createdAt: row.org_created_at as number,
        },
      };
    },

    async touchKey(id, at) {
      touch.run(at, id);
    },
  };
}
