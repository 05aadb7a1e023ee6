// Webhook endpoints and deliveries in the embedded store. Writes of the delivery worker go
// through the WAL sync (wal-sync.ts), so they never hold the event loop for a disk sync.
import type { DatabaseSync } from 'node:sqlite';
import { type DueDelivery, UNCAPPED, fairClaim } from '../../webhooks/fair.ts';
import type { WebhookStore } from '../../webhooks/store.ts';
import type { Row } from '../rows.ts';
import { ATTEMPT_COLUMNS, claimedOf, toAttempt, toDelivery, toWebhook } from '../webhook-rows.ts';
import { transaction, write } from './database.ts';
import { toLoggedEvent } from './events.ts';
import type { WalSync } from './wal-sync.ts';

const WEBHOOK_COLUMNS = `id, organization_id, url, event_types, description, enabled, disabled_reason, secret, previous_secret,
  previous_secret_until, failing_since, created_at, updated_at`;
const DELIVERY_COLUMNS = `seq, id, webhook_id, event_id, event_type, payload, recorded_at, status, attempt, next_at,
  response_status, duration_ms, error, at`;

/** A delivery this process holds: until when, and where it stands in its endpoint's due order. */
type Lease = DueDelivery & { nextAt: number; until: number };

const NONE: ReadonlySet<string> = new Set();

/** Whether `a` comes after `b` in an endpoint's due order (next_at, then seq). */
const later = (a: { nextAt: number; seq: number }, b: { nextAt: number; seq: number }) => a.nextAt > b.nextAt || (a.nextAt === b.nextAt && a.seq > b.seq);

const webhookOf = (row: Row) => toWebhook(row, (v) => JSON.parse(v as string) as string[], (v) => v === 1);

