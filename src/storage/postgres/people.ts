// Users, their invitations and sessions, failed sign-ins and second factors on PostgreSQL, where
// several nodes act at once: every check that must hold until its write (the last active admin, an
// invitation used once, a TOTP step used once) is a row lock or a single conditional statement.
import type { PeopleStore, UserRecord } from '../../people/store.ts';
import { JOINED_SESSION_COLUMNS, JOINED_USER_COLUMNS, USER_COLUMNS, leavesNoAdmin, patched, toSession, toUser } from '../people-rows.ts';
import type { Database, Queryable, Row } from './database.ts';
import { groupsHeld } from './groups.ts';

const userOf = (row: Row) => toUser(row, (v) => v as string[], (v) => v as boolean);

/**
 * The user, locked, with how many other active admins its organization has (locked too), or
 * undefined. The organization's active admins are locked first, in id order, then the user: two
 * transactions that each demote, disable or delete one of two admins serialize here, and the
 * second counts after the first has committed.
 */
export async function lockForChange(client: Queryable, organizationId: string, id: string): Promise<{ user: UserRecord; others: number } | undefined> {
  const admins = await client.query<{ id: string }>({
    name: 'people.lock-admins',
    text: "SELECT id FROM users WHERE organization_id = $1 AND role = 'admin' AND status = 'active' ORDER BY id FOR UPDATE",
    values: [organizationId],
  });
  const { rows } = await client.query({
    name: 'people.lock-user',
    text: `SELECT ${USER_COLUMNS} FROM users WHERE organization_id = $1 AND id = $2 FOR UPDATE`,
    values: [organizationId, id],
  });
  if (rows[0] === undefined) return undefined;
  return { user: userOf(rows[0]), others: admins.rows.filter((row) => row.id !== id).length };
}

