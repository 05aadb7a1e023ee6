import type { DatabaseSync } from 'node:sqlite';
import type { ApiKeyRecord, AuthStore, OrganizationRecord } from '../../auth/store.ts';
import { sqliteRows } from '../rows.ts';
import { transaction, write } from './database.ts';
import { diskSpaceOf } from './disk-space.ts';
import { createSqliteMemberships } from './groups.ts';

export function createSqliteAuthStore(db: DatabaseSync): AuthStore {
  const memberships = createSqliteMemberships(db);
  const insertOrg = db.prepare('INSERT INTO organizations (id, name, platform, created_at) VALUES (?, ?, ?, ?)');
  const insertKey = db.prepare(
    `INSERT INTO api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, group_ids, created_at, expires_at, revoked_at, last_used_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const countOrgs = db.prepare('SELECT count(*) AS n FROM organizations');
  const findKey = db.prepare(
    `SELECT k.*, o.name AS org_name, o.platform AS org_platform, o.created_at AS org_created_at
     FROM api_keys k JOIN organizations o ON o.id = k.organization_id WHERE k.lookup_id = ?`,
  );
  const touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
  const getOrg = db.prepare('SELECT * FROM organizations WHERE id = ?');
  const orgPage = db.prepare('SELECT * FROM organizations ORDER BY created_at, id LIMIT ? OFFSET ?');
  const countActiveKeys = db.prepare('SELECT count(*) AS n FROM api_keys WHERE organization_id = ? AND revoked_at IS NULL');
  const keyPage = db.prepare(
    'SELECT * FROM api_keys WHERE organization_id = ? AND revoked_at IS NULL ORDER BY created_at, id LIMIT ? OFFSET ?',
  );
  const getActiveKey = db.prepare('SELECT * FROM api_keys WHERE organization_id = ? AND id = ? AND revoked_at IS NULL');
  const revoke = db.prepare(
    'UPDATE api_keys SET revoked_at = ? WHERE organization_id = ? AND id = ? AND revoked_at IS NULL RETURNING *',
  );

  function addKey(key: ApiKeyRecord) {
    insertKey.run(
      key.id, key.organizationId, key.name, key.lookupId, key.displayPrefix, key.hash, key.scopes.join(' '),
      key.groupIds === null ? null : JSON.stringify(key.groupIds), key.createdAt, key.expiresAt, key.revokedAt, key.lastUsedAt,
    );
  }

  return {
    async createOrganizationWithKey(org: OrganizationRecord, key: ApiKeyRecord) {
      transaction(db, () => {
        insertOrg.run(org.id, org.name, org.platform ? 1 : 0, org.createdAt);
        addKey(key);
      });
    },

    async createFirstOrganization(org, key) {
      // BEGIN IMMEDIATE takes the write lock before the count: another connection to the file
      // cannot insert between the count and the insert.
      return transaction(db, () => {
        if (Number(countOrgs.get()?.n ?? 0) > 0) return false;
        insertOrg.run(org.id, org.name, org.platform ? 1 : 0, org.createdAt);
        addKey(key);
        return true;
      });
    },

    async insertKey(key, maxActive) {
      return transaction(db, () => {
        if (maxActive !== undefined && Number(countActiveKeys.get(key.organizationId)?.n ?? 0) >= maxActive) return 'quota' as const;
        if (key.groupIds !== null && !memberships.allExist(key.organizationId, key.groupIds)) return 'unknown-group' as const;
        addKey(key);
        return 'created' as const;
      });
    },

    async countOrganizations() {
      return Number(countOrgs.get()?.n ?? 0);
    },

    async getOrganization(id) {
      const row = getOrg.get(id);
      return row === undefined ? undefined : sqliteRows.organization(row);
    },

    async listOrganizations(page) {
      return {
        organizations: orgPage.all(page.limit, page.offset).map(sqliteRows.organization),
        total: Number(countOrgs.get()?.n ?? 0),
      };
    },

    async listKeys(organizationId, page) {
      return {
        keys: keyPage.all(organizationId, page.limit, page.offset).map(sqliteRows.key),
        total: Number(countActiveKeys.get(organizationId)?.n ?? 0),
      };
    },

    async getKey(organizationId, id) {
      const row = getActiveKey.get(organizationId, id);
      return row === undefined ? undefined : sqliteRows.key(row);
    },

    async revokeKey(organizationId, id, at) {
      const row = write(db, () => revoke.get(at, organizationId, id));
      return row === undefined ? undefined : sqliteRows.key(row);
    },

    async findKey(lookupId) {
      const row = findKey.get(lookupId);
      if (row === undefined) return undefined;
      return { key: sqliteRows.key(row), organization: sqliteRows.joinedOrganization(row) };
    },

    async touchKey(id, at) {
      try {
        touch.run(at, id);
      } catch (error) {
        // When a key was last used is worth less than serving its request: on a full disk the
        // request goes on (readiness reports the disk), and the next touch writes the time.
        const failed = diskSpaceOf(db).failed(error);
        if (failed === error) throw error;
      }
    },
  };
}