export function createSqliteWebhookStore(db: DatabaseSync, wal: WalSync): WebhookStore {
  // One process owns the database file (owner.ts), so a lease means something only to this
  // process: leases are kept here, in memory, and a claim writes nothing (writing each claimed row
  // again, payload and all, was a quarter of what a delivery cost the store). A process that dies
  // takes its leases with it: its deliveries are claimable at once by the next one. (Leases that
  // earlier versions wrote are cleared.)
  db.exec('UPDATE webhook_deliveries SET lease_until = NULL WHERE lease_until IS NOT NULL');
  /** Delivery id → its seq, its endpoint and organization, and until when this process holds it. */
  const leases = new Map<string, Lease>();
  /**
   * Deliveries retried by hand while an attempt was under way: that attempt's result is recorded
   * as an attempt, but the delivery stays due as the retry made it.
   */
  const retried = new Set<string>();
  /**
   * Of an endpoint, where its last claim stopped (the due order: next_at, then seq): every
   * pending delivery of it up to there is leased here, so the next claim reads on from there
   * instead of reading past its leased ones again (a claim took some 20 and read some 90 rows).
   * Forgotten for an endpoint as soon as that may not hold: a lease of it ran out or was given
   * back, or a delivery of it became due at or before the cursor (a retry, a clock set back).
   */
  const cursors = new Map<string, { nextAt: number; seq: number }>();
  /** A delivery of `webhookId` is pending again, due at `nextAt`: a cursor past it is forgotten. */
  function dueAgain(webhookId: string, nextAt: number): void {
    const cursor = cursors.get(webhookId);
    if (cursor !== undefined && nextAt <= cursor.nextAt) cursors.delete(webhookId);
  }
  const count = db.prepare('SELECT count(*) AS n FROM webhooks WHERE organization_id = ?');
  const insert = db.prepare(`INSERT INTO webhooks (${WEBHOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const selectOne = db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = ? AND id = ?`);
  const page = db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const update = db.prepare(
    `UPDATE webhooks SET url = ?, event_types = ?, description = ?, enabled = ?, disabled_reason = ?, failing_since = ?, updated_at = ?
     WHERE organization_id = ? AND id = ?`,
  );
  const rotate = db.prepare(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_until = ?, secret = ?, updated_at = ?
     WHERE organization_id = ? AND id = ?`,
  );
  const remove = db.prepare('DELETE FROM webhooks WHERE organization_id = ? AND id = ?');
  const deliveriesPage = db.prepare(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
  );
  const deliveryOne = db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND id = ?`);
  const attemptsPage = db.prepare(
    `SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE delivery_seq = ? AND attempt < ? ORDER BY attempt DESC LIMIT ?`,
  );
  const retry = db.prepare(
    `UPDATE webhook_deliveries SET status = 'pending', next_at = ? WHERE webhook_id = ? AND id = ?
     RETURNING ${DELIVERY_COLUMNS}`,
  );
  const addDelivery = db.prepare(
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, payload, recorded_at, status, attempt, next_at)
     VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?) ON CONFLICT DO NOTHING`,
  );
  const fanned = db.prepare('SELECT fanned_seq FROM event_log_state WHERE id = 1');
  const markFanned = db.prepare('UPDATE event_log_state SET fanned_seq = ? WHERE id = 1');
  const eventsAfter = db.prepare('SELECT seq, id, organization_id, type, vehicle_id, occurred_at, recorded_at, envelope FROM events WHERE seq > ? ORDER BY seq LIMIT ?');
  const anyEnabled = db.prepare('SELECT 1 FROM webhooks WHERE enabled = 1 LIMIT 1');
  const stepAfter = db.prepare('SELECT count(*) AS n, max(seq) AS last FROM (SELECT seq FROM events WHERE seq > ? ORDER BY seq LIMIT ?)');
  const enabledOf = db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE organization_id = ? AND enabled = 1`);
  // Of each enabled endpoint, its longest due deliveries but those leased (a JSON array of seqs),
  // as many as a claim could take of it (endpoint_due index): a long backlog is not read whole.
  // The chosen ones are then read whole by seq.
  const enabledEndpoints = db.prepare('SELECT id, organization_id FROM webhooks WHERE enabled = 1');
  const dueOf = db.prepare(
    `SELECT seq, next_at FROM webhook_deliveries INDEXED BY webhook_deliveries_endpoint_due
     WHERE webhook_id = ? AND status = 'pending' AND next_at <= ? AND seq NOT IN (SELECT value FROM json_each(?))
     ORDER BY next_at, seq LIMIT ?`,
  );
  // The same, after the endpoint's cursor (see `cursors` above): no leased row is read again.
  // In two steps, the rest of the cursor's own due time (a backlog's deliveries share one) and
  // then the times after it: one statement with a row-value comparison searches from the due time
  // on, reading every row of it again, and a UNION of the two sorts both. Rows as arrays: half the
  // cost of objects for rows this small.
  const dueAtCursor = db.prepare(
    `SELECT seq, next_at FROM webhook_deliveries INDEXED BY webhook_deliveries_endpoint_due
     WHERE webhook_id = ? AND status = 'pending' AND next_at = ? AND seq > ? ORDER BY seq LIMIT ?`,
  );
  const dueAfterCursor = db.prepare(
    `SELECT seq, next_at FROM webhook_deliveries INDEXED BY webhook_deliveries_endpoint_due
     WHERE webhook_id = ? AND status = 'pending' AND next_at > ? AND next_at <= ? ORDER BY next_at, seq LIMIT ?`,
  );
  for (const statement of [dueOf, dueAtCursor, dueAfterCursor]) statement.setReturnArrays(true);
  /** Of `webhookId`, up to `room` due deliveries after `cursor`, as [seq, next_at]. */
  function dueAfter(webhookId: string, now: number, cursor: { nextAt: number; seq: number }, room: number): [number, number][] {
    const due = (cursor.nextAt <= now ? dueAtCursor.all(webhookId, cursor.nextAt, cursor.seq, room) : []) as unknown as [number, number][];
    if (due.length < room) due.push(...(dueAfterCursor.all(webhookId, cursor.nextAt, now, room - due.length) as unknown as [number, number][]));
    return due;
  }
  const bySeq = db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE seq IN (SELECT value FROM json_each(?))`);
  const endpointOf = db.prepare('SELECT url, secret, previous_secret, previous_secret_until FROM webhooks WHERE id = ?');
  // By seq, the rowid: no search of the id index. The attempt's number comes back for its record.
  const finish = db.prepare(
    `UPDATE webhook_deliveries SET status = ?, attempt = attempt + 1, next_at = ?, response_status = ?,
       duration_ms = ?, error = ?, at = ? WHERE seq = ? RETURNING attempt`,
  );
  const finishOvertaken = db.prepare(
    'UPDATE webhook_deliveries SET attempt = attempt + 1, response_status = ?, duration_ms = ?, error = ?, at = ? WHERE seq = ? RETURNING attempt',
  );
  const recordAttempt = db.prepare(
    `INSERT OR IGNORE INTO webhook_attempts (delivery_seq, ${ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const succeeded = db.prepare('UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL');
  const failed = db.prepare('UPDATE webhooks SET failing_since = coalesce(failing_since, ?) WHERE id = ? RETURNING failing_since');
  const disable = db.prepare(
    `UPDATE webhooks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1`,
  );
  const prune = db.prepare(
    `DELETE FROM webhook_deliveries WHERE seq IN
       (SELECT seq FROM webhook_deliveries WHERE recorded_at < ? AND status <> 'pending' ORDER BY recorded_at LIMIT ?)`,
  );

  return {
    onEventLoop: true,
    async insert(w, max) {
      return transaction(db, () => {
        if (Number(count.get(w.organizationId)!.n) >= max) return 'quota';
        insert.run(
          w.id, w.organizationId, w.url, JSON.stringify(w.eventTypes), w.description, w.enabled ? 1 : 0, w.disabledReason, w.secret,
          w.previousSecret, w.previousSecretUntil, w.failingSince, w.createdAt, w.updatedAt,
        );
        return 'created';
      });
    },
    async get(organizationId, id) {
      const row = selectOne.get(organizationId, id);
      return row === undefined ? undefined : webhookOf(row);
    },
    async list(organizationId, { limit, offset }) {
      return { webhooks: page.all(organizationId, limit, offset).map(webhookOf), total: Number(count.get(organizationId)!.n) };
    },
    async update(organizationId, id, patch, at) {
      return transaction(db, () => {
        const row = selectOne.get(organizationId, id);
        if (row === undefined) return undefined;
        const w = webhookOf(row);
        const enabled = patch.enabled ?? w.enabled;
        // Enabling again starts a fresh run: the failures that disabled it are forgiven.
        const reenabled = enabled && !w.enabled;
        update.run(
          patch.url ?? w.url, JSON.stringify(patch.eventTypes ?? w.eventTypes),
          patch.description === undefined ? w.description : patch.description, enabled ? 1 : 0,
          enabled ? null : w.disabledReason, reenabled ? null : w.failingSince, at, organizationId, id,
        );
        return webhookOf(selectOne.get(organizationId, id)!);
      });
    },
    async rotateSecret(organizationId, id, secret, previousUntil, at) {
      if (write(db, () => rotate.run(previousUntil, secret, at, organizationId, id).changes) === 0) return undefined;
      return webhookOf(selectOne.get(organizationId, id)!);
    },
    async delete(organizationId, id) {
      return write(db, () => remove.run(organizationId, id).changes > 0);
    },
    async deliveries(webhookId, before, limit) {
      return deliveriesPage.all(webhookId, before ?? Number.MAX_SAFE_INTEGER, limit).map(toDelivery);
    },
    async getDelivery(webhookId, id) {
      const row = deliveryOne.get(webhookId, id);
      return row === undefined ? undefined : toDelivery(row);
    },
    async attempts(deliverySeq, before, limit) {
      return attemptsPage.all(deliverySeq, before ?? Number.MAX_SAFE_INTEGER, limit).map(toAttempt);
    },
    async retryNow(webhookId, id, at) {
      const row = write(db, () => retry.get(at, webhookId, id));
      if (row !== undefined) dueAgain(webhookId, at);
      if (row !== undefined && leases.delete(id)) retried.add(id);
      return row === undefined ? undefined : toDelivery(row);
    },
    async addDelivery(d, at) {
      await wal.transaction(() => addDelivery.run(d.id, d.webhookId, d.eventId, d.eventType, d.payload, d.recordedAt, at));
      dueAgain(d.webhookId, at);
    },
    async fanOut(match, limit, now) {
      // Nothing new in the log (most cycles once the worker is caught up): no write transaction,
      // so no disk sync to wait for before the claim. The transaction reads again for itself.
      if (eventsAfter.all(Number(fanned.get()!.fanned_seq), 1).length === 0) return 0;
      if (anyEnabled.get() === undefined) {
        // No endpoint anywhere (no read of the events, no disk sync): the step is marked as fanned
        // out. Lost to a power cut, it is only done again, to the same effect.
        return wal.unsynced(() => {
          const step = stepAfter.get(Number(fanned.get()!.fanned_seq), limit)!;
          if (step.last !== null) markFanned.run(Number(step.last));
          return Number(step.n);
        });
      }
      return wal.transaction(() => {
        const after = Number(fanned.get()!.fanned_seq);
        const events = eventsAfter.all(after, limit).map(toLoggedEvent);
        if (events.length === 0) return 0;
        const endpoints = [...new Set(events.map((e) => e.organizationId))].flatMap((org) => enabledOf.all(org).map(webhookOf));
        for (const d of match(events, endpoints)) {
          addDelivery.run(d.id, d.webhookId, d.eventId, d.eventType, d.payload, d.recordedAt, now);
          dueAgain(d.webhookId, now);
        }
        markFanned.run(events.at(-1)!.position[1]);
        return events.length;
      });
    },
    async claim(now, leaseUntil, limit, caps = UNCAPPED, ended = NONE) {
      if (limit <= 0) return [];
      /** Leased, counted against the caps: attempts under way or claimed ahead. */
      const held: Lease[] = [];
      /** Leased, not counted: attempts ended, their results being recorded. */
      const recording: Lease[] = [];
      for (const [id, lease] of leases) {
        if (lease.until > now) (ended.has(id) ? recording : held).push(lease);
        else {
          leases.delete(id);
          cursors.delete(lease.webhookId);
        }
      }
      // Of each endpoint only as many as its free places (and its organization's) could take: an
      // endpoint at its cap is not read at all, and the leased ones it skips are its own.
      const heldBy = Map.groupBy(held, (l) => l.webhookId);
      const leasedBy = Map.groupBy([...held, ...recording], (l) => l.webhookId);
      const heldByOrganization = new Map<string, number>();
      for (const l of held) heldByOrganization.set(l.organizationId, (heldByOrganization.get(l.organizationId) ?? 0) + 1);
      const found: (DueDelivery & { nextAt: number })[] = [];
      const enabled = new Set<string>();
      for (const w of enabledEndpoints.all()) {
        const webhookId = w.id as string;
        const organizationId = w.organization_id as string;
        enabled.add(webhookId);
        const own = leasedBy.get(webhookId) ?? [];
        const room = Math.min(limit, caps.perEndpoint - (heldBy.get(webhookId)?.length ?? 0), caps.perOrganization - (heldByOrganization.get(organizationId) ?? 0));
        if (room <= 0) continue;
        const cursor = cursors.get(webhookId);
        const due = cursor === undefined
          ? dueOf.all(webhookId, now, JSON.stringify(own.map((l) => l.seq)), room) as unknown as [number, number][]
          : dueAfter(webhookId, now, cursor, room);
        // A leased one is never taken again, cursor or not.
        const leased = cursor === undefined ? undefined : new Set(own.map((l) => l.seq));
        for (const [seq, nextAt] of due) {
          if (leased?.has(seq) === true) continue;
          found.push({ seq, nextAt, webhookId, organizationId });
        }
      }
      for (const webhookId of cursors.keys()) if (!enabled.has(webhookId)) cursors.delete(webhookId);
      // Oldest due first, as fair.ts takes them.
      const candidates = found.sort((a, b) => a.nextAt - b.nextAt || a.seq - b.seq);
      const chosen = fairClaim(candidates, held, limit, caps);
      if (chosen.length === 0) return [];
      // An endpoint's cursor moves to the last one taken if those taken are the first ones read
      // (all before them are then leased) and none of its leases lies beyond; otherwise it is
      // forgotten.
      const taken = new Set(chosen);
      for (const [webhookId, read] of Map.groupBy(candidates, (c) => c.webhookId)) {
        const n = read.findIndex((c) => !taken.has(c.seq));
        const prefix = n === -1 ? read.length : n;
        if (prefix === 0) continue;
        const last = read[prefix - 1]!;
        if (read.slice(prefix).some((c) => taken.has(c.seq)) || (leasedBy.get(webhookId) ?? []).some((l) => later(l, last))) cursors.delete(webhookId);
        else cursors.set(webhookId, { nextAt: last.nextAt, seq: last.seq });
      }
      const organizationOf = new Map(candidates.map((c) => [c.seq, c.organizationId]));
      const rows = new Map(bySeq.all(JSON.stringify(chosen)).map((row) => [row.seq as number, row]));
      const endpoints = new Map<string, Row>();
      return chosen.map((seq) => {
        const row = rows.get(seq)!;
        const webhookId = row.webhook_id as string;
        leases.set(row.id as string, { seq, webhookId, organizationId: organizationOf.get(seq)!, nextAt: row.next_at as number, until: leaseUntil });
        let endpoint = endpoints.get(webhookId);
        if (endpoint === undefined) endpoints.set(webhookId, (endpoint = endpointOf.get(webhookId)!));
        return claimedOf(endpoint, row, now);
      });
    },
    async release(ids) {
      for (const id of ids) {
        const lease = leases.get(id);
        if (lease !== undefined) cursors.delete(lease.webhookId);
        leases.delete(id);
      }
    },
    async complete(results, disableAfter) {
      if (results.length === 0) return;
      const overtaken = new Set(results.filter((r) => retried.delete(r.id)).map((r) => r.id));
      await wal.transaction(() => {
        /** Endpoints whose last result so far in this batch was a success: failing_since is NULL already. */
        const fine = new Set<string>();
        for (const r of results) {
          const done = overtaken.has(r.id)
            ? finishOvertaken.get(r.responseStatus, r.durationMs, r.error, r.at, r.seq)
            : finish.get(r.ok ? 'succeeded' : r.nextAt === null ? 'failed' : 'pending', r.nextAt, r.responseStatus, r.durationMs, r.error, r.at, r.seq);
          // A delivery deleted meanwhile (with its endpoint) has nothing to record against.
          if (done !== undefined) recordAttempt.run(r.seq, Number(done.attempt), r.at, r.responseStatus, Math.round(r.durationMs), r.error, r.ok ? 1 : 0);
          // Failed here, not at the endpoint: says nothing of it.
          if (r.local === true) continue;
          if (r.ok) {
            if (!fine.has(r.webhookId)) succeeded.run(r.webhookId);
            fine.add(r.webhookId);
            continue;
          }
          fine.delete(r.webhookId);
          const since = failed.get(r.at, r.webhookId)?.failing_since as number | undefined;
          if (since !== undefined && r.at - since >= disableAfter) {
            disable.run(`every delivery failed for ${Math.round(disableAfter / 86_400_000)} days`, r.at, r.webhookId);
          }
        }
      });
      // Recorded (or about to be, synced): the leases are over (but those the retries' claims took).
      for (const r of results) {
        if (overtaken.has(r.id)) continue;
        leases.delete(r.id);
        if (r.nextAt !== null && !r.ok) dueAgain(r.webhookId, r.nextAt);
      }
    },
    async prune(before, max) {
      return Number(write(db, () => prune.run(before, max).changes));
    },
  };
}
