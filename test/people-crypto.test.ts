// People's secrets (src/people/password.ts, src/people/totp.ts): password hashes verify what was
// hashed and nothing else, read their own parameters and refuse any other text without throwing;
// TOTP codes are RFC 6238's, accepted one step either side of now and only as 6 ASCII digits;
// base32 is RFC 4648's; recovery codes match however loosely they are typed.
import assert from 'node:assert/strict';
import { createHash, randomBytes, scryptSync } from 'node:crypto';
import { test } from 'node:test';
import { PASSWORD_HASH, hashPassword, verifyNothing, verifyPassword } from '../src/people/password.ts';
import {
  base32Decode,
  base32Encode,
  matchingStep,
  newRecoveryCodes,
  newTotpSecret,
  otpauthUrl,
  recoveryCodeHash,
  stepAt,
  totpCode,
} from '../src/people/totp.ts';

/** RFC 6238 Appendix B's SHA-1 secret, the ASCII text "12345678901234567890". */
const RFC_SECRET = base32Encode(Buffer.from('12345678901234567890', 'ascii'));

/** Appendix B's SHA-1 rows: seconds since the epoch and the last 6 of their 8 digits. */
const RFC_VECTORS: Array<[number, string]> = [
  [59, '287082'],
  [1_111_111_109, '081804'],
  [1_111_111_111, '050471'],
  [1_234_567_890, '005924'],
  [2_000_000_000, '279037'],
  [20_000_000_000, '353130'],
];

test('TOTP codes are those of RFC 6238 Appendix B (SHA-1), and each is matched at its own step', () => {
  assert.equal(RFC_SECRET, 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
  for (const [seconds, code] of RFC_VECTORS) {
    const step = stepAt(seconds * 1000);
    assert.equal(step, Math.floor(seconds / 30));
    assert.equal(totpCode(RFC_SECRET, step), code, `T = ${seconds}`);
    assert.equal(matchingStep(RFC_SECRET, code, seconds * 1000), step, `T = ${seconds}`);
    // The secret typed in lower case is the same secret.
    assert.equal(totpCode(RFC_SECRET.toLowerCase(), step), code);
  }
});

test('a step is 30 seconds: its first and last millisecond', () => {
  assert.equal(stepAt(0), 0);
  assert.equal(stepAt(29_999), 0);
  assert.equal(stepAt(30_000), 1);
  assert.equal(stepAt(1_111_111_109_999), 37_037_036);
  assert.equal(stepAt(1_111_111_110_000), 37_037_037);
});

test('a code of the step before or after now is accepted as that step; two steps away, refused', () => {
  const nowMs = 1_234_567_890_000;
  const now = stepAt(nowMs);
  for (const offset of [-1, 0, 1]) {
    assert.equal(matchingStep(RFC_SECRET, totpCode(RFC_SECRET, now + offset), nowMs), now + offset, `offset ${offset}`);
  }
  for (const offset of [-3, -2, 2, 3]) {
    const code = totpCode(RFC_SECRET, now + offset);
    // These codes differ from those of the three accepted steps (checked, so the refusal is the window's).
    for (const near of [-1, 0, 1]) assert.notEqual(code, totpCode(RFC_SECRET, now + near));
    assert.equal(matchingStep(RFC_SECRET, code, nowMs), undefined, `offset ${offset}`);
  }
  // At the first milliseconds since the epoch there is no step before; the two there are still found.
  assert.equal(matchingStep(RFC_SECRET, totpCode(RFC_SECRET, 0), 1_000), 0);
  assert.equal(matchingStep(RFC_SECRET, totpCode(RFC_SECRET, 1), 1_000), 1);
});

test('a code that is not exactly 6 ASCII digits matches nothing', () => {
  const nowMs = 59_000;
  assert.equal(matchingStep(RFC_SECRET, '287082', nowMs), 1);
  const malformed = [
    '',
    '28708',
    '2870820',
    '94287082',
    ' 287082',
    '287082 ',
    '287082\n',
    '287 082',
    '287-082',
    '+287082',
    '28708a',
    '２８７０８２', // full-width digits
    '٢٨٧٠٨٢', // Arabic-Indic digits
    '287082'.padEnd(1000, '0'),
  ];
  for (const code of malformed) assert.equal(matchingStep(RFC_SECRET, code, nowMs), undefined, JSON.stringify(code));
});

test('a secret that is not base32, or a step that is not a whole non-negative number, throws', () => {
  assert.throws(() => totpCode('NOT BASE32!', 1), Error);
  assert.throws(() => totpCode('', 1), Error);
  assert.throws(() => matchingStep('0000', '123456', 59_000), Error);
  assert.throws(() => totpCode(RFC_SECRET, -1), RangeError);
  assert.throws(() => totpCode(RFC_SECRET, 1.5), RangeError);
  assert.throws(() => totpCode(RFC_SECRET, Number.NaN), RangeError);
});

test('a new TOTP secret is 20 random bytes in 32 base32 characters', () => {
  const secrets = Array.from({ length: 100 }, newTotpSecret);
  for (const secret of secrets) {
    assert.match(secret, /^[A-Z2-7]{32}$/);
    assert.equal(base32Decode(secret)?.length, 20);
  }
  assert.equal(new Set(secrets).size, secrets.length);
});

test('base32 is RFC 4648: its test vectors, written unpadded, read padded or not, in either case', () => {
  const vectors: Array<[string, string]> = [
    ['', ''],
    ['f', 'MY======'],
    ['fo', 'MZXQ===='],
    ['foo', 'MZXW6==='],
    ['foob', 'MZXW6YQ='],
    ['fooba', 'MZXW6YTB'],
    ['foobar', 'MZXW6YTBOI======'],
  ];
  for (const [text, padded] of vectors) {
    const bytes = Buffer.from(text, 'ascii');
    const unpadded = padded.replace(/=+$/, '');
    assert.equal(base32Encode(bytes), unpadded);
    for (const form of [padded, unpadded, padded.toLowerCase(), unpadded.toLowerCase()]) {
      assert.deepEqual(base32Decode(form), bytes, form);
    }
  }
  assert.equal(base32Encode(Buffer.from('foobar')), 'MZXW6YTBOI');
});

test('base32 round trips bytes of every length up to 64 and every value', () => {
  for (let length = 0; length <= 64; length++) {
    for (let i = 0; i < 20; i++) {
      const bytes = randomBytes(length);
      const text = base32Encode(bytes);
      assert.equal(text.length, Math.ceil((length * 8) / 5));
      assert.deepEqual(base32Decode(text), bytes);
      assert.deepEqual(base32Decode(text.toLowerCase()), bytes);
    }
  }
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  assert.deepEqual(base32Decode(base32Encode(all)), all);
  assert.equal(base32Encode(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff])), '77777777');
  assert.equal(base32Encode(Buffer.from([0, 0, 0, 0, 0])), 'AAAAAAAA');
});

