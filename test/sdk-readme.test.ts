// One flow written from sdk/README.md alone, the way a newcomer would: import the package by name,
// create a client, register a vehicle, send telemetry, list vehicles, follow the events feed,
// watch a live stream, and receive and verify a real webhook delivery with the README's receiver.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createFleetClient, FleetApiError, ok, verifyWebhook, WebhookVerificationError, type FleetEvent, type StreamMessage } from '@fleet/sdk';
import { createStreamApp, type StreamApp } from './helpers/streams.ts';

let service: StreamApp;
before(async () => {
  service = await createStreamApp({ env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
after(() => service.close());

test('the README flow, start to end', async () => {
  // Create a client
  const fleet = createFleetClient({ baseUrl: service.publicUrl, apiKey: service.adminKey });

  // Calls: a missing vehicle is an error with its problem
  const { data: missing, error } = await fleet.GET('/v2/fleet/vehicles/{id}', { params: { path: { id: 'van-042' } } });
  assert.equal(missing, undefined);
  assert.equal(error?.status, 404);
  assert.equal(error?.code, 'vehicle-not-found');
  assert.throws(
    () => ok({ data: missing, error, response: new Response(null, { status: 404 }) }),
    (e: unknown) => e instanceof FleetApiError && e.problem?.code === 'vehicle-not-found',
  );

  // Verify a webhook: the README's receiver, on a port of its own
  const secret = { value: '' };
  const received: FleetEvent[] = [];
  const refused: string[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      verifyWebhook({ payload: Buffer.concat(chunks), headers: req.headers, secret: secret.value }).then((event) => {
        received.push(event);
        res.writeHead(204).end();
      }, (e: unknown) => {
        refused.push(e instanceof WebhookVerificationError ? e.reason : String(e));
        res.writeHead(e instanceof WebhookVerificationError ? 401 : 500).end();
      });
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    const hook = ok(await fleet.POST('/v2/webhooks', {
      body: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/fleet`, eventTypes: ['vehicle.status_changed'] },
    }));
    secret.value = hook.secret;

    // Register a vehicle and send telemetry
    const van = ok(await fleet.POST('/v2/fleet/vehicles', {
      body: { vehicleId: 'van-042', type: 'van', configuration: { sensors: ['gps'], capacity: 12 } },
    }));
    assert.equal(van.status, 'registered');

    // Open a live stream before the telemetry, to see it arrive
    const stream = await fleet.openStream({ vehicleId: 'van-042', events: ['location', 'battery'], interval: 0 });
    const messages: StreamMessage[] = [];
    const reading = (async () => {
      for await (const message of stream) {
        messages.push(message);
        if (messages.filter((m) => m.type === 'battery').length === 2) break;
      }
    })();

    ok(await fleet.POST('/v2/telemetry/{vehicleId}', {
      params: { path: { vehicleId: 'van-042' } },
      body: { timestamp: new Date().toISOString(), data: { location: { lat: 52.52, lng: 13.405 }, speed: 42.5, battery: 76 } },
    }));
    const { accepted } = ok(await fleet.POST('/v2/telemetry', {
      body: { records: [{ vehicleId: 'van-042', timestamp: new Date(Date.now() + 1).toISOString(), data: { battery: 75 } }] },
    }));
    assert.equal(accepted, 1);

    await reading;
    await stream.close();
    const location = messages.find((m) => m.type === 'location');
    assert.deepEqual(location?.type === 'location' ? location.data.location : undefined, { lat: 52.52, lng: 13.405 });
    assert.deepEqual(messages.flatMap((m) => (m.type === 'battery' ? [m.data.battery] : [])), [76, 75]);

    // List vehicles
    const active: string[] = [];
    for await (const vehicle of fleet.paginate.vehicles({ status: 'active,maintenance', limit: 200 })) active.push(vehicle.id);
    assert.deepEqual(active, ['van-042'], 'the first telemetry made it active');

    // Follow the events feed
    const controller = new AbortController();
    let after: string | undefined;
    const seen: FleetEvent[] = [];
    for await (const page of fleet.events.follow({ after, types: 'vehicle.status_changed', signal: controller.signal })) {
      seen.push(...page.events);
      after = page.next;
      if (seen.length >= 1) controller.abort();
    }
    assert.equal(seen[0]?.type, 'vehicle.status_changed');
    assert.deepEqual(seen[0]?.data, { from: 'registered', to: 'active', reason: 'first telemetry', by: 'system' });
    assert.equal(typeof after, 'string');

    // The delivery of that same event reached the receiver, signed
    const until = Date.now() + 10_000;
    while (received.length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(refused, []);
    assert.equal(received[0]?.id, seen[0]?.id, 'the same event id in the feed and the webhook');
  } finally {
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
});
