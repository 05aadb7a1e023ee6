// Users, their invitations and sessions, failed sign-ins and second factors in the embedded store.
// One process owns the file and every transaction is BEGIN IMMEDIATE, so a check made inside one
// (the last active admin, an invitation not yet used) holds until its commit.
import type { DatabaseSync } from 'node:sqlite';
import type { PeopleStore, UserRecord } from '../../people/store.ts';
import { JOINED_SESSION_COLUMNS, JOINED_USER_COLUMNS, USER_COLUMNS, leavesNoAdmin, patched, toSession, toUser } from '../people-rows.ts';
import type { Row } from '../rows.ts';
import { transaction, write } from './database.ts';
import { createSqliteMemberships } from './groups.ts';

const userOf = (row: Row) => toUser(row, (v) => JSON.parse(v as string) as string[], (v) => v === 1);
const groupsOf = (user: Pick<UserRecord, 'groupIds'>) => (user.groupIds === null ? null : JSON.stringify(user.groupIds));

export function createSqlitePeopleStore(db: DatabaseSync): PeopleStore {
  const memberships = createSqliteMemberships(db);
  const insertUser = db.prepare(
    `INSERT INTO users (${USER_COLUMNS}, totp_last_step) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
     ON CONFLICT (email_key) DO NOTHING`,
  );
  const getUser = db.prepare(`SELECT ${USER_COLUMNS} FROM users WHERE organization_id = ? AND id = ?`);
  const userByEmail = db.prepare(`SELECT ${USER_COLUMNS} FROM users WHERE email_key = ?`);
  const page = db.prepare(`SELECT ${USER_COLUMNS} FROM users WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const count = db.prepare('SELECT count(*) AS n FROM users WHERE organization_id = ?');
  const otherActiveAdmins = db.prepare(
    "SELECT count(*) AS n FROM users WHERE organization_id = ? AND id <> ? AND role = 'admin' AND status = 'active'",
  );
  const update = db.prepare('UPDATE users SET name = ?, role = ?, group_ids = ?, status = ?, updated_at = ? WHERE id = ?');
  const remove = db.prepare('DELETE FROM users WHERE id = ?');

  const deleteInvitations = db.prepare('DELETE FROM user_invitations WHERE user_id = ?');
  const insertInvitation = db.prepare('INSERT INTO user_invitations (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)');
  const invitation = db.prepare('SELECT user_id FROM user_invitations WHERE token_hash = ? AND expires_at > ?');
  const useInvitation = db.prepare('DELETE FROM user_invitations WHERE token_hash = ?');
  const accept = db.prepare(
    `UPDATE users SET password_hash = ?, status = CASE WHEN status = 'invited' THEN 'active' ELSE status END, updated_at = ?
     WHERE id = ? AND status <> 'disabled' RETURNING ${USER_COLUMNS}`,
  );

  const insertSession = db.prepare(
    `INSERT INTO user_sessions (id_hash, user_id, organization_id, csrf_token, created_at, last_seen_at, expires_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const findSession = db.prepare(
    `SELECT ${JOINED_SESSION_COLUMNS}, ${JOINED_USER_COLUMNS}
     FROM user_sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?`,
  );
  const touchSession = db.prepare('UPDATE user_sessions SET last_seen_at = ? WHERE id_hash = ?');
  const deleteSession = db.prepare('DELETE FROM user_sessions WHERE id_hash = ?');
  const deleteUserSessions = db.prepare('DELETE FROM user_sessions WHERE user_id = ?');
  const deleteOtherSessions = db.prepare('DELETE FROM user_sessions WHERE user_id = ? AND id_hash <> ?');
  const expiredSessions = db.prepare('DELETE FROM user_sessions WHERE expires_at <= ? OR last_seen_at <= ?');
  const expiredInvitations = db.prepare('DELETE FROM user_invitations WHERE expires_at <= ?');
  const oldFailures = db.prepare('DELETE FROM login_failures WHERE at < ?');
  const recordLogin = db.prepare('UPDATE users SET last_login_at = ? WHERE id = ?');
  const setPassword = db.prepare('UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?');

  const insertFailure = db.prepare('INSERT INTO login_failures (email_key, at) VALUES (?, ?)');
  const forgetFailures = db.prepare('DELETE FROM login_failures WHERE email_key = ? AND at < ?');
  const failures = db.prepare('SELECT at FROM login_failures WHERE email_key = ? AND at >= ? ORDER BY at');
  const clearFailures = db.prepare('DELETE FROM login_failures WHERE email_key = ?');

  const setTotpSecret = db.prepare(
    'UPDATE users SET totp_secret = ?, totp_enabled = 0, totp_last_step = NULL, updated_at = ? WHERE id = ?',
  );
  const enableTotp = db.prepare('UPDATE users SET totp_enabled = 1, updated_at = ? WHERE id = ?');
  const deleteCodes = db.prepare('DELETE FROM user_recovery_codes WHERE user_id = ?');
  const insertCode = db.prepare('INSERT OR IGNORE INTO user_recovery_codes (user_id, code_hash) VALUES (?, ?)');
  const useTotpStep = db.prepare(
    'UPDATE users SET totp_last_step = ? WHERE id = ? AND (totp_last_step IS NULL OR totp_last_step < ?)',
  );
  const useCode = db.prepare('DELETE FROM user_recovery_codes WHERE user_id = ? AND code_hash = ?');

  return {
    async insertUser(user, invite) {
      return transaction(db, () => {
        if (user.groupIds !== null && !memberships.allExist(user.organizationId, user.groupIds)) return 'unknown-group' as const;
        const inserted = insertUser.run(
          user.id, user.organizationId, user.email, user.emailKey, user.name, user.role, groupsOf(user), user.status,
          user.passwordHash, user.totpSecret, user.totpEnabled ? 1 : 0, user.sso ? 1 : 0, user.createdAt, user.updatedAt,
          user.lastLoginAt,
        );
        if (Number(inserted.changes) === 0) return false;
        insertInvitation.run(invite.tokenHash, user.id, invite.expiresAt, user.createdAt);
        return true;
      });
    },

    async getUser(organizationId, id) {
      const row = getUser.get(organizationId, id);
      return row === undefined ? undefined : userOf(row);
    },

    async findUserByEmail(emailKey) {
      const row = userByEmail.get(emailKey);
      return row === undefined ? undefined : userOf(row);
    },

    async listUsers(organizationId, { limit, offset }) {
      return { users: page.all(organizationId, limit, offset).map(userOf), total: Number(count.get(organizationId)!.n) };
    },

    async updateUser(organizationId, id, patch, at) {
      return transaction(db, () => {
        const row = getUser.get(organizationId, id);
        if (row === undefined) return undefined;
        const user = userOf(row);
        const next = patched(user, patch, at);
        if (leavesNoAdmin(user, next, Number(otherActiveAdmins.get(organizationId, id)!.n))) return 'last-admin' as const;
        if (patch.groupIds !== undefined && patch.groupIds !== null && !memberships.allExist(organizationId, patch.groupIds)) return 'unknown-group' as const;
        update.run(next.name, next.role, groupsOf(next), next.status, at, id);
        if (next.status === 'disabled') deleteUserSessions.run(id);
        return userOf(getUser.get(organizationId, id)!);
      });
    },

    async deleteUser(organizationId, id) {
      return transaction(db, () => {
        const row = getUser.get(organizationId, id);
        if (row === undefined) return undefined;
        const user = userOf(row);
        if (leavesNoAdmin(user, undefined, Number(otherActiveAdmins.get(organizationId, id)!.n))) return 'last-admin' as const;
        // Sessions, invitations and recovery codes go with the user (ON DELETE CASCADE).
        remove.run(id);
        return user;
      });
    },

    async replaceInvitation(userId, invite) {
      transaction(db, () => {
        deleteInvitations.run(userId);
        // The interface passes no time: created_at is the store's own record of when.
        insertInvitation.run(invite.tokenHash, userId, invite.expiresAt, Date.now());
      });
    },

    async acceptInvitation(tokenHash, passwordHash, now) {
      return transaction(db, () => {
        const found = invitation.get(tokenHash, now);
        if (found === undefined) return undefined;
        const row = accept.get(passwordHash, now, found.user_id as string);
        // A disabled user's invitation stays as it was.
        if (row === undefined) return undefined;
        useInvitation.run(tokenHash);
        return userOf(row);
      });
    },

    async insertSession(s) {
      write(db, () => insertSession.run(s.idHash, s.userId, s.organizationId, s.csrfToken, s.createdAt, s.lastSeenAt, s.expiresAt));
    },

    async findSession(idHash) {
      const row = findSession.get(idHash);
      return row === undefined ? undefined : { session: toSession(row, 's_'), user: userOf(row) };
    },

    async touchSession(idHash, at) {
      write(db, () => touchSession.run(at, idHash));
    },

    async deleteSession(idHash) {
      write(db, () => deleteSession.run(idHash));
    },

    async deleteExpired(now, idleBefore, failuresBefore) {
      return transaction(db, () => Number(expiredSessions.run(now, idleBefore).changes)
        + Number(expiredInvitations.run(now).changes) + Number(oldFailures.run(failuresBefore).changes));
    },

    async deleteUserSessions(userId, keepIdHash) {
      write(db, () => (keepIdHash === undefined ? deleteUserSessions.run(userId) : deleteOtherSessions.run(userId, keepIdHash)));
    },

    async recordLogin(userId, at) {
      write(db, () => recordLogin.run(at, userId));
    },

    async setPassword(userId, passwordHash, at) {
      write(db, () => setPassword.run(passwordHash, at, userId));
    },

    async recordLoginFailure(emailKey, at, forgetBefore) {
      transaction(db, () => {
        forgetFailures.run(emailKey, forgetBefore);
        insertFailure.run(emailKey, at);
      });
    },

    async loginFailures(emailKey, since) {
      return failures.all(emailKey, since).map((row) => row.at as number);
    },

    async clearLoginFailures(emailKey) {
      write(db, () => clearFailures.run(emailKey));
    },

    async setTotpSecret(userId, secret, at) {
      transaction(db, () => {
        setTotpSecret.run(secret, at, userId);
        deleteCodes.run(userId);
      });
    },

    async enableTotp(userId, recoveryCodeHashes, at) {
      transaction(db, () => {
        enableTotp.run(at, userId);
        deleteCodes.run(userId);
        for (const hash of recoveryCodeHashes) insertCode.run(userId, hash);
      });
    },

    async useTotpStep(userId, step) {
      return Number(write(db, () => useTotpStep.run(step, userId, step)).changes) === 1;
    },

    async useRecoveryCode(userId, codeHash) {
      return Number(write(db, () => useCode.run(userId, codeHash)).changes) === 1;
    },
  };
}
