import type { LoggedEvent } from '../events/store.ts';
import type { ClaimCaps } from './fair.ts';

export interface WebhookRecord {
  id: string;
  organizationId: string;
  url: string;
  /** Event types, or `['*']` for all. */
  eventTypes: string[];
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  /** `whsec_` + base64 of 32 bytes. Kept in clear: every delivery is signed with it. */
  secret: string;
  /** The secret before the last rotation, and until when deliveries are signed with it too. */
  previousSecret: string | null;
  previousSecretUntil: number | null;
  /** Since when every delivery has failed (null after a success). */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryRecord {
  seq: number;
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  /** The event envelope as sent (JSON text). */
  payload: string;
  /** When the event was recorded: retries stop a day after. */
  recordedAt: number;
  status: DeliveryStatus;
  /** Attempts made so far. */
  attempt: number;
  nextAt: number | null;
  responseStatus: number | null;
  durationMs: number | null;
  error: string | null;
  /** When the last attempt was made. */
  at: number | null;
}

/** A delivery claimed for one attempt, with what signing it needs. */
export interface ClaimedDelivery extends DeliveryRecord {
  url: string;
  secrets: string[];
}

/** What one attempt came to. */
export interface AttemptResult {
  /** The delivery's `seq` and `id`. */
  seq: number;
  id: string;
  webhookId: string;
  ok: boolean;
  responseStatus: number | null;
  durationMs: number;
  error: string | null;
  at: number;
  /** When to try again; null: no more attempts (succeeded, or given up). */
  nextAt: number | null;
  /**
   * It failed in this process, before reaching the endpoint (outbound.ts, `local`): recorded and
   * retried as any failure, but not held against the endpoint (its run of failures, disabling).
   */
  local?: boolean;
}

/** One attempt of a delivery, as recorded with its result. */
export interface AttemptRecord {
  /** 1 for the first attempt. */
  attempt: number;
  at: number;
  responseStatus: number | null;
  durationMs: number;
  error: string | null;
  ok: boolean;
}

export interface WebhookPatch {
  url?: string;
  eventTypes?: string[];
  description?: string | null;
  enabled?: boolean;
}

/** New deliveries for one event, made by the fan-out. */
export interface NewDelivery {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  payload: string;
  recordedAt: number;
}

/**
 * Webhook endpoints and their deliveries. Every endpoint call names the organization; the worker
 * calls (`fanOut`, `claim`, `complete`) work across organizations. In cluster mode several nodes
 * call them at once: a fan-out step runs on one node at a time, and a claimed delivery is leased
 * to one node until `leaseUntil`, so no two nodes make the same attempt.
 */
export interface WebhookStore {
  /**
   * Whether the store's work runs on the calling thread (the embedded store) rather than in a
   * database server: the delivery worker's share of a busy event loop is then measured and held
   * down (pacing.ts).
   */
  readonly onEventLoop: boolean;
  insert(webhook: WebhookRecord, maxPerOrganization: number): Promise<'created' | 'quota'>;
  get(organizationId: string, id: string): Promise<WebhookRecord | undefined>;
  list(organizationId: string, page: { limit: number; offset: number }): Promise<{ webhooks: WebhookRecord[]; total: number }>;
  update(organizationId: string, id: string, patch: WebhookPatch, at: number): Promise<WebhookRecord | undefined>;
  rotateSecret(organizationId: string, id: string, secret: string, previousUntil: number, at: number): Promise<WebhookRecord | undefined>;
  delete(organizationId: string, id: string): Promise<boolean>;

  /** Newest first, before the delivery with sequence `before` when given. */
  deliveries(webhookId: string, before: number | undefined, limit: number): Promise<DeliveryRecord[]>;
  getDelivery(webhookId: string, id: string): Promise<DeliveryRecord | undefined>;
  /** The attempts of the delivery with sequence `deliverySeq`, newest first, numbered below `before` when given. */
  attempts(deliverySeq: number, before: number | undefined, limit: number): Promise<AttemptRecord[]>;
  /** Makes a delivery pending again, due at `at` (a manual retry); the delivery after it. */
  retryNow(webhookId: string, id: string, at: number): Promise<DeliveryRecord | undefined>;
  /** A delivery outside the event log (`webhook.test`), due at once. */
  addDelivery(delivery: NewDelivery, at: number): Promise<void>;

  /**
   * One fan-out step, in one transaction: reads up to `limit` events of the log after the stored
   * fan-out position (as the feed reads them: never stepping over a late commit), lets `match`
   * say which deliveries they make for the enabled endpoints of their organizations, stores those
   * and the new position. How many events it read.
   */
  fanOut(match: (events: LoggedEvent[], endpoints: WebhookRecord[]) => NewDelivery[], limit: number, at: number): Promise<number>;
  /**
   * Claims up to `limit` due deliveries of enabled endpoints, leased until `leaseUntil`: fairly,
   * within `caps` of what each endpoint and organization has leased at once (fair.ts), in the
   * order to attempt them. `ended`: deliveries of this node whose attempts have ended, their
   * results not yet recorded; still leased, but their endpoint is no longer being sent them, so
   * a store that keeps its leases in memory (the embedded one) does not count them against the
   * caps. (PostgreSQL counts the leases on the rows, as every node sees them.)
   */
  claim(now: number, leaseUntil: number, limit: number, caps?: ClaimCaps, ended?: ReadonlySet<string>): Promise<ClaimedDelivery[]>;
  /** Gives back claimed deliveries not attempted: due again at once, for any node. */
  release(ids: readonly string[]): Promise<void>;
  /**
   * Records attempts' results in one transaction: each attempt, each delivery's status and next
   * attempt, and each endpoint's run of failures; an endpoint failing since `disableAfter` ms or
   * longer is disabled.
   */
  complete(results: readonly AttemptResult[], disableAfter: number): Promise<void>;
  /** Deletes finished deliveries recorded before `before`, and their attempts. */
  prune(before: number, max: number): Promise<number>;
}
