// Resolves a bearer token to a Principal; creates organizations and keys.
import { AppError } from '../errors.ts';
import { quotaExceeded } from '../quotas.ts';
import type { Clock } from '../clock.ts';
import type { EventPort } from '../events/port.ts';
import {
  displayPrefixOf,
  generateApiKey,
  hashSecret,
  hashesEqual,
  isWellFormedApiKey,
  looksLikeFleetKey,
  lookupIdOf,
} from './keys.ts';
import { newId } from '../ids.ts';
import { SCOPES, type Principal, type Scope, effectiveScopes } from './scopes.ts';
import { assertScopedScopes, unknownGroups } from '../groups/scope.ts';
import type { ApiKeyRecord, AuthStore, OrganizationRecord } from './store.ts';

/** `last_used_at` is bookkeeping, not audit: write it at most this often per key. */
const TOUCH_INTERVAL_MS = 60_000;
/**
 * Resolved keys are kept this long, so a busy client costs one store lookup per period, not one
 * per request. Revocation through this service evicts at once, on every node of a cluster (the bus
 * carries it); the TTL bounds how long a change the bus missed (an outage) can go unseen.
 */
const CACHE_TTL_MS = 5_000;
const CACHE_MAX = 10_000;

export interface NewKey {
  name: string;
  scopes: readonly Scope[];
  expiresAt?: number | null;
  /** An operator-chosen secret (the configured admin key); otherwise one is generated. */
  secret?: string;
  /** The vehicle groups it is limited to; absent or null: the whole organization. */
  groupIds?: readonly string[] | null;
}

export type AuthService = ReturnType<typeof createAuthService>;

