// Signatures per the Standard Webhooks specification: HMAC-SHA256 with the base64-decoded secret
// over `{webhook-id}.{webhook-timestamp}.{body}`, sent as space-separated `v1,<base64>` entries.
import { type KeyObject, createHmac, createSecretKey, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';
/**
 * Secrets as key objects, made once: HMAC with a key given as bytes prepares a key on every call,
 * which cost four to five times the signature itself (about 40 µs against 8 µs per attempt).
 * Bounded: cleared whole when full (endpoints' secrets come back on their next attempt).
 */
const keys = new Map<string, KeyObject>();
const KEYS_MAX = 10_000;

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    if (keys.size >= KEYS_MAX) keys.clear();
    key = createSecretKey(Buffer.from(secret.slice(PREFIX.length), 'base64'));
    keys.set(secret, key);
  }
  return key;
}

export function newSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The headers of one attempt: one signature per secret (two for a day after a rotation). */
export function signedHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => sign(secret, id, timestampSeconds, body)).join(' '),
  };
}
