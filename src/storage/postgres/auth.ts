import type { ApiKeyRecord, AuthStore, OrganizationRecord } from '../../auth/store.ts';
import { postgresRows } from '../rows.ts';
import { type Database, type Queryable, advisoryLock } from './database.ts';
import { groupsHeld } from './groups.ts';


const INSERT_KEY = `INSERT INTO api_keys (id, organization_id, name, lookup_id, display_prefix, hash, scopes, group_ids, created_at, expires_at, revoked_at, last_used_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`;
const COUNT_LIVE_KEYS = 'SELECT count(*) AS n FROM api_keys WHERE organization_id = $1 AND revoked_at IS NULL';

export function createPostgresAuthStore(db: Database): AuthStore {
  async function addKey(q: Queryable, key: ApiKeyRecord) {
    await q.query({
      name: 'auth.insert-key',
      text: INSERT_KEY,
      values: [
        key.id, key.organizationId, key.name, key.lookupId, key.displayPrefix, key.hash, key.scopes,
        key.groupIds, key.createdAt, key.expiresAt, key.revokedAt, key.lastUsedAt,
      ],
    });
  }
  async function insertOrganization(q: Queryable, org: OrganizationRecord) {
    await q.query('INSERT INTO organizations (id, name, platform, created_at) VALUES ($1, $2, $3, $4)', [
      org.id, org.name, org.platform, org.createdAt,
    ]);
  }
  const countOrganizations = async () =>
    (await db.query<{ n: number }>({ name: 'auth.count-orgs', text: 'SELECT count(*) AS n FROM organizations' })).rows[0]!.n;

  return {
    async createOrganizationWithKey(org, key) {
      await db.transaction(async (client) => {
        await insertOrganization(client, org);
        await addKey(client, key);
      });
    },

    async createFirstOrganization(org, key) {
      return db.transaction(async (client) => {
        // An empty table has no row to lock, so nodes starting together take turns on one lock per
        // schema instead; the count runs after the lock, on a snapshot that sees the winner's rows.
        await client.query("SELECT pg_advisory_xact_lock(hashtextextended('fleet:first-organization:' || current_schema(), 0))");
        const { rows } = await client.query<{ n: number }>('SELECT count(*) AS n FROM organizations');
        if (rows[0]!.n > 0) return false;
        await insertOrganization(client, org);
        await addKey(client, key);
        return true;
      });
    },

    async insertKey(key, maxActive) {
      if (maxActive === undefined && key.groupIds === null) {
        await addKey(db, key);
        return 'created';
      }
      return db.transaction(async (client) => {
        if (maxActive !== undefined) {
          // Counted and inserted under one lock per organization, so concurrent inserts on any node
          // cannot both see room for one more.
          await advisoryLock(client, `fleet:api-keys:${key.organizationId}`);
          const { rows } = await client.query<{ n: number }>({ name: 'auth.count-live-keys', text: COUNT_LIVE_KEYS, values: [key.organizationId] });
          if (rows[0]!.n >= maxActive) return 'quota' as const;
        }
        if (key.groupIds !== null && !(await groupsHeld(client, key.organizationId, key.groupIds))) return 'unknown-group' as const;
        await addKey(client, key);
        return 'created' as const;
      });
    },

    countOrganizations,

    async getOrganization(id) {
      const { rows } = await db.query({ name: 'auth.get-org', text: 'SELECT * FROM organizations WHERE id = $1', values: [id] });
      return rows[0] === undefined ? undefined : postgresRows.organization(rows[0]);
    },

    async listOrganizations(page) {
      const [{ rows }, total] = await Promise.all([
        db.query({
          name: 'auth.org-page',
          text: 'SELECT * FROM organizations ORDER BY created_at, id LIMIT $1 OFFSET $2',
          values: [page.limit, page.offset],
        }),
        countOrganizations(),
      ]);
      return { organizations: rows.map(postgresRows.organization), total };
    },

    async listKeys(organizationId, page) {
      const [{ rows }, count] = await Promise.all([
        db.query({
          name: 'auth.key-page',
          text: 'SELECT * FROM api_keys WHERE organization_id = $1 AND revoked_at IS NULL ORDER BY created_at, id LIMIT $2 OFFSET $3',
          values: [organizationId, page.limit, page.offset],
        }),
        db.query<{ n: number }>({ name: 'auth.count-live-keys', text: COUNT_LIVE_KEYS, values: [organizationId] }),
      ]);
      return { keys: rows.map(postgresRows.key), total: count.rows[0]!.n };
    },

    async getKey(organizationId, id) {
      const { rows } = await db.query({
        name: 'auth.get-key',
        text: 'SELECT * FROM api_keys WHERE organization_id = $1 AND id = $2 AND revoked_at IS NULL',
        values: [organizationId, id],
      });
      return rows[0] === undefined ? undefined : postgresRows.key(rows[0]);
    },

    async revokeKey(organizationId, id, at) {
      const { rows } = await db.query({
        name: 'auth.revoke-key',
        text: 'UPDATE api_keys SET revoked_at = $1 WHERE organization_id = $2 AND id = $3 AND revoked_at IS NULL RETURNING *',
        values: [at, organizationId, id],
      });
      return rows[0] === undefined ? undefined : postgresRows.key(rows[0]);
    },

    async findKey(lookupId) {
      const { rows } = await db.query({
        name: 'auth.find-key',
        text: `SELECT k.*, o.name AS org_name, o.platform AS org_platform, o.created_at AS org_created_at
               FROM api_keys k JOIN organizations o ON o.id = k.organization_id WHERE k.lookup_id = $1`,
        values: [lookupId],
      });
      const row = rows[0];
      return row === undefined ? undefined : { key: postgresRows.key(row), organization: postgresRows.joinedOrganization(row) };
    },

    async touchKey(id, at) {
      await db.query({ name: 'auth.touch-key', text: 'UPDATE api_keys SET last_used_at = $1 WHERE id = $2', values: [at, id] });
    },
  };
}
