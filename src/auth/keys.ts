// API key format: `fleet_` + 32 random base62 characters + 6 base62 characters of CRC-32 over the
// random part. The checksum lets us refuse a mistyped or made-up key without touching the store,
// and lets secret scanners recognise leaked keys. Keys are stored only as SHA-256 hashes: they
// carry ~190 bits of entropy, so a slow password hash would add latency and no safety.
import { createHash, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { base62, randomBase62 } from '../base62.ts';

const PREFIX = 'fleet_';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const LOOKUP_LENGTH = 12;
const KEY_PATTERN = new RegExp(`^${PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

function checksum(randomPart: string): string {
  return base62(crc32(randomPart), CHECKSUM_LENGTH);
}

export function generateApiKey(): string {
  const randomPart = randomBase62(RANDOM_LENGTH);
  return PREFIX + randomPart + checksum(randomPart);
}

/** True when the token has Fleet's key shape and its checksum matches. No store access. */
export function isWellFormedApiKey(token: string): boolean {
  if (!KEY_PATTERN.test(token)) return false;
  const randomPart = token.slice(PREFIX.length, PREFIX.length + RANDOM_LENGTH);
  return token.slice(PREFIX.length + RANDOM_LENGTH) === checksum(randomPart);
}

export function looksLikeFleetKey(token: string): boolean {
  return token.startsWith(PREFIX);
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/**
 * The public, indexed handle a key is found by. For Fleet keys it is part of the random text (so
 * the lookup needs no hash); for an operator-chosen admin key it is derived from the hash.
 */
export function lookupIdOf(token: string): string {
  return looksLikeFleetKey(token)
    ? token.slice(PREFIX.length, PREFIX.length + LOOKUP_LENGTH)
    : `cfg_${hashSecret(token).toString('hex').slice(0, LOOKUP_LENGTH)}`;
}

/** What a listing may show of a key: enough to recognise it, far too little to use it. */
export function displayPrefixOf(token: string): string {
  return looksLikeFleetKey(token) ? token.slice(0, PREFIX.length + 8) : `${token.slice(0, 4)}…`;
}

export function hashesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