test('base32 text with a character outside the alphabet, bad padding or an impossible length reads as undefined', () => {
  const invalid = [
    'MZXW6YTB1', // 1 is not base32 (nor 0, 8, 9)
    'MZXW6YT0',
    'MZXW6Y8B',
    'MZXW 6YTB',
    'MZXW-6YTB',
    'MZXW6YTB\n',
    'ßZXW6YTB', // upper-cases to two letters
    'M', // lengths no byte string encodes to
    'MZX',
    'MZXW6Y',
    'MY=', // padding short, long, or not at the end
    'MY=======',
    'MY==A===',
    '=',
    '========',
    'MZXW6YTB========',
    'MZ', // nonzero bits after the last byte ('MY' is "f")
    'MZXR',
  ];
  for (const text of invalid) assert.equal(base32Decode(text), undefined, JSON.stringify(text));
  assert.deepEqual(base32Decode('MY'), Buffer.from('f'));
});

test('the otpauth address carries the secret, issuer and parameters, its label and values percent-encoded', () => {
  const secret = 'JBSWY3DPEHPK3PXP';
  const url = otpauthUrl({ secret, account: 'ana+ops@example.com', issuer: 'Fleet & Co: Depot 7' });
  assert.equal(
    url,
    'otpauth://totp/Fleet%20%26%20Co%3A%20Depot%207:ana%2Bops%40example.com' +
      '?secret=JBSWY3DPEHPK3PXP&issuer=Fleet%20%26%20Co%3A%20Depot%207&algorithm=SHA1&digits=6&period=30',
  );
  const parsed = new URL(url);
  assert.equal(parsed.protocol, 'otpauth:');
  assert.equal(parsed.host, 'totp');
  const [issuer, account] = parsed.pathname.slice(1).split(':').map(decodeURIComponent);
  assert.equal(issuer, 'Fleet & Co: Depot 7');
  assert.equal(account, 'ana+ops@example.com');
  assert.equal(parsed.searchParams.get('secret'), secret);
  assert.equal(parsed.searchParams.get('issuer'), 'Fleet & Co: Depot 7');
  assert.equal(parsed.searchParams.get('algorithm'), 'SHA1');
  assert.equal(parsed.searchParams.get('digits'), '6');
  assert.equal(parsed.searchParams.get('period'), '30');
});

