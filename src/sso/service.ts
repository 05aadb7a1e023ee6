// Single sign-on: an organization's OpenID provider signs its people in (docs/API.md "Single
// sign-on"). The authorization code flow with PKCE, state and nonce; the sign-in under way is kept
// in the store under a random id the browser holds in the `fleet_sso` cookie, so that any node can
// finish it, once. The provider's discovery document and keys are fetched through the same
// private-address guard as webhook deliveries (webhooks/outbound.ts).
import { noteAudit } from '../audit/context.ts';
import * as oidc from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { ROLES, type Role, roleRank } from '../people/roles.ts';
import { type PeopleService, type SignedIn, assertMayGrant, emailKeyOf, hashToken } from '../people/service.ts';
import type { UserRecord } from '../people/store.ts';
import { ForbiddenTarget, checkedLookup, forbiddenLiteral } from '../webhooks/outbound.ts';
import type { SsoConfigRecord, SsoStore } from './store.ts';

/** How long a sign-in may take at the provider. */
export const LOGIN_TTL_MS = 10 * 60_000;
const FETCH_TIMEOUT_MS = 10_000;
/** The ID token signatures accepted. */
const ALGORITHMS = new Set(['RS256', 'ES256']);

export interface SsoSpec {
  issuer: string;
  clientId: string;
  clientSecret: string;
  roleClaim?: string;
  roleMap: Record<string, Role>;
  allowedEmailDomains?: string[];
}

export type SsoService = ReturnType<typeof createSsoService>;

