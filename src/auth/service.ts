// Resolves a bearer token to a Principal, and creates the first organization on an empty store.
import { AppError } from '../errors.ts';
import type { Clock } from '../clock.ts';
import {
  displayPrefixOf,
  generateApiKey,
  hashSecret,
  hashesEqual,
  isWellFormedApiKey,
  looksLikeFleetKey,
  lookupIdOf,
  newId,
} from './keys.ts';
import { SCOPES, type Principal } from './scopes.ts';
import type { AuthStore } from './store.ts';

/** `last_used_at` is bookkeeping, not audit: write it at most this often per key. */
const TOUCH_INTERVAL_MS = 60_000;

export interface AuthService {
  authenticate(token: string): Promise<Principal>;
  /** On an empty store: the first (platform) organization and an admin key with every scope. */
  bootstrap(adminKey: string | undefined): Promise<{ created: false } | { created: true; key: string; organizationId: string }>;
}

export function createAuthService(deps: { store: AuthStore; clock: Clock }): AuthService {
  const { store, clock } = deps;
  const lastTouched = new Map<string, number>();

  async function authenticate(token: string): Promise<Principal> {
    // A Fleet-format token with a bad checksum is refused before any store access.
    if (looksLikeFleetKey(token) && !isWellFormedApiKey(token)) throw invalidToken();
    const found = await store.findKey(lookupIdOf(token));
    if (found === undefined || !hashesEqual(found.key.hash, hashSecret(token))) throw invalidToken();
    const { key, organization } = found;
    const now = clock.now();
    if (key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= now)) throw invalidToken();
    if (now - (lastTouched.get(key.id) ?? 0) >= TOUCH_INTERVAL_MS) {
      lastTouched.set(key.id, now);
      await store.touchKey(key.id, now);
    }
    return {
      organizationId: organization.id,
      credentialId: key.id,
      scopes: new Set(key.scopes),
      platform: organization.platform,
    };
  }

  async function bootstrap(adminKey: string | undefined) {
    if ((await store.countOrganizations()) > 0) return { created: false } as const;
    const now = clock.now();
    const key = adminKey ?? generateApiKey();
    const organizationId = newId('org');
    await store.createOrganizationWithKey(
      { id: organizationId, name: 'Default organization', platform: true, createdAt: now },
      {
        id: newId('key'),
        organizationId,
        name: 'First admin key',
        lookupId: lookupIdOf(key),
        displayPrefix: displayPrefixOf(key),
        hash: hashSecret(key),
        scopes: [...SCOPES],
        createdAt: now,
        expiresAt: null,
        revokedAt: null,
        lastUsedAt: null,
      },
    );
    return { created: true, key, organizationId } as const;
  }

  return { authenticate, bootstrap };
}

function invalidToken(): AppError {
  return new AppError('invalid-token', 'The bearer token is not a valid, unexpired credential.');
}
