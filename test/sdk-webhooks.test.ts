// The SDK's webhook verification (WebCrypto) judged two ways: against the reference
// implementation of Standard Webhooks (the `standardwebhooks` package) on signed payloads, good and
// bad, and against real deliveries of the service to a local receiver, before and after a rotation.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { WebhookVerificationError, createFleetClient, ok, verifyWebhook, type FleetClient } from '../sdk/src/index.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/oauth.ts';
import { startReceiver } from './helpers/receiver.ts';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const payload = JSON.stringify({ id: 'evt_1', type: 'vehicle.deleted', occurredAt: '2026-11-25T08:30:00.000Z', vehicleId: 'van-1', data: {} });

/** Headers of a delivery signed by the reference implementation, with one secret or several. */
function signed(secrets: string[], body = payload, at = new Date(), id = 'evt_1') {
  const signature = secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
}

/** The reference implementation's verdict on the same input. */
function referenceAccepts(secret: string, body: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    return error.reason;
  }
  return 'accepted';
}

describe('against the standardwebhooks package', () => {
  const secret = newSecret();

  test('a good signature: the event is answered; Headers, Node headers, bytes and text alike', async () => {
    const headers = signed([secret]);
    assert.ok(referenceAccepts(secret, payload, headers));
    const event = await verifyWebhook({ payload, headers, secret });
    assert.equal(event.type, 'vehicle.deleted');
    assert.deepEqual(await verifyWebhook({ payload: new TextEncoder().encode(payload), headers: new Headers(headers), secret }), event);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), [v]]));
    assert.deepEqual(await verifyWebhook({ payload, headers: upper, secret }), event, 'any case, arrays of values');
  });

  test('tampered body, id or timestamp, or another secret: refused, as by the reference', async () => {
    const headers = signed([secret]);
    const cases: Array<[string, string, Record<string, string>, string]> = [
      ['body', payload.replace('van-1', 'van-2'), headers, secret],
      ['id', payload, { ...headers, 'webhook-id': 'evt_2' }, secret],
      ['timestamp', payload, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }, secret],
      ['signature', payload, { ...headers, 'webhook-signature': headers['webhook-signature'].replace(/,(.)/, (_, c: string) => `,${c === 'A' ? 'B' : 'A'}`) }, secret],
      ['secret', payload, headers, newSecret()],
      ['version', payload, { ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }, secret],
    ];
    for (const [what, body, h, key] of cases) {
      assert.equal(referenceAccepts(key, body, h), false, `the reference accepts a changed ${what}`);
      assert.equal(await rejection(verifyWebhook({ payload: body, headers: h, secret: key })), 'no-matching-signature', what);
    }
  });

  test('expired or from the future beyond the tolerance: refused; within it: accepted', async () => {
    const old = signed([secret], payload, new Date(Date.now() - 6 * 60_000));
    assert.equal(referenceAccepts(secret, payload, old), false);
    assert.equal(await rejection(verifyWebhook({ payload, headers: old, secret })), 'timestamp-too-old');
    const future = signed([secret], payload, new Date(Date.now() + 6 * 60_000));
    assert.equal(referenceAccepts(secret, payload, future), false);
    assert.equal(await rejection(verifyWebhook({ payload, headers: future, secret })), 'timestamp-too-new');
    const recent = signed([secret], payload, new Date(Date.now() - 4 * 60_000));
    assert.ok(referenceAccepts(secret, payload, recent));
    assert.equal((await verifyWebhook({ payload, headers: recent, secret })).id, 'evt_1');
    assert.equal(await rejection(verifyWebhook({ payload, headers: recent, secret, toleranceSeconds: 60 })), 'timestamp-too-old');
    const replayedLater = Date.now() + 10 * 60_000;
    assert.equal(await rejection(verifyWebhook({ payload, headers: signed([secret]), secret, now: replayedLater })), 'timestamp-too-old');
  });

  test('rotation: two signatures, either secret verifies; a receiver may hold both', async () => {
    const previous = newSecret();
    const headers = signed([previous, secret]);
    for (const key of [previous, secret]) {
      assert.ok(referenceAccepts(key, payload, headers));
      assert.equal((await verifyWebhook({ payload, headers, secret: key })).id, 'evt_1');
    }
    assert.equal((await verifyWebhook({ payload, headers: signed([secret]), secret: [previous, secret] })).id, 'evt_1');
    assert.equal(await rejection(verifyWebhook({ payload, headers, secret: [newSecret(), newSecret()] })), 'no-matching-signature');
  });

  test('missing headers, a malformed timestamp or secret: refused with the reason', async () => {
    const headers = signed([secret]);
    const unsigned: Record<string, string> = { ...headers };
    delete unsigned['webhook-signature'];
    assert.equal(await rejection(verifyWebhook({ payload, headers: unsigned, secret })), 'missing-header');
    assert.equal(await rejection(verifyWebhook({ payload, headers: { ...headers, 'webhook-timestamp': 'yesterday' }, secret })), 'invalid-timestamp');
    assert.equal(await rejection(verifyWebhook({ payload, headers, secret: 'whsec_' })), 'invalid-secret');
    assert.equal(await rejection(verifyWebhook({ payload, headers, secret: 'whsec_***' })), 'invalid-secret');
  });
});