export function createSsoService(deps: {
  store: SsoStore;
  people: PeopleService;
  clock: Clock;
  /** Where the browser reaches this service: the callback is under it. */
  publicUrl: string;
  /** A provider on loopback or private addresses, over http too (FLEET_SSO_ALLOW_PRIVATE). */
  allowPrivate: boolean;
}) {
  const { store, people, clock, publicUrl, allowPrivate } = deps;
  const redirectUri = `${publicUrl}/auth/sso/callback`;
  const origin = new URL(publicUrl).origin;
  const agent = new Agent({
    connect: { lookup: checkedLookup(allowPrivate), timeout: FETCH_TIMEOUT_MS },
    headersTimeout: FETCH_TIMEOUT_MS,
    bodyTimeout: FETCH_TIMEOUT_MS,
  });

  /** Every request to a provider: literal addresses checked here, names when resolved. */
  const guardedFetch: oidc.CustomFetch = async (url, options) => {
    if (!allowPrivate) {
      const why = forbiddenLiteral(new URL(url));
      if (why !== undefined) throw new ForbiddenTarget(`refused: ${why}`);
    }
    const response = await undiciFetch(url, {
      ...options, dispatcher: agent, signal: options.signal ?? AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
    return response;
  };

  /** Each organization's provider, as discovered for its configuration's last change. */
  const discovered = new Map<string, { updatedAt: number; configuration: Promise<oidc.Configuration> }>();

  async function discover(config: Pick<SsoConfigRecord, 'issuer' | 'clientId' | 'clientSecret'>): Promise<oidc.Configuration> {
    const found = await oidc.discovery(new URL(config.issuer), config.clientId, undefined, undefined, {
      [oidc.customFetch]: guardedFetch,
      execute: allowPrivate ? [oidc.allowInsecureRequests] : [],
    });
    const server = found.serverMetadata();
    for (const field of ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const) {
      if (typeof server[field] !== 'string') throw new Error(`the discovery document names no ${field}`);
    }
    // HTTP Basic is the default of OpenID Connect; a provider that lists only the form post gets that.
    const methods = server.token_endpoint_auth_methods_supported;
    const auth = methods === undefined || methods.includes('client_secret_basic')
      ? oidc.ClientSecretBasic(config.clientSecret)
      : oidc.ClientSecretPost(config.clientSecret);
    const configuration = new oidc.Configuration(server, config.clientId, { client_secret: config.clientSecret }, auth);
    configuration[oidc.customFetch] = guardedFetch;
    if (allowPrivate) oidc.allowInsecureRequests(configuration);
    return configuration;
  }

  function providerOf(config: SsoConfigRecord): Promise<oidc.Configuration> {
    const cached = discovered.get(config.organizationId);
    if (cached !== undefined && cached.updatedAt === config.updatedAt) return cached.configuration;
    const configuration = discover(config);
    discovered.set(config.organizationId, { updatedAt: config.updatedAt, configuration });
    // A failure is not kept: the next sign-in tries again.
    configuration.catch(() => {
      if (discovered.get(config.organizationId)?.configuration === configuration) discovered.delete(config.organizationId);
    });
    return configuration;
  }

  // --- Configuring (scope `users`) ---------------------------------------------------------------

  function issuerUrl(issuer: string): URL {
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw failed(`The issuer "${issuer}" is not a URL.`);
    }
    if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
      throw failed('The issuer is a URL without query, fragment or credentials.');
    }
    if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
      throw failed('The issuer must be an https URL (http only with FLEET_SSO_ALLOW_PRIVATE=true).');
    }
    if (!allowPrivate) {
      const why = forbiddenLiteral(url);
      if (why !== undefined) throw failed(`The issuer is refused: ${why} (FLEET_SSO_ALLOW_PRIVATE=true allows it).`);
    }
    return url;
  }

  async function configure(who: Principal, spec: SsoSpec): Promise<SsoConfigRecord> {
    // Whoever configures the provider decides who signs in with which role: never a role above theirs.
    for (const role of new Set(Object.values(spec.roleMap))) assertMayGrant(who, role);
    issuerUrl(spec.issuer);
    try {
      await discover(spec);
    } catch (error) {
      throw failed(`The provider's discovery document (${spec.issuer}/.well-known/openid-configuration) could not be used: ${reason(error)}`);
    }
    const now = clock.now();
    const domains = spec.allowedEmailDomains === undefined ? null : [...new Set(spec.allowedEmailDomains.map((d) => d.toLowerCase()))];
    const saved = await store.putConfig({
      organizationId: who.organizationId,
      issuer: spec.issuer,
      clientId: spec.clientId,
      clientSecret: spec.clientSecret,
      roleClaim: spec.roleClaim ?? 'groups',
      roleMap: spec.roleMap,
      allowedEmailDomains: domains,
      createdAt: now,
      updatedAt: now,
    });
    discovered.delete(who.organizationId);
    return saved;
  }

  async function getConfig(who: Principal): Promise<SsoConfigRecord> {
    const config = await store.getConfig(who.organizationId);
    if (config === undefined) throw notConfigured();
    return config;
  }

  async function deleteConfig(who: Principal): Promise<void> {
    if (!(await store.deleteConfig(who.organizationId))) throw notConfigured();
    discovered.delete(who.organizationId);
  }

  // --- Signing in --------------------------------------------------------------------------------

  /** A path on this origin, or `/`: never a way off the site. */
  function safeReturnTo(returnTo: string | undefined): string {
    if (returnTo === undefined || !returnTo.startsWith('/') || returnTo.startsWith('//') || /[\\\s]/.test(returnTo)) return '/';
    try {
      const url = new URL(returnTo, origin);
      return url.origin === origin ? `${url.pathname}${url.search}${url.hash}` : '/';
    } catch {
      return '/';
    }
  }

  /** The provider's authorization URL, and the `fleet_sso` cookie's value that goes with it. */
  async function begin(organizationId: string, returnTo: string | undefined): Promise<{ url: string; loginId: string }> {
    const config = await store.getConfig(organizationId);
    if (config === undefined) throw notConfigured();
    const provider = await providerOf(config).catch((error: unknown) => {
      throw failed(`The organization's OpenID provider could not be reached: ${reason(error)}`);
    });
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const loginId = oidc.randomState();
    const now = clock.now();
    await store.insertLogin({
      idHash: hashToken(loginId), organizationId, state, nonce, codeVerifier, returnTo: safeReturnTo(returnTo), expiresAt: now + LOGIN_TTL_MS,
    }, now);
    const url = oidc.buildAuthorizationUrl(provider, {
      redirect_uri: redirectUri,
      scope: 'openid email profile',
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, loginId };
  }

  /**
   * The provider's answer at the callback (`query`: its query string), with the `fleet_sso`
   * cookie's value: the user signed in and where to send them. Every failure signs nobody in.
   */
  async function finish(loginId: string | undefined, query: string): Promise<{ signedIn: SignedIn; returnTo: string }> {
    if (loginId === undefined || loginId === '') throw failed('No sign-in is under way in this browser (the fleet_sso cookie is missing); start again.');
    const login = await store.takeLogin(hashToken(loginId), clock.now());
    if (login === undefined) throw failed('This sign-in is unknown, expired or already finished; start again.');
    noteAudit({ organizationId: login.organizationId });
    const config = await store.getConfig(login.organizationId);
    if (config === undefined) throw notConfigured();
    const provider = await providerOf(config).catch((error: unknown) => {
      throw failed(`The organization's OpenID provider could not be reached: ${reason(error)}`);
    });
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(provider, new URL(`${redirectUri}${query}`), {
        expectedState: login.state, expectedNonce: login.nonce, pkceCodeVerifier: login.codeVerifier, idTokenExpected: true,
      });
    } catch (error) {
      throw failed(`The provider's answer was refused: ${reason(error)}`);
    }
    const algorithm = headerOf(tokens.id_token).alg;
    if (!ALGORITHMS.has(String(algorithm))) throw failed(`The ID token is signed with ${String(algorithm)}; RS256 or ES256 is expected.`);
    const claims = tokens.claims()!;
    const email = claims.email;
    if (typeof email !== 'string' || !/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) throw failed('The ID token carries no email.');
    if (claims.email_verified === false) throw failed('The provider has not verified the email.');
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
    if (config.allowedEmailDomains !== null && !config.allowedEmailDomains.includes(domain)) {
      throw new AppError('forbidden', `Emails of ${domain} may not sign in to this organization.`);
    }
    const role = roleOf(config, claims[config.roleClaim]);
    if (role === undefined) throw new AppError('sso-no-role', `None of the values of the claim "${config.roleClaim}" maps to a role; ask an admin.`);

    const now = clock.now();
    const candidate: UserRecord = {
      id: newId('usr'),
      organizationId: config.organizationId,
      email,
      emailKey: emailKeyOf(email),
      name: nameOf(claims.name, email),
      role,
      groupIds: null,
      status: 'active',
      passwordHash: null,
      totpSecret: null,
      totpEnabled: false,
      sso: true,
      createdAt: now,
      updatedAt: now,
      lastLoginAt: null,
    };
    const user = await store.signInUser(candidate, now);
    if (user === 'email-taken') throw new AppError('email-taken', `The email "${email}" belongs to a user of another organization.`);
    if (user === 'disabled') throw new AppError('forbidden', 'This account is disabled; ask an admin.');
    if (user === 'last-admin') {
      throw new AppError('last-admin', 'The provider\'s role would demote the organization\'s last active admin: make another admin first, or map this person to admin.');
    }
    // The role the provider gave applies to the user's other sessions too, on every node.
    if (user.id !== candidate.id) people.userChanged(user.id, false);
    return { signedIn: await people.startSession(user), returnTo: login.returnTo };
  }

  return { configure, getConfig, deleteConfig, begin, finish, close: () => agent.close() };
}

