// A delivery's attempts, held to one contract on every backend: each result recorded is an
// attempt of its delivery, numbered from 1, read newest first and paged, with failures of this
// process recorded too; attempts go with their delivery (retention, the endpoint deleted), and a
// result for a delivery gone meanwhile records nothing and fails nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Stores } from '../../src/storage/stores.ts';
import type { AttemptResult, WebhookRecord } from '../../src/webhooks/store.ts';
import { type MakeStores, T0, addOrganization, freshStores } from './fixtures.ts';

const webhook = (organizationId: string, id: string): WebhookRecord => ({
  id, organizationId, url: 'https://hooks.example.com/x', eventTypes: ['*'], description: null, enabled: true, disabledReason: null,
  secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmU=', previousSecret: null, previousSecretUntil: null, failingSince: null,
  createdAt: T0, updatedAt: T0,
});

/** A delivery of `webhookId` with id `id`; its seq. */
async function addDelivery(stores: Stores, webhookId: string, id: string, recordedAt = T0): Promise<number> {
  await stores.webhooks.addDelivery({ id, webhookId, eventId: `evt_${id}`, eventType: 'webhook.test', payload: '{}', recordedAt }, recordedAt);
  return (await stores.webhooks.getDelivery(webhookId, id))!.seq;
}

function result(seq: number, id: string, webhookId: string, at: number, outcome: Partial<AttemptResult> = {}): AttemptResult {
  return { seq, id, webhookId, ok: false, responseStatus: 503, durationMs: 7, error: 'The receiver answered 503', at, nextAt: at + 1000, ...outcome };
}

