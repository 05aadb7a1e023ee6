// The keys that sign Fleet's access tokens: kept in the store (so every process and every restart
// signs and verifies with the same keys), rotated on demand. The newest unretired key signs; a
// retired key stays published until every token it can have signed has expired, then it goes.
import { type CryptoKey, type JWK, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK } from 'jose';
import type { Clock } from '../../clock.ts';
import type { OAuthStore, SigningKeyRecord } from './store.ts';

export const SIGNING_ALGORITHM = 'ES256';

/**
 * How long a retired key outlives the token TTL: covers another process that still signs with
 * it until its key cache refreshes, and the verifier's clock tolerance.
 */
const RETIRED_KEY_GRACE_MS = 60_000;
/** How long a process trusts its copy of the key set before rereading the store. */
const CACHE_TTL_MS = 5_000;
/** An unknown `kid` rereads the store at most this often, so forged kids cannot hammer it. */
const MISS_RELOAD_INTERVAL_MS = 1_000;

export interface PublishedKey extends JWK {
  kid: string;
  alg: typeof SIGNING_ALGORITHM;
  use: 'sig';
}

interface LoadedKey {
  record: SigningKeyRecord;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: PublishedKey;
}

export type SigningKeys = ReturnType<typeof createSigningKeys>;

export function createSigningKeys(deps: { store: OAuthStore; clock: Clock; tokenTtlSeconds: number }) {
  const { store, clock } = deps;
  const lifetimeAfterRetirement = deps.tokenTtlSeconds * 1000 + RETIRED_KEY_GRACE_MS;
  const imported = new Map<string, LoadedKey>();
  let cached: { keys: LoadedKey[]; until: number } | undefined;
  let lastMissReload = 0;

  const published = (record: SigningKeyRecord, now: number) =>
    record.retiredAt === null || record.retiredAt + lifetimeAfterRetirement > now;

  async function load(record: SigningKeyRecord): Promise<LoadedKey> {
    const known = imported.get(record.kid);
    if (known !== undefined) {
      known.record = record;
      return known;
    }
    const privateJwk = JSON.parse(record.privateJwk) as JWK;
    const publicPart = JSON.parse(record.publicJwk) as JWK;
    delete publicPart.d;
    const loaded: LoadedKey = {
      record,
      privateKey: (await importJWK(privateJwk, SIGNING_ALGORITHM)) as CryptoKey,
      publicKey: (await importJWK(publicPart, SIGNING_ALGORITHM)) as CryptoKey,
      publicJwk: { ...publicPart, kid: record.kid, alg: SIGNING_ALGORITHM, use: 'sig' },
    };
    imported.set(record.kid, loaded);
    return loaded;
  }

  /** The published keys, newest first. */
  async function keys(reload = false): Promise<LoadedKey[]> {
    const now = clock.now();
    if (!reload && cached !== undefined && cached.until > now) return cached.keys;
    const records = (await store.listSigningKeys()).filter((record) => published(record, now));
    const loaded = await Promise.all(records.map(load));
    // The signer first, then by age.
    const rank = (key: LoadedKey) => (key.record.retiredAt === null ? 0 : 1);
    loaded.sort((a, b) => rank(a) - rank(b) || b.record.createdAt - a.record.createdAt);
    for (const kid of imported.keys()) {
      if (!loaded.some((key) => key.record.kid === kid)) imported.delete(kid);
    }
    cached = { keys: loaded, until: now + CACHE_TTL_MS };
    return loaded;
  }

  async function newKeyRecord(): Promise<SigningKeyRecord> {
    const pair = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const privateJwk = await exportJWK(pair.privateKey);
    const publicJwk = await exportJWK(pair.publicKey);
    return {
      kid: await calculateJwkThumbprint(publicJwk, 'sha256'),
      algorithm: SIGNING_ALGORITHM,
      privateJwk: JSON.stringify(privateJwk),
      publicJwk: JSON.stringify(publicJwk),
      createdAt: clock.now(),
      retiredAt: null,
    };
  }

  let creating: Promise<void> | undefined;
  /** The current signer; on a store without one, one is made first. */
  async function signer(): Promise<LoadedKey> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = (await keys(attempt > 0)).find((key) => key.record.retiredAt === null);
      if (current !== undefined) return current;
      creating ??= newKeyRecord()
        .then((record) => store.addFirstSigningKey(record))
        .then(() => undefined)
        .finally(() => {
          creating = undefined;
        });
      await creating;
    }
    throw new Error('no signing key could be created');
  }

  /** The public key for `kid` among the published keys, or undefined. */
  async function verificationKey(kid: string): Promise<CryptoKey | undefined> {
    let found = (await keys()).find((key) => key.record.kid === kid);
    const now = clock.now();
    if (found === undefined && now - lastMissReload >= MISS_RELOAD_INTERVAL_MS) {
      // Perhaps another process has just rotated: look once more in the store.
      lastMissReload = now;
      found = (await keys(true)).find((key) => key.record.kid === kid);
    }
    return found?.publicKey;
  }

  /** A new key becomes the signer at once; the others retire and stay published for the token TTL. */
  async function rotate(): Promise<{ kid: string; createdAt: number }> {
    const record = await newKeyRecord();
    await store.rotateSigningKey(record, record.createdAt - lifetimeAfterRetirement);
    await keys(true);
    return { kid: record.kid, createdAt: record.createdAt };
  }

  /** The JWKS: public parts only. Makes the first key if there is none yet. */
  async function jwks(): Promise<{ keys: PublishedKey[] }> {
    await signer();
    return { keys: (await keys()).map((key) => key.publicJwk) };
  }

  return { signer, verificationKey, rotate, jwks };
}
