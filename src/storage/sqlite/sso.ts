// Single sign-on in the embedded store: each organization's provider, the sign-ins under way, and
// the users they sign in. Every transaction is BEGIN IMMEDIATE in the one owning process, so a
// sign-in taken once stays taken.
import type { DatabaseSync } from 'node:sqlite';
import type { Role } from '../../people/roles.ts';
import type { UserRecord } from '../../people/store.ts';
import type { SsoStore } from '../../sso/store.ts';
import { USER_COLUMNS, leavesNoAdmin, toUser } from '../people-rows.ts';
import type { Row } from '../rows.ts';
import { SSO_CONFIG_COLUMNS, SSO_LOGIN_COLUMNS, signedInAgain, toSsoConfig, toSsoLogin } from '../sso-rows.ts';
import { transaction, write } from './database.ts';

const configOf = (row: Row) => toSsoConfig(row, (v) => JSON.parse(v as string) as Record<string, Role>, (v) => JSON.parse(v as string) as string[]);
const userOf = (row: Row) => toUser(row, (v) => JSON.parse(v as string) as string[], (v) => v === 1);

export function createSqliteSsoStore(db: DatabaseSync): SsoStore {
  const putConfig = db.prepare(
    `INSERT INTO sso_configs (${SSO_CONFIG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (organization_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
       client_secret = excluded.client_secret, role_claim = excluded.role_claim, role_map = excluded.role_map,
       allowed_email_domains = excluded.allowed_email_domains, updated_at = excluded.updated_at
     RETURNING ${SSO_CONFIG_COLUMNS}`,
  );
  const getConfig = db.prepare(`SELECT ${SSO_CONFIG_COLUMNS} FROM sso_configs WHERE organization_id = ?`);
  const deleteConfig = db.prepare('DELETE FROM sso_configs WHERE organization_id = ?');
  const insertLogin = db.prepare(`INSERT INTO sso_logins (${SSO_LOGIN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const forgetLogins = db.prepare('DELETE FROM sso_logins WHERE expires_at <= ?');
  const takeLogin = db.prepare(`DELETE FROM sso_logins WHERE id_hash = ? RETURNING ${SSO_LOGIN_COLUMNS}`);
  const userByEmail = db.prepare(`SELECT ${USER_COLUMNS} FROM users WHERE email_key = ?`);
  const insertUser = db.prepare(`INSERT INTO users (${USER_COLUMNS}, totp_last_step) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`);
  const updateUser = db.prepare('UPDATE users SET role = ?, status = ?, updated_at = ? WHERE id = ?');
  const otherActiveAdmins = db.prepare("SELECT count(*) AS n FROM users WHERE organization_id = ? AND id <> ? AND role = 'admin' AND status = 'active'");

  return {
    async putConfig(c) {
      const row = write(db, () => putConfig.get(
        c.organizationId, c.issuer, c.clientId, c.clientSecret, c.roleClaim, JSON.stringify(c.roleMap),
        c.allowedEmailDomains === null ? null : JSON.stringify(c.allowedEmailDomains), c.createdAt, c.updatedAt,
      ));
      return configOf(row!);
    },

    async getConfig(organizationId) {
      const row = getConfig.get(organizationId);
      return row === undefined ? undefined : configOf(row);
    },

    async deleteConfig(organizationId) {
      return Number(write(db, () => deleteConfig.run(organizationId)).changes) === 1;
    },

    async insertLogin(l, now) {
      transaction(db, () => {
        forgetLogins.run(now);
        insertLogin.run(l.idHash, l.organizationId, l.state, l.nonce, l.codeVerifier, l.returnTo, l.expiresAt);
      });
    },

    async takeLogin(idHash, now) {
      const row = write(db, () => takeLogin.get(idHash));
      if (row === undefined) return undefined;
      const login = toSsoLogin(row);
      return login.expiresAt > now ? login : undefined;
    },

    async signInUser(candidate, at) {
      return transaction(db, () => {
        const row = userByEmail.get(candidate.emailKey);
        if (row === undefined) {
          const u: UserRecord = candidate;
          insertUser.run(
            u.id, u.organizationId, u.email, u.emailKey, u.name, u.role, u.groupIds === null ? null : JSON.stringify(u.groupIds), u.status,
            u.passwordHash, u.totpSecret, u.totpEnabled ? 1 : 0, u.sso ? 1 : 0, u.createdAt, u.updatedAt, u.lastLoginAt,
          );
          return candidate;
        }
        const user = userOf(row);
        if (user.organizationId !== candidate.organizationId) return 'email-taken' as const;
        if (user.status === 'disabled') return 'disabled' as const;
        const next = signedInAgain(user, candidate, at);
        if (leavesNoAdmin(user, next, Number(otherActiveAdmins.get(user.organizationId, user.id)!.n))) return 'last-admin' as const;
        updateUser.run(next.role, next.status, at, user.id);
        return next;
      });
    },
  };
}
