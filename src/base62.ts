// Base62 text (0-9, A-Z, a-z: in ASCII order, so fixed-width numbers sort as strings): numbers of a
// fixed width, and uniformly random characters from the system's CSPRNG. Ids (ids.ts) and secrets
// (API keys, OAuth client secrets) are both made of it; neither is made here.
import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random bytes from the system's CSPRNG, fetched 4 KiB at a time (as `crypto.randomInt` keeps its own). */
let pool = Buffer.alloc(0);
let taken = 0;

/**
 * `length` random base62 characters, each uniform: a random byte below 248 (4 × 62) gives
 * `byte % 62`, a higher one is drawn again. (A call of `crypto.randomInt(62)` per character took
 * about 2.5 times as long: 0.6 to 0.9 µs for the 12 random characters of an event's or a
 * delivery's id, against 0.2 to 0.4.)
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    if (taken === pool.length) {
      pool = randomBytes(4096);
      taken = 0;
    }
    const byte = pool[taken++]!;
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

/** `value` (a non-negative integer) in exactly `width` base62 digits, its higher digits dropped. */
export function base62(value: number, width: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}
