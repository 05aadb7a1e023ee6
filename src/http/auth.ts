// Authentication and scopes for every route. Each route declares in its config either
// `public: true` or the `scope` it needs; a route that declares neither fails at start-up, so a
// new route cannot forget its check.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AuthService } from '../auth/service.ts';
import type { Principal, Scope } from '../auth/scopes.ts';
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
  }
  interface FastifyRequest {
    /** The caller; set before the handler of every non-public route runs. */
    principal: Principal;
  }
}

export const REALM = 'fleet';

/** Paths served by plugins we do not write routes for (the interactive docs). */
const PUBLIC_PREFIXES = ['/docs'];

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
  return match?.[1];
}

export const authPlugin = fp(async function auth(app: FastifyInstance, opts: { auth: AuthService }) {
  app.decorateRequest('principal', null as unknown as Principal);

  app.addHook('onRoute', (route) => {
    if (PUBLIC_PREFIXES.some((prefix) => route.url.startsWith(prefix))) {
      route.config = { ...route.config, public: true };
    }
    const config = route.config ?? {};
    if (config.public !== true && config.scope === undefined) {
      throw new Error(`Route ${String(route.method)} ${route.url} declares neither config.public nor config.scope`);
    }
  });

  app.addHook('onRequest', async (request) => {
    if (request.is404) return;
    const config = request.routeOptions.config;
    if (config.public === true) return;
    const alternative = config.alternativeCredential === undefined ? undefined : await config.alternativeCredential(request);
    if (alternative !== undefined) {
      if (config.scope !== undefined && !alternative.scopes.has(config.scope)) {
        throw new AppError('insufficient-scope', `This operation needs the "${config.scope}" scope.`);
      }
      request.principal = alternative;
      return;
    }

    const token = bearerToken(request);
    if (token === undefined) {
      throw new AppError('unauthorized', 'Send a credential as "Authorization: Bearer <token>".', {
        headers: { 'www-authenticate': `Bearer realm="${REALM}"` },
      });
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
    const scope = config.scope;
    if (scope !== undefined && !principal.scopes.has(scope)) {
      throw new AppError('insufficient-scope', `This operation needs the "${scope}" scope.`, {
        headers: { 'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${scope}"` },
      });
    }
    if (config.platform === true && !principal.platform) {
      throw new AppError('insufficient-scope', 'This operation is reserved for the platform organization.', {
        headers: { 'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope"` },
      });
    }
    request.principal = principal;
  });
}, { name: 'auth' });
