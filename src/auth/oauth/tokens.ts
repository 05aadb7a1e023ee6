// Access tokens as JWTs (RFC 9068): issued by Fleet and signed with its stored keys, or issued by
// a configured external identity provider. Verification trusts only keys we chose: Fleet's own
// stored keys, or the JWKS at the one configured URL. A key or key URL named inside a token
// (`jwk`, `jku`, `x5u`, `x5c`) is never used; such a token is refused outright.
import { randomBytes } from 'node:crypto';
import {
  type CryptoKey,
  type JWSAlgorithm,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyResult,
  SignJWT,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  jwtVerify,
} from 'jose';
import type { Clock } from '../../clock.ts';
import type { ExternalIssuerConfig } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { type Principal, type Scope, effectiveScopes, isScope } from '../scopes.ts';
import type { OrganizationRecord } from '../store.ts';
import { SIGNING_ALGORITHM, type SigningKeys } from './signing.ts';
import type { OAuthClientRecord, OAuthStore } from './store.ts';

export const TOKEN_TYPE = 'at+jwt';
export const ORGANIZATION_CLAIM = 'fleet_org';
/** Seconds of clock skew tolerated on exp/iat/nbf. */
const CLOCK_TOLERANCE_SECONDS = 5;
/** Asymmetric algorithms only: `none` and HMAC (e.g. HS256 keyed with a public key) never verify. */
const EXTERNAL_ALGORITHMS: JWSAlgorithm[] = [
  'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519',
];
/** Header parameters that name a key or a place to fetch one. */
const KEY_CARRYING_HEADERS = ['jwk', 'jku', 'x5u', 'x5c'];

/** The claims of a verified Fleet access token. */
export interface FleetTokenClaims {
  iss: string;
  aud: string;
  sub: string;
  client_id: string;
  scope: string;
  jti: string;
  iat: number;
  exp: number;
  [ORGANIZATION_CLAIM]: string;
}

export interface TokenDeps {
  store: OAuthStore;
  signing: SigningKeys;
  clock: Clock;
  /** Fleet's public URL: `iss` and `aud` of its tokens. */
  issuer: string;
  tokenTtlSeconds: number;
  external?: ExternalIssuerConfig | undefined;
  findOrganization(id: string): Promise<OrganizationRecord | undefined>;
}

export type Tokens = ReturnType<typeof createTokens>;

function invalidToken(cause?: unknown): AppError {
  return new AppError('invalid-token', 'The bearer token is not a valid, unexpired credential.', { cause });
}

const knownScopes = (value: unknown): Scope[] =>
  typeof value === 'string' ? [...new Set(value.split(' ').filter(isScope))] : [];

