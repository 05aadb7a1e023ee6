// Users (scope `users`) under /v2, and the person's own sign-in, session, password and second
// factor under /auth (docs/API.md "Users and sessions").
import type { FastifyInstance, FastifyReply } from 'fastify';
import { iso } from '../clock.ts';
import { SESSION_COOKIE } from '../http/auth.ts';
import { typed } from '../http/typed.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import {
  InvitationAcceptance, InvitedUser, PasswordChange, PasswordConfirmation, RecoveryCodes, Session, SignIn, TotpConfirmation,
  TotpEnrolment, User, UserChange, UserCreation, UserIdParams, UserList, UserPageQuery,
} from './schema.ts';
import type { PeopleService, SessionPrincipal, SignedIn } from './service.ts';
import type { UserRecord } from './store.ts';

export function toUserView(user: UserRecord) {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    role: user.role,
    groupIds: user.groupIds,
    status: user.status,
    createdAt: iso(user.createdAt),
    lastLoginAt: user.lastLoginAt === null ? null : iso(user.lastLoginAt),
    totpEnabled: user.totpEnabled,
    sso: user.sso,
  };
}

/** The session cookie of a sign-in; `secure` when the public URL is https. */
export function setSessionCookie(reply: FastifyReply, done: SignedIn, secure: boolean): void {
  void reply.setCookie(SESSION_COOKIE, done.secret, {
    httpOnly: true, sameSite: 'lax', path: '/', secure, expires: new Date(done.session.expiresAt),
  });
}

function invitedView(user: UserRecord, invitation: { token: string; url: string; expiresAt: number }) {
  return { ...toUserView(user), invitation: { ...invitation, expiresAt: iso(invitation.expiresAt) } };
}

