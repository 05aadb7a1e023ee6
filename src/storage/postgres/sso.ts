// Single sign-on on PostgreSQL, where several nodes act at once: a sign-in under way is taken by
// one DELETE (the second node finds nothing), and a first sign-in of an email settles on the
// unique index of users' email_key.
import type { Role } from '../../people/roles.ts';
import type { SsoStore } from '../../sso/store.ts';
import { USER_COLUMNS, leavesNoAdmin, toUser } from '../people-rows.ts';
import { lockForChange } from './people.ts';
import { SSO_CONFIG_COLUMNS, SSO_LOGIN_COLUMNS, signedInAgain, toSsoConfig, toSsoLogin } from '../sso-rows.ts';
import type { Database, Row } from './database.ts';

const configOf = (row: Row) => toSsoConfig(row, (v) => v as Record<string, Role>, (v) => v as string[]);
const userOf = (row: Row) => toUser(row, (v) => v as string[], (v) => v as boolean);

export function createPostgresSsoStore(db: Database): SsoStore {
  return {
    async putConfig(c) {
      const { rows } = await db.query({
        name: 'sso.put-config',
        text: `INSERT INTO sso_configs (${SSO_CONFIG_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
               ON CONFLICT (organization_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
                 client_secret = excluded.client_secret, role_claim = excluded.role_claim, role_map = excluded.role_map,
                 allowed_email_domains = excluded.allowed_email_domains, updated_at = excluded.updated_at
               RETURNING ${SSO_CONFIG_COLUMNS}`,
        values: [c.organizationId, c.issuer, c.clientId, c.clientSecret, c.roleClaim, JSON.stringify(c.roleMap),
          c.allowedEmailDomains, c.createdAt, c.updatedAt],
      });
      return configOf(rows[0]!);
    },

    async getConfig(organizationId) {
      const { rows } = await db.query({
        name: 'sso.get-config',
        text: `SELECT ${SSO_CONFIG_COLUMNS} FROM sso_configs WHERE organization_id = $1`,
        values: [organizationId],
      });
      return rows[0] === undefined ? undefined : configOf(rows[0]);
    },

    async deleteConfig(organizationId) {
      const result = await db.query({ name: 'sso.delete-config', text: 'DELETE FROM sso_configs WHERE organization_id = $1', values: [organizationId] });
      return result.rowCount === 1;
    },

    async insertLogin(l, now) {
      await db.query({ name: 'sso.forget-logins', text: 'DELETE FROM sso_logins WHERE expires_at <= $1', values: [now] });
      await db.query({
        name: 'sso.insert-login',
        text: `INSERT INTO sso_logins (${SSO_LOGIN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        values: [l.idHash, l.organizationId, l.state, l.nonce, l.codeVerifier, l.returnTo, l.expiresAt],
      });
    },

    async takeLogin(idHash, now) {
      const { rows } = await db.query({
        name: 'sso.take-login',
        text: `DELETE FROM sso_logins WHERE id_hash = $1 RETURNING ${SSO_LOGIN_COLUMNS}`,
        values: [idHash],
      });
      if (rows[0] === undefined) return undefined;
      const login = toSsoLogin(rows[0]);
      return login.expiresAt > now ? login : undefined;
    },

    async signInUser(u, at) {
      return db.transaction(async (client) => {
        // Two nodes signing the same new email in at once: the second INSERT waits for the first's
        // commit, inserts nothing, and finds the first's user below.
        const inserted = await client.query({
          name: 'sso.insert-user',
          text: `INSERT INTO users (${USER_COLUMNS}, totp_last_step)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL)
                 ON CONFLICT (email_key) DO NOTHING`,
          values: [u.id, u.organizationId, u.email, u.emailKey, u.name, u.role, u.groupIds, u.status,
            u.passwordHash, u.totpSecret, u.totpEnabled, u.sso, u.createdAt, u.updatedAt, u.lastLoginAt],
        });
        if (inserted.rowCount === 1) return u;
        const { rows } = await client.query({
          name: 'sso.user-by-email',
          text: `SELECT ${USER_COLUMNS} FROM users WHERE email_key = $1`,
          values: [u.emailKey],
        });
        if (rows[0] === undefined || userOf(rows[0]).organizationId !== u.organizationId) return 'email-taken' as const;
        // Locked as every change of a role is (the organization's active admins, then the user).
        const found = await lockForChange(client, u.organizationId, userOf(rows[0]).id);
        if (found === undefined) return 'email-taken' as const;
        const { user, others } = found;
        if (user.status === 'disabled') return 'disabled' as const;
        const next = signedInAgain(user, u, at);
        if (leavesNoAdmin(user, next, others)) return 'last-admin' as const;
        await client.query({
          name: 'sso.update-user',
          text: 'UPDATE users SET role = $2, status = $3, updated_at = $4 WHERE id = $1',
          values: [user.id, next.role, next.status, at],
        });
        return next;
      });
    },
  };
}