test('recovery codes: xxxx-xxxx-xxxx from 32 unambiguous characters, distinct, as many as asked', () => {
  const codes = newRecoveryCodes();
  assert.equal(codes.length, 10);
  assert.equal(new Set(codes).size, 10);
  assert.equal(newRecoveryCodes(3).length, 3);
  const many = Array.from({ length: 200 }, () => newRecoveryCodes()).flat();
  const seen = new Set<string>();
  for (const code of many) {
    assert.match(code, /^[a-km-np-z2-9]{4}-[a-km-np-z2-9]{4}-[a-km-np-z2-9]{4}$/);
    for (const char of code.replaceAll('-', '')) seen.add(char);
  }
  // Every one of the 32 characters turns up (12 × 2,000 draws): each carries its 5 bits.
  assert.equal(seen.size, 32);
  for (const ambiguous of ['0', 'o', '1', 'l']) assert.ok(!seen.has(ambiguous), ambiguous);
  assert.equal(new Set(many).size, many.length);
});

test('a recovery code hashes the same however it is typed: case, dashes and spaces', () => {
  const code = 'abcd-efgh-jkmn';
  const expected = createHash('sha256').update('abcdefghjkmn').digest('hex');
  assert.match(expected, /^[0-9a-f]{64}$/);
  for (const typed of [code, 'ABCD-EFGH-JKMN', 'abcdefghjkmn', 'ABCD EFGH-jkmn', ' abcd efgh jkmn ', 'ab-cd-ef-gh-jk-mn', 'abcd\tefgh\njkmn']) {
    assert.equal(recoveryCodeHash(typed), expected, JSON.stringify(typed));
  }
  assert.notEqual(recoveryCodeHash('abcd-efgh-jkmp'), expected);
  assert.notEqual(recoveryCodeHash('abcd-efgh-jkm'), expected);
  const [fresh] = newRecoveryCodes(1);
  assert.equal(recoveryCodeHash(fresh!.toUpperCase().replaceAll('-', ' ')), recoveryCodeHash(fresh!));
});

const PASSWORD = 'correct horse battery staple';

test('a password hash verifies its password and no other, and says which parameters made it', async () => {
  const encoded = await hashPassword(PASSWORD);
  const { log2N, r, p } = PASSWORD_HASH;
  assert.match(encoded, new RegExp(`^scrypt\\$${log2N}\\$${r}\\$${p}\\$[A-Za-z0-9_-]{22}\\$[A-Za-z0-9_-]{43}$`));
  assert.equal(await verifyPassword(PASSWORD, encoded), true);
  assert.equal(await verifyPassword(`${PASSWORD} `, encoded), false);
  assert.equal(await verifyPassword('Correct horse battery staple', encoded), false);
  assert.equal(await verifyPassword('', encoded), false);
  // The same password again: another salt, so another hash, and each verifies.
  const again = await hashPassword(PASSWORD);
  assert.notEqual(again, encoded);
  assert.notEqual(again.split('$')[4], encoded.split('$')[4]);
  assert.equal(await verifyPassword(PASSWORD, again), true);
});