/** Verifies a bearer token that is a JWT access token (Fleet's own or an external issuer's). */
export type AccessTokenVerifier = (token: string) => Promise<Principal>;

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function createAuthService(deps: {
  store: AuthStore;
  clock: Clock;
  verifyAccessToken?: AccessTokenVerifier;
  /** Unrevoked API keys an organization may hold. */
  maxApiKeys?: number;
  /** Where a key revoked through this node is told (`keyRevoked`: the other nodes forget it too). */
  events?: EventPort;
}) {
  const { store, clock } = deps;
  const lastTouched = new Map<string, number>();
  type Found = NonNullable<Awaited<ReturnType<AuthStore['findKey']>>>;
  type Entry = Found & { principal: Principal; until: number };
  const cache = new Map<string, Entry>();
  /** Entries by the whole token, once its hash has matched (so never for a wrong secret). */
  const verified = new Map<string, Entry>();

  async function findKey(lookupId: string, now: number): Promise<Entry | undefined> {
    const hit = cache.get(lookupId);
    if (hit !== undefined && hit.until > now) return hit;
    const found = await store.findKey(lookupId);
    if (found === undefined) {
      cache.delete(lookupId);
      return undefined;
    }
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    const principal: Principal = {
      organizationId: found.organization.id,
      credentialId: found.key.id,
      name: found.key.name,
      scopes: effectiveScopes(found.key.scopes, found.key.groupIds),
      platform: found.organization.platform,
      ...(found.key.expiresAt === null ? {} : { expiresAt: found.key.expiresAt }),
      ...(found.key.groupIds === null ? {} : { groupIds: found.key.groupIds }),
    };
    const entry = { ...found, principal, until: now + CACHE_TTL_MS };
    cache.set(lookupId, entry);
    return entry;
  }

  function keyRecord(organizationId: string, spec: NewKey): { record: ApiKeyRecord; secret: string } {
    const secret = spec.secret ?? generateApiKey();
    const record: ApiKeyRecord = {
      id: newId('key'),
      organizationId,
      name: spec.name,
      lookupId: lookupIdOf(secret),
      displayPrefix: displayPrefixOf(secret),
      hash: hashSecret(secret),
      scopes: [...new Set(spec.scopes)],
      groupIds: spec.groupIds === undefined || spec.groupIds === null ? null : [...spec.groupIds],
      createdAt: clock.now(),
      expiresAt: spec.expiresAt ?? null,
      revokedAt: null,
      lastUsedAt: null,
    };
    return { record, secret };
  }

  async function authenticate(token: string): Promise<Principal> {
    if (JWT_SHAPE.test(token)) {
      if (deps.verifyAccessToken === undefined) throw invalidToken();
      return deps.verifyAccessToken(token);
    }
    // A Fleet-format token with a bad checksum is refused before any store access.
    const now = clock.now();
    // A token whose hash already matched within the cache period skips the checksum, the
    // lookup and the hash: the hot path of a busy client is one map read.
    let found = verified.get(token);
    if (found === undefined || found.until <= now) {
      if (looksLikeFleetKey(token) && !isWellFormedApiKey(token)) throw invalidToken();
      found = await findKey(lookupIdOf(token), now);
      if (found === undefined || !hashesEqual(found.key.hash, hashSecret(token))) throw invalidToken();
      if (verified.size >= CACHE_MAX) verified.delete(verified.keys().next().value!);
      verified.set(token, found);
    }
    const { key } = found;
    if (key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= now)) throw invalidToken();
    if (now - (lastTouched.get(key.id) ?? 0) >= TOUCH_INTERVAL_MS) {
      lastTouched.set(key.id, now);
      await store.touchKey(key.id, now);
    }
    return found.principal;
  }

  /**
   * authenticate's hot path, answered at once: the principal of a token verified within the cache
   * period whose key is still valid and needs no `last_used_at` write; otherwise undefined, and
   * the caller asks authenticate.
   */
  function cachedPrincipal(token: string): Principal | undefined {
    const found = verified.get(token);
    if (found === undefined) return undefined;
    const now = clock.now();
    const { key } = found;
    if (found.until <= now || key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= now)) return undefined;
    if (now - (lastTouched.get(key.id) ?? 0) >= TOUCH_INTERVAL_MS) return undefined;
    return found.principal;
  }

  /** A new organization's records and its first key, which holds every scope. */
  function organizationRecords(spec: { name: string; platform?: boolean; adminSecret?: string }) {
    const organization: OrganizationRecord = {
      id: newId('org'),
      name: spec.name,
      platform: spec.platform ?? false,
      createdAt: clock.now(),
    };
    const { record, secret } = keyRecord(organization.id, {
      name: 'First admin key',
      scopes: SCOPES,
      ...(spec.adminSecret === undefined ? {} : { secret: spec.adminSecret }),
    });
    return { organization, key: record, secret };
  }

  async function createOrganization(spec: { name: string; platform?: boolean; adminSecret?: string }) {
    const created = organizationRecords(spec);
    await store.createOrganizationWithKey(created.organization, created.key);
    return created;
  }

  async function createKey(organizationId: string, spec: NewKey) {
    const { record, secret } = keyRecord(organizationId, spec);
    const outcome = await store.insertKey(record, deps.maxApiKeys);
    if (outcome === 'quota') throw quotaExceeded(deps.maxApiKeys ?? 0, 'API keys');
    if (outcome === 'unknown-group') throw unknownGroups(record.groupIds ?? []);
    return { key: record, secret };
  }

  /** A key made by a caller: never with a scope the caller lacks, never already expired. */
  async function issueKey(who: Principal, spec: { name: string; scopes: readonly Scope[]; expiresAt?: number; groupIds?: readonly string[] }) {
    const missing = spec.scopes.filter((scope) => !who.scopes.has(scope));
    if (missing.length > 0) {
      throw new AppError('insufficient-scope', `A key cannot grant scopes its creator lacks: ${missing.join(', ')}.`);
    }
    assertScopedScopes(spec.scopes, spec.groupIds);
    if (spec.expiresAt !== undefined && spec.expiresAt <= clock.now()) {
      throw new AppError('validation-failed', 'expiresAt must be in the future.', {
        errors: [{ in: 'body', path: '/expiresAt', message: 'must be in the future' }],
      });
    }
    return createKey(who.organizationId, {
      name: spec.name, scopes: spec.scopes, expiresAt: spec.expiresAt ?? null, groupIds: spec.groupIds === undefined ? null : [...new Set(spec.groupIds)].sort(),
    });
  }

  function listKeys(who: Principal, page: { limit: number; offset: number }) {
    return store.listKeys(who.organizationId, page);
  }

  async function getKey(who: Principal, id: string): Promise<ApiKeyRecord> {
    const key = await store.getKey(who.organizationId, id);
    if (key === undefined) throw keyNotFound(id);
    return key;
  }

  /** Revokes at once: the very next request with the key is refused. */
  async function revokeKey(who: Principal, id: string): Promise<void> {
    const revoked = await store.revokeKey(who.organizationId, id, clock.now());
    if (revoked === undefined) throw keyNotFound(id);
    forgetKey(revoked.id, revoked.lookupId);
    deps.events?.emit('keyRevoked', { keyId: revoked.id, lookupId: revoked.lookupId });
  }

  /**
   * Whether the organization's key still stands (neither revoked nor expired): asked by what
   * outlives a request made with it (a live stream's ticket).
   */
  async function keyLive(organizationId: string, keyId: string): Promise<boolean> {
    const key = await store.getKey(organizationId, keyId);
    return key !== undefined && key.revokedAt === null && (key.expiresAt === null || key.expiresAt > clock.now());
  }

  /** Drops a key from the caches: the next request with it reads the store. */
  function forgetKey(keyId: string, lookupId: string): void {
    cache.delete(lookupId);
    for (const [token, entry] of verified) if (entry.key.id === keyId) verified.delete(token);
  }

  function listOrganizations(page: { limit: number; offset: number }) {
    return store.listOrganizations(page);
  }

  async function getOrganization(id: string): Promise<OrganizationRecord> {
    const organization = await store.getOrganization(id);
    if (organization === undefined) throw new AppError('organization-not-found', `No organization "${id}".`);
    return organization;
  }

  /**
   * On an empty store: the platform organization and an admin key with every scope. Of several
   * nodes starting together on one empty database, one creates them; the others get undefined.
   */
  async function bootstrap(adminKey: string | undefined) {
    // Every start but the first ends here, without making (and hashing) a key for nothing.
    if ((await store.countOrganizations()) > 0) return undefined;
    const first = organizationRecords({
      name: 'Default organization',
      platform: true,
      ...(adminKey === undefined ? {} : { adminSecret: adminKey }),
    });
    return (await store.createFirstOrganization(first.organization, first.key)) ? first : undefined;
  }

  return {
    authenticate, cachedPrincipal, createOrganization, createKey, issueKey, listKeys, getKey, revokeKey, keyLive, forgetKey, listOrganizations, getOrganization, bootstrap,
  };
}

function keyNotFound(id: string): AppError {
  return new AppError('api-key-not-found', `No API key "${id}" in this organization.`);
}

function invalidToken(): AppError {
  return new AppError('invalid-token', 'The bearer token is not a valid, unexpired credential.');
}
