// A delivery's attempts through the whole stack, on both stores (docs/API.md "Webhooks"): a
// receiver that fails once and then takes the delivery leaves two attempts, newest first and
// cursor-paged; another organization's webhook or delivery answers 404 as a missing one does.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { startReceiver } from './helpers/receiver.ts';

const FAST = { retryDelaysMs: [50], jitter: 0, pollMs: 50 };
const skipPostgres = await skipUnlessPostgres();

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`webhook delivery attempts: ${backend}`, { skip: backend === 'postgres' ? skipPostgres : false }, () => {
    let ctx: TestApp;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let webhookId: string;
    let deliveryId: string;
    before(async () => {
      ctx = await createTestApp({ backend, env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' }, webhooks: FAST });
      let answered = 0;
      receiver = await startReceiver(() => ({ status: ++answered === 1 ? 503 : 204 }));
      webhookId = (await ctx.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['*'] } })).json().id;
      deliveryId = (await ctx.request('POST', `/v2/webhooks/${webhookId}/test`)).json().id;
      await receiver.waitFor(() => receiver.received.length >= 2);
      const until = Date.now() + 10_000;
      while ((await ctx.request('GET', `/v2/webhooks/${webhookId}/deliveries`)).json().deliveries[0].status !== 'succeeded') {
        assert.ok(Date.now() < until, 'the second attempt is recorded');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    after(async () => {
      await ctx.close();
      await receiver.close();
    });

    const attemptsOf = (query: Record<string, string> = {}, key?: string, webhook = webhookId, delivery = deliveryId) =>
      ctx.request('GET', `/v2/webhooks/${webhook}/deliveries/${delivery}/attempts`, { query, key });

    test('every attempt, newest first, as the receiver answered it', async () => {
      const res = await attemptsOf();
      assert.equal(res.statusCode, 200, res.body);
      const { attempts, nextCursor } = res.json();
      assert.equal(nextCursor, null);
      // At least once: a delivery may be sent again, so the count is the delivery's, not fixed.
      const [delivery] = (await ctx.request('GET', `/v2/webhooks/${webhookId}/deliveries`)).json().deliveries;
      assert.ok(delivery.attempt >= 2);
      assert.deepEqual(attempts.map((a: { attempt: number }) => a.attempt), Array.from({ length: delivery.attempt }, (_, i) => delivery.attempt - i));
      assert.deepEqual([attempts[0].status, attempts[0].responseStatus, attempts[0].error, attempts[0].at], ['succeeded', 204, null, delivery.at],
        'the newest is the delivery\'s last attempt');
      assert.deepEqual([attempts.at(-1).status, attempts.at(-1).responseStatus, attempts.at(-1).error],
        ['failed', 503, 'The receiver answered 503 Service Unavailable; a 2xx was expected']);
      for (const [i, a] of attempts.entries()) {
        assert.equal(a.status, a.responseStatus === 204 ? 'succeeded' : 'failed', JSON.stringify(a));
        assert.ok(Number.isInteger(a.durationMs) && a.durationMs >= 0, JSON.stringify(a));
        assert.equal(new Date(a.at).toISOString(), a.at);
        if (i > 0) assert.ok(attempts[i - 1].at >= a.at, 'newest first');
      }
    });

    test('cursor-paged: one a page, then none; a cursor of another list is refused', async () => {
      const all = (await attemptsOf()).json().attempts.map((a: { attempt: number }) => a.attempt);
      const paged: number[] = [];
      let after: string | undefined;
      for (let page = 0; page <= all.length; page++) {
        const body = (await attemptsOf({ limit: '1', ...(after === undefined ? {} : { after }) })).json();
        paged.push(...body.attempts.map((a: { attempt: number }) => a.attempt));
        if (body.nextCursor === null) break;
        after = body.nextCursor;
      }
      assert.deepEqual(paged, all, 'one a page, each once, the last page without a cursor');
      const deliveriesCursor = Buffer.from('d:1').toString('base64url');
      for (const after of [deliveriesCursor, 'bm9wZQ', 'a:1']) {
        const res = await attemptsOf({ after });
        assert.equal(res.statusCode, 400, `${after}: ${res.body}`);
        assert.equal(res.json().errors[0].path, '/after');
      }
    });

    test('404 for a delivery of no webhook of this organization; 403 without the webhooks scope', async () => {
      const missing = await attemptsOf({}, undefined, webhookId, 'dlv_nothere');
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().code, 'delivery-not-found');
      const other = await ctx.otherOrganization();
      const foreign = await attemptsOf({}, other.key);
      assert.equal(foreign.statusCode, 404, 'another organization\'s webhook');
      assert.equal(foreign.json().code, 'webhook-not-found');
      // The other organization's own webhook, asked for this delivery.
      const theirs = (await ctx.request('POST', '/v2/webhooks', { key: other.key, body: { url: receiver.url, eventTypes: ['*'], enabled: false } })).json();
      const crossed = await attemptsOf({}, other.key, theirs.id, deliveryId);
      assert.equal(crossed.statusCode, 404, crossed.body);
      assert.equal(crossed.json().code, 'delivery-not-found');
      const reader = await ctx.keyWith(['fleet:read', 'events:read']);
      assert.equal((await attemptsOf({}, reader)).statusCode, 403);
    });
  });
}
