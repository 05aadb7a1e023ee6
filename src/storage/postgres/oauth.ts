import type { OAuthStore } from '../../auth/oauth/store.ts';
import { postgresRows } from '../rows.ts';
import { type Database, advisoryLock } from './database.ts';
import { groupsHeld } from './groups.ts';

export function createPostgresOAuthStore(db: Database): OAuthStore {
  return {
    async listSigningKeys() {
      const { rows } = await db.query({ name: 'oauth.keys', text: 'SELECT * FROM oauth_signing_keys ORDER BY created_at, kid' });
      return rows.map(postgresRows.signingKey);
    },

    async addFirstSigningKey(key) {
      // The unique index on the current signer settles a race between nodes: the loser inserts nothing.
      const result = await db.query({
        name: 'oauth.first-key',
        text: `INSERT INTO oauth_signing_keys (kid, algorithm, private_jwk, public_jwk, created_at, retired_at)
               SELECT $1, $2, $3, $4, $5, NULL WHERE NOT EXISTS (SELECT 1 FROM oauth_signing_keys WHERE retired_at IS NULL)
               ON CONFLICT DO NOTHING`,
        values: [key.kid, key.algorithm, key.privateJwk, key.publicJwk, key.createdAt],
      });
      return result.rowCount === 1;
    },

    async rotateSigningKey(key, dropRetiredBefore) {
      await db.transaction(async (client) => {
        // Rotations serialize, so each retires the signer the previous one made.
        await advisoryLock(client, 'fleet:signing-keys');
        await client.query('UPDATE oauth_signing_keys SET retired_at = $1 WHERE retired_at IS NULL', [key.createdAt]);
        await client.query('DELETE FROM oauth_signing_keys WHERE retired_at IS NOT NULL AND retired_at < $1', [dropRetiredBefore]);
        await client.query(
          'INSERT INTO oauth_signing_keys (kid, algorithm, private_jwk, public_jwk, created_at, retired_at) VALUES ($1, $2, $3, $4, $5, NULL)',
          [key.kid, key.algorithm, key.privateJwk, key.publicJwk, key.createdAt],
        );
      });
    },

    async insertClient(client, max) {
      return db.transaction(async (tx) => {
        await advisoryLock(tx, `fleet:oauth-clients:${client.organizationId}`);
        const { rows } = await tx.query<{ n: number }>({
          name: 'oauth.count-clients',
          text: 'SELECT count(*) AS n FROM oauth_clients WHERE organization_id = $1',
          values: [client.organizationId],
        });
        if (rows[0]!.n >= max) return 'quota' as const;
        if (client.groupIds !== null && !(await groupsHeld(tx, client.organizationId, client.groupIds))) return 'unknown-group' as const;
        await tx.query({
          name: 'oauth.insert-client',
          text: `INSERT INTO oauth_clients (id, organization_id, name, secret_hash, scopes, group_ids, created_at, created_by)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          values: [client.id, client.organizationId, client.name, client.secretHash, client.scopes, client.groupIds, client.createdAt, client.createdBy],
        });
        return 'created' as const;
      });
    },

    async listClients(organizationId) {
      const { rows } = await db.query({
        name: 'oauth.list-clients',
        text: 'SELECT * FROM oauth_clients WHERE organization_id = $1 ORDER BY created_at, id',
        values: [organizationId],
      });
      return rows.map(postgresRows.client);
    },

    async getClient(organizationId, id) {
      const { rows } = await db.query({
        name: 'oauth.get-client',
        text: 'SELECT * FROM oauth_clients WHERE organization_id = $1 AND id = $2',
        values: [organizationId, id],
      });
      return rows[0] === undefined ? undefined : postgresRows.client(rows[0]);
    },

    async findClient(id) {
      const { rows } = await db.query({
        name: 'oauth.find-client',
        text: `SELECT c.*, o.name AS org_name, o.platform AS org_platform, o.created_at AS org_created_at
               FROM oauth_clients c JOIN organizations o ON o.id = c.organization_id WHERE c.id = $1`,
        values: [id],
      });
      const row = rows[0];
      return row === undefined ? undefined : { client: postgresRows.client(row), organization: postgresRows.joinedOrganization(row) };
    },

    async deleteClient(organizationId, id) {
      const result = await db.query({
        name: 'oauth.delete-client',
        text: 'DELETE FROM oauth_clients WHERE organization_id = $1 AND id = $2',
        values: [organizationId, id],
      });
      return result.rowCount === 1;
    },

    async revokeToken(jti, expiresAt, now) {
      await db.transaction(async (client) => {
        await client.query({ name: 'oauth.forget-revoked', text: 'DELETE FROM oauth_revoked_tokens WHERE expires_at <= $1', values: [now] });
        await client.query({
          name: 'oauth.revoke',
          text: 'INSERT INTO oauth_revoked_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING',
          values: [jti, expiresAt],
        });
      });
    },

    async isTokenRevoked(jti) {
      const { rows } = await db.query({ name: 'oauth.is-revoked', text: 'SELECT 1 FROM oauth_revoked_tokens WHERE jti = $1', values: [jti] });
      return rows.length > 0;
    },
  };
}
