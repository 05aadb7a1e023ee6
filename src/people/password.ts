// Password hashes: scrypt, encoded as `scrypt$<log2 N>$<r>$<p>$<salt>$<key>` (salt and key in
// base64url, no padding). The encoding carries its own parameters, so they can be raised later and
// older hashes still verify. Passwords are normalised to NFC before hashing: the same password typed
// on two keyboards (é as one code point or as e + combining accent) gives the same hash. Nothing
// else is changed (no trimming, no case folding).
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * scrypt is memory-hard: each guess needs 128 × N × r bytes (32 MiB here), which is what makes
 * guessing on GPUs and ASICs expensive. N = 2^15, r = 8, p = 1 cost 155 to 230 ms of one core per
 * hash on the machine the service was measured on (median of 5, the higher figure with both cores
 * busy; 2^14 took 70 to 80 ms, 2^16 300 to 390): inside the 50 to 250 ms a sign-in may spend. The
 * work runs in libuv's thread pool (the callback form of scrypt; 4 threads unless UV_THREADPOOL_SIZE
 * says otherwise, so at most 4 × 32 MiB at once): sign-ins beyond that many wait their turn rather
 * than stall the event loop.
 */
export const PASSWORD_HASH = { log2N: 15, r: 8, p: 1, saltBytes: 16, keyBytes: 32 } as const;

interface Parameters {
  log2N: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

/**
 * Bounds on what a stored hash may ask for: a damaged or hostile value in the store must not make a
 * verification allocate gigabytes or run for minutes.
 */
const MAX_MEMORY = 256 * 1024 * 1024;
const MAX_P = 16;
const MIN_BYTES = 16;
const MAX_BYTES = 64;

const INTEGER = /^[1-9][0-9]{0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function derive(password: string, salt: Buffer, length: number, log2N: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** log2N;
  const options: ScryptOptions = { N, r, p, maxmem: 128 * N * r * 2 };
  return new Promise((resolve, reject) => {
    scrypt(Buffer.from(password.normalize('NFC'), 'utf8'), salt, length, options, (error, key) => {
      if (error) reject(error);
      else resolve(key);
    });
  });
}

function encode({ log2N, r, p, salt, key }: Parameters): string {
  return `scrypt$${log2N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** Bytes of canonical unpadded base64url only (Buffer.from alone skips what it cannot read). */
function base64url(text: string): Buffer | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

function decode(encoded: string): Parameters | undefined {
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [, n, rText, pText, saltText, keyText] = parts as [string, string, string, string, string, string];
  if (!INTEGER.test(n) || !INTEGER.test(rText) || !INTEGER.test(pText)) return undefined;
  const log2N = Number(n);
  const r = Number(rText);
  const p = Number(pText);
  if (log2N > 30 || p > MAX_P || 128 * 2 ** log2N * r > MAX_MEMORY) return undefined;
  const salt = base64url(saltText);
  const key = base64url(keyText);
  if (salt === undefined || key === undefined) return undefined;
  if (salt.length < MIN_BYTES || salt.length > MAX_BYTES || key.length < MIN_BYTES || key.length > MAX_BYTES) return undefined;
  return { log2N, r, p, salt, key };
}

export async function hashPassword(password: string): Promise<string> {
  const { log2N, r, p, saltBytes, keyBytes } = PASSWORD_HASH;
  const salt = randomBytes(saltBytes);
  const key = await derive(password, salt, keyBytes, log2N, r, p);
  return encode({ log2N, r, p, salt, key });
}

/** False for a wrong password and for an encoding this module does not read; never throws. */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const stored = decode(encoded);
  if (stored === undefined) return false;
  let key: Buffer;
  try {
    key = await derive(password, stored.salt, stored.key.length, stored.log2N, stored.r, stored.p);
  } catch {
    return false;
  }
  return timingSafeEqual(key, stored.key);
}

/**
 * A hash of nothing anyone can type: a random key under a random salt with today's parameters.
 * Made at first use (it costs no scrypt run) and kept.
 */
let dummy: string | undefined;

/**
 * The work of one verification against a hash no password matches: a sign-in for an unknown email
 * costs what a wrong password for a known one costs, so the time taken does not tell them apart.
 */
export async function verifyNothing(password: string): Promise<false> {
  dummy ??= encode({
    ...PASSWORD_HASH,
    salt: randomBytes(PASSWORD_HASH.saltBytes),
    key: randomBytes(PASSWORD_HASH.keyBytes),
  });
  await verifyPassword(password, dummy);
  return false;
}
