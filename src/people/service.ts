// People: users of an organization, their invitations, password sign-in, sessions and second
// factors (docs/API.md "Users and sessions"). Routes are in routes.ts; the session cookie is read
// by the auth plugin (http/auth.ts) through `sessionPrincipal`.
import { createHash, randomBytes } from 'node:crypto';
import { noteAudit } from '../audit/context.ts';
import { AppError } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { EventPort } from '../events/port.ts';
import { newId } from '../ids.ts';
import type { AuthStore, OrganizationRecord } from '../auth/store.ts';
import { type Principal, type Scope, effectiveScopes } from '../auth/scopes.ts';
import { unknownGroups } from '../groups/scope.ts';
import { hashPassword, verifyNothing, verifyPassword } from './password.ts';
import { ROLE_SCOPES, type Role } from './roles.ts';
import type { PeopleStore, SessionRecord, UserPatch, UserRecord } from './store.ts';
import { matchingStep, newRecoveryCodes, newTotpSecret, otpauthUrl, recoveryCodeHash } from './totp.ts';

export interface PeopleSettings {
  /** Where the dashboard is: invitation links point into it. */
  publicUrl: string;
  /** A session ends after this long without a request. */
  idleMs: number;
  /** A session ends this long after sign-in, however busy. */
  absoluteMs: number;
  invitationMs: number;
  /** Failed sign-ins for one email within `lockoutWindowMs` before it is locked until the window passes. */
  lockoutFailures: number;
  lockoutWindowMs: number;
}

export const DEFAULT_PEOPLE_SETTINGS: Omit<PeopleSettings, 'publicUrl'> = {
  idleMs: 720 * 60_000,
  absoluteMs: 7 * 24 * 3_600_000,
  invitationMs: 72 * 3_600_000,
  lockoutFailures: 10,
  lockoutWindowMs: 15 * 60_000,
};

/** `last_seen_at` is written at most this often per session: idle expiry is that coarse. */
const TOUCH_INTERVAL_MS = 60_000;
/** A session read from the store serves its requests this long; any change to its user evicts it on every node. */
const CACHE_TTL_MS = 5_000;
const CACHE_MAX = 10_000;

/** What a session's principal carries beyond a key's: the session, for CSRF checks and sign-out. */
export type SessionPrincipal = Principal & { session: NonNullable<Principal['session']> };

export interface SignedIn {
  /** The cookie's value: shown to the browser once, stored only as its hash. */
  secret: string;
  session: SessionRecord;
  user: UserRecord;
}

export type PeopleService = ReturnType<typeof createPeopleService>;

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** A credential's groups as kept: each once, sorted; null: the whole organization. */
function groupListOf(groupIds: readonly string[] | null | undefined): string[] | null {
  return groupIds === null || groupIds === undefined ? null : [...new Set(groupIds)].sort();
}

export function emailKeyOf(email: string): string {
  return email.trim().toLowerCase();
}

/** Never a role with scopes the caller lacks: a key that may manage users cannot make itself an admin. */
export function assertMayGrant(who: Principal, role: Role): void {
  const missing = ROLE_SCOPES[role].filter((scope) => !who.scopes.has(scope));
  if (missing.length > 0) {
    throw new AppError('insufficient-scope', `The role "${role}" has scopes you lack: ${missing.join(', ')}.`);
  }
}

