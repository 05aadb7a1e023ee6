// The organization's OpenID provider (scope `users`) under /v2/sso, and the browser's way through
// it under /auth/sso (docs/API.md "Single sign-on").
import type { FastifyInstance } from 'fastify';
import { iso } from '../clock.ts';
import { typed } from '../http/typed.ts';
import { setSessionCookie } from '../people/routes.ts';
import { NoContent, responses } from '../schema/common.ts';
import { Redirect, SsoCallbackQuery, SsoConfiguration, SsoSettings, SsoStartParams, SsoStartQuery } from './schema.ts';
import { LOGIN_TTL_MS, type SsoService } from './service.ts';
import type { SsoConfigRecord } from './store.ts';

/** Holds the id of the sign-in under way, for the callback only. */
export const SSO_COOKIE = 'fleet_sso';
const COOKIE_PATH = '/auth/sso';

export async function ssoRoutes(instance: FastifyInstance, opts: { sso: SsoService; publicUrl: string }) {
  const app = typed(instance);
  const { sso, publicUrl } = opts;
  const users = { scope: 'users' } as const;
  const tags = ['users'];
  const secure = publicUrl.startsWith('https:');

  function view(config: SsoConfigRecord) {
    return {
      issuer: config.issuer,
      clientId: config.clientId,
      roleClaim: config.roleClaim,
      roleMap: config.roleMap,
      allowedEmailDomains: config.allowedEmailDomains,
      redirectUri: `${publicUrl}/auth/sso/callback`,
      signInUrl: `${publicUrl}/auth/sso/${config.organizationId}`,
      createdAt: iso(config.createdAt),
      updatedAt: iso(config.updatedAt),
    };
  }

  app.put('/v2/sso', {
    config: users,
    schema: {
      operationId: 'putSso', tags, summary: 'Configure single sign-on',
      description: 'Sets the organization\'s OpenID provider, replacing any earlier one. Its discovery document is read now: 400 (`sso-failed`) '
        + 'when it cannot be, does not name the issuer, or the issuer is on a loopback or private address (allowed only with '
        + '`FLEET_SSO_ALLOW_PRIVATE=true`). Every role of `roleMap` must be one the caller may grant (403 otherwise). The client secret is never answered.',
      body: SsoSettings, response: responses({ 200: SsoConfiguration }, { body: true }),
    },
  }, async (request) => view(await sso.configure(request.principal, request.body)));

  app.get('/v2/sso', {
    config: users,
    schema: {
      operationId: 'getSso', tags, summary: 'Read the single sign-on configuration',
      description: '404 (`sso-not-configured`) when there is none.',
      response: responses({ 200: SsoConfiguration }, { errors: [404] }),
    },
  }, async (request) => view(await sso.getConfig(request.principal)));

  app.delete('/v2/sso', {
    config: users,
    schema: {
      operationId: 'deleteSso', tags, summary: 'Turn single sign-on off',
      description: 'People it signed in keep their sessions; they sign in no more through the provider. 404 when there was none.',
      response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await sso.deleteConfig(request.principal);
    return reply.code(204).send();
  });

  const auth = ['sessions'];

  app.get('/auth/sso/:organizationId', {
    config: { public: true },
    schema: {
      operationId: 'startSso', tags: auth, summary: 'Sign in through the organization\'s OpenID provider',
      description: 'Answers 302 to the provider\'s authorization endpoint (authorization code flow with PKCE, `state` and `nonce`), and sets '
        + 'the `fleet_sso` cookie that binds the sign-in to this browser for 10 minutes. 404 when the organization has no single sign-on.',
      params: SsoStartParams, querystring: SsoStartQuery,
      response: responses({ 302: Redirect }, { authenticated: false, errors: [404], headers: { 302: ['Location'] } }),
    },
  }, async (request, reply) => {
    const { url, loginId } = await sso.begin(request.params.organizationId, request.query.returnTo);
    void reply.setCookie(SSO_COOKIE, loginId, { httpOnly: true, sameSite: 'lax', path: COOKIE_PATH, secure, maxAge: LOGIN_TTL_MS / 1000 });
    return reply.header('cache-control', 'no-store').redirect(url, 302);
  });

  app.get('/auth/sso/callback', {
    config: { public: true },
    schema: {
      operationId: 'finishSso', tags: auth, summary: 'The provider\'s answer',
      description: 'Where the provider sends the browser back. Checks the state against the `fleet_sso` cookie (once), exchanges the code, and '
        + 'checks the ID token (signature by the provider\'s keys, RS256 or ES256; `iss`, `aud`, `exp`, `nonce`; a verified email of an allowed domain). '
        + 'Then sets the session cookie `fleet_session` and answers 302 to the `returnTo` given at the start. A bad, expired or replayed state or a '
        + 'token that fails a check answers 400 (`sso-failed`); no mapped role 403 (`sso-no-role`); a disabled user or a domain not allowed 403; '
        + 'an email of another organization\'s user 409 (`email-taken`); a role that would demote the organization\'s last active admin 409 (`last-admin`).',
      querystring: SsoCallbackQuery,
      response: responses({ 302: Redirect }, { authenticated: false, errors: [404, 409], headers: { 302: ['Location'] } }),
    },
  }, async (request, reply) => {
    // Whatever the outcome, the sign-in under way is over.
    void reply.clearCookie(SSO_COOKIE, { path: COOKIE_PATH });
    const at = request.url.indexOf('?');
    const done = await sso.finish(request.cookies[SSO_COOKIE], at === -1 ? '' : request.url.slice(at));
    setSessionCookie(reply, done.signedIn, secure);
    return reply.header('cache-control', 'no-store').redirect(done.returnTo, 302);
  });
}