export function createPostgresPeopleStore(db: Database): PeopleStore {
  return {
    async insertUser(user, invite) {
      return db.transaction(async (client) => {
        if (user.groupIds !== null && !(await groupsHeld(client, user.organizationId, user.groupIds))) return 'unknown-group' as const;
        // The unique index on email_key settles a race between nodes: the loser inserts nothing.
        const inserted = await client.query({
          name: 'people.insert-user',
          text: `INSERT INTO users (${USER_COLUMNS}, totp_last_step)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL)
                 ON CONFLICT (email_key) DO NOTHING`,
          values: [user.id, user.organizationId, user.email, user.emailKey, user.name, user.role, user.groupIds, user.status,
            user.passwordHash, user.totpSecret, user.totpEnabled, user.sso, user.createdAt, user.updatedAt, user.lastLoginAt],
        });
        if (inserted.rowCount !== 1) return false;
        await client.query({
          name: 'people.insert-invitation',
          text: 'INSERT INTO user_invitations (token_hash, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)',
          values: [invite.tokenHash, user.id, invite.expiresAt, user.createdAt],
        });
        return true;
      });
    },

    async getUser(organizationId, id) {
      const { rows } = await db.query({
        name: 'people.get-user',
        text: `SELECT ${USER_COLUMNS} FROM users WHERE organization_id = $1 AND id = $2`,
        values: [organizationId, id],
      });
      return rows[0] === undefined ? undefined : userOf(rows[0]);
    },

    async findUserByEmail(emailKey) {
      const { rows } = await db.query({
        name: 'people.user-by-email',
        text: `SELECT ${USER_COLUMNS} FROM users WHERE email_key = $1`,
        values: [emailKey],
      });
      return rows[0] === undefined ? undefined : userOf(rows[0]);
    },

    async listUsers(organizationId, { limit, offset }) {
      const [page, count] = await Promise.all([
        db.query({
          name: 'people.list-users',
          text: `SELECT ${USER_COLUMNS} FROM users WHERE organization_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`,
          values: [organizationId, limit, offset],
        }),
        db.query<{ n: number }>({ name: 'people.count-users', text: 'SELECT count(*) AS n FROM users WHERE organization_id = $1', values: [organizationId] }),
      ]);
      return { users: page.rows.map(userOf), total: count.rows[0]!.n };
    },

    async updateUser(organizationId, id, patch, at) {
      return db.transaction(async (client) => {
        const found = await lockForChange(client, organizationId, id);
        if (found === undefined) return undefined;
        const next = patched(found.user, patch, at);
        if (leavesNoAdmin(found.user, next, found.others)) return 'last-admin' as const;
        if (patch.groupIds !== undefined && patch.groupIds !== null && !(await groupsHeld(client, organizationId, patch.groupIds))) return 'unknown-group' as const;
        const { rows } = await client.query({
          name: 'people.update-user',
          text: `UPDATE users SET name = $2, role = $3, group_ids = $4, status = $5, updated_at = $6 WHERE id = $1 RETURNING ${USER_COLUMNS}`,
          values: [id, next.name, next.role, next.groupIds, next.status, at],
        });
        if (next.status === 'disabled') {
          await client.query({ name: 'people.delete-user-sessions', text: 'DELETE FROM user_sessions WHERE user_id = $1', values: [id] });
        }
        return userOf(rows[0]!);
      });
    },

    async deleteUser(organizationId, id) {
      return db.transaction(async (client) => {
        const found = await lockForChange(client, organizationId, id);
        if (found === undefined) return undefined;
        if (leavesNoAdmin(found.user, undefined, found.others)) return 'last-admin' as const;
        // Sessions, invitations and recovery codes go with the user (ON DELETE CASCADE).
        await client.query({ name: 'people.delete-user', text: 'DELETE FROM users WHERE id = $1', values: [id] });
        return found.user;
      });
    },

    async replaceInvitation(userId, invite) {
      await db.transaction(async (client) => {
        await client.query({ name: 'people.delete-invitations', text: 'DELETE FROM user_invitations WHERE user_id = $1', values: [userId] });
        // The interface passes no time: created_at is the store's own record of when.
        await client.query({
          name: 'people.insert-invitation',
          text: 'INSERT INTO user_invitations (token_hash, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)',
          values: [invite.tokenHash, userId, invite.expiresAt, Date.now()],
        });
      });
    },

    async acceptInvitation(tokenHash, passwordHash, now) {
      return db.transaction(async (client) => {
        const invited = await client.query<{ user_id: string }>({
          name: 'people.invitation',
          text: 'SELECT user_id FROM user_invitations WHERE token_hash = $1 AND expires_at > $2',
          values: [tokenHash, now],
        });
        const userId = invited.rows[0]?.user_id;
        if (userId === undefined) return undefined;
        // The user is locked before the invitation, in the order deleting a user takes them.
        const locked = await client.query<{ status: string }>({
          name: 'people.lock-user-status',
          text: 'SELECT status FROM users WHERE id = $1 FOR UPDATE',
          values: [userId],
        });
        // A disabled user's invitation stays as it was.
        if (locked.rows[0] === undefined || locked.rows[0].status === 'disabled') return undefined;
        // Two nodes accepting at once: the second DELETE runs after the first's commit and finds nothing.
        const taken = await client.query({
          name: 'people.take-invitation',
          text: 'DELETE FROM user_invitations WHERE token_hash = $1 AND expires_at > $2',
          values: [tokenHash, now],
        });
        if (taken.rowCount !== 1) return undefined;
        const { rows } = await client.query({
          name: 'people.accept',
          text: `UPDATE users SET password_hash = $2, status = CASE WHEN status = 'invited' THEN 'active' ELSE status END, updated_at = $3
                 WHERE id = $1 RETURNING ${USER_COLUMNS}`,
          values: [userId, passwordHash, now],
        });
        return userOf(rows[0]!);
      });
    },

    async insertSession(s) {
      await db.query({
        name: 'people.insert-session',
        text: `INSERT INTO user_sessions (id_hash, user_id, organization_id, csrf_token, created_at, last_seen_at, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        values: [s.idHash, s.userId, s.organizationId, s.csrfToken, s.createdAt, s.lastSeenAt, s.expiresAt],
      });
    },

    async findSession(idHash) {
      const { rows } = await db.query({
        name: 'people.find-session',
        text: `SELECT ${JOINED_SESSION_COLUMNS}, ${JOINED_USER_COLUMNS}
               FROM user_sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = $1`,
        values: [idHash],
      });
      const row = rows[0];
      return row === undefined ? undefined : { session: toSession(row, 's_'), user: userOf(row) };
    },

    async touchSession(idHash, at) {
      await db.query({ name: 'people.touch-session', text: 'UPDATE user_sessions SET last_seen_at = $2 WHERE id_hash = $1', values: [idHash, at] });
    },

    async deleteSession(idHash) {
      await db.query({ name: 'people.delete-session', text: 'DELETE FROM user_sessions WHERE id_hash = $1', values: [idHash] });
    },

    async deleteExpired(now, idleBefore, failuresBefore) {
      const counts = await Promise.all([
        db.query({ name: 'people.expired-sessions', text: 'DELETE FROM user_sessions WHERE expires_at <= $1 OR last_seen_at <= $2', values: [now, idleBefore] }),
        db.query({ name: 'people.expired-invitations', text: 'DELETE FROM user_invitations WHERE expires_at <= $1', values: [now] }),
        db.query({ name: 'people.old-failures', text: 'DELETE FROM login_failures WHERE at < $1', values: [failuresBefore] }),
      ]);
      return counts.reduce((sum, result) => sum + (result.rowCount ?? 0), 0);
    },

    async deleteUserSessions(userId, keepIdHash) {
      await db.query({
        name: 'people.delete-other-sessions',
        text: 'DELETE FROM user_sessions WHERE user_id = $1 AND id_hash IS DISTINCT FROM $2',
        values: [userId, keepIdHash ?? null],
      });
    },

    async recordLogin(userId, at) {
      await db.query({ name: 'people.record-login', text: 'UPDATE users SET last_login_at = $2 WHERE id = $1', values: [userId, at] });
    },

    async setPassword(userId, passwordHash, at) {
      await db.query({
        name: 'people.set-password',
        text: 'UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1',
        values: [userId, passwordHash, at],
      });
    },

    async recordLoginFailure(emailKey, at, forgetBefore) {
      await db.transaction(async (client) => {
        await client.query({
          name: 'people.forget-failures',
          text: 'DELETE FROM login_failures WHERE email_key = $1 AND at < $2',
          values: [emailKey, forgetBefore],
        });
        await client.query({ name: 'people.insert-failure', text: 'INSERT INTO login_failures (email_key, at) VALUES ($1, $2)', values: [emailKey, at] });
      });
    },

    async loginFailures(emailKey, since) {
      const { rows } = await db.query<{ at: number }>({
        name: 'people.failures',
        text: 'SELECT at FROM login_failures WHERE email_key = $1 AND at >= $2 ORDER BY at',
        values: [emailKey, since],
      });
      return rows.map((row) => row.at);
    },

    async clearLoginFailures(emailKey) {
      await db.query({ name: 'people.clear-failures', text: 'DELETE FROM login_failures WHERE email_key = $1', values: [emailKey] });
    },

    async setTotpSecret(userId, secret, at) {
      await db.transaction(async (client) => {
        await client.query({
          name: 'people.set-totp-secret',
          text: 'UPDATE users SET totp_secret = $2, totp_enabled = false, totp_last_step = NULL, updated_at = $3 WHERE id = $1',
          values: [userId, secret, at],
        });
        await client.query({ name: 'people.delete-codes', text: 'DELETE FROM user_recovery_codes WHERE user_id = $1', values: [userId] });
      });
    },

    async enableTotp(userId, recoveryCodeHashes, at) {
      await db.transaction(async (client) => {
        await client.query({ name: 'people.enable-totp', text: 'UPDATE users SET totp_enabled = true, updated_at = $2 WHERE id = $1', values: [userId, at] });
        await client.query({ name: 'people.delete-codes', text: 'DELETE FROM user_recovery_codes WHERE user_id = $1', values: [userId] });
        await client.query({
          name: 'people.insert-codes',
          text: 'INSERT INTO user_recovery_codes (user_id, code_hash) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING',
          values: [userId, [...recoveryCodeHashes]],
        });
      });
    },

    async useTotpStep(userId, step) {
      // One conditional UPDATE: a second node presenting the same step waits for the first's commit,
      // then finds the condition false.
      const result = await db.query({
        name: 'people.use-totp-step',
        text: 'UPDATE users SET totp_last_step = $2 WHERE id = $1 AND (totp_last_step IS NULL OR totp_last_step < $2)',
        values: [userId, step],
      });
      return result.rowCount === 1;
    },

    async useRecoveryCode(userId, codeHash) {
      const result = await db.query({
        name: 'people.use-code',
        text: 'DELETE FROM user_recovery_codes WHERE user_id = $1 AND code_hash = $2',
        values: [userId, codeHash],
      });
      return result.rowCount === 1;
    },
  };
}