export function webhookAttemptsContract(name: string, makeStores: MakeStores): void {
  describe(`WebhookStore attempts contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    test('every recorded result is an attempt of its delivery, newest first, paged by number', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await stores.webhooks.insert(webhook(a, 'wh_a'), 10);
      const one = await addDelivery(stores, 'wh_a', 'dlv_one');
      const other = await addDelivery(stores, 'wh_a', 'dlv_other');
      assert.deepEqual(await stores.webhooks.attempts(one, undefined, 10), [], 'none before the first attempt');

      // One batch with results of two deliveries, then one each: as the worker records them.
      await stores.webhooks.complete([
        result(one, 'dlv_one', 'wh_a', T0 + 1, { responseStatus: null, durationMs: 0, error: 'the outbound thread stopped', local: true }),
        result(other, 'dlv_other', 'wh_a', T0 + 2, { ok: true, responseStatus: 204, error: null, nextAt: null }),
      ], 86_400_000);
      await stores.webhooks.complete([result(one, 'dlv_one', 'wh_a', T0 + 10)], 86_400_000);
      await stores.webhooks.complete([result(one, 'dlv_one', 'wh_a', T0 + 20, { ok: true, responseStatus: 200, durationMs: 12, error: null, nextAt: null })], 86_400_000);

      assert.deepEqual(await stores.webhooks.attempts(one, undefined, 10), [
        { attempt: 3, at: T0 + 20, responseStatus: 200, durationMs: 12, error: null, ok: true },
        { attempt: 2, at: T0 + 10, responseStatus: 503, durationMs: 7, error: 'The receiver answered 503', ok: false },
        { attempt: 1, at: T0 + 1, responseStatus: null, durationMs: 0, error: 'the outbound thread stopped', ok: false },
      ]);
      assert.equal((await stores.webhooks.getDelivery('wh_a', 'dlv_one'))?.attempt, 3, 'the delivery counts the same attempts');
      assert.deepEqual((await stores.webhooks.attempts(one, undefined, 2)).map((x) => x.attempt), [3, 2]);
      assert.deepEqual((await stores.webhooks.attempts(one, 2, 2)).map((x) => x.attempt), [1]);
      assert.deepEqual(await stores.webhooks.attempts(one, 1, 2), []);
      assert.deepEqual(await stores.webhooks.attempts(other, undefined, 10), [
        { attempt: 1, at: T0 + 2, responseStatus: 204, durationMs: 7, error: null, ok: true },
      ]);

      // A manual retry goes on counting.
      await stores.webhooks.retryNow('wh_a', 'dlv_other', T0 + 30);
      await stores.webhooks.complete([result(other, 'dlv_other', 'wh_a', T0 + 31)], 86_400_000);
      assert.deepEqual((await stores.webhooks.attempts(other, undefined, 10)).map((x) => [x.attempt, x.ok]), [[2, false], [1, true]]);
    });

    test('a delivery retried by hand while an attempt is under way: that attempt is recorded, and the delivery stays due', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await stores.webhooks.insert(webhook(a, 'wh_a'), 10);
      const seq = await addDelivery(stores, 'wh_a', 'dlv_one');
      const [claimed] = await stores.webhooks.claim(T0 + 1, T0 + 30_001, 10);
      assert.equal(claimed?.id, 'dlv_one');
      // The retry comes while the claimed attempt is under way; then that attempt's result.
      await stores.webhooks.retryNow('wh_a', 'dlv_one', T0 + 5);
      await stores.webhooks.complete([result(seq, 'dlv_one', 'wh_a', T0 + 1, { ok: true, responseStatus: 204, error: null, nextAt: null })], 86_400_000);
      const after = await stores.webhooks.getDelivery('wh_a', 'dlv_one');
      assert.equal(after?.status, 'pending', 'the retry is not lost');
      assert.equal(after?.nextAt, T0 + 5);
      assert.equal(after?.attempt, 1);
      assert.deepEqual((await stores.webhooks.attempts(seq, undefined, 10)).map((x) => [x.attempt, x.ok, x.responseStatus]), [[1, true, 204]]);
      // The retry's own attempt is claimed and recorded as usual.
      const again = await stores.webhooks.claim(T0 + 6, T0 + 30_006, 10);
      assert.deepEqual(again.map((d) => d.id), ['dlv_one']);
      await stores.webhooks.complete([result(seq, 'dlv_one', 'wh_a', T0 + 6, { ok: true, responseStatus: 200, error: null, nextAt: null })], 86_400_000);
      assert.equal((await stores.webhooks.getDelivery('wh_a', 'dlv_one'))?.status, 'succeeded');
      assert.deepEqual((await stores.webhooks.attempts(seq, undefined, 10)).map((x) => x.attempt), [2, 1]);
      assert.deepEqual(await stores.webhooks.claim(T0 + 7, T0 + 30_007, 10), [], 'nothing left due');
    });

    test('attempts go with their delivery: retention, and the endpoint deleted; a result for a delivery gone records nothing', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await stores.webhooks.insert(webhook(a, 'wh_a'), 10);
      await stores.webhooks.insert(webhook(a, 'wh_b'), 10);
      const old = await addDelivery(stores, 'wh_a', 'dlv_old', T0);
      const recent = await addDelivery(stores, 'wh_a', 'dlv_recent', T0 + 60_000);
      const other = await addDelivery(stores, 'wh_b', 'dlv_b', T0);
      const done = { ok: true, responseStatus: 204, error: null, nextAt: null };
      await stores.webhooks.complete([
        result(old, 'dlv_old', 'wh_a', T0 + 1, done), result(recent, 'dlv_recent', 'wh_a', T0 + 60_001, done), result(other, 'dlv_b', 'wh_b', T0 + 1, done),
      ], 86_400_000);

      assert.equal(await stores.webhooks.prune(T0 + 30_000, 100), 2, 'the two older deliveries');
      assert.deepEqual(await stores.webhooks.attempts(old, undefined, 10), [], 'pruned with its delivery');
      assert.deepEqual(await stores.webhooks.attempts(other, undefined, 10), []);
      assert.equal((await stores.webhooks.attempts(recent, undefined, 10)).length, 1, 'a kept delivery keeps its attempts');

      assert.equal(await stores.webhooks.delete(a, 'wh_a'), true);
      assert.deepEqual(await stores.webhooks.attempts(recent, undefined, 10), [], 'deleted with its endpoint');
      // The endpoint was deleted during the attempt: its result finds nothing, and the batch's
      // other results are recorded.
      await stores.webhooks.insert(webhook(a, 'wh_c'), 10);
      const live = await addDelivery(stores, 'wh_c', 'dlv_c');
      await stores.webhooks.complete([result(recent, 'dlv_recent', 'wh_a', T0 + 70_000), result(live, 'dlv_c', 'wh_c', T0 + 70_000)], 86_400_000);
      assert.deepEqual(await stores.webhooks.attempts(recent, undefined, 10), []);
      assert.deepEqual((await stores.webhooks.attempts(live, undefined, 10)).map((x) => x.attempt), [1]);
    });
  });
}
