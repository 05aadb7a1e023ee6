// Webhook endpoints and deliveries on PostgreSQL. Several nodes run the delivery worker at once:
// the fan-out holds the one row of `event_log_state` for its step (one node at a time reads the
// log forward), and deliveries are claimed with FOR UPDATE SKIP LOCKED and leased to one node, so
// no two nodes make the same attempt; a lease left by a node that died runs out and the delivery
// is claimed again.
import { type DueDelivery, UNCAPPED, fairClaim } from '../../webhooks/fair.ts';
import type { WebhookStore } from '../../webhooks/store.ts';
import { ATTEMPT_COLUMNS, claimedOf, toAttempt, toDelivery, toWebhook } from '../webhook-rows.ts';
import type { Database, Row } from './database.ts';
import { SETTLED, toLoggedEvent } from './events.ts';

const WEBHOOK_COLUMNS = `id, organization_id, url, event_types, description, enabled, disabled_reason, secret, previous_secret,
  previous_secret_until, failing_since, created_at, updated_at`;
const DELIVERY_COLUMNS = `seq, id, webhook_id, event_id, event_type, payload, recorded_at, status, attempt, next_at,
  response_status, duration_ms, error, at`;

/**
 * A delivery retried by hand while it was leased (an attempt under way) has its lease set to 0: run
 * out, so that it is claimed again at once, and marked, so that the attempt under way is recorded
 * as an attempt while the delivery stays due as the retry made it. A claim sets a lease again.
 */
const OVERTAKEN = "d.lease_until = 0 AND d.status = 'pending'";

const webhookOf = (row: Row) => toWebhook(row, (v) => v as string[], (v) => v as boolean);

