// Second factor: time-based one-time codes (RFC 6238 over RFC 4226's HOTP: HMAC-SHA-1, 6 digits,
// 30-second steps, the parameters every authenticator app supports), their secrets in base32
// (RFC 4648), the otpauth:// address an app reads from a QR code, and recovery codes.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const STEP_MS = 30_000;
const DIGITS = 6;
const SECRET_BYTES = 20;
const CODE = /^[0-9]{6}$/;

/** RFC 4648 base32, upper case, without padding. */
export function base32Encode(bytes: Uint8Array): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(buffer >>> bits) & 31];
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(buffer << (5 - bits)) & 31];
  return out;
}

/**
 * The bytes of RFC 4648 base32 text, read in either case, with or without its `=` padding.
 * Undefined (it never throws) for anything else: a character outside the alphabet (spaces
 * included), padding that is wrong or not at the end, a length no byte string encodes to, or
 * nonzero bits after the last byte (so each byte string has one text, whatever the case).
 */
export function base32Decode(text: string): Buffer | undefined {
  const parts = /^([A-Za-z2-7]*)(=*)$/.exec(text);
  if (parts === null) return undefined;
  const body = parts[1]!.toUpperCase();
  const padding = parts[2]!.length;
  // 8 characters carry 5 bytes; a last group of 1, 3 or 6 characters is not a whole number of bytes.
  const last = body.length % 8;
  if (last === 1 || last === 3 || last === 6) return undefined;
  if (padding > 0 && padding !== (8 - last) % 8) return undefined;
  const out = Buffer.alloc(Math.floor((body.length * 5) / 8));
  let buffer = 0;
  let bits = 0;
  let at = 0;
  for (const char of body) {
    buffer = ((buffer << 5) | BASE32.indexOf(char)) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[at++] = (buffer >>> bits) & 0xff;
    }
  }
  if ((buffer & ((1 << bits) - 1)) !== 0) return undefined;
  return out;
}

/** A new secret: 20 random bytes (the length of an HMAC-SHA-1 key, as RFC 4226 recommends), base32. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(SECRET_BYTES));
}

/** The secret's key; a secret that is not base32 is a fault of whoever stored it, so it throws. */
function keyOf(secret: string): Buffer {
  const key = base32Decode(secret);
  if (key === undefined || key.length === 0) throw new Error('A TOTP secret must be base32 text');
  return key;
}

/** RFC 4226 §5.3: HMAC-SHA-1 of the 8-byte big-endian counter, dynamically truncated. */
function hotp(key: Buffer, counter: number): string {
  if (!Number.isSafeInteger(counter) || counter < 0) throw new RangeError(`A TOTP time step must be a non-negative integer, not ${counter}`);
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** DIGITS).padStart(DIGITS, '0');
}

/** The 6-digit code of the time step `step`. */
export function totpCode(secret: string, step: number): string {
  return hotp(keyOf(secret), step);
}

/** The time step of a moment (milliseconds since the epoch). */
export function stepAt(ms: number): number {
  return Math.floor(ms / STEP_MS);
}

/**
 * The time step whose code is `code`, among the step of `nowMs` and one step either side (for a
 * phone's clock a little off and a code typed as its step ends), or undefined. Every candidate is
 * compared, in constant time, whichever matches. A code that is not exactly 6 ASCII digits is
 * undefined. The caller records the step, so a code is used once.
 */
export function matchingStep(secret: string, code: string, nowMs: number): number | undefined {
  const key = keyOf(secret);
  if (!CODE.test(code)) return undefined;
  const given = Buffer.from(code, 'ascii');
  const now = stepAt(nowMs);
  let found: number | undefined;
  // The current step first: should two steps' codes coincide, the one the user sees is the one used.
  for (const step of [now, now - 1, now + 1]) {
    if (step < 0) continue;
    const equal = timingSafeEqual(Buffer.from(hotp(key, step), 'ascii'), given);
    if (equal && found === undefined) found = step;
  }
  return found;
}

/**
 * The Key URI an authenticator app reads (from a QR code): label `issuer:account`, each part
 * percent-encoded (a `:` inside either too), and the issuer again as a parameter.
 */
export function otpauthUrl({ secret, account, issuer }: { secret: string; account: string; issuer: string }): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const params: Array<[string, string]> = [
    ['secret', secret],
    ['issuer', issuer],
    ['algorithm', 'SHA1'],
    ['digits', String(DIGITS)],
    ['period', String(STEP_MS / 1000)],
  ];
  const query = params.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
  return `otpauth://totp/${label}?${query}`;
}

/** No 0/o or 1/l to confuse: 32 characters, so 5 bits each and 60 bits in a code's 12. */
const RECOVERY_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';
const RECOVERY_GROUPS = 3;
const RECOVERY_GROUP_LENGTH = 4;

function newRecoveryCode(): string {
  const bytes = randomBytes(RECOVERY_GROUPS * RECOVERY_GROUP_LENGTH);
  const groups: string[] = [];
  for (let g = 0; g < RECOVERY_GROUPS; g++) {
    let group = '';
    for (let i = 0; i < RECOVERY_GROUP_LENGTH; i++) group += RECOVERY_ALPHABET[bytes[g * RECOVERY_GROUP_LENGTH + i]! & 31];
    groups.push(group);
  }
  return groups.join('-');
}

/** `n` distinct codes of the form `xxxx-xxxx-xxxx`, each usable once instead of a TOTP code. */
export function newRecoveryCodes(n = 10): string[] {
  const codes = new Set<string>();
  while (codes.size < n) codes.add(newRecoveryCode());
  return [...codes];
}

/**
 * SHA-256 (hex) of the code as typed, lower-cased and without dashes or white space: a code read
 * aloud or copied loosely (`ABCD EFGH-…`) still matches. 60 random bits need no slow hash.
 */
export function recoveryCodeHash(code: string): string {
  const normal = code.toLowerCase().replace(/[-\s]/g, '');
  return createHash('sha256').update(normal).digest('hex');
}
