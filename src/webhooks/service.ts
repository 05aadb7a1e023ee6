// Webhook endpoints: create, read, change, rotate, test, and their deliveries. Knows nothing of
// HTTP; the delivery worker (worker.ts) does the sending.
import { lookup } from 'node:dns/promises';
import type { Principal } from '../auth/scopes.ts';
import { type Clock, iso } from '../clock.ts';
import { AppError } from '../errors.ts';
import { newEvent, toEnvelope } from '../events/types.ts';
import { newId, newTimeOrderedId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import { forbiddenAddress } from './addresses.ts';
import { forbiddenLiteral } from './outbound.ts';
import type { CreateWebhookBody, PatchWebhookBody } from './schema.ts';
import { newSecret } from './signing.ts';
import type { AttemptRecord, DeliveryRecord, WebhookRecord, WebhookStore } from './store.ts';

/** How long deliveries are signed with the old secret too, after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

export type WebhookService = ReturnType<typeof createWebhookService>;

export function createWebhookService(deps: {
  store: WebhookStore;
  clock: Clock;
  maxPerOrganization: number;
  allowPrivate: boolean;
  /** Tells the worker a delivery is due now. */
  wake(): void;
}) {
  const { store, clock } = deps;

  /** 400 for a URL that is not http(s), carries credentials, or names a refused address. */
  async function checkUrl(text: string): Promise<void> {
    const bad = (message: string) => new AppError('validation-failed', `url: ${message}.`, { errors: [{ in: 'body', path: '/url', message }] });
    // The URL parser would quietly drop or encode these, and the text is stored and shown as given.
    if ([...text].some((c) => c <= ' ' || c === '\u007f')) throw bad('must not contain spaces or control characters (percent-encode them)');
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw bad('is not a URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad('must be https:// or http://');
    if (url.username !== '' || url.password !== '') throw bad('must not carry credentials');
    if (deps.allowPrivate) return;
    const refused = (why: string) => bad(`refused: ${why} (FLEET_WEBHOOK_ALLOW_PRIVATE=true allows such targets, for development)`);
    const literal = forbiddenLiteral(url);
    if (literal !== undefined) throw refused(literal);
    // A name is resolved now to refuse what is plainly private; one that does not resolve yet is
    // accepted (DNS may be late), and every delivery checks again anyway.
    const addresses = await Promise.race([
      lookup(url.hostname, { all: true }).catch(() => []),
      new Promise<never[]>((resolve) => setTimeout(resolve, 2000, []).unref()),
    ]);
    for (const { address } of addresses) {
      const why = forbiddenAddress(address);
      if (why !== undefined) throw refused(`${url.hostname} resolves to ${why}`);
    }
  }

  async function get(who: Principal, id: string): Promise<WebhookRecord> {
    const webhook = await store.get(who.organizationId, id);
    if (webhook === undefined) throw new AppError('webhook-not-found', `No webhook "${id}" in this organization.`);
    return webhook;
  }

  async function create(who: Principal, body: CreateWebhookBody): Promise<WebhookRecord> {
    await checkUrl(body.url);
    const now = clock.now();
    const webhook: WebhookRecord = {
      id: newId('wh'),
      organizationId: who.organizationId,
      url: body.url,
      eventTypes: body.eventTypes.includes('*') ? ['*'] : body.eventTypes,
      description: body.description ?? null,
      enabled: body.enabled ?? true,
      disabledReason: null,
      secret: newSecret(),
      previousSecret: null,
      previousSecretUntil: null,
      failingSince: null,
      createdAt: now,
      updatedAt: now,
    };
    if ((await store.insert(webhook, deps.maxPerOrganization)) === 'quota') throw quotaExceeded(deps.maxPerOrganization, 'webhooks');
    return webhook;
  }

  async function update(who: Principal, id: string, patch: PatchWebhookBody): Promise<WebhookRecord> {
    if (patch.url !== undefined) await checkUrl(patch.url);
    const eventTypes = patch.eventTypes?.includes('*') === true ? ['*'] : patch.eventTypes;
    const updated = await store.update(who.organizationId, id, { ...patch, eventTypes }, clock.now());
    if (updated === undefined) return get(who, id);
    return updated;
  }

  async function rotateSecret(who: Principal, id: string): Promise<string> {
    const now = clock.now();
    const secret = newSecret();
    if ((await store.rotateSecret(who.organizationId, id, secret, now + ROTATION_OVERLAP_MS, now)) === undefined) await get(who, id);
    return secret;
  }

  async function remove(who: Principal, id: string): Promise<void> {
    if (!(await store.delete(who.organizationId, id))) await get(who, id);
  }

  /** Sends a `webhook.test` event to this endpoint only (not recorded in the feed). */
  async function test(who: Principal, id: string): Promise<DeliveryRecord> {
    const webhook = await get(who, id);
    const now = clock.now();
    const event = newEvent(who.organizationId, 'webhook.test', null, now, {});
    const deliveryId = newTimeOrderedId('dlv');
    await store.addDelivery({
      id: deliveryId, webhookId: webhook.id, eventId: event.id, eventType: event.type, payload: JSON.stringify(toEnvelope(event)), recordedAt: now,
    }, now);
    deps.wake();
    return (await store.getDelivery(webhook.id, deliveryId))!;
  }

  async function deliveries(who: Principal, id: string, after: string | undefined, limit: number) {
    const webhook = await get(who, id);
    const before = after === undefined ? undefined : decodeCursor('d', after);
    const page = await store.deliveries(webhook.id, before, limit + 1);
    const more = page.length > limit;
    const items = more ? page.slice(0, limit) : page;
    return { deliveries: items, nextCursor: more ? encodeCursor('d', items.at(-1)!.seq) : null };
  }

  async function attempts(who: Principal, id: string, deliveryId: string, after: string | undefined, limit: number) {
    const webhook = await get(who, id);
    const delivery = await store.getDelivery(webhook.id, deliveryId);
    if (delivery === undefined) throw deliveryNotFound(deliveryId);
    const before = after === undefined ? undefined : decodeCursor('a', after);
    const page = await store.attempts(delivery.seq, before, limit + 1);
    const more = page.length > limit;
    const items = more ? page.slice(0, limit) : page;
    return { attempts: items, nextCursor: more ? encodeCursor('a', items.at(-1)!.attempt) : null };
  }

  async function retry(who: Principal, id: string, deliveryId: string): Promise<DeliveryRecord> {
    const webhook = await get(who, id);
    const delivery = await store.retryNow(webhook.id, deliveryId, clock.now());
    if (delivery === undefined) throw deliveryNotFound(deliveryId);
    deps.wake();
    return delivery;
  }

  async function list(who: Principal, page: { limit: number; offset: number }) {
    return store.list(who.organizationId, page);
  }

  return { create, get, list, update, rotateSecret, remove, test, deliveries, attempts, retry };
}

const deliveryNotFound = (id: string) => new AppError('delivery-not-found', `No delivery "${id}" of this webhook.`);

export function toWebhookView(w: WebhookRecord) {
  return {
    id: w.id, url: w.url, eventTypes: w.eventTypes, description: w.description, enabled: w.enabled,
    disabledReason: w.disabledReason, createdAt: iso(w.createdAt), updatedAt: iso(w.updatedAt),
  };
}

export function toDeliveryView(d: DeliveryRecord) {
  return {
    id: d.id, eventId: d.eventId, eventType: d.eventType, attempt: d.attempt, status: d.status,
    responseStatus: d.responseStatus, durationMs: d.durationMs, error: d.error,
    at: d.at === null ? null : iso(d.at), nextAttemptAt: d.status === 'pending' && d.nextAt !== null ? iso(d.nextAt) : null,
  };
}

export function toAttemptView(a: AttemptRecord) {
  return {
    attempt: a.attempt, at: iso(a.at), responseStatus: a.responseStatus, durationMs: a.durationMs, error: a.error,
    status: a.ok ? 'succeeded' as const : 'failed' as const,
  };
}

/** A cursor of deliveries (`d`, after a delivery's seq) or of attempts (`a`, after an attempt's number). */
function encodeCursor(kind: 'd' | 'a', position: number): string {
  return Buffer.from(`${kind}:${position}`).toString('base64url');
}

function decodeCursor(kind: 'd' | 'a', cursor: string): number {
  const match = new RegExp(`^${kind}:(\\d{1,16})$`).exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) {
    throw new AppError('validation-failed', 'The cursor is not one this service issued.', {
      errors: [{ in: 'query', path: '/after', message: 'is not a valid cursor' }],
    });
  }
  return Number(match[1]);
}
