// Webhooks through the whole stack against real local receivers (docs/API.md "Webhooks"): signed
// deliveries checked with the `standardwebhooks` package, retries with backoff, rotation, tests,
// the deliveries log, auto-disable, and the outbound address checks.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { checkedLookup, createOutbound } from '../src/webhooks/outbound.ts';
import { forbiddenAddress } from '../src/webhooks/addresses.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { type Received, startReceiver } from './helpers/receiver.ts';

const FAST = { retryDelaysMs: [50, 100], jitter: 0, pollMs: 50 };

function verify(secret: string, r: Received) {
  return new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { id: string; type: string };
}

describe('deliveries to a local receiver', () => {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' }, webhooks: FAST });
  });
  after(() => ctx.close());

  test('each subscribed event arrives signed, with the envelope of the feed; others do not', async () => {
    const receiver = await startReceiver();
    try {
      const created = await ctx.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['vehicle.status_changed'], description: 'ops' } });
      assert.equal(created.statusCode, 201, created.body);
      const webhook = created.json();
      assert.match(webhook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(created.headers.location, `/v2/webhooks/${webhook.id}`);
      assert.equal(created.headers['cache-control'], 'no-store');
      assert.equal((await ctx.request('GET', `/v2/webhooks/${webhook.id}`)).json().secret, undefined, 'GET never returns the secret');

      await ctx.registerVehicle('wh-1');
      await ctx.request('PUT', '/v2/fleet/vehicles/wh-1/status', { body: { status: 'maintenance' } });
      await receiver.waitFor(() => receiver.received.length >= 1);
      const got = verify(webhook.secret, receiver.received[0]!);
      assert.equal(got.type, 'vehicle.status_changed');
      assert.equal(receiver.received[0]!.headers['webhook-id'], got.id);
      assert.equal(receiver.received[0]!.headers['content-type'], 'application/json');
      const inFeed = (await ctx.request('GET', '/v2/events', { query: { types: 'vehicle.status_changed', vehicleId: 'wh-1' } })).json().events;
      assert.deepEqual(JSON.parse(receiver.received[0]!.body), inFeed[0]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(receiver.received.length, 1, 'vehicle.registered was not subscribed to');

      const log = await ctx.request('GET', `/v2/webhooks/${webhook.id}/deliveries`);
      const [delivery] = log.json().deliveries;
      assert.deepEqual([delivery.status, delivery.attempt, delivery.responseStatus, delivery.eventId], ['succeeded', 1, 204, got.id]);

      const metrics = (await ctx.request('GET', '/metrics')).body;
      assert.match(metrics, /fleet_events_total\{type="vehicle.status_changed"\} [1-9]/);
      assert.match(metrics, /fleet_webhook_deliveries_total\{outcome="succeeded"\} [1-9]/);
      assert.match(metrics, /fleet_webhook_delivery_duration_seconds_count [1-9]/);
    } finally {
      await receiver.close();
    }
  });

  test('a receiver down for a while, then back, gets every event (same id on every attempt)', async () => {
    let down = true;
    const receiver = await startReceiver(() => ({ status: down ? 503 : 200 }));
    try {
      const webhook = (await ctx.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['*'] } })).json();
      for (let i = 0; i < 5; i++) await ctx.registerVehicle(`down-${i}`);
      await receiver.waitFor(() => receiver.received.length >= 10, 10_000, 'failed attempts');
      down = false;
      const delivered = () => new Set(receiver.received.filter((r) => r.status === 200 && r.body.includes('"down-')).map((r) => verify(webhook.secret, r).id));
      await receiver.waitFor(() => delivered().size === 5, 20_000, 'every event answered 200');
      const failedIds = new Set(receiver.received.filter((r) => r.status === 503).map((r) => String(r.headers['webhook-id'])));
      assert.ok([...delivered()].some((id) => failedIds.has(id)), 'an event that failed was delivered later under the same id');
      // The log says each succeeded, after more than one attempt for those that failed first.
      const until = Date.now() + 10_000;
      let mine: { eventId: string; status: string; attempt: number }[] = [];
      do {
        await new Promise((resolve) => setTimeout(resolve, 25));
        const log = (await ctx.request('GET', `/v2/webhooks/${webhook.id}/deliveries`, { query: { limit: '100' } })).json().deliveries;
        mine = log.filter((d: { eventId: string }) => delivered().has(d.eventId));
      } while (mine.some((d) => d.status !== 'succeeded') && Date.now() < until);
      assert.equal(mine.length, 5);
      assert.ok(mine.every((d) => d.status === 'succeeded'));
      assert.ok(mine.filter((d) => failedIds.has(d.eventId)).every((d) => d.attempt >= 2));
    } finally {
      await receiver.close();
    }
  });

  test('rotation: both signatures for a day; test events; manual retry; deliveries paged', async () => {
    const receiver = await startReceiver();
    try {
      const webhook = (await ctx.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['*'] } })).json();
      const rotated = await ctx.request('POST', `/v2/webhooks/${webhook.id}/rotate-secret`);
      assert.equal(rotated.statusCode, 200);
      assert.equal(rotated.headers['cache-control'], 'no-store');
      const { secret } = rotated.json();
      assert.notEqual(secret, webhook.secret);
      const tested = await ctx.request('POST', `/v2/webhooks/${webhook.id}/test`);
      assert.equal(tested.statusCode, 202, tested.body);
      await receiver.waitFor(() => receiver.received.length >= 1);
      const r = receiver.received[0]!;
      assert.equal(String(r.headers['webhook-signature']).split(' ').length, 2);
      assert.equal(verify(secret, r).type, 'webhook.test');
      assert.equal(verify(webhook.secret, r).type, 'webhook.test');
      assert.equal(JSON.parse(r.body).vehicleId, undefined);
      const feed = (await ctx.request('GET', '/v2/events', { query: { limit: '1000' } })).json().events;
      assert.ok(!feed.some((e: { type: string }) => e.type === 'webhook.test'), 'test events are not in the feed');

      const retried = await ctx.request('POST', `/v2/webhooks/${webhook.id}/deliveries/${tested.json().id}/retry`);
      assert.equal(retried.statusCode, 202);
      await receiver.waitFor(() => receiver.received.length >= 2);
      assert.equal(receiver.received[1]!.headers['webhook-id'], r.headers['webhook-id']);

      for (let i = 0; i < 3; i++) await ctx.request('POST', `/v2/webhooks/${webhook.id}/test`);
      await receiver.waitFor(() => receiver.received.length >= 5);
      const seen: string[] = [];
      let after: string | null | undefined;
      do {
        const page = (await ctx.request('GET', `/v2/webhooks/${webhook.id}/deliveries`, { query: { limit: '2', ...(after ? { after } : {}) } })).json();
        seen.push(...page.deliveries.map((d: { id: string }) => d.id));
        after = page.nextCursor;
      } while (after !== null);
      assert.equal(seen.length, 4);
      assert.equal(new Set(seen).size, 4);
      assert.equal((await ctx.request('POST', `/v2/webhooks/${webhook.id}/deliveries/dlv_nope/retry`)).statusCode, 404);
    } finally {
      await receiver.close();
    }
  });

  test('redirects are not followed; an endpoint failing past the limit is disabled and enabled again by PATCH', async () => {
    const target = await startReceiver();
    const receiver = await startReceiver(() => ({ status: 302, headers: { location: target.url } }));
    const app = await createTestApp({ env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' }, webhooks: { ...FAST, retryDelaysMs: [20], disableAfterMs: 300 } });
    try {
      const webhook = (await app.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['*'] } })).json();
      await app.registerVehicle('redirect-1');
      // At least two attempts: the endpoint is disabled by a failure 300 ms or more after its
      // first (which may itself take that long while the outbound thread starts).
      await receiver.waitFor(() => receiver.received.length >= 2);
      assert.equal(target.received.length, 0, 'the redirect was not followed');
      const log = (await app.request('GET', `/v2/webhooks/${webhook.id}/deliveries`)).json().deliveries;
      assert.match(log[0].error, /redirect/);
      const until = Date.now() + 10_000;
      let state = (await app.request('GET', `/v2/webhooks/${webhook.id}`)).json();
      while (state.enabled && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        state = (await app.request('GET', `/v2/webhooks/${webhook.id}`)).json();
      }
      assert.equal(state.enabled, false);
      assert.match(state.disabledReason, /failed/);
      const enabled = await app.request('PATCH', `/v2/webhooks/${webhook.id}`, { body: { enabled: true } });
      assert.deepEqual([enabled.json().enabled, enabled.json().disabledReason], [true, null]);
    } finally {
      await app.close();
      await receiver.close();
      await target.close();
    }
  });
});