export function createPeopleService(deps: {
  store: PeopleStore;
  organizations: Pick<AuthStore, 'getOrganization'>;
  clock: Clock;
  events: EventPort;
  settings: PeopleSettings;
}) {
  const { store, clock, events, settings } = deps;
  type Entry = { principal: SessionPrincipal; session: SessionRecord; user: UserRecord; until: number };
  /** Sessions by the cookie's secret, once found in the store. */
  const cache = new Map<string, Entry>();
  const organizations = new Map<string, OrganizationRecord>();

  async function organizationOf(id: string): Promise<OrganizationRecord> {
    let organization = organizations.get(id);
    if (organization === undefined) {
      organization = await deps.organizations.getOrganization(id);
      if (organization === undefined) throw new AppError('unauthorized', 'The session\'s organization no longer exists.');
      organizations.set(id, organization);
    }
    return organization;
  }

  /** The scopes a user holds: their role's, less the organization-wide ones when they are limited to groups. */
  function scopesOf(user: Pick<UserRecord, 'role' | 'groupIds'>): ReadonlySet<Scope> {
    return effectiveScopes(ROLE_SCOPES[user.role], user.groupIds);
  }

  function invitationOf(token: string, expiresAt: number) {
    return { token, url: `${settings.publicUrl}/#/invitation?token=${token}`, expiresAt };
  }

  // --- Managing users (scope `users`) -------------------------------------------------------------

  async function createUser(who: Principal, spec: { email: string; name: string; role: Role; groupIds?: readonly string[] | null }) {
    assertMayGrant(who, spec.role);
    const now = clock.now();
    const user: UserRecord = {
      id: newId('usr'),
      organizationId: who.organizationId,
      email: spec.email.trim(),
      emailKey: emailKeyOf(spec.email),
      name: spec.name,
      role: spec.role,
      groupIds: groupListOf(spec.groupIds),
      status: 'invited',
      passwordHash: null,
      totpSecret: null,
      totpEnabled: false,
      sso: false,
      createdAt: now,
      updatedAt: now,
      lastLoginAt: null,
    };
    const token = newSecret();
    const expiresAt = now + settings.invitationMs;
    const inserted = await store.insertUser(user, { tokenHash: hashToken(token), expiresAt });
    if (inserted === 'unknown-group') throw unknownGroups(user.groupIds ?? []);
    if (!inserted) {
      throw new AppError('email-taken', `A user with the email "${user.email}" already exists.`);
    }
    return { user, invitation: invitationOf(token, expiresAt) };
  }

  function listUsers(who: Principal, page: { limit: number; offset: number }) {
    return store.listUsers(who.organizationId, page);
  }

  async function getUser(who: Principal, id: string): Promise<UserRecord> {
    const user = await store.getUser(who.organizationId, id);
    if (user === undefined) throw userNotFound(id);
    return user;
  }

  function refuseOwn(who: Principal, id: string, what: string): void {
    if (who.credentialId === id) throw new AppError('own-account', `Nobody ${what} their own account; ask another admin.`);
  }

  async function updateUser(who: Principal, id: string, patch: UserPatch): Promise<UserRecord> {
    if (patch.role !== undefined || patch.status !== undefined) refuseOwn(who, id, 'changes the role or status of');
    if (patch.role !== undefined) assertMayGrant(who, patch.role);
    const before = await getUser(who, id);
    // Demoting or disabling someone who holds scopes the caller lacks would be acting above its rank.
    if (patch.role !== undefined || patch.status !== undefined) assertMayGrant(who, before.role);
    const updated = await store.updateUser(who.organizationId, id, { ...patch, ...(patch.groupIds === undefined ? {} : { groupIds: groupListOf(patch.groupIds) }) }, clock.now());
    if (updated === undefined) throw userNotFound(id);
    if (updated === 'unknown-group') throw unknownGroups(patch.groupIds ?? []);
    if (updated === 'last-admin') throw lastAdmin();
    if (updated.status === 'disabled' && before.status !== 'disabled') userChanged(id, true);
    else if (updated.role !== before.role || JSON.stringify(updated.groupIds) !== JSON.stringify(before.groupIds)) userChanged(id, false, true);
    return updated;
  }

  async function deleteUser(who: Principal, id: string): Promise<void> {
    refuseOwn(who, id, 'deletes');
    assertMayGrant(who, (await getUser(who, id)).role);
    const deleted = await store.deleteUser(who.organizationId, id);
    if (deleted === undefined) throw userNotFound(id);
    if (deleted === 'last-admin') throw lastAdmin();
    userChanged(id, true);
  }

  /** A new invitation: the reset an admin gives. The old password works until the new one is set. */
  async function reinvite(who: Principal, id: string) {
    const user = await getUser(who, id);
    assertMayGrant(who, user.role);
    const token = newSecret();
    const expiresAt = clock.now() + settings.invitationMs;
    await store.replaceInvitation(user.id, { tokenHash: hashToken(token), expiresAt });
    return { user, invitation: invitationOf(token, expiresAt) };
  }

  /** Every node drops the user's cached sessions; `signedOut` or `accessChanged` (role, groups): their streams end too. */
  function userChanged(userId: string, signedOut: boolean, accessChanged = false): void {
    forgetUser(userId);
    events.emit('userChanged', { userId, signedOut, ...(accessChanged ? { accessChanged } : {}) });
  }

  /** Drops the user's cached sessions on this node. */
  function forgetUser(userId: string): void {
    for (const [secret, entry] of cache) if (entry.user.id === userId) cache.delete(secret);
  }

  // --- Signing in --------------------------------------------------------------------------------

  /** A new session for the user, as every way of signing in makes it (password, invitation, single sign-on). */
  async function startSession(user: UserRecord): Promise<SignedIn> {
    const now = clock.now();
    const secret = newSecret();
    const session: SessionRecord = {
      idHash: hashToken(secret),
      userId: user.id,
      organizationId: user.organizationId,
      csrfToken: newSecret(),
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + settings.absoluteMs,
    };
    noteAudit({ actor: { type: 'user', id: user.id, name: user.name }, organizationId: user.organizationId, resourceId: user.id });
    await store.insertSession(session);
    await store.recordLogin(user.id, now);
    return { secret, session, user: { ...user, lastLoginAt: now } };
  }

  async function acceptInvitation(token: string, password: string): Promise<SignedIn> {
    const user = await store.acceptInvitation(hashToken(token), await hashPassword(password), clock.now());
    if (user === undefined) {
      throw new AppError('invitation-invalid', 'The invitation is unknown, expired or already used; ask an admin for a new one.');
    }
    return startSession(user);
  }

  async function lockedUntil(emailKey: string, now: number): Promise<number | undefined> {
    // A failure counts while it is less than the window old.
    const failures = await store.loginFailures(emailKey, now - settings.lockoutWindowMs + 1);
    if (failures.length < settings.lockoutFailures) return undefined;
    // Locked until the oldest of the last N failures leaves the window.
    return failures[failures.length - settings.lockoutFailures]! + settings.lockoutWindowMs;
  }

  async function login(spec: { email: string; password: string; totpCode?: string }): Promise<SignedIn> {
    const emailKey = emailKeyOf(spec.email);
    const now = clock.now();
    const until = await lockedUntil(emailKey, now);
    if (until !== undefined) {
      const seconds = Math.max(1, Math.ceil((until - now) / 1000));
      throw new AppError('login-locked', `Too many failed sign-ins for this email; try again in ${seconds} s.`, {
        headers: { 'retry-after': String(seconds) },
      });
    }
    const user = await store.findUserByEmail(emailKey);
    if (user !== undefined) noteAudit({ organizationId: user.organizationId, resourceId: user.id });
    // An unknown email, a user without a password and a wrong password cost the same hash.
    const passwordOk = user === undefined || user.passwordHash === null
      ? await verifyNothing(spec.password)
      : await verifyPassword(spec.password, user.passwordHash);
    if (user === undefined || !passwordOk || user.status !== 'active') return failed(emailKey, now);
    if (user.totpEnabled && user.totpSecret !== null) {
      if (spec.totpCode === undefined) {
        throw new AppError('totp-required', 'This account has two-factor sign-in: send totpCode (or a recovery code).');
      }
      if (!(await secondFactorOk(user, spec.totpCode, now))) return failed(emailKey, now);
    }
    await store.clearLoginFailures(emailKey);
    return startSession(user);
  }

  async function failed(emailKey: string, now: number): Promise<never> {
    await store.recordLoginFailure(emailKey, now, now - settings.lockoutWindowMs);
    throw invalidCredentials();
  }

  /** A TOTP code (each step used once, on any node) or an unused recovery code. */
  async function secondFactorOk(user: UserRecord, code: string, now: number): Promise<boolean> {
    const trimmed = code.replace(/\s+/g, '');
    if (/^\d{6}$/.test(trimmed)) {
      const step = matchingStep(user.totpSecret!, trimmed, now);
      return step !== undefined && (await store.useTotpStep(user.id, step));
    }
    return store.useRecoveryCode(user.id, recoveryCodeHash(code));
  }

  /**
   * sessionPrincipal's hot path, answered at once: the principal of a session read within the
   * cache period that needs neither expiry nor a `last_seen_at` write; otherwise undefined, and the
   * caller asks sessionPrincipal.
   */
  function cachedSessionPrincipal(secret: string): SessionPrincipal | undefined {
    const entry = cache.get(secret);
    if (entry === undefined) return undefined;
    const now = clock.now();
    const { session } = entry;
    if (entry.until <= now || session.expiresAt <= now || now - session.lastSeenAt >= TOUCH_INTERVAL_MS) return undefined;
    return entry.principal;
  }

  /**
   * The principal of a session cookie, or undefined when there is no live session for it (the
   * caller answers 401). Live: unexpired (idle and absolute), its user active.
   */
  async function sessionPrincipal(secret: string): Promise<SessionPrincipal | undefined> {
    const now = clock.now();
    let entry = cache.get(secret);
    if (entry === undefined || entry.until <= now) {
      cache.delete(secret);
      const found = await store.findSession(hashToken(secret));
      if (found === undefined || found.user.status !== 'active') return undefined;
      const organization = await organizationOf(found.user.organizationId);
      const principal: SessionPrincipal = {
        organizationId: found.user.organizationId,
        credentialId: found.user.id,
        name: found.user.name,
        scopes: scopesOf(found.user),
        platform: organization.platform,
        ...(found.user.groupIds === null ? {} : { groupIds: found.user.groupIds }),
        expiresAt: found.session.expiresAt,
        session: { idHash: found.session.idHash, csrfToken: found.session.csrfToken, userId: found.user.id },
      };
      if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
      entry = { principal, session: found.session, user: found.user, until: now + CACHE_TTL_MS };
      cache.set(secret, entry);
    }
    const { session } = entry;
    if (session.expiresAt <= now || session.lastSeenAt + settings.idleMs <= now) {
      cache.delete(secret);
      await store.deleteSession(session.idHash);
      return undefined;
    }
    if (now - session.lastSeenAt >= TOUCH_INTERVAL_MS) {
      session.lastSeenAt = now;
      await store.touchSession(session.idHash, now);
    }
    return entry.principal;
  }

  /** The signed-in user behind a session principal (fresh from the store). */
  async function sessionUser(who: SessionPrincipal): Promise<UserRecord> {
    const user = await store.getUser(who.organizationId, who.session.userId);
    if (user === undefined) throw new AppError('unauthorized', 'The session has ended.');
    return user;
  }

  async function logout(who: SessionPrincipal): Promise<void> {
    await store.deleteSession(who.session.idHash);
    // Other nodes may hold it for a few seconds more: they drop the user's sessions and read again.
    userChanged(who.session.userId, false);
  }

  async function changePassword(who: SessionPrincipal, current: string, next: string): Promise<void> {
    const user = await sessionUser(who);
    if (user.passwordHash === null || !(await verifyPassword(current, user.passwordHash))) throw invalidCredentials();
    await store.setPassword(user.id, await hashPassword(next), clock.now());
    await store.deleteUserSessions(user.id, who.session.idHash);
    userChanged(user.id, false);
  }

  // --- Two-factor sign-in ------------------------------------------------------------------------

  async function beginTotp(who: SessionPrincipal) {
    const user = await sessionUser(who);
    if (user.totpEnabled) throw new AppError('totp-enabled', 'Two-factor sign-in is on already; turn it off first to enrol again.');
    const secret = newTotpSecret();
    await store.setTotpSecret(user.id, secret, clock.now());
    const organization = await organizationOf(user.organizationId);
    return { secret, otpauthUrl: otpauthUrl({ secret, account: user.email, issuer: `Fleet (${organization.name})` }) };
  }

  async function confirmTotp(who: SessionPrincipal, code: string) {
    const user = await sessionUser(who);
    if (user.totpEnabled || user.totpSecret === null) {
      throw new AppError('totp-not-pending', 'No enrolment is waiting for a code: start one with POST /auth/totp.');
    }
    const now = clock.now();
    const step = matchingStep(user.totpSecret, code, now);
    if (step === undefined || !(await store.useTotpStep(user.id, step))) throw invalidCredentials();
    const recoveryCodes = newRecoveryCodes(10);
    await store.enableTotp(user.id, recoveryCodes.map(recoveryCodeHash), now);
    return { recoveryCodes };
  }

  async function disableTotp(who: SessionPrincipal, password: string): Promise<void> {
    const user = await sessionUser(who);
    if (user.passwordHash === null || !(await verifyPassword(password, user.passwordHash))) throw invalidCredentials();
    await store.setTotpSecret(user.id, null, clock.now());
  }

  /** Whether the user a stream was opened by may still see it (active; not deleted). */
  async function userLive(organizationId: string, userId: string): Promise<boolean> {
    const user = await store.getUser(organizationId, userId);
    return user !== undefined && user.status === 'active';
  }

  return {
    createUser, listUsers, getUser, updateUser, deleteUser, reinvite,
    acceptInvitation, login, startSession, cachedSessionPrincipal, sessionPrincipal, sessionUser, logout, changePassword,
    beginTotp, confirmTotp, disableTotp, userLive, forgetUser, userChanged, scopesOf,
  };
}

function userNotFound(id: string): AppError {
  return new AppError('user-not-found', `No user "${id}" in this organization.`);
}

function lastAdmin(): AppError {
  return new AppError('last-admin', 'The organization\'s last active admin cannot be demoted, disabled or deleted.');
}

function invalidCredentials(): AppError {
  return new AppError('invalid-credentials', 'The email, password or code is not right, or the account is not active.');
}
