// The event log and webhook deliveries, held to one contract on every backend: events are written
// in the transaction of the change that causes them (none for a change that did not happen), the
// feed reads them in order with a cursor that never skips or repeats, pruning makes older cursors
// gone, and deliveries are fanned out, claimed once and completed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type FeedPage, START } from '../../src/events/store.ts';
import { type EventEnvelope, type EventRecord, type EventType, newEvent, toEnvelope } from '../../src/events/types.ts';
import { newTimeOrderedId } from '../../src/ids.ts';
import type { Stores } from '../../src/storage/stores.ts';
import { statusChangedEvent } from '../../src/vehicles/events.ts';
import type { VehicleRecord } from '../../src/vehicles/store.ts';
import type { WebhookRecord } from '../../src/webhooks/store.ts';
import { matchDeliveries } from '../../src/webhooks/worker.ts';
import { type MakeStores, T0, addOrganization, freshStores } from './fixtures.ts';

const vehicle = (organizationId: string, id: string): VehicleRecord => ({
  organizationId, id, type: 'van', name: null, status: 'registered', configuration: {}, createdAt: T0, updatedAt: T0, statusChangedAt: T0, groupIds: [], driverId: null,
});

/** An event as the store sees it: any data (the store keeps what it is given, whatever its type). */
function storedEvent(organizationId: string, type: EventType, vehicleId: string | null, occurredAt: number, data: Record<string, unknown>): EventRecord {
  return { id: newTimeOrderedId('evt'), organizationId, type, vehicleId, occurredAt, data };
}

async function register(stores: Stores, organizationId: string, id: string): Promise<EventRecord> {
  const event = storedEvent(organizationId, 'vehicle.registered', id, T0, { id });
  assert.equal(await stores.vehicles.insert(vehicle(organizationId, id), { from: null, to: 'registered', reason: null, at: T0, by: 'k' }, undefined, [event]), 'created');
  return event;
}

/** The events of a feed page, parsed from the envelopes' text the store gives. */
function eventsOf(page: FeedPage): EventEnvelope[] {
  assert.ok(!page.gone);
  if (page.gone) throw new Error('unreachable');
  const events = JSON.parse(`[${page.envelopes}]`) as EventEnvelope[];
  assert.equal(events.length, page.count);
  return events;
}

async function feedAll(stores: Stores, organizationId: string, limit: number, query: { vehicleId?: string; types?: EventRecord['type'][] } = {}) {
  const ids: string[] = [];
  let after = START;
  for (let page = 0; page < 1000; page++) {
    const result = await stores.events.feed(organizationId, { after, limit, ...query });
    assert.equal(result.gone, false);
    if (result.gone) throw new Error('unreachable');
    const events = eventsOf(result);
    ids.push(...events.map((e) => e.id));
    assert.ok(result.next !== undefined);
    if (events.length === 0) return { ids, next: result.next };
    after = result.next;
  }
  throw new Error('the feed did not end');
}

/**
 * Retries `check` until it passes or 10 s have gone. On PostgreSQL an event becomes readable once
 * every transaction older than its own has ended, in any schema of the server (other test files'
 * too), so a read right after a commit may not show it yet; it must, eventually.
 */