export function createPostgresWebhookStore(db: Database): WebhookStore {
  return {
    onEventLoop: false,
    async insert(w, max) {
      return db.transaction(async (client) => {
        // Counted under a lock per organization: two nodes cannot both take the last place.
        await client.query({ name: 'advisory-lock', text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', values: [`fleet:webhooks:${w.organizationId}`] });
        const { rows } = await client.query<{ n: number }>('SELECT count(*) AS n FROM webhooks WHERE organization_id = $1', [w.organizationId]);
        if (rows[0]!.n >= max) return 'quota';
        await client.query(
          `INSERT INTO webhooks (${WEBHOOK_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
          [w.id, w.organizationId, w.url, w.eventTypes, w.description, w.enabled, w.disabledReason, w.secret, w.previousSecret,
            w.previousSecretUntil, w.failingSince, w.createdAt, w.updatedAt],
        );
        return 'created';
      });
    },
    async get(organizationId, id) {
      const { rows } = await db.query(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = $1 AND id = $2`, [organizationId, id]);
      return rows[0] === undefined ? undefined : webhookOf(rows[0]);
    },
    async list(organizationId, { limit, offset }) {
      const [page, count] = await Promise.all([
        db.query(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`, [organizationId, limit, offset]),
        db.query<{ n: number }>('SELECT count(*) AS n FROM webhooks WHERE organization_id = $1', [organizationId]),
      ]);
      return { webhooks: page.rows.map(webhookOf), total: count.rows[0]!.n };
    },
    async update(organizationId, id, patch, at) {
      // Enabling again starts a fresh run: the failures that disabled it are forgiven.
      const { rows } = await db.query(
        `UPDATE webhooks SET url = coalesce($3, url), event_types = coalesce($4, event_types),
           description = CASE WHEN $5 THEN $6 ELSE description END, enabled = coalesce($7, enabled),
           disabled_reason = CASE WHEN coalesce($7, enabled) THEN NULL ELSE disabled_reason END,
           failing_since = CASE WHEN coalesce($7, enabled) AND NOT enabled THEN NULL ELSE failing_since END,
           updated_at = $8
         WHERE organization_id = $1 AND id = $2 RETURNING ${WEBHOOK_COLUMNS}`,
        [organizationId, id, patch.url ?? null, patch.eventTypes ?? null, patch.description !== undefined, patch.description ?? null,
          patch.enabled ?? null, at],
      );
      return rows[0] === undefined ? undefined : webhookOf(rows[0]);
    },
    async rotateSecret(organizationId, id, secret, previousUntil, at) {
      const { rows } = await db.query(
        `UPDATE webhooks SET previous_secret = secret, previous_secret_until = $3, secret = $4, updated_at = $5
         WHERE organization_id = $1 AND id = $2 RETURNING ${WEBHOOK_COLUMNS}`,
        [organizationId, id, previousUntil, secret, at],
      );
      return rows[0] === undefined ? undefined : webhookOf(rows[0]);
    },
    async delete(organizationId, id) {
      const { rowCount } = await db.query('DELETE FROM webhooks WHERE organization_id = $1 AND id = $2', [organizationId, id]);
      return (rowCount ?? 0) > 0;
    },
    async deliveries(webhookId, before, limit) {
      const { rows } = await db.query(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`,
        [webhookId, before ?? Number.MAX_SAFE_INTEGER, limit],
      );
      return rows.map(toDelivery);
    },
    async getDelivery(webhookId, id) {
      const { rows } = await db.query(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 AND id = $2`, [webhookId, id]);
      return rows[0] === undefined ? undefined : toDelivery(rows[0]);
    },
    async attempts(deliverySeq, before, limit) {
      const { rows } = await db.query(
        `SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE delivery_seq = $1 AND attempt < $2::bigint ORDER BY attempt DESC LIMIT $3`,
        [deliverySeq, before ?? 2_147_483_647, limit],
      );
      return rows.map(toAttempt);
    },
    async retryNow(webhookId, id, at) {
      const { rows } = await db.query(
        `UPDATE webhook_deliveries SET status = 'pending', next_at = $3, lease_until = CASE WHEN lease_until IS NULL THEN NULL ELSE 0 END
         WHERE webhook_id = $1 AND id = $2
         RETURNING ${DELIVERY_COLUMNS}`,
        [webhookId, id, at],
      );
      return rows[0] === undefined ? undefined : toDelivery(rows[0]);
    },
    async addDelivery(d, at) {
      await db.query(
        `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, payload, recorded_at, status, attempt, next_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7) ON CONFLICT DO NOTHING`,
        [d.id, d.webhookId, d.eventId, d.eventType, d.payload, d.recordedAt, at],
      );
    },
    async fanOut(match, limit, now) {
      return db.transaction(async (client) => {
        const state = await client.query('SELECT fanned_tx, fanned_seq FROM event_log_state WHERE id = 1 FOR UPDATE');
        const { fanned_tx: tx, fanned_seq: seq } = state.rows[0]!;
        const { rows } = await client.query(
          `SELECT tx::text::bigint AS tx, seq, id, organization_id, type, vehicle_id, occurred_at, recorded_at, data::text AS data FROM events
           WHERE (tx, seq) > ($1::text::xid8, $2) AND ${SETTLED} ORDER BY tx, seq LIMIT $3`,
          [tx, seq, limit],
        );
        if (rows.length === 0) return 0;
        const events = rows.map(toLoggedEvent);
        const orgs = [...new Set(events.map((e) => e.organizationId))];
        const endpoints = (await client.query(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = ANY($1::text[]) AND enabled`, [orgs]))
          .rows.map(webhookOf);
        const made = match(events, endpoints);
        if (made.length > 0) {
          await client.query(
            `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, payload, recorded_at, status, attempt, next_at)
             SELECT id, webhook, event, type, payload, recorded, 'pending', 0, $7
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[]) AS d(id, webhook, event, type, payload, recorded)
             ON CONFLICT DO NOTHING`,
            [made.map((d) => d.id), made.map((d) => d.webhookId), made.map((d) => d.eventId), made.map((d) => d.eventType),
              made.map((d) => d.payload), made.map((d) => d.recordedAt), now],
          );
        }
        const last = events.at(-1)!.position;
        await client.query('UPDATE event_log_state SET fanned_tx = $1, fanned_seq = $2 WHERE id = 1', [last[0], last[1]]);
        return events.length;
      });
    },
    async claim(now, leaseUntil, limit, caps = UNCAPPED) {
      if (limit <= 0) return [];
      // The fair choice is made from what every node has due and leased (fair.ts): of each
      // enabled endpoint its longest due deliveries (endpoint_due index), twice as many as a claim
      // could take of it, so that those leased, nearly always its longest due, are seen with the
      // rest. The chosen ones are then locked and leased, those another node took meanwhile skipped.
      const perEndpoint = Math.min(caps.perEndpoint, limit);
      const { rows: due } = await db.query({
        name: 'webhooks.due',
        text: `SELECT d.seq, w.id AS webhook_id, w.organization_id, coalesce(d.lease_until > $1, false) AS leased
               FROM webhooks w CROSS JOIN LATERAL (
                 SELECT x.seq, x.next_at, x.lease_until FROM webhook_deliveries x
                 WHERE x.webhook_id = w.id AND x.status = 'pending' AND x.next_at <= $1
                 ORDER BY x.next_at, x.seq LIMIT $2
               ) d
               WHERE w.enabled
               ORDER BY d.next_at, d.seq`,
        values: [now, 2 * (Number.isFinite(perEndpoint) ? perEndpoint : limit)],
      });
      const of = (row: Row): DueDelivery => ({ seq: Number(row.seq), webhookId: row.webhook_id as string, organizationId: row.organization_id as string });
      const chosen = fairClaim(due.filter((r) => r.leased !== true).map(of), due.filter((r) => r.leased === true).map(of), limit, caps);
      if (chosen.length === 0) return [];
      const { rows } = await db.query(
        `WITH due AS (
           SELECT d.seq FROM webhook_deliveries d
           WHERE d.seq = ANY($3::bigint[]) AND d.status = 'pending' AND d.next_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
           FOR UPDATE SKIP LOCKED
         )
         UPDATE webhook_deliveries d SET lease_until = $2 FROM due, webhooks w
         WHERE d.seq = due.seq AND w.id = d.webhook_id AND w.enabled
         RETURNING ${DELIVERY_COLUMNS.split(',').map((c) => `d.${c.trim()}`).join(', ')}, w.url, w.secret, w.previous_secret, w.previous_secret_until`,
        [now, leaseUntil, chosen],
      );
      const order = new Map(chosen.map((seq, i) => [seq, i]));
      return rows.sort((a, b) => order.get(Number(a.seq))! - order.get(Number(b.seq))!).map((row) => claimedOf(row, row, now));
    },
    async release(ids) {
      if (ids.length === 0) return;
      await db.query("UPDATE webhook_deliveries SET lease_until = NULL WHERE id = ANY($1::text[]) AND status = 'pending'", [ids]);
    },
    async complete(results, disableAfter) {
      if (results.length === 0) return;
      await db.transaction(async (client) => {
        // Each attempt is recorded from what the update returns: no second round trip.
        await client.query(
          `WITH done AS (
             UPDATE webhook_deliveries d
               SET status = CASE WHEN ${OVERTAKEN} THEN d.status ELSE r.status END, attempt = d.attempt + 1,
                 next_at = CASE WHEN ${OVERTAKEN} THEN d.next_at ELSE r.next_at END, lease_until = NULL,
               response_status = r.response_status, duration_ms = r.duration_ms, error = r.error, at = r.at
             FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[], $5::int[], $6::text[], $7::bigint[])
               AS r(id, status, next_at, response_status, duration_ms, error, at)
             WHERE d.id = r.id
             RETURNING d.seq, d.attempt, d.at, d.response_status, d.duration_ms, d.error, r.status
           )
           INSERT INTO webhook_attempts (delivery_seq, ${ATTEMPT_COLUMNS})
           SELECT seq, attempt, at, response_status, duration_ms, error, status = 'succeeded' FROM done
           ON CONFLICT DO NOTHING`,
          [results.map((r) => r.id), results.map((r) => (r.ok ? 'succeeded' : r.nextAt === null ? 'failed' : 'pending')),
            results.map((r) => r.nextAt), results.map((r) => r.responseStatus), results.map((r) => Math.round(r.durationMs)),
            results.map((r) => r.error), results.map((r) => r.at)],
        );
        const ok = [...new Set(results.filter((r) => r.ok).map((r) => r.webhookId))];
        if (ok.length > 0) await client.query('UPDATE webhooks SET failing_since = NULL WHERE id = ANY($1::text[]) AND failing_since IS NOT NULL', [ok]);
        // Those that failed here, not at the endpoint (`local`), say nothing of it.
        const failed = results.filter((r) => !r.ok && r.local !== true);
        if (failed.length > 0) {
          const at = Math.min(...failed.map((r) => r.at));
          const ids = [...new Set(failed.map((r) => r.webhookId))].filter((id) => !ok.includes(id));
          await client.query('UPDATE webhooks SET failing_since = $2 WHERE id = ANY($1::text[]) AND failing_since IS NULL', [ids, at]);
          await client.query(
            `UPDATE webhooks SET enabled = false, disabled_reason = $3, updated_at = $2
             WHERE id = ANY($1::text[]) AND enabled AND failing_since <= $2 - $4::bigint`,
            [ids, Math.max(...failed.map((r) => r.at)), `every delivery failed for ${Math.round(disableAfter / 86_400_000)} days`, disableAfter],
          );
        }
      });
    },
    async prune(before, max) {
      const { rowCount } = await db.query(
        `DELETE FROM webhook_deliveries WHERE seq IN
           (SELECT seq FROM webhook_deliveries WHERE recorded_at < $1 AND status <> 'pending' ORDER BY recorded_at LIMIT $2)`,
        [before, max],
      );
      return rowCount ?? 0;
    },
  };
}