export async function peopleRoutes(instance: FastifyInstance, opts: { people: PeopleService; publicUrl: string }) {
  const app = typed(instance);
  const { people } = opts;
  const users = { scope: 'users' } as const;
  const tags = ['users'];
  const secure = opts.publicUrl.startsWith('https:');

  function sessionView(user: UserRecord, who: { csrfToken: string; expiresAt: number }) {
    return { user: toUserView(user), scopes: [...people.scopesOf(user)], csrfToken: who.csrfToken, expiresAt: iso(who.expiresAt) };
  }

  /** Sets the session cookie and answers what GET /auth/session would. */
  function signedIn(reply: FastifyReply, done: SignedIn) {
    setSessionCookie(reply, done, secure);
    return sessionView(done.user, done.session);
  }

  app.post('/v2/users', {
    config: { ...users, secret: true },
    schema: {
      operationId: 'createUser', tags, summary: 'Invite a user',
      description: 'Creates the user (`invited`) and a single-use invitation valid 72 hours, shown in this response only: '
        + 'send its `url` to the person, who sets a password there. The role\'s scopes must be ones the caller holds (403 otherwise); '
        + 'an email already in use, in any organization, answers 409. With `groupIds` the user sees only the vehicles in those groups '
        + '(docs/API.md "Scoped credentials") and holds their role\'s scopes less the organization-wide ones; a group that does not exist answers 404.',
      body: UserCreation,
      response: responses({ 201: InvitedUser }, { body: true, location: true, errors: [404, 409] }),
    },
  }, async (request, reply) => {
    const { user, invitation } = await people.createUser(request.principal, request.body);
    return reply.code(201).header('location', `/v2/users/${user.id}`).send(invitedView(user, invitation));
  });

  app.get('/v2/users', {
    config: users,
    schema: {
      operationId: 'listUsers', tags, summary: 'List the organization\'s users',
      querystring: UserPageQuery, response: responses({ 200: UserList }),
    },
  }, async (request) => {
    const page = pageOf(request.query);
    const found = await people.listUsers(request.principal, page);
    return { users: found.users.map(toUserView), total: found.total, ...page };
  });

  app.get('/v2/users/:id', {
    config: users,
    schema: { operationId: 'getUser', tags, summary: 'Read a user', params: UserIdParams, response: responses({ 200: User }, { errors: [404] }) },
  }, async (request) => toUserView(await people.getUser(request.principal, request.params.id)));

  app.patch('/v2/users/:id', {
    config: users,
    schema: {
      operationId: 'updateUser', tags, summary: 'Change a user',
      description: 'Changes the name, role, groups or status. Disabling signs the user out everywhere and ends their streams within a second; '
        + 'a new role or new groups apply from their next request (an open stream stops carrying a vehicle it no longer sees within a second). Nobody changes their own role or status, and the organization\'s last active '
        + 'admin cannot be demoted or disabled (409).',
      params: UserIdParams, body: UserChange, response: responses({ 200: User }, { body: true, errors: [404, 409] }),
    },
  }, async (request) => toUserView(await people.updateUser(request.principal, request.params.id, request.body)));

  app.delete('/v2/users/:id', {
    config: users,
    schema: {
      operationId: 'deleteUser', tags, summary: 'Delete a user',
      description: 'Signs the user out everywhere. Nobody deletes themselves, nor the organization\'s last active admin (409).',
      params: UserIdParams, response: responses({ 204: NoContent }, { errors: [404, 409] }),
    },
  }, async (request, reply) => {
    await people.deleteUser(request.principal, request.params.id);
    return reply.code(204).send();
  });

  app.post('/v2/users/:id/invitation', {
    config: { ...users, secret: true },
    schema: {
      operationId: 'reinviteUser', tags, summary: 'Issue a new invitation',
      description: 'The reset an admin gives: a new single-use invitation replaces any earlier one. The current password keeps working until the new one is set.',
      params: UserIdParams, response: responses({ 201: InvitedUser }, { errors: [404] }),
    },
  }, async (request, reply) => {
    const { user, invitation } = await people.reinvite(request.principal, request.params.id);
    return reply.code(201).send(invitedView(user, invitation));
  });

  // --- The person's own account --------------------------------------------------------------------

  const auth = ['sessions'];
  const own = { session: true } as const;

  // Per client address as well, as the OAuth token endpoint: against guessing across many emails.
  app.post('/auth/login', {
    config: { public: true, secret: true, rateLimit: 'ip' },
    schema: {
      operationId: 'signIn', tags: auth, summary: 'Sign in with email and password',
      description: 'Sets the session cookie `fleet_session`. An unknown email, a wrong password or code, and a disabled account all answer the same 401 '
        + '(`invalid-credentials`); with two-factor sign-in on and no `totpCode`, 401 `totp-required`. After 10 failures for one email within '
        + '15 minutes, 429 with `Retry-After` until the window passes.',
      body: SignIn, response: responses({ 200: Session }, { body: true, authenticated: false, errors: [401, 429] }),
    },
  }, async (request, reply) => signedIn(reply, await people.login(request.body)));

  app.post('/auth/invitations/accept', {
    config: { public: true, secret: true, rateLimit: 'ip' },
    schema: {
      operationId: 'acceptInvitation', tags: auth, summary: 'Set a password with an invitation',
      description: 'Makes the user active and signs them in, as sign-in does. An unknown, expired or used token answers 400 (`invitation-invalid`).',
      body: InvitationAcceptance, response: responses({ 200: Session }, { body: true, authenticated: false }),
    },
  }, async (request, reply) => signedIn(reply, await people.acceptInvitation(request.body.token, request.body.password)));

  app.get('/auth/session', {
    config: { ...own, secret: true },
    schema: {
      operationId: 'getSession', tags: auth, summary: 'The signed-in person',
      description: 'What sign-in answered, for the session cookie sent; 401 without a live session.',
      response: responses({ 200: Session }),
    },
  }, async (request) => {
    const who = request.principal as SessionPrincipal;
    return sessionView(await people.sessionUser(who), { csrfToken: who.session.csrfToken, expiresAt: who.expiresAt ?? 0 });
  });

  app.post('/auth/logout', {
    config: own,
    schema: { operationId: 'signOut', tags: auth, summary: 'Sign out', description: 'Ends the session on the server and clears the cookie.', response: responses({ 204: NoContent }) },
  }, async (request, reply) => {
    await people.logout(request.principal as SessionPrincipal);
    return reply.clearCookie(SESSION_COOKIE, { path: '/' }).code(204).send();
  });

  app.post('/auth/password', {
    config: own,
    schema: {
      operationId: 'changePassword', tags: auth, summary: 'Change one\'s password',
      description: 'Ends every other session of the user. A wrong current password answers 401 (`invalid-credentials`).',
      body: PasswordChange, response: responses({ 204: NoContent }, { body: true }),
    },
  }, async (request, reply) => {
    await people.changePassword(request.principal as SessionPrincipal, request.body.currentPassword, request.body.newPassword);
    return reply.code(204).send();
  });

  app.post('/auth/totp', {
    config: { ...own, secret: true },
    schema: {
      operationId: 'beginTotp', tags: auth, summary: 'Start two-factor enrolment',
      description: 'A new TOTP secret (RFC 6238: SHA-1, 6 digits, 30 s); confirm it with a first code. 409 when two-factor sign-in is on already.',
      response: responses({ 200: TotpEnrolment }, { errors: [409] }),
    },
  }, async (request) => people.beginTotp(request.principal as SessionPrincipal));

  app.post('/auth/totp/confirm', {
    config: { ...own, secret: true },
    schema: {
      operationId: 'confirmTotp', tags: auth, summary: 'Turn two-factor sign-in on',
      description: 'With the app\'s current code: answers ten single-use recovery codes, shown this once. A wrong code answers 401; no enrolment started, 409.',
      body: TotpConfirmation, response: responses({ 200: RecoveryCodes }, { body: true, errors: [409] }),
    },
  }, async (request) => people.confirmTotp(request.principal as SessionPrincipal, request.body.code));

  app.delete('/auth/totp', {
    config: own,
    schema: {
      operationId: 'disableTotp', tags: auth, summary: 'Turn two-factor sign-in off',
      description: 'Needs the account\'s password (401 when wrong); the recovery codes stop working.',
      body: PasswordConfirmation, response: responses({ 204: NoContent }, { body: true }),
    },
  }, async (request, reply) => {
    await people.disableTotp(request.principal as SessionPrincipal, request.body.password);
    return reply.code(204).send();
  });
}