export async function eventually<T>(check: () => Promise<T>): Promise<T> {
  const until = Date.now() + 10_000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

const webhook = (organizationId: string, id: string, eventTypes: string[]): WebhookRecord => ({
  id, organizationId, url: 'https://hooks.example.com/x', eventTypes, description: null, enabled: true, disabledReason: null,
  secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmU=', previousSecret: null, previousSecretUntil: null, failingSince: null,
  createdAt: T0, updatedAt: T0,
});

export function eventStoreContract(name: string, makeStores: MakeStores): void {
  describe(`EventStore and WebhookStore contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    test('events are recorded with the change, in order, per organization; paging never skips or repeats', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      const b = await addOrganization(stores);
      const recorded: string[] = [];
      for (let i = 0; i < 7; i++) {
        recorded.push((await register(stores, a, `v-${i}`)).id);
        await register(stores, b, `v-${i}`);
      }
      const change = { from: 'registered' as const, to: 'active' as const, reason: 'go', at: T0 + 1, by: 'k' };
      const changed = statusChangedEvent(a, 'v-3', change);
      assert.ok(await stores.vehicles.changeStatus(a, 'v-3', change, [changed]));
      recorded.push(changed.id);
      await eventually(async () => assert.deepEqual((await feedAll(stores, a, 100)).ids, recorded));
      for (const limit of [1, 3, 100]) assert.deepEqual((await feedAll(stores, a, limit)).ids, recorded, `limit ${limit}`);
      assert.deepEqual((await feedAll(stores, a, 2, { vehicleId: 'v-3' })).ids, [recorded[3], changed.id]);
      assert.deepEqual((await feedAll(stores, a, 2, { types: ['vehicle.status_changed'] })).ids, [changed.id]);
      assert.deepEqual((await feedAll(stores, a, 2, { vehicleId: 'nobody' })).ids, []);

      // The cursor of an exhausted feed picks up exactly what comes next.
      const { next } = await feedAll(stores, a, 5, { types: ['vehicle.deleted'] });
      const deleted = newEvent(a, 'vehicle.deleted', 'v-0', T0 + 2, {});
      assert.equal(await stores.vehicles.delete(a, 'v-0', [deleted]), true);
      await eventually(async () => {
        const page = await stores.events.feed(a, { after: next, limit: 10, types: ['vehicle.deleted'] });
        assert.deepEqual(eventsOf(page), [toEnvelope(deleted)]);
      });
    });

    test('a change that does not happen records no event', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await register(stores, a, 'v-1');
      const again = storedEvent(a, 'vehicle.registered', 'v-1', T0, {});
      assert.equal(await stores.vehicles.insert(vehicle(a, 'v-1'), { from: null, to: 'registered', reason: null, at: T0, by: 'k' }, undefined, [again]), 'exists');
      const stale = { from: 'active' as const, to: 'inactive' as const, reason: null, at: T0 + 1, by: 'k' };
      assert.equal(await stores.vehicles.changeStatus(a, 'v-1', stale, [statusChangedEvent(a, 'v-1', stale)]), undefined);
      assert.equal(await stores.vehicles.delete(a, 'nobody', [newEvent(a, 'vehicle.deleted', 'nobody', T0, {})]), false);
      // A transaction that fails takes its events with it.
      const duplicateId = storedEvent(a, 'vehicle.registered', 'v-2', T0, {});
      const [registered] = await eventually(async () => {
        const { ids } = await feedAll(stores, a, 10);
        assert.equal(ids.length, 1);
        return ids;
      });
      duplicateId.id = registered!;
      await assert.rejects(stores.vehicles.insert(vehicle(a, 'v-2'), { from: null, to: 'registered', reason: null, at: T0, by: 'k' }, undefined, [duplicateId]));
      assert.equal(await stores.vehicles.get(a, 'v-2'), undefined);
      assert.equal((await feedAll(stores, a, 10)).ids.length, 1);
    });

    test('the first telemetry records the activation in the same commit', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await register(stores, a, 'v-1');
      const [outcome] = await stores.telemetry.commit(
        [{ organizationId: a, at: T0 + 5, records: [{ vehicleId: 'v-1', timestamp: T0 + 1, data: { speed: 3 } }] }],
        (previous, organizationId, vehicleId, records) => ({ organizationId, vehicleId, timestamp: records.at(-1)!.timestamp, fields: previous?.fields ?? {} }),
      );
      assert.ok(outcome?.ok);
      assert.equal(outcome.events.length, 1);
      const page = await eventually(async () => {
        const read = await stores.events.feed(a, { after: START, limit: 10, types: ['vehicle.status_changed'] });
        assert.equal(eventsOf(read).length, 1);
        return read;
      });
      assert.deepEqual(eventsOf(page).map((e) => [e.id, e.data]), [[outcome.events[0]!.id, { from: 'registered', to: 'active', reason: 'first telemetry', by: 'system' }]]);
    });

    test('the feed gives each event its public envelope: any time, any data', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      // The epoch and its edges, the first and last millisecond of years 0000 and 9999, before
      // 1970, past 9999 (not a time a client can send, yet an envelope must still be right).
      const times = [0, 1, 999, 1000, -1, -999, -1001, T0 + 7, -62167219200000, 253402300799999, 253402300800000, -62198755200000, 8.64e15];
      const recorded = times.map((at, i) => storedEvent(a, 'vehicle.registered', `v-${i}`, at,
        { id: `v-${i}`, text: 'quote " backslash \\ newline \n snowman \u2603 \ud83d\ude9a', nested: { n: [1.5, -0, 1e21, null, true] } }));
      for (const [i, event] of recorded.entries()) {
        assert.equal(await stores.vehicles.insert(vehicle(a, `v-${i}`), { from: null, to: 'registered', reason: null, at: T0, by: 'k' }, undefined, [event]), 'created');
      }
      await eventually(async () => {
        const page = await stores.events.feed(a, { after: START, limit: 100 });
        assert.deepEqual(eventsOf(page), recorded.map((e) => JSON.parse(JSON.stringify(toEnvelope(e))) as EventEnvelope));
      });
    });

    test('pruning: an older cursor is gone, a newer one reads on', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await register(stores, a, 'v-1');
      const first = await eventually(async () => {
        const read = await stores.events.feed(a, { after: START, limit: 1 });
        assert.equal(eventsOf(read).length, 1);
        return read;
      });
      assert.ok(!first.gone);
      await register(stores, a, 'v-2');
      const second = await stores.events.feed(a, { after: first.next, limit: 1 });
      assert.ok(!second.gone);
      await eventually(async () => assert.equal((await feedAll(stores, a, 10)).ids.length, 2));
      assert.equal(await stores.events.prune(Date.now() + 1000, 1), 1);
      assert.deepEqual(await stores.events.feed(a, { after: START, limit: 10 }), { gone: true });
      const later = await stores.events.feed(a, { after: first.next, limit: 10 });
      assert.deepEqual(eventsOf(later).map((e) => e.vehicleId), ['v-2']);
    });

    test('deliveries: fanned out once per matching endpoint, claimed once, completed', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      const b = await addOrganization(stores);
      assert.equal(await stores.webhooks.insert(webhook(a, 'wh_all', ['*']), 10), 'created');
      assert.equal(await stores.webhooks.insert(webhook(a, 'wh_del', ['vehicle.deleted']), 10), 'created');
      assert.equal(await stores.webhooks.insert(webhook(b, 'wh_b', ['*']), 10), 'created');
      assert.equal(await stores.webhooks.insert(webhook(b, 'wh_b2', ['*']), 1), 'quota');
      await register(stores, a, 'v-1');
      await stores.vehicles.delete(a, 'v-1', [newEvent(a, 'vehicle.deleted', 'v-1', T0, {})]);
      await eventually(async () => assert.equal((await feedAll(stores, a, 10)).ids.length, 2));
      const match = (events: Parameters<typeof matchDeliveries>[0], endpoints: Parameters<typeof matchDeliveries>[1]) => matchDeliveries(events, endpoints, T0);
      assert.equal(await stores.webhooks.fanOut(match, 100, T0), 2);
      assert.equal(await stores.webhooks.fanOut(match, 100, T0), 0, 'each event is fanned out once');

      const claimed = await stores.webhooks.claim(T0, T0 + 1000, 10);
      assert.deepEqual(claimed.map((d) => `${d.webhookId} ${d.eventType}`).sort(), ['wh_all vehicle.deleted', 'wh_all vehicle.registered', 'wh_del vehicle.deleted']);
      // Each carries its event's envelope as the feed gives it.
      const envelopes = new Map(eventsOf(await stores.events.feed(a, { after: START, limit: 10 })).map((e) => [e.id, e]));
      for (const d of claimed) assert.deepEqual(JSON.parse(d.payload), envelopes.get(d.eventId), d.id);
      assert.deepEqual(await stores.webhooks.claim(T0, T0 + 1000, 10), [], 'a leased delivery is not claimed again');
      const again = await stores.webhooks.claim(T0 + 1000, T0 + 2000, 10);
      assert.equal(again.length, 3, 'once the lease ran out it is');
      await stores.webhooks.release(again.slice(0, 2).map((d) => d.id));
      assert.deepEqual((await stores.webhooks.claim(T0 + 1000, T0 + 2000, 10)).map((d) => d.id).sort(), again.slice(0, 2).map((d) => d.id).sort(),
        'a delivery given back is claimed again at once, the one still leased is not');

      const [one, two] = claimed;
      await stores.webhooks.complete([
        { seq: one!.seq, id: one!.id, webhookId: one!.webhookId, ok: true, responseStatus: 204, durationMs: 3, error: null, at: T0 + 1, nextAt: null },
        { seq: two!.seq, id: two!.id, webhookId: two!.webhookId, ok: false, responseStatus: 500, durationMs: 4, error: 'answered 500', at: T0 + 1, nextAt: T0 + 5000 },
      ], 1000);
      const done = await stores.webhooks.getDelivery(one!.webhookId, one!.id);
      assert.deepEqual([done?.status, done?.attempt, done?.responseStatus], ['succeeded', 1, 204]);
      const pending = await stores.webhooks.getDelivery(two!.webhookId, two!.id);
      assert.deepEqual([pending?.status, pending?.attempt, pending?.nextAt, pending?.error], ['pending', 1, T0 + 5000, 'answered 500']);
      assert.equal((await stores.webhooks.retryNow(two!.webhookId, two!.id, T0 + 2))?.nextAt, T0 + 2);
    });

    test('claims read on after what the last one took, and still find each delivery that became due again before it', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      assert.equal(await stores.webhooks.insert(webhook(a, 'wh_c', ['*']), 10), 'created');
      // A backlog: eight deliveries due at the same time.
      for (let i = 1; i <= 8; i++) {
        await stores.webhooks.addDelivery({ id: `dlv_${i}`, webhookId: 'wh_c', eventId: `evt_${i}`, eventType: 'webhook.test', payload: '{}', recordedAt: T0 }, T0);
      }
      const claim = async (now: number, limit: number) => (await stores.webhooks.claim(now, now + 1000, limit)).map((d) => d.id);
      assert.deepEqual(await claim(T0, 2), ['dlv_1', 'dlv_2']);
      assert.deepEqual(await claim(T0, 2), ['dlv_3', 'dlv_4'], 'the next claim takes the next ones');
      await stores.webhooks.release(['dlv_1']);
      assert.deepEqual(await claim(T0, 10), ['dlv_1', 'dlv_5', 'dlv_6', 'dlv_7', 'dlv_8'], 'one given back is due again at once, first');
      const seqOf = async (id: string) => (await stores.webhooks.getDelivery('wh_c', id))!.seq;
      // An attempt failed and is due again before the rest (a clock set back): first.
      await stores.webhooks.complete([
        { seq: await seqOf('dlv_3'), id: 'dlv_3', webhookId: 'wh_c', ok: false, responseStatus: 500, durationMs: 1, error: 'answered 500', at: T0, nextAt: T0 - 1 },
      ], 60_000);
      assert.deepEqual(await claim(T0, 10), ['dlv_3']);
      // One that succeeded, sent again by hand: due at once.
      await stores.webhooks.complete([
        { seq: await seqOf('dlv_2'), id: 'dlv_2', webhookId: 'wh_c', ok: true, responseStatus: 204, durationMs: 1, error: null, at: T0, nextAt: null },
      ], 60_000);
      await stores.webhooks.retryNow('wh_c', 'dlv_2', T0 - 1);
      assert.deepEqual(await claim(T0, 10), ['dlv_2']);
      assert.deepEqual(await claim(T0, 10), []);
      // Every lease run out: all eight are due again.
      assert.deepEqual((await claim(T0 + 1000, 10)).sort(), ['dlv_1', 'dlv_2', 'dlv_3', 'dlv_4', 'dlv_5', 'dlv_6', 'dlv_7', 'dlv_8']);
    });

    test('with no endpoint enabled, the log is stepped over; an endpoint made afterwards gets only what comes after it', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      assert.equal(await stores.webhooks.insert({ ...webhook(a, 'wh_off', ['*']), enabled: false }, 10), 'created');
      for (const id of ['v-1', 'v-2', 'v-3']) await register(stores, a, id);
      await eventually(async () => assert.equal((await feedAll(stores, a, 10)).ids.length, 3));
      const match = (events: Parameters<typeof matchDeliveries>[0], endpoints: Parameters<typeof matchDeliveries>[1]) => matchDeliveries(events, endpoints, T0);
      assert.deepEqual([await stores.webhooks.fanOut(match, 2, T0), await stores.webhooks.fanOut(match, 2, T0), await stores.webhooks.fanOut(match, 2, T0)], [2, 1, 0],
        'in steps of the limit, each event once');
      assert.deepEqual(await stores.webhooks.claim(T0, T0 + 1000, 10), []);

      assert.equal(await stores.webhooks.insert(webhook(a, 'wh_on', ['*']), 10), 'created');
      await register(stores, a, 'v-4');
      await eventually(async () => assert.equal((await feedAll(stores, a, 10)).ids.length, 4));
      assert.equal(await stores.webhooks.fanOut(match, 10, T0), 1);
      const claimed = await stores.webhooks.claim(T0, T0 + 1000, 10);
      assert.deepEqual(claimed.map((d) => [d.webhookId, JSON.parse(d.payload).vehicleId]), [['wh_on', 'v-4']]);
    });

    test('claims: the oldest due first; an endpoint disabled after the fan-out gets nothing until enabled again', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      assert.equal(await stores.webhooks.insert(webhook(a, 'wh_1', ['*']), 10), 'created');
      assert.equal(await stores.webhooks.insert(webhook(a, 'wh_2', ['*']), 10), 'created');
      // Due before the fan-out's deliveries: a test delivery, and one failed once and due again.
      await stores.webhooks.addDelivery({ id: 'dlv_old', webhookId: 'wh_2', eventId: 'evt_old', eventType: 'webhook.test', payload: '{}', recordedAt: T0 - 10 }, T0 - 10);
      await stores.webhooks.addDelivery({ id: 'dlv_retry', webhookId: 'wh_1', eventId: 'evt_retry', eventType: 'webhook.test', payload: '{}', recordedAt: T0 - 20 }, T0 - 20);
      const [retry] = await stores.webhooks.claim(T0 - 20, T0 - 15, 1);
      assert.equal(retry?.id, 'dlv_retry');
      await stores.webhooks.complete([
        { seq: retry.seq, id: retry.id, webhookId: 'wh_1', ok: false, responseStatus: 500, durationMs: 1, error: 'answered 500', at: T0 - 19, nextAt: T0 - 5 },
      ], 60_000);
      for (const id of ['v-1', 'v-2']) await register(stores, a, id);
      await eventually(async () => assert.equal((await feedAll(stores, a, 10)).ids.length, 2));
      const match = (events: Parameters<typeof matchDeliveries>[0], endpoints: Parameters<typeof matchDeliveries>[1]) => matchDeliveries(events, endpoints, T0);
      assert.equal(await stores.webhooks.fanOut(match, 10, T0), 2);

      const first = await stores.webhooks.claim(T0, T0 + 1000, 2);
      assert.deepEqual(first.map((d) => [d.id, d.attempt]), [['dlv_old', 0], ['dlv_retry', 1]], 'due longest first');
      assert.equal(first[1]!.error, 'answered 500');
      // wh_2 disabled: its fanned-out delivery stays, unclaimed.
      await stores.webhooks.update(a, 'wh_2', { enabled: false }, T0);
      const second = await stores.webhooks.claim(T0, T0 + 1000, 10);
      assert.deepEqual(second.map((d) => [d.webhookId, JSON.parse(d.payload).vehicleId, d.attempt, d.status]).sort(),
        [['wh_1', 'v-1', 0, 'pending'], ['wh_1', 'v-2', 0, 'pending']]);
      for (const d of second) {
        const stored = await stores.webhooks.getDelivery(d.webhookId, d.id);
        assert.deepEqual({ ...d, url: undefined, secrets: undefined }, { ...stored, url: undefined, secrets: undefined }, 'a claim gives the delivery as stored');
        assert.deepEqual(d.secrets, [webhook(a, 'wh_1', ['*']).secret]);
      }
      assert.deepEqual(await stores.webhooks.claim(T0 + 1, T0 + 1000, 10), []);
      await stores.webhooks.update(a, 'wh_2', { enabled: true }, T0 + 1);
      const third = await stores.webhooks.claim(T0 + 2, T0 + 1000, 10);
      assert.deepEqual(third.map((d) => [d.webhookId, JSON.parse(d.payload).vehicleId]).sort(), [['wh_2', 'v-1'], ['wh_2', 'v-2']]);
    });

    test('an endpoint failing for longer than the limit is disabled; enabling it again forgives', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await stores.webhooks.insert(webhook(a, 'wh_x', ['*']), 10);
      await stores.webhooks.addDelivery({ id: 'dlv_1', webhookId: 'wh_x', eventId: 'evt_1', eventType: 'webhook.test', payload: '{}', recordedAt: T0 }, T0);
      const { seq } = (await stores.webhooks.getDelivery('wh_x', 'dlv_1'))!;
      const fail = (at: number) => ({ seq, id: 'dlv_1', webhookId: 'wh_x', ok: false, responseStatus: null, durationMs: 1, error: 'ECONNREFUSED', at, nextAt: at + 1 });
      await stores.webhooks.complete([fail(T0)], 10_000);
      assert.equal((await stores.webhooks.get(a, 'wh_x'))?.enabled, true);
      await stores.webhooks.complete([fail(T0 + 10_000)], 10_000);
      const disabled = await stores.webhooks.get(a, 'wh_x');
      assert.equal(disabled?.enabled, false);
      assert.match(disabled?.disabledReason ?? '', /failed/);
      assert.deepEqual(await stores.webhooks.claim(T0 + 20_000, T0 + 30_000, 10), [], 'a disabled endpoint gets no attempts');
      const enabled = await stores.webhooks.update(a, 'wh_x', { enabled: true }, T0 + 20_000);
      assert.deepEqual([enabled?.enabled, enabled?.disabledReason, enabled?.failingSince], [true, null, null]);
      assert.equal(await stores.webhooks.get(b(a), 'wh_x'), undefined, 'another organization does not see it');
      // Failures of this process (its outbound thread), not of the endpoint, are recorded, and
      // neither start a run of failures nor extend one to disabling.
      await stores.webhooks.complete([{ ...fail(T0 + 20_000), local: true }], 10_000);
      await stores.webhooks.complete([{ ...fail(T0 + 40_000), local: true }], 10_000);
      const spared = await stores.webhooks.get(a, 'wh_x');
      assert.deepEqual([spared?.enabled, spared?.failingSince], [true, null]);
      const recorded = await stores.webhooks.getDelivery('wh_x', 'dlv_1');
      assert.deepEqual([recorded?.status, recorded?.attempt, recorded?.error], ['pending', 4, 'ECONNREFUSED']);
      await stores.webhooks.complete([fail(T0 + 50_000)], 10_000);
      await stores.webhooks.complete([{ ...fail(T0 + 70_000), local: true }], 10_000);
      const failing = await stores.webhooks.get(a, 'wh_x');
      assert.deepEqual([failing?.enabled, failing?.failingSince], [true, T0 + 50_000], 'a failure here after one of the endpoint does not disable it either');
    });
  });
}

const b = (organizationId: string) => `${organizationId}-other`;