/** The highest role that `roleMap` gives the claim's values (a string or a list of them). */
export function roleOf(config: Pick<SsoConfigRecord, 'roleMap'>, claim: unknown): Role | undefined {
  const values = typeof claim === 'string' ? [claim] : Array.isArray(claim) ? claim.filter((v): v is string => typeof v === 'string') : [];
  let best: Role | undefined;
  for (const value of values) {
    const role = Object.hasOwn(config.roleMap, value) ? config.roleMap[value] : undefined;
    if (role !== undefined && ROLES.includes(role) && (best === undefined || roleRank(role) > roleRank(best))) best = role;
  }
  return best;
}

function nameOf(claim: unknown, email: string): string {
  const given = typeof claim === 'string' ? claim.replace(/\p{Cc}/gu, '').trim() : '';
  return (given === '' ? email.slice(0, email.indexOf('@')) : given).slice(0, 100);
}

function headerOf(jwt: string | undefined): Record<string, unknown> {
  try {
    return JSON.parse(Buffer.from(jwt!.split('.')[0]!, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : undefined;
  return (cause instanceof ForbiddenTarget ? cause.message : error.message).slice(0, 300);
}

function failed(detail: string): AppError {
  return new AppError('sso-failed', detail);
}

function notConfigured(): AppError {
  return new AppError('sso-not-configured', 'This organization has no single sign-on configured.');
}
