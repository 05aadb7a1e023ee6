// Authentication and scopes for every route. Each route declares in its config either
// `public: true` or the `scope` it needs; a route that declares neither fails at start-up, so a
// new route cannot forget its check.
//
// A credential that is valid but lacks the route's scope is known all the same: its principal is
// set in onRequest and its refusal (403) is answered in preParsing, after every onRequest hook, so
// that the rate limit (rate-limit.ts) counts the request against that credential's budget first.
// Its body is never read.
//
// A person's session cookie (`fleet_session`, people/service.ts) authenticates a request that has no
// Authorization header; such a request's writes must carry the session's CSRF token in
// `X-CSRF-Token`. Routes with `config.session` (the signed-in person's own /auth routes) take only
// the cookie.
import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AuthService } from '../auth/service.ts';
import { type Principal, type Scope, holds } from '../auth/scopes.ts';
import { AppError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable without a credential. */
    public?: boolean;
    /** The scope a credential needs for this route. */
    scope?: Scope;
    /** Only credentials of the platform organization (the one created on first start). */
    platform?: boolean;
    /**
     * A credential the route accepts besides the bearer token (a live stream's single-use
     * WebSocket ticket), tried first; undefined falls back to the bearer token. The route still
     * declares its `scope`, which the principal it returns must hold, and OpenAPI documents both.
     */
    alternativeCredential?: (request: FastifyRequest) => Promise<Principal | undefined>;
    /** Only a person's session cookie authenticates this route (their own account), whatever its scopes. */
    session?: boolean;
  }
  interface FastifyRequest {
    /** The caller; set before the handler of every non-public route runs. */
    principal: Principal;
    /** Why `principal` may not use this route (403), answered once the request is counted. */
    authRefusal: AppError | null;
  }
}

export const REALM = 'fleet';
export const SESSION_COOKIE = 'fleet_session';
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** How the plugin reads a session cookie: at once from a cache, or from the store. */
export interface SessionResolver {
  cached(secret: string): Principal | undefined;
  resolve(secret: string): Promise<Principal | undefined>;
}

/** Paths served by plugins we do not write routes for (the interactive docs). */
const PUBLIC_PREFIXES = ['/docs'];

function unauthorized(): AppError {
  return new AppError('unauthorized', 'Send a credential as "Authorization: Bearer <token>".', {
    headers: { 'www-authenticate': `Bearer realm="${REALM}"` },
  });
}

function sessionSecret(request: FastifyRequest): string | undefined {
  const value = request.cookies?.[SESSION_COOKIE];
  return value === undefined || value === '' ? undefined : value;
}

function noSession(): AppError {
  return new AppError('unauthorized', 'Sign in first: there is no live session for this browser.');
}

/** A cookie-authenticated write without the session's CSRF token is refused (403) before any work. */
function csrfRefusal(request: FastifyRequest, principal: Principal): AppError | undefined {
  if (principal.session === undefined || !WRITES.has(request.method)) return undefined;
  const given = request.headers['x-csrf-token'];
  if (given === principal.session.csrfToken) return undefined;
  return new AppError('csrf-failed', 'Send the session\'s csrfToken (from sign-in or GET /auth/session) in the X-CSRF-Token header.');
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
  return match?.[1];
}

export const authPlugin = fp(async function auth(app: FastifyInstance, opts: { auth: AuthService; sessions?: SessionResolver }) {
  const sessions: SessionResolver = opts.sessions ?? { cached: () => undefined, resolve: async () => undefined };
  app.decorateRequest('principal', null as unknown as Principal);
  app.decorateRequest('authRefusal', null);

  app.addHook('onRoute', (route) => {
    if (PUBLIC_PREFIXES.some((prefix) => route.url.startsWith(prefix))) {
      route.config = { ...route.config, public: true };
    }
    const config = route.config ?? {};
    if (config.public !== true && config.scope === undefined && config.session !== true) {
      throw new Error(`Route ${String(route.method)} ${route.url} declares neither config.public, config.scope nor config.session`);
    }
  });

  /** Why `principal` may not use the route, or undefined when it may. */
  function refusal(request: FastifyRequest, config: FastifyContextConfig, principal: Principal): AppError | undefined {
    const csrf = csrfRefusal(request, principal);
    if (csrf !== undefined) return csrf;
    const scope = config.scope;
    if (scope !== undefined && !holds(principal.scopes, scope)) {
      return new AppError('insufficient-scope', `This operation needs the "${scope}" scope.`, {
        headers: { 'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${scope}"` },
      });
    }
    if (config.platform === true && !principal.platform) {
      return new AppError('insufficient-scope', 'This operation is reserved for the platform organization.', {
        headers: { 'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope"` },
      });
    }
    return undefined;
  }

  async function authenticateSlowly(request: FastifyRequest, config: FastifyContextConfig): Promise<void> {
    const alternative = config.alternativeCredential === undefined ? undefined : await config.alternativeCredential(request);
    if (alternative !== undefined) {
      if (config.scope !== undefined && !holds(alternative.scopes, config.scope)) {
        request.authRefusal = new AppError('insufficient-scope', `This operation needs the "${config.scope}" scope.`);
      }
      request.principal = alternative;
      return;
    }
    const token = bearerToken(request);
    if (token === undefined) {
      const secret = sessionSecret(request);
      if (secret === undefined || request.headers.authorization !== undefined) throw unauthorized();
      return fromSession(request, config, secret);
    }
    let principal: Principal;
    try {
      principal = await opts.auth.authenticate(token);
    } catch (error) {
      if (error instanceof AppError && error.code === 'invalid-token') {
        throw new AppError('invalid-token', error.detail, {
          headers: { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"` },
        });
      }
      throw error;
    }
    request.authRefusal = refusal(request, config, principal) ?? null;
    request.principal = principal;
  }

  /** The principal of a session cookie's secret, from the cache or the store; 401 when it has none. */
  async function fromSession(request: FastifyRequest, config: FastifyContextConfig, secret: string): Promise<void> {
    const principal = sessions.cached(secret) ?? (await sessions.resolve(secret));
    if (principal === undefined) throw noSession();
    request.authRefusal = refusal(request, config, principal) ?? null;
    request.principal = principal;
  }

  /** A route of the person's own account: only the session cookie counts. */
  async function authenticateSession(request: FastifyRequest, config: FastifyContextConfig): Promise<void> {
    const secret = sessionSecret(request);
    if (secret === undefined) throw noSession();
    return fromSession(request, config, secret);
  }

  // Callback-style, with a synchronous path for a token verified moments ago (the common case of
  // a busy client): no promise per request unless the store or a verifier must be asked.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404) return done();
    const config = request.routeOptions.config;
    if (config.public === true) return done();
    if (config.session === true) {
      authenticateSession(request, config).then(() => done(), done);
      return;
    }
    if (config.alternativeCredential === undefined) {
      const token = bearerToken(request);
      let cached: Principal | undefined;
      if (token !== undefined) cached = opts.auth.cachedPrincipal(token);
      else {
        const secret = sessionSecret(request);
        if (secret === undefined || request.headers.authorization !== undefined) return done(unauthorized());
        cached = sessions.cached(secret);
      }
      if (cached !== undefined) {
        request.authRefusal = refusal(request, config, cached) ?? null;
        request.principal = cached;
        return done();
      }
    }
    authenticateSlowly(request, config).then(() => done(), done);
  });

  // After every onRequest hook (the rate limit's among them), before the body is read.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if (request.authRefusal !== null) return done(request.authRefusal);
    done(null, payload);
  });
}, { name: 'auth' });