export function createTokens(deps: TokenDeps) {
  const { store, signing, clock, issuer } = deps;
  const remoteKeys = deps.external === undefined ? undefined : createRemoteJWKSet(new URL(deps.external.jwksUrl));

  async function issue(client: OAuthClientRecord, scopes: readonly Scope[]) {
    const key = await signing.signer();
    const iat = Math.floor(clock.now() / 1000);
    const exp = iat + deps.tokenTtlSeconds;
    const scope = scopes.join(' ');
    const accessToken = await new SignJWT({ client_id: client.id, scope, [ORGANIZATION_CLAIM]: client.organizationId })
      .setProtectedHeader({ alg: SIGNING_ALGORITHM, typ: TOKEN_TYPE, kid: key.record.kid })
      .setIssuer(issuer)
      .setAudience(issuer)
      .setSubject(client.id)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(randomBytes(16).toString('base64url'))
      .sign(key.privateKey);
    return { accessToken, expiresIn: deps.tokenTtlSeconds, scope };
  }

  /**
   * The unverified header and `iss`, which only choose the trusted keys to check the signature
   * with. Refuses a token whose header carries or points at a key; throws on anything undecodable.
   */
  function unverified(token: string): { kid: unknown; iss: unknown } {
    const header = decodeProtectedHeader(token);
    if (KEY_CARRYING_HEADERS.some((name) => name in header)) throw invalidToken();
    return { kid: header.kid, iss: decodeJwt(token).iss };
  }

  async function verifyWith(token: string, key: CryptoKey | JWTVerifyGetKey, options: { issuer: string; audience: string; algorithms: JWSAlgorithm[] }) {
    return jwtVerify(token, key, {
      ...options,
      typ: TOKEN_TYPE,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: new Date(clock.now()),
      requiredClaims: ['exp', 'iat'],
    });
  }

  /**
   * A Fleet token whose signature, type, issuer, audience and lifetime check out, that is not
   * revoked and whose client still exists. Undefined for anything else.
   */
  async function inspect(token: string): Promise<{ claims: FleetTokenClaims; client: OAuthClientRecord; organization: OrganizationRecord } | undefined> {
    let header: { kid: unknown; iss: unknown };
    try {
      header = unverified(token);
    } catch {
      return undefined;
    }
    if (header.iss !== issuer || typeof header.kid !== 'string') return undefined;
    // Outside the catch below: a store that cannot answer is a 5xx, not a bad token.
    const key = await signing.verificationKey(header.kid);
    if (key === undefined) return undefined;
    let result: JWTVerifyResult;
    try {
      result = await verifyWith(token, key, { issuer, audience: issuer, algorithms: [SIGNING_ALGORITHM] });
    } catch {
      return undefined;
    }
    const claims = fleetClaims(result.payload);
    if (claims === undefined || (await store.isTokenRevoked(claims.jti))) return undefined;
    const found = await store.findClient(claims.client_id);
    if (found === undefined || found.client.organizationId !== claims[ORGANIZATION_CLAIM]) return undefined;
    return { claims, ...found };
  }

  async function verifyOwn(token: string): Promise<Principal> {
    const inspected = await inspect(token);
    if (inspected === undefined) throw invalidToken();
    const { claims, client, organization } = inspected;
    // A token never grants more than its client holds now.
    const scopes = knownScopes(claims.scope).filter((scope) => client.scopes.includes(scope));
    return {
      organizationId: organization.id, credentialId: client.id, name: client.name, scopes: effectiveScopes(scopes, client.groupIds), platform: organization.platform, expiresAt: claims.exp * 1000,
      ...(client.groupIds === null ? {} : { groupIds: client.groupIds }),
    };
  }

  async function verifyExternal(token: string, external: ExternalIssuerConfig, keys: JWTVerifyGetKey): Promise<Principal> {
    let payload: JWTPayload;
    try {
      ({ payload } = await verifyWith(token, keys, { issuer: external.issuer, audience: external.audience, algorithms: EXTERNAL_ALGORITHMS }));
    } catch (error) {
      throw invalidToken(error);
    }
    const organizationId = payload[external.organizationClaim];
    const organization = typeof organizationId === 'string' ? await deps.findOrganization(organizationId) : undefined;
    if (organization === undefined) throw invalidToken();
    const who = typeof payload.client_id === 'string' ? payload.client_id : payload.sub;
    // It becomes the credential id recorded in audit trails: bounded.
    if (typeof who !== 'string' || who === '' || who.length > 255) throw invalidToken();
    return {
      organizationId: organization.id,
      // Prefixed, so an external identity can never pass for one of Fleet's own credential ids.
      credentialId: `ext:${who}`,
      scopes: new Set(knownScopes(payload.scope)),
      platform: organization.platform,
      // `exp` is a required claim (verifyWith).
      expiresAt: (payload.exp as number) * 1000,
    };
  }

  /** The AccessTokenVerifier of the auth service: a Principal, or AppError('invalid-token'). */
  async function verify(token: string): Promise<Principal> {
    let iss: unknown;
    try {
      ({ iss } = unverified(token));
    } catch (error) {
      throw invalidToken(error);
    }
    if (iss === issuer) return verifyOwn(token);
    if (deps.external !== undefined && remoteKeys !== undefined && iss === deps.external.issuer) {
      return verifyExternal(token, deps.external, remoteKeys);
    }
    throw invalidToken();
  }

  /** Remembers the token's jti as revoked until it expires. */
  async function revoke(claims: FleetTokenClaims): Promise<void> {
    await store.revokeToken(claims.jti, claims.exp * 1000, clock.now());
  }

  return { issue, verify, inspect, revoke };
}

function fleetClaims(payload: JWTPayload): FleetTokenClaims | undefined {
  const { iss, aud, sub, client_id: clientId, scope, jti, iat, exp } = payload;
  const organizationId = payload[ORGANIZATION_CLAIM];
  if (
    typeof iss !== 'string' || typeof aud !== 'string' || typeof sub !== 'string' || typeof clientId !== 'string' ||
    typeof scope !== 'string' || typeof jti !== 'string' || typeof iat !== 'number' || typeof exp !== 'number' ||
    typeof organizationId !== 'string' || sub !== clientId
  ) {
    return undefined;
  }
  return { iss, aud, sub, client_id: clientId, scope, jti, iat, exp, [ORGANIZATION_CLAIM]: organizationId };
}
