// Verifying webhook deliveries, per the Standard Webhooks specification, with WebCrypto (browsers,
// Node, Deno, workers alike). A delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds)
// and `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256>` entries, each over
// `{webhook-id}.{webhook-timestamp}.{raw body}` with the base64-decoded secret (`whsec_…`).
// For 24 hours after a rotation a delivery carries one entry per secret, so a receiver that
// already holds the new secret, or still only the old one, accepts it either way.
import type { FleetEvent } from './types.ts';

export type WebhookVerificationFailure =
  | 'missing-header'
  | 'invalid-timestamp'
  | 'timestamp-too-old'
  | 'timestamp-too-new'
  | 'invalid-secret'
  | 'no-matching-signature'
  | 'invalid-payload';

export class WebhookVerificationError extends Error {
  readonly reason: WebhookVerificationFailure;
  constructor(reason: WebhookVerificationFailure, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}

export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

export interface VerifyWebhookOptions {
  /** The raw request body, exactly as received (not parsed and serialized again). */
  payload: string | Uint8Array | ArrayBuffer;
  /** The request headers: a Headers object, or Node's `req.headers`. */
  headers: WebhookHeaders;
  /** The endpoint's secret, or several (the old and the new one while rotating). */
  secret: string | readonly string[];
  /** How far `webhook-timestamp` may lie from now, seconds (default 300). */
  toleranceSeconds?: number;
  /** The current time, ms since the epoch (default Date.now()). */
  now?: number;
}

const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return typeof value === 'string' ? value : value?.[0];
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function secretKey(secret: string) {
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  } catch {
    throw new WebhookVerificationError('invalid-secret', 'The secret is not whsec_ followed by base64.');
  }
  if (bytes.length === 0) throw new WebhookVerificationError('invalid-secret', 'The secret is empty.');
  return crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
}

function toBytes(payload: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof payload === 'string') return encoder.encode(payload);
  return payload instanceof Uint8Array ? payload : new Uint8Array(payload);
}

/**
 * Checks a delivery and answers its event; throws WebhookVerificationError when it is not one
 * signed with (one of) the secret(s) within the tolerance. Deduplicate by `webhook-id` (the
 * event's id, the same on every attempt): delivery is at least once.
 */
export async function verifyWebhook(options: VerifyWebhookOptions): Promise<FleetEvent> {
  const id = header(options.headers, 'webhook-id');
  const timestamp = header(options.headers, 'webhook-timestamp');
  const signatures = header(options.headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError('missing-header', 'webhook-id, webhook-timestamp and webhook-signature are required.');
  }
  if (!/^\d{1,15}$/.test(timestamp)) throw new WebhookVerificationError('invalid-timestamp', 'webhook-timestamp is not Unix seconds.');
  const tolerance = options.toleranceSeconds ?? 300;
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const sent = Number(timestamp);
  if (sent < now - tolerance) throw new WebhookVerificationError('timestamp-too-old', `Signed ${now - sent} s ago.`);
  if (sent > now + tolerance) throw new WebhookVerificationError('timestamp-too-new', `Signed ${sent - now} s in the future.`);

  const body = toBytes(options.payload);
  const prefix = encoder.encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);

  const candidates: Uint8Array<ArrayBuffer>[] = [];
  for (const entry of signatures.split(' ')) {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || value === undefined) continue;
    try {
      candidates.push(fromBase64(value));
    } catch {
      // not base64: matches nothing
    }
  }
  const secrets = typeof options.secret === 'string' ? [options.secret] : options.secret;
  let matched = false;
  for (const secret of secrets) {
    const key = await secretKey(secret);
    for (const candidate of candidates) {
      // WebCrypto's verify compares in constant time.
      if (await crypto.subtle.verify('HMAC', key, candidate, signed)) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError('no-matching-signature', 'No signature matches the secret.');

  try {
    return JSON.parse(new TextDecoder().decode(body)) as FleetEvent;
  } catch {
    throw new WebhookVerificationError('invalid-payload', 'The body is not JSON.');
  }
}
