// Persistence of people: users, their invitations, sessions, failed sign-ins and second factors.
// Times are milliseconds since the epoch. Everything that must hold across the nodes of a cluster
// (sessions, lockouts, a TOTP code used once) lives here, not in a node's memory.
import type { Role } from './roles.ts';

export type UserStatus = 'invited' | 'active' | 'disabled';

export interface UserRecord {
  id: string;
  organizationId: string;
  /** As given at creation. */
  email: string;
  /** Lower-cased email: unique across the service. */
  emailKey: string;
  name: string;
  role: Role;
  /** Groups the user is limited to; null: the whole organization. */
  groupIds: string[] | null;
  status: UserStatus;
  /** The password's hash (password.ts); null until an invitation is accepted (or an SSO user). */
  passwordHash: string | null;
  /** Base32 TOTP secret: set while enrolling (not yet enabled) and while enabled. */
  totpSecret: string | null;
  totpEnabled: boolean;
  /** Signed in through the organization's OpenID provider. */
  sso: boolean;
  createdAt: number;
  updatedAt: number;
  lastLoginAt: number | null;
}

export interface SessionRecord {
  /** SHA-256 (hex) of the cookie's secret: the secret itself is never stored. */
  idHash: string;
  userId: string;
  organizationId: string;
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
  /** The absolute end (login + 7 days); the idle end is lastSeenAt + the idle limit. */
  expiresAt: number;
}

export interface UserPatch {
  name?: string;
  role?: Role;
  groupIds?: string[] | null;
  status?: 'active' | 'disabled';
}

/** Why a change was refused: it would leave the organization without an active admin. */
export type LastAdmin = 'last-admin';
/** Why a write was refused: one of the groups it names does not exist. */
export type UnknownGroup = 'unknown-group';

export interface PeopleStore {
  /**
   * Stores the user and their first invitation; false when the email is taken (any organization),
   * `unknown-group` when one of their groups does not exist (checked under the lock a group's
   * deletion takes).
   */
  insertUser(user: UserRecord, invitation: { tokenHash: string; expiresAt: number }): Promise<boolean | UnknownGroup>;
  getUser(organizationId: string, id: string): Promise<UserRecord | undefined>;
  findUserByEmail(emailKey: string): Promise<UserRecord | undefined>;
  /** Oldest first. */
  listUsers(organizationId: string, page: { limit: number; offset: number }): Promise<{ users: UserRecord[]; total: number }>;
  /**
   * Applies the patch in one transaction; 'last-admin' when it would leave the organization with no
   * active admin (a demotion or a disabling of the last one), undefined when there is no such user.
   * Disabling also deletes the user's sessions.
   */
  updateUser(organizationId: string, id: string, patch: UserPatch, at: number): Promise<UserRecord | LastAdmin | UnknownGroup | undefined>;
  /** Deletes the user, their sessions, invitations and recovery codes; same refusal as updateUser. */
  deleteUser(organizationId: string, id: string): Promise<UserRecord | LastAdmin | undefined>;

  /** Replaces the user's outstanding invitation (at most one is valid). */
  replaceInvitation(userId: string, invitation: { tokenHash: string; expiresAt: number }): Promise<void>;
  /**
   * Uses an unexpired invitation once: sets the password hash, makes an invited user active, and
   * deletes the invitation, in one transaction. Undefined when the token is unknown, expired or
   * used, or the user is disabled (the invitation stays unused then).
   */
  acceptInvitation(tokenHash: string, passwordHash: string, now: number): Promise<UserRecord | undefined>;

  insertSession(session: SessionRecord): Promise<void>;
  /** The session and its user, whatever their state (the caller judges expiry and status). */
  findSession(idHash: string): Promise<{ session: SessionRecord; user: UserRecord } | undefined>;
  touchSession(idHash: string, at: number): Promise<void>;
  deleteSession(idHash: string): Promise<void>;
  /** Ends every session of the user but `keepIdHash`'s. */
  deleteUserSessions(userId: string, keepIdHash?: string): Promise<void>;
  /** Sets the user's last sign-in time. */
  recordLogin(userId: string, at: number): Promise<void>;
  /** Sets the password hash (the user's own change). */
  setPassword(userId: string, passwordHash: string, at: number): Promise<void>;

  /**
   * Deletes what can no longer be used: sessions past their end or idle since before `idleBefore`,
   * expired invitations, and failed sign-ins from before `failuresBefore`. The number of rows deleted.
   */
  deleteExpired(now: number, idleBefore: number, failuresBefore: number): Promise<number>;
  /** Records a failed sign-in for the email and forgets its failures older than `forgetBefore`. */
  recordLoginFailure(emailKey: string, at: number, forgetBefore: number): Promise<void>;
  /** The times of the email's failed sign-ins since `since`, oldest first. */
  loginFailures(emailKey: string, since: number): Promise<number[]>;
  clearLoginFailures(emailKey: string): Promise<void>;

  /** Starts (secret) or ends (null) an enrolment: totpEnabled false, recovery codes deleted. */
  setTotpSecret(userId: string, secret: string | null, at: number): Promise<void>;
  /** Turns TOTP on and replaces the recovery codes with these hashes (SHA-256 hex). */
  enableTotp(userId: string, recoveryCodeHashes: readonly string[], at: number): Promise<void>;
  /**
   * Records that the user's TOTP code of time step `step` was used: true only the first time a
   * step at or after every step used before is presented (a replay, on any node, is false).
   */
  useTotpStep(userId: string, step: number): Promise<boolean>;
  /** Uses (deletes) one recovery code; true when it was there. */
  useRecoveryCode(userId: string, codeHash: string): Promise<boolean>;
}
