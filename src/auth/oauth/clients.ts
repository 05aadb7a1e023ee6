// OAuth 2.0 for Fleet: clients of each organization, the client-credentials grant, revocation
// (RFC 7009), introspection (RFC 7662) and signing-key rotation. Knows nothing of HTTP: the routes
// turn a request into these calls and render AppError (problem+json) or OAuthError (RFC 6749 JSON).
import type { Clock } from '../../clock.ts';
import type { ExternalIssuerConfig } from '../../config.ts';
import { AppError } from '../../errors.ts';
import type { EventPort } from '../../events/port.ts';
import { quotaExceeded } from '../../quotas.ts';
import { randomBase62 } from '../../base62.ts';
import { newId } from '../../ids.ts';
import { hashSecret, hashesEqual } from '../keys.ts';
import { type Principal, type Scope, isScope } from '../scopes.ts';
import { assertScopedScopes, unknownGroups } from '../../groups/scope.ts';
import type { OrganizationRecord } from '../store.ts';
import { OAuthError } from './errors.ts';
import { createSigningKeys } from './signing.ts';
import type { OAuthClientRecord, OAuthStore } from './store.ts';
import { type FleetTokenClaims, createTokens } from './tokens.ts';

/** 43 base62 characters: ~256 bits. */
const SECRET_LENGTH = 43;
/** Compared against when the client id is unknown, so both cases cost the same. */
const NO_SUCH_SECRET = hashSecret(randomBase62(SECRET_LENGTH));

export const GRANT_TYPES = ['client_credentials'] as const;

export interface OAuthDeps {
  store: OAuthStore;
  clock: Clock;
  /** Fleet's public URL: issuer and audience of its tokens. */
  issuer: string;
  tokenTtlSeconds: number;
  maxClients: number;
  external?: ExternalIssuerConfig | undefined;
  findOrganization(id: string): Promise<OrganizationRecord | undefined>;
  /** Where a client deleted through this node is told (`clientDeleted`: what its tokens opened, live streams, ends). */
  events?: EventPort;
}

export interface TokenRequest {
  grantType: string;
  clientId: string;
  clientSecret: string;
  /** Space-separated; absent or empty asks for every scope the client has. */
  scope?: string | undefined;
}

export interface Introspection {
  active: boolean;
  scope?: string;
  client_id?: string;
  sub?: string;
  exp?: number;
  iat?: number;
  iss?: string;
  aud?: string;
  jti?: string;
  token_type?: 'Bearer';
}

export type OAuthService = ReturnType<typeof createOAuthService>;

export function createOAuthService(deps: OAuthDeps) {
  const { store, clock } = deps;
  const signing = createSigningKeys({ store, clock, tokenTtlSeconds: deps.tokenTtlSeconds });
  const tokens = createTokens({ ...deps, signing });

  function clientNotFound(id: string): AppError {
    return new AppError('oauth-client-not-found', `No OAuth client "${id}" in this organization.`);
  }

  /** A new client; its secret is returned here and never again. */
  async function createClient(who: Principal, spec: { name: string; scopes: readonly Scope[]; groupIds?: readonly string[] }) {
    const missing = spec.scopes.filter((scope) => !who.scopes.has(scope));
    if (missing.length > 0) {
      throw new AppError('insufficient-scope', `A client cannot hold scopes its creator lacks: ${missing.join(', ')}.`);
    }
    assertScopedScopes(spec.scopes, spec.groupIds);
    const secret = randomBase62(SECRET_LENGTH);
    const client: OAuthClientRecord = {
      id: newId('oc'),
      organizationId: who.organizationId,
      name: spec.name,
      secretHash: hashSecret(secret),
      scopes: [...new Set(spec.scopes)],
      groupIds: spec.groupIds === undefined ? null : [...new Set(spec.groupIds)].sort(),
      createdAt: clock.now(),
      createdBy: who.credentialId,
    };
    const outcome = await store.insertClient(client, deps.maxClients);
    if (outcome === 'quota') throw quotaExceeded(deps.maxClients, 'OAuth clients');
    if (outcome === 'unknown-group') throw unknownGroups(client.groupIds ?? []);
    return { client, secret };
  }

  function listClients(who: Principal) {
    return store.listClients(who.organizationId);
  }

  async function getClient(who: Principal, id: string) {
    const client = await store.getClient(who.organizationId, id);
    if (client === undefined) throw clientNotFound(id);
    return client;
  }

  /** Deletes the client: its secret and every token issued to it stop working at once. */
  async function deleteClient(who: Principal, id: string) {
    if (!(await store.deleteClient(who.organizationId, id))) throw clientNotFound(id);
    deps.events?.emit('clientDeleted', { clientId: id });
  }

  /** Whether the organization still has the client, whose tokens are then good until they expire. */
  async function clientLive(organizationId: string, id: string): Promise<boolean> {
    return (await store.getClient(organizationId, id)) !== undefined;
  }

  /** The client whose id and secret these are; invalid_client for anything else. */
  async function authenticateClient(clientId: string, clientSecret: string) {
    const found = await store.findClient(clientId);
    const matches = hashesEqual(found?.client.secretHash ?? NO_SUCH_SECRET, hashSecret(clientSecret));
    if (found === undefined || !matches) throw new OAuthError('invalid_client', 'Client authentication failed.');
    return found;
  }

  async function token(request: TokenRequest) {
    const { client } = await authenticateClient(request.clientId, request.clientSecret);
    if (!(GRANT_TYPES as readonly string[]).includes(request.grantType)) {
      throw new OAuthError('unsupported_grant_type', `Only ${GRANT_TYPES.join(', ')} is supported.`);
    }
    const asked = (request.scope ?? '').split(' ').filter((s) => s !== '');
    const beyond = asked.filter((s) => !isScope(s) || !client.scopes.includes(s));
    if (beyond.length > 0) {
      throw new OAuthError('invalid_scope', `This client does not hold: ${beyond.join(' ')}.`);
    }
    const granted = asked.length === 0 ? client.scopes : client.scopes.filter((s) => asked.includes(s));
    return tokens.issue(client, granted);
  }

  /** RFC 7009: revokes a token issued to this client; anything else is silently ignored. */
  async function revoke(auth: { clientId: string; clientSecret: string }, token: string): Promise<void> {
    const { client } = await authenticateClient(auth.clientId, auth.clientSecret);
    const inspected = await tokens.inspect(token);
    if (inspected !== undefined && inspected.client.id === client.id) await tokens.revoke(inspected.claims);
  }

  /** RFC 7662: active only for a live Fleet token of the calling client's organization. */
  async function introspect(auth: { clientId: string; clientSecret: string }, token: string): Promise<Introspection> {
    const { client } = await authenticateClient(auth.clientId, auth.clientSecret);
    const inspected = await tokens.inspect(token);
    if (inspected === undefined || inspected.organization.id !== client.organizationId) return { active: false };
    const claims: FleetTokenClaims = inspected.claims;
    return {
      active: true,
      scope: claims.scope,
      client_id: claims.client_id,
      sub: claims.sub,
      exp: claims.exp,
      iat: claims.iat,
      iss: claims.iss,
      aud: claims.aud,
      jti: claims.jti,
      token_type: 'Bearer',
    };
  }

  return {
    createClient,
    listClients,
    getClient,
    deleteClient,
    clientLive,
    token,
    revoke,
    introspect,
    rotateSigningKey: () => signing.rotate(),
    jwks: () => signing.jwks(),
    verifyAccessToken: (token: string) => tokens.verify(token),
  };
}
