// Webhook rows to records, for both backends (they differ only in how a list and a boolean arrive).
import type { AttemptRecord, ClaimedDelivery, DeliveryRecord, WebhookRecord } from '../webhooks/store.ts';
import type { Row } from './rows.ts';

export function toWebhook(row: Row, eventTypes: (value: unknown) => string[], bool: (value: unknown) => boolean): WebhookRecord {
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    url: row.url as string,
    eventTypes: eventTypes(row.event_types),
    description: (row.description as string | null) ?? null,
    enabled: bool(row.enabled),
    disabledReason: (row.disabled_reason as string | null) ?? null,
    secret: row.secret as string,
    previousSecret: (row.previous_secret as string | null) ?? null,
    previousSecretUntil: (row.previous_secret_until as number | null) ?? null,
    failingSince: (row.failing_since as number | null) ?? null,
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
  };
}

export function toDelivery(row: Row): DeliveryRecord {
  return {
    seq: row.seq as number,
    id: row.id as string,
    webhookId: row.webhook_id as string,
    eventId: row.event_id as string,
    eventType: row.event_type as string,
    payload: row.payload as string,
    recordedAt: row.recorded_at as number,
    status: row.status as DeliveryRecord['status'],
    attempt: row.attempt as number,
    nextAt: (row.next_at as number | null) ?? null,
    responseStatus: (row.response_status as number | null) ?? null,
    durationMs: (row.duration_ms as number | null) ?? null,
    error: (row.error as string | null) ?? null,
    at: (row.at as number | null) ?? null,
  };
}

export const ATTEMPT_COLUMNS = 'attempt, at, response_status, duration_ms, error, ok';

export function toAttempt(row: Row): AttemptRecord {
  return {
    attempt: Number(row.attempt),
    at: Number(row.at),
    responseStatus: (row.response_status as number | null) ?? null,
    durationMs: Number(row.duration_ms),
    error: (row.error as string | null) ?? null,
    ok: row.ok === true || row.ok === 1,
  };
}

/** The secrets a delivery at `now` is signed with: the current one, and the previous while it lasts. */
export function secretsOf(webhook: Pick<WebhookRecord, 'secret' | 'previousSecret' | 'previousSecretUntil'>, now: number): string[] {
  return webhook.previousSecret !== null && (webhook.previousSecretUntil ?? 0) > now ? [webhook.secret, webhook.previousSecret] : [webhook.secret];
}

/** A claimed delivery's row joined with its endpoint's URL and secrets. */
export function claimedOf(row: Row, delivery: Row, now: number): ClaimedDelivery {
  return {
    ...toDelivery(delivery),
    url: row.url as string,
    secrets: secretsOf({
      secret: row.secret as string,
      previousSecret: (row.previous_secret as string | null) ?? null,
      previousSecretUntil: (row.previous_secret_until as number | null) ?? null,
    }, now),
  };
}