describe('against real deliveries of the service', () => {
  let ctx: TestApp;
  let fleet: FleetClient;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    ctx = await createTestApp({
      env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' },
      webhooks: { retryDelaysMs: [50, 100], jitter: 0, pollMs: 50 },
    });
    const port = await freePort();
    await ctx.app.listen({ host: '127.0.0.1', port });
    fleet = createFleetClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: ctx.adminKey });
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await ctx.close();
  });

  test('deliveries verify with the endpoint secret, before and after a rotation; a changed one does not', async () => {
    const webhook = ok(await fleet.POST('/v2/webhooks', { body: { url: receiver.url, eventTypes: ['vehicle.status_changed'] } }));
    await ctx.registerVehicle('hooked');
    ok(await fleet.PUT('/v2/fleet/vehicles/{id}/status', { params: { path: { id: 'hooked' } }, body: { status: 'maintenance', reason: 'tyres' } }));
    await receiver.waitFor(() => receiver.received.length >= 1);
    const first = receiver.received[0]!;
    const event = await verifyWebhook({ payload: first.body, headers: first.headers, secret: webhook.secret });
    assert.equal(event.type, 'vehicle.status_changed');
    assert.equal(event.id, first.headers['webhook-id']);
    assert.deepEqual(event.data, { from: 'registered', to: 'maintenance', reason: 'tyres', by: event.data.by });
    assert.equal(await rejection(verifyWebhook({ payload: first.body.replace('tyres', 'brakes'), headers: first.headers, secret: webhook.secret })),
      'no-matching-signature');

    const { secret: rotated } = ok(await fleet.POST('/v2/webhooks/{id}/rotate-secret', { params: { path: { id: webhook.id } } }));
    ok(await fleet.POST('/v2/webhooks/{id}/test', { params: { path: { id: webhook.id } } }));
    await receiver.waitFor(() => receiver.received.length >= 2);
    const second = receiver.received[1]!;
    assert.equal(String(second.headers['webhook-signature']).split(' ').length, 2, 'old and new signature');
    for (const secret of [webhook.secret, rotated]) {
      assert.equal((await verifyWebhook({ payload: second.body, headers: second.headers, secret })).type, 'webhook.test');
      assert.ok(referenceAccepts(secret, second.body, second.headers as Record<string, string>));
    }
    assert.equal(await rejection(verifyWebhook({ payload: second.body, headers: second.headers, secret: newSecret() })), 'no-matching-signature');
    // The first delivery predates the rotation: only the old secret signed it.
    assert.equal(await rejection(verifyWebhook({ payload: first.body, headers: first.headers, secret: rotated })), 'no-matching-signature');
  });
});
