// One vehicle driven by the simulator's motion model (src/cli/simulation.ts) through a geofence the
// simulator places on its route: exactly one `geofence.entered` and one `geofence.exited`, the same
// two events (same ids) in the feed, at a webhook receiver and on an `events` live stream. Records
// arrive in batches, then all again (duplicates), then one late record from inside: none of that
// adds an event. On the embedded store, and on PostgreSQL when it is there.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { type LatLng, advance, createVehicle, distanceMetres, geofencesOnRoutes, sample } from '../src/cli/simulation.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { startReceiver } from './helpers/receiver.ts';
import { type StreamApp, type StreamClient, attach, closeAll, createStream, createStreamApp } from './helpers/streams.ts';

const VEHICLE = 'flow-0001';
const SECONDS = 180;

/** The drive: one record a second for three minutes, stamped in the recent past. */
function drive() {
  const vehicle = createVehicle(VEHICLE, 'van', { seed: 11 });
  const [geofence] = geofencesOnRoutes([vehicle], 1, { prefix: 'flow', secondsBetweenRecords: 1 });
  const circle = geofence!.geometry as { type: 'Circle'; coordinates: [number, number]; radius: number };
  const centre: LatLng = { lng: circle.coordinates[0], lat: circle.coordinates[1] };
  const start = Date.now() - 3_600_000;
  const records: { timestamp: string; data: ReturnType<typeof sample> }[] = [];
  for (let t = 1; t <= SECONDS; t++) {
    advance(vehicle, 1);
    records.push({ timestamp: new Date(start + t * 1000).toISOString(), data: sample(vehicle) });
  }
  // What the records say, by a distance of our own: where the vehicle went in and came out.
  const margins = records.map((r) => distanceMetres(centre, r.data.location!) - circle.radius);
  assert.ok(margins.every((m) => Math.abs(m) > 0.5), 'no record within half a metre of the rim (where the two distances could disagree)');
  const crossings = margins.flatMap((m, i) => ((m <= 0) !== (i > 0 && margins[i - 1]! <= 0) ? [i] : []));
  assert.equal(crossings.length, 2, `the route goes through the circle once: crossings at ${JSON.stringify(crossings)}`);
  return { geofence: geofence!, records, enteredAt: crossings[0]!, exitedAt: crossings[1]! };
}

interface Envelope {
  id: string;
  type: string;
  occurredAt: string;
  vehicleId: string;
  data: { geofenceId: string; name: string; location: LatLng };
}

for (const backend of ['sqlite', 'postgres'] as const) {
  const skip = backend === 'postgres' ? await skipUnlessPostgres() : false;

  describe(`a simulated route through a geofence (${backend})`, { skip, timeout: 60_000 }, () => {
    let ctx: StreamApp;
    const clients: StreamClient[] = [];
    let receiver: Awaited<ReturnType<typeof startReceiver>>;

    before(async () => {
      ctx = await createStreamApp({ backend, env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' } });
      receiver = await startReceiver();
    });
    after(async () => {
      await closeAll(clients);
      await ctx?.close();
      await receiver?.close();
    });

    test('exactly one enter and one exit: in the feed, on a webhook receiver and on a stream', async () => {
      const { geofence, records, enteredAt, exitedAt } = drive();
      const hook = await ctx.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['geofence.entered', 'geofence.exited'] } });
      assert.equal(hook.statusCode, 201, hook.body);
      const created = await ctx.request('POST', '/v2/geofences', { body: { name: geofence.name, geometry: geofence.geometry } });
      assert.equal(created.statusCode, 201, created.body);
      const geofenceId = created.json<{ id: string }>().id;
      await ctx.registerVehicle(VEHICLE);
      const stream = await attach((await createStream(ctx, { events: ['events'], interval: 0 }, VEHICLE)).url, {}, clients);
      assert.equal((await stream.next()).type, 'connected');

      const post = async (batch: typeof records) => {
        const res = await ctx.request('POST', `/v2/telemetry/${VEHICLE}`, { body: { records: batch } });
        assert.equal(res.statusCode, 202, res.body);
        return res.json<{ accepted: number; duplicates: number }>();
      };
      for (let i = 0; i < records.length; i += 7) await post(records.slice(i, i + 7));
      // The same records again are duplicates; a late record from inside is older than the latest.
      assert.deepEqual(await post(records.slice(0, 100)), { accepted: 0, duplicates: 100 });
      const late = { ...records[enteredAt]!, timestamp: new Date(Date.parse(records[enteredAt]!.timestamp) + 500).toISOString() };
      assert.equal((await post([late])).accepted, 1);

      // The feed (on PostgreSQL an event is readable once every older transaction has ended: poll).
      const query = { vehicleId: VEHICLE, types: 'geofence.entered,geofence.exited', limit: '1000' };
      let feed: Envelope[] = [];
      for (const deadline = Date.now() + 10_000; feed.length < 2; await sleep(50)) {
        assert.ok(Date.now() < deadline, `the feed after 10 s: ${JSON.stringify(feed)}`);
        feed = (await ctx.request('GET', '/v2/events', { query })).json<{ events: Envelope[] }>().events;
      }
      assert.deepEqual(feed.map((e) => [e.type, e.occurredAt, e.vehicleId, e.data.geofenceId, e.data.name]), [
        ['geofence.entered', records[enteredAt]!.timestamp, VEHICLE, geofenceId, geofence.name],
        ['geofence.exited', records[exitedAt]!.timestamp, VEHICLE, geofenceId, geofence.name],
      ]);
      assert.deepEqual(feed.map((e) => e.data.location), [records[enteredAt]!.data.location, records[exitedAt]!.data.location]);

      // The stream (which also carries the vehicle's activation): the same two envelopes, in order.
      const geofenceEvent = (m: { type: string; data?: Record<string, any> }) => m.type === 'event' && String(m.data?.type).startsWith('geofence.');
      const streamed = await stream.take(2, geofenceEvent);
      assert.deepEqual(streamed.map((m) => m.data), feed);

      // The receiver: each event once, signed with the endpoint's secret.
      await receiver.waitFor(() => receiver.received.length >= 2, 10_000, 'two deliveries');
      const verifier = new Webhook(hook.json<{ secret: string }>().secret);
      const delivered = receiver.received.map((r) => verifier.verify(r.body, r.headers as Record<string, string>) as Envelope);
      // (Delivery order is not guaranteed: compared as sets.)
      assert.deepEqual(receiver.received.map((r) => r.headers['webhook-id']).sort(), feed.map((e) => e.id).sort());
      assert.deepEqual(delivered.sort((a, b) => a.occurredAt.localeCompare(b.occurredAt)), feed);

      // Nothing more comes, anywhere.
      await sleep(500);
      assert.deepEqual(await stream.quiet(200, geofenceEvent), []);
      assert.deepEqual(stream.all(geofenceEvent).map((m) => m.data!.id), feed.map((e) => e.id));
      assert.equal(receiver.received.length, 2);
      assert.equal((await ctx.request('GET', '/v2/events', { query })).json<{ events: Envelope[] }>().events.length, 2);
    });
  });
}
