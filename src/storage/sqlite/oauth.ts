import type { DatabaseSync } from 'node:sqlite';
import type { OAuthStore } from '../../auth/oauth/store.ts';
import { sqliteRows } from '../rows.ts';
import { transaction, write } from './database.ts';
import { createSqliteMemberships } from './groups.ts';

export function createSqliteOAuthStore(db: DatabaseSync): OAuthStore {
  const memberships = createSqliteMemberships(db);
  const keys = db.prepare('SELECT * FROM oauth_signing_keys ORDER BY created_at, kid');
  const insertFirstKey = db.prepare(
    `INSERT INTO oauth_signing_keys (kid, algorithm, private_jwk, public_jwk, created_at, retired_at)
     SELECT ?, ?, ?, ?, ?, NULL WHERE NOT EXISTS (SELECT 1 FROM oauth_signing_keys WHERE retired_at IS NULL)`,
  );
  const retireKeys = db.prepare('UPDATE oauth_signing_keys SET retired_at = ? WHERE retired_at IS NULL');
  const dropKeys = db.prepare('DELETE FROM oauth_signing_keys WHERE retired_at IS NOT NULL AND retired_at < ?');
  const insertKey = db.prepare(
    'INSERT INTO oauth_signing_keys (kid, algorithm, private_jwk, public_jwk, created_at, retired_at) VALUES (?, ?, ?, ?, ?, NULL)',
  );

  const countClients = db.prepare('SELECT count(*) AS n FROM oauth_clients WHERE organization_id = ?');
  const insertClient = db.prepare(
    `INSERT INTO oauth_clients (id, organization_id, name, secret_hash, scopes, group_ids, created_at, created_by)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const listClients = db.prepare('SELECT * FROM oauth_clients WHERE organization_id = ? ORDER BY created_at, id');
  const getClient = db.prepare('SELECT * FROM oauth_clients WHERE organization_id = ? AND id = ?');
  const findClient = db.prepare(
    `SELECT c.*, o.name AS org_name, o.platform AS org_platform, o.created_at AS org_created_at
     FROM oauth_clients c JOIN organizations o ON o.id = c.organization_id WHERE c.id = ?`,
  );
  const deleteClient = db.prepare('DELETE FROM oauth_clients WHERE organization_id = ? AND id = ?');

  const revoke = db.prepare('INSERT OR IGNORE INTO oauth_revoked_tokens (jti, expires_at) VALUES (?, ?)');
  const forget = db.prepare('DELETE FROM oauth_revoked_tokens WHERE expires_at <= ?');
  const isRevoked = db.prepare('SELECT 1 AS revoked FROM oauth_revoked_tokens WHERE jti = ?');

  return {
    async listSigningKeys() {
      return keys.all().map(sqliteRows.signingKey);
    },

    async addFirstSigningKey(key) {
      const result = write(db, () => insertFirstKey.run(key.kid, key.algorithm, key.privateJwk, key.publicJwk, key.createdAt));
      return Number(result.changes) === 1;
    },

    async rotateSigningKey(key, dropRetiredBefore) {
      transaction(db, () => {
        retireKeys.run(key.createdAt);
        dropKeys.run(dropRetiredBefore);
        insertKey.run(key.kid, key.algorithm, key.privateJwk, key.publicJwk, key.createdAt);
      });
    },

    async insertClient(client, max) {
      return transaction(db, () => {
        if (Number(countClients.get(client.organizationId)?.n ?? 0) >= max) return 'quota' as const;
        if (client.groupIds !== null && !memberships.allExist(client.organizationId, client.groupIds)) return 'unknown-group' as const;
        insertClient.run(
          client.id, client.organizationId, client.name, client.secretHash, client.scopes.join(' '),
          client.groupIds === null ? null : JSON.stringify(client.groupIds), client.createdAt, client.createdBy,
        );
        return 'created' as const;
      });
    },

    async listClients(organizationId) {
      return listClients.all(organizationId).map(sqliteRows.client);
    },

    async getClient(organizationId, id) {
      const row = getClient.get(organizationId, id);
      return row === undefined ? undefined : sqliteRows.client(row);
    },

    async findClient(id) {
      const row = findClient.get(id);
      if (row === undefined) return undefined;
      return { client: sqliteRows.client(row), organization: sqliteRows.joinedOrganization(row) };
    },

    async deleteClient(organizationId, id) {
      return Number(write(db, () => deleteClient.run(organizationId, id)).changes) === 1;
    },

    async revokeToken(jti, expiresAt, now) {
      transaction(db, () => {
        forget.run(now);
        revoke.run(jti, expiresAt);
      });
    },

    async isTokenRevoked(jti) {
      return isRevoked.get(jti) !== undefined;
    },
  };
}
