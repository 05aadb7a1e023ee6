// User and session rows to records, for both backends (they differ only in how the group list and
// a boolean arrive: SQLite JSON text and 0/1, PostgreSQL text[] and boolean).
import type { Role } from '../people/roles.ts';
import type { SessionRecord, UserPatch, UserRecord, UserStatus } from '../people/store.ts';
import type { Row } from './rows.ts';

export const USER_COLUMNS = `id, organization_id, email, email_key, name, role, group_ids, status, password_hash, totp_secret,
  totp_enabled, sso, created_at, updated_at, last_login_at`;
export const SESSION_COLUMNS = 'id_hash, user_id, organization_id, csrf_token, created_at, last_seen_at, expires_at';
/** The user's columns of a query that joins sessions (`u`) to their users. */
export const JOINED_USER_COLUMNS = USER_COLUMNS.split(/,\s*/).map((c) => `u.${c}`).join(', ');
/** A session's columns as `s_<column>`, to select beside its user's (`toSession(row, 's_')`). */
export const JOINED_SESSION_COLUMNS = SESSION_COLUMNS.split(', ').map((c) => `s.${c} AS s_${c}`).join(', ');

export function toUser(row: Row, groupIds: (value: unknown) => string[], bool: (value: unknown) => boolean): UserRecord {
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    email: row.email as string,
    emailKey: row.email_key as string,
    name: row.name as string,
    role: row.role as Role,
    groupIds: row.group_ids === null || row.group_ids === undefined ? null : groupIds(row.group_ids),
    status: row.status as UserStatus,
    passwordHash: (row.password_hash as string | null) ?? null,
    totpSecret: (row.totp_secret as string | null) ?? null,
    totpEnabled: bool(row.totp_enabled),
    sso: bool(row.sso),
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
    lastLoginAt: (row.last_login_at as number | null) ?? null,
  };
}

/** A session row; `prefix` names its columns when joined with the user's (`s_id_hash`, ...). */
export function toSession(row: Row, prefix = ''): SessionRecord {
  return {
    idHash: row[`${prefix}id_hash`] as string,
    userId: row[`${prefix}user_id`] as string,
    organizationId: row[`${prefix}organization_id`] as string,
    csrfToken: row[`${prefix}csrf_token`] as string,
    createdAt: row[`${prefix}created_at`] as number,
    lastSeenAt: row[`${prefix}last_seen_at`] as number,
    expiresAt: row[`${prefix}expires_at`] as number,
  };
}

/** The patch applied to the user as it is: what the store writes back. */
export function patched(user: UserRecord, patch: UserPatch, at: number): UserRecord {
  return {
    ...user,
    name: patch.name ?? user.name,
    role: patch.role ?? user.role,
    groupIds: patch.groupIds === undefined ? user.groupIds : patch.groupIds,
    status: patch.status ?? user.status,
    updatedAt: at,
  };
}

/**
 * Whether applying `next` over `user` would leave the organization without an active admin, given
 * how many other active admins it has.
 */
export function leavesNoAdmin(user: UserRecord, next: UserRecord | undefined, otherActiveAdmins: number): boolean {
  const isActiveAdmin = (u: UserRecord | undefined) => u !== undefined && u.role === 'admin' && u.status === 'active';
  return isActiveAdmin(user) && !isActiveAdmin(next) && otherActiveAdmins === 0;
}