describe('outbound safety (private targets refused)', () => {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ webhooks: FAST });
  });
  after(() => ctx.close());

  test('creation refuses loopback, private, link-local, IPv6 and mapped forms, names resolving to loopback; nothing stored', async () => {
    for (const url of [
      'http://127.0.0.1/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data', 'http://[::1]/x', 'http://[::ffff:127.0.0.1]/x',
      'http://[::ffff:7f00:1]/x', 'http://192.168.1.1/x', 'http://[fd00::1]/x', 'http://[fe80::1]/x', 'http://localhost:8080/x', 'http://0.0.0.0/x',
      'ftp://example.com/x', 'not a url', 'https://user:pass@example.com/x', 'javascript:alert(1)',
    ]) {
      const res = await ctx.request('POST', '/v2/webhooks', { body: { url, eventTypes: ['*'] } });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.equal(res.json().errors[0].path, '/url');
    }
    for (const body of [
      { url: 'https://example.com/x', eventTypes: ['vehicle.exploded'] }, { url: 'https://example.com/x', eventTypes: [] },
      { url: 'https://example.com/x', eventTypes: ['webhook.test'] }, { url: 'https://example.com/x', eventTypes: ['*'], description: 'x'.repeat(501) },
      { url: 'https://example.com/x', eventTypes: ['*'], secret: 'whsec_mine' }, { url: 'https://example.com/' + 'x'.repeat(2100), eventTypes: ['*'] },
    ]) {
      const res = await ctx.request('POST', '/v2/webhooks', { body });
      assert.equal(res.statusCode, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.body}`);
    }
    assert.equal((await ctx.request('GET', '/v2/webhooks')).json().total, 0);
  });

  test('every address check: IPv4, IPv6, mapped (all of them), NAT64, 6to4; public ones pass', () => {
    for (const a of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.64.0.1', '224.0.0.1', '0.0.0.0',
      '::1', '::', 'fc00::1', 'fd12::1', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:7f00:1::1', '::127.0.0.1', '::ffff:8.8.8.8']) {
      assert.ok(forbiddenAddress(a) !== undefined, a);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1:248:1893:25c8:1946']) assert.equal(forbiddenAddress(a), undefined, a);
  });

  test('at delivery: a name resolving to loopback and a literal private address are refused before connecting', async () => {
    const receiver = await startReceiver();
    const outbound = createOutbound({ allowPrivate: false, timeoutMs: 2000 });
    try {
      for (const url of [receiver.url, `http://localhost:${receiver.port}/hook`, `http://[::ffff:127.0.0.1]:${receiver.port}/hook`]) {
        const result = await outbound.post(url, { 'content-type': 'application/json' }, '{}');
        assert.equal(result.ok, false, url);
        assert.match(String(result.error), /refused/, `${url}: ${result.error}`);
      }
      assert.equal(receiver.received.length, 0, 'nothing reached the receiver');
      const lookedUp = await new Promise<Error | null>((resolve) => checkedLookup(false)('localhost', {}, (error) => resolve(error)));
      assert.match(String(lookedUp?.message), /resolves to/);
    } finally {
      await outbound.close();
      await receiver.close();
    }
  });

  test('a webhook stored before the address turned private is refused at delivery, and logged as such', async () => {
    const receiver = await startReceiver();
    try {
      // Stored straight into the store, as if its name had resolved to a public address then.
      const now = Date.now();
      await ctx.stores.webhooks.insert({
        id: 'wh_rebound', organizationId: ctx.organizationId, url: receiver.url, eventTypes: ['*'], description: null, enabled: true,
        disabledReason: null, secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmU=', previousSecret: null, previousSecretUntil: null,
        failingSince: null, createdAt: now, updatedAt: now,
      }, 10);
      await ctx.registerVehicle('rebound-1');
      const until = Date.now() + 10_000;
      let log: { error: string | null; attempt: number }[] = [];
      while (Date.now() < until && (log[0]?.attempt ?? 0) < 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        log = (await ctx.request('GET', '/v2/webhooks/wh_rebound/deliveries')).json().deliveries;
      }
      assert.match(String(log[0]?.error), /refused/);
      assert.equal(receiver.received.length, 0);
    } finally {
      await receiver.close();
    }
  });
});