test('a hash made with other parameters verifies with its own', async () => {
  const salt = randomBytes(16);
  const key = scryptSync(Buffer.from(PASSWORD, 'utf8'), salt, 32, { N: 2 ** 14, r: 8, p: 1 });
  const encoded = `scrypt$14$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
  assert.equal(await verifyPassword(PASSWORD, encoded), true);
  assert.equal(await verifyPassword(`${PASSWORD}!`, encoded), false);
  // The same salt and key under other parameters is another hash.
  assert.equal(await verifyPassword(PASSWORD, encoded.replace('scrypt$14$', 'scrypt$13$')), false);
});

test('a malformed or unknown encoding verifies nothing and throws nothing', async () => {
  const encoded = await hashPassword(PASSWORD);
  const [, , , , salt, key] = encoded.split('$') as [string, string, string, string, string, string];
  const flipped = (key[0] === 'A' ? 'B' : 'A') + key.slice(1);
  // 43 characters carry the 32 bytes and 2 spare bits, which the last character of the hash has clear.
  const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const spareBitSet = key.slice(0, -1) + BASE64URL[BASE64URL.indexOf(key.at(-1)!) | 1];
  const malformed = [
    '',
    'scrypt',
    PASSWORD,
    `argon2id$v=19$m=65536,t=3,p=4$${salt}$${key}`,
    `bcrypt$15$8$1$${salt}$${key}`,
    `SCRYPT$15$8$1$${salt}$${key}`,
    `$scrypt$15$8$1$${salt}$${key}`,
    `scrypt$15$8$1$${salt}`, // too few parts, too many
    `scrypt$15$8$1$${salt}$${key}$`,
    `scrypt$15$8$1$${salt}$${key}$x`,
    `scrypt$$8$1$${salt}$${key}`, // parameters not whole decimal numbers, zero, or out of bounds
    `scrypt$x$8$1$${salt}$${key}`,
    `scrypt$015$8$1$${salt}$${key}`,
    `scrypt$15.0$8$1$${salt}$${key}`,
    `scrypt$-15$8$1$${salt}$${key}`,
    `scrypt$0$8$1$${salt}$${key}`,
    `scrypt$15$0$1$${salt}$${key}`,
    `scrypt$15$8$0$${salt}$${key}`,
    `scrypt$1e1$8$1$${salt}$${key}`,
    `scrypt$40$8$1$${salt}$${key}`,
    `scrypt$22$8$1$${salt}$${key}`,
    `scrypt$15$999$1$${salt}$${key}`,
    `scrypt$15$8$99$${salt}$${key}`,
    `scrypt$15$8$1$$${key}`, // salt or key empty, not base64url, padded, too short or too long
    `scrypt$15$8$1$${salt}$`,
    `scrypt$15$8$1$${salt}!$${key}`,
    `scrypt$15$8$1$${salt}==$${key}`,
    `scrypt$15$8$1$${salt.slice(0, -1)}+$${key}`,
    `scrypt$15$8$1$${salt}$${key}=`,
    `scrypt$15$8$1$${salt} $${key}`,
    `scrypt$15$8$1$${salt.slice(0, 10)}$${key}`,
    `scrypt$15$8$1$${salt}$${key.slice(0, 10)}`,
    `scrypt$15$8$1$${salt}$${key}${key}${key}`,
    `scrypt$15$8$1$${salt}$${spareBitSet}`, // the same bytes, but not as this module writes them
    `scrypt$15$8$1$${salt}$${flipped}`, // well formed, but not this password's key
  ];
  for (const text of malformed) assert.equal(await verifyPassword(PASSWORD, text), false, JSON.stringify(text));
  assert.equal(await verifyPassword(PASSWORD, encoded), true);
});

test('passwords are compared in NFC: é as one code point or as e and an accent is the same password', async () => {
  const composed = 'mot de passe café 2026'.normalize('NFC');
  const decomposed = composed.normalize('NFD');
  assert.notEqual(composed, decomposed);
  const encoded = await hashPassword(composed);
  assert.equal(await verifyPassword(decomposed, encoded), true);
  assert.equal(await verifyPassword(composed, await hashPassword(decomposed)), true);
  // Normalisation stops there: a different letter is a different password.
  assert.equal(await verifyPassword('mot de passe cafe 2026', encoded), false);
});

test('verifyNothing is false for any password, every time', async () => {
  assert.equal(await verifyNothing(PASSWORD), false);
  assert.equal(await verifyNothing(PASSWORD), false);
  assert.equal(await verifyNothing(''), false);
});
