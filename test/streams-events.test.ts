// The `events` stream type (docs/API.md "Live streams"): each recorded event of the stream's
// vehicles as `{"type":"event","seq","vehicleId","timestamp","data":<envelope>}`, never throttled
// or conflated, kept for replay, with no snapshot. Events are said to the app's dispatcher as a
// part that recorded them would (`recorded`), and read by a real ws client.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDispatcher } from '../src/events/dispatcher.ts';
import { type EventRecord, type EventType, toEnvelope } from '../src/events/types.ts';
import { type Message, type StreamApp, type StreamClient, attach, closeAll, createStream, createStreamApp, send } from './helpers/streams.ts';

// A listener that fails fails the test, rather than being logged.
const dispatcher = createDispatcher({ error: (obj, msg) => assert.fail(`${msg}: ${String((obj as { err?: unknown }).err)}`) });
let ctx: StreamApp;
const clients: StreamClient[] = [];
before(async () => {
  ctx = await createStreamApp({ env: { FLEET_QUOTA_STREAMS: '1000' }, dispatcher });
});
after(async () => {
  await closeAll(clients);
  await ctx.close();
});

let n = 0;
/** A new event of the suite's organization. */
function event(vehicleId: string | null, type: EventType = 'geofence.entered', data: Record<string, unknown> = { geofenceId: 'gf_1', name: 'Depot' }): EventRecord {
  n++;
  return { id: `evt_${n}`, organizationId: ctx.organizationId, type, vehicleId, occurredAt: Date.UTC(2026, 10, 25, 8, 30, 0, n), data };
}

/** What a part says once its commit has recorded `events`. */
function recorded(...events: EventRecord[]): void {
  dispatcher.emit('recorded', { events });
}

const isEvent = (m: Message) => m.type === 'event';

async function open(created: Record<string, any>, query = ''): Promise<StreamClient> {
  const client = await attach(`${created.url}${query}`, {}, clients);
  assert.equal((await client.next()).type, 'connected');
  return client;
}

describe('the events type', () => {
  test('each event of the stream\'s vehicle arrives as an `event` message carrying the envelope; no snapshot', async () => {
    await ctx.registerVehicle('ev-1');
    await ctx.registerVehicle('ev-2');
    await send(ctx, 'ev-1', { speed: 3 });
    const created = await createStream(ctx, { events: ['events'], interval: 1000 }, 'ev-1');
    assert.deepEqual(created.subscriptions, ['events']);
    const client = await open(created);
    assert.deepEqual(await client.quiet(150), [], 'events have no snapshot');

    const first = event('ev-1');
    recorded(first);
    const got = await client.next();
    const envelope = toEnvelope(first);
    assert.deepEqual(got, { type: 'event', seq: 1, vehicleId: 'ev-1', timestamp: envelope.occurredAt, data: envelope });
    assert.deepEqual(Object.keys(got), ['type', 'seq', 'vehicleId', 'timestamp', 'data']);
    assert.deepEqual(Object.keys(got.data), ['id', 'type', 'occurredAt', 'vehicleId', 'data']);

    // Another vehicle's, another organization's, and one without a vehicle: none of them.
    recorded(event('ev-2'));
    const other = await ctx.otherOrganization('Events B');
    recorded({ ...event('ev-1'), organizationId: other.organizationId });
    recorded(event(null, 'webhook.test', {}));
    // Only the envelope's own fields are sent.
    const extra = { ...event('ev-1'), secret: 'not for streams' } as EventRecord;
    recorded(extra);
    const next = await client.next();
    assert.equal(next.data!.id, extra.id);
    assert.equal(next.data!.secret, undefined);
    assert.deepEqual(await client.quiet(100), []);
  });

  test('never throttled or conflated: five events of one vehicle within the interval are five messages, in order', async () => {
    await ctx.registerVehicle('ev-3');
    const created = await createStream(ctx, { events: ['events', 'battery'], interval: 60_000 }, 'ev-3');
    const client = await open(created);
    const sent = [1, 2, 3, 4, 5].map((i) => event('ev-3', 'alert.opened', { alertId: `al_${i}` }));
    recorded(...sent);
    const got = await client.take(5, isEvent);
    assert.deepEqual(got.map((m) => m.data!.id), sent.map((e) => e.id));
    assert.deepEqual(got.map((m) => m.seq), [1, 2, 3, 4, 5]);
    // Telemetry beside them is throttled as before: one battery message, then none within the interval.
    await send(ctx, 'ev-3', { battery: 50 });
    await send(ctx, 'ev-3', { battery: 49 });
    assert.equal((await client.next((m) => m.type === 'battery')).data!.battery, 50);
    recorded(event('ev-3'));
    assert.equal((await client.next()).type, 'event', 'the event is not held behind the throttled battery update');
  });

  test('a fleet stream carries every vehicle\'s events; subscribe and unsubscribe take `events`', async () => {
    await ctx.registerVehicle('ev-4');
    const created = await createStream(ctx, { events: ['status'], interval: 0 });
    const client = await open(created);
    // The status snapshot of every vehicle so far, ev-4 (registered last) among them.
    await client.next((m) => m.type === 'status' && m.vehicleId === 'ev-4');
    client.skip();
    recorded(event('ev-4'));
    assert.deepEqual(await client.quiet(100, isEvent), [], 'not subscribed yet');
    client.send({ type: 'subscribe', events: ['events'] });
    assert.deepEqual(await client.next((m) => m.type === 'subscriptions'), { type: 'subscriptions', subscriptions: ['status', 'events'] });
    const late = event('ev-4');
    recorded(late);
    assert.equal((await client.next(isEvent)).data!.id, late.id);
    client.send({ type: 'unsubscribe', events: ['events'] });
    assert.deepEqual(await client.next((m) => m.type === 'subscriptions'), { type: 'subscriptions', subscriptions: ['status'] });
    recorded(event('ev-4'));
    assert.deepEqual(await client.quiet(100, isEvent), []);
  });

  test('events are kept for replay: a client that reconnects with lastSeq gets the ones it missed', async () => {
    await ctx.registerVehicle('ev-5');
    const created = await createStream(ctx, { events: ['events'], interval: 0 }, 'ev-5');
    const first = await open(created);
    const before = event('ev-5');
    recorded(before);
    const seen = await first.next(isEvent);
    await first.close();
    await ctx.request('GET', `/v2/streams/${created.streamId}`).then((res) => assert.equal(res.json().attached, false));
    const missed = [event('ev-5'), event('ev-5')];
    recorded(...missed);

    const ticket = (await ctx.request('POST', `/v2/streams/${created.streamId}/tickets`)).json();
    const second = await attach(`${ticket.url}&lastSeq=${seen.seq}`, {}, clients);
    assert.equal((await second.next()).resumed, true);
    const replayed = await second.take(2, isEvent);
    assert.deepEqual(replayed.map((m) => [m.seq, m.data!.id]), [[seen.seq! + 1, missed[0]!.id], [seen.seq! + 2, missed[1]!.id]]);
  });

  test('creating a stream of `events` is validated like the other types', async () => {
    await ctx.registerVehicle('ev-6');
    for (const events of [['events', 'events'], ['event']]) {
      const res = await ctx.request('POST', '/v2/telemetry/ev-6/stream', { body: { events } });
      assert.equal(res.statusCode, 400, `${JSON.stringify(events)}: ${res.body}`);
    }
  });
});
