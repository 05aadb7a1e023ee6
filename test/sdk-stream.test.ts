// The SDK's live stream over Node 24's global WebSocket against a listening service: created with
// its ticket URL, reattached after the server drops the socket, resuming with lastSeq so that no
// message is lost or delivered twice; ended by close(), by the service, or for good when the
// credential is revoked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  StreamClosedError, createFleetClient, ok, type ConnectedMessage, type FleetClient, type LiveStream, type StreamMessage,
} from '../sdk/src/index.ts';
import { createStreamApp, send, withTimeout, type StreamApp } from './helpers/streams.ts';

let ctx: StreamApp;
let fleet: FleetClient;

before(async () => {
  ctx = await createStreamApp();
  fleet = createFleetClient({ baseUrl: ctx.publicUrl, apiKey: ctx.adminKey });
});
after(() => ctx.close());

/** Reads the stream in the background into `messages`, until it ends; `ended` settles then. */
function collect(stream: LiveStream) {
  const messages: StreamMessage[] = [];
  const ended = (async () => {
    for await (const message of stream) messages.push(message);
  })();
  ended.catch(() => {});
  return {
    messages,
    ended,
    async until(check: () => boolean, what: string, ms = 10_000) {
      const started = Date.now();
      while (!check()) {
        if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages.slice(-5))}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
  };
}

/** Drops every WebSocket on the server side, as a network failure would (the client sees 1006). */
function dropSockets(): number {
  let dropped = 0;
  for (const socket of ctx.app.websocketServer.clients) {
    socket.terminate();
    dropped++;
  }
  return dropped;
}

const batteries = (messages: StreamMessage[]) => messages.flatMap((m) => (m.type === 'battery' ? [m.data.battery] : []));

test('a dropped socket is reattached with lastSeq: every message once, in seq order', async () => {
  await ctx.registerVehicle('live-1');
  const stream = await fleet.openStream({ vehicleId: 'live-1', events: ['battery'], interval: 0 });
  assert.match(stream.streamId, /^str_/);
  const reader = collect(stream);
  await reader.until(() => reader.messages.some((m) => m.type === 'connected'), 'connected');

  for (let i = 1; i <= 10; i++) await send(ctx, 'live-1', { battery: i });
  await reader.until(() => batteries(reader.messages).length === 10, '10 battery messages');

  assert.equal(dropSockets(), 1);
  // Sent while the client is away: the service holds them for the replay.
  for (let i = 11; i <= 20; i++) await send(ctx, 'live-1', { battery: i });
  await reader.until(() => batteries(reader.messages).length >= 20, '20 battery messages');
  for (let i = 21; i <= 25; i++) await send(ctx, 'live-1', { battery: i });
  await reader.until(() => batteries(reader.messages).length >= 25, '25 battery messages');

  assert.deepEqual(batteries(reader.messages), Array.from({ length: 25 }, (_, i) => i + 1), 'each value once, in order');
  const seqs = reader.messages.flatMap((m) => ('seq' in m ? [m.seq] : []));
  assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0]! + i), 'consecutive seqs: nothing lost, nothing twice');
  assert.equal(stream.lastSeq, seqs.at(-1));
  assert.equal(stream.reconnects, 1);
  const connected = reader.messages.filter((m): m is ConnectedMessage => m.type === 'connected');
  assert.equal(connected.length, 2);
  assert.equal(connected[1]!.resumed, true, 'the replay was complete');
  const beforeDrop = reader.messages.find((m) => m.type === 'battery' && m.data.battery === 10);
  assert.ok(beforeDrop !== undefined && 'seq' in beforeDrop);
  assert.ok(connected[1]!.lastSeq >= beforeDrop.seq, 'the service had gone on while the client was away');

  await stream.close();
  await withTimeout(reader.ended, 3000, 'the iteration to end');
  assert.equal(ok(await fleet.GET('/v2/streams/{streamId}', { params: { path: { streamId: stream.streamId } } })).status, 'closed');
});

test('dropped again and again, several times in a row, it still loses nothing', async () => {
  await ctx.registerVehicle('live-2');
  const stream = await fleet.openStream({ vehicleId: 'live-2', events: ['battery'], interval: 0 });
  const reader = collect(stream);
  for (let round = 0; round < 4; round++) {
    for (let i = 1; i <= 5; i++) await send(ctx, 'live-2', { battery: round * 5 + i });
    await reader.until(() => batteries(reader.messages).length === (round + 1) * 5, `round ${round}`);
    dropSockets();
  }
  for (let i = 21; i <= 22; i++) await send(ctx, 'live-2', { battery: i });
  await reader.until(() => batteries(reader.messages).length >= 22, '22 battery messages');
  assert.deepEqual(batteries(reader.messages), Array.from({ length: 22 }, (_, i) => i + 1));
  assert.equal(stream.reconnects, 4);
  await stream.close();
});

test('disconnect() drops the socket but not the stream, which is reattached where it left off', async () => {
  await ctx.registerVehicle('live-6');
  const stream = await fleet.openStream({ vehicleId: 'live-6', events: ['battery'], interval: 0 });
  const reader = collect(stream);
  await send(ctx, 'live-6', { battery: 1 });
  await reader.until(() => batteries(reader.messages).length === 1, 'the first message');
  stream.disconnect();
  await send(ctx, 'live-6', { battery: 2 });
  await send(ctx, 'live-6', { battery: 3 });
  await reader.until(() => batteries(reader.messages).length >= 3, 'three messages');
  assert.deepEqual(batteries(reader.messages), [1, 2, 3]);
  assert.equal(stream.reconnects, 1);
  await stream.close();
});

test('the service ending the stream (DELETE elsewhere: 1000) ends the iteration without an error', async () => {
  await ctx.registerVehicle('live-3');
  const stream = await fleet.openStream({ vehicleId: 'live-3', events: ['status'] });
  const reader = collect(stream);
  const res = await ctx.request('DELETE', `/v2/streams/${stream.streamId}`);
  assert.equal(res.statusCode, 204);
  await withTimeout(reader.ended, 3000, 'the iteration to end');
  await stream.done;
  assert.equal(stream.reconnects, 0);
});

test('a revoked credential ends the stream, and the iteration throws instead of reattaching for ever', async () => {
  await ctx.registerVehicle('live-4');
  const created = await ctx.auth.createKey(ctx.organizationId, { name: 'revoked soon', scopes: ['streams', 'telemetry:read'] });
  const client = createFleetClient({ baseUrl: ctx.publicUrl, apiKey: created.secret });
  const stream = await client.openStream({ vehicleId: 'live-4', events: ['battery'], reconnect: { minDelayMs: 10 } });
  const reader = collect(stream);
  await reader.until(() => reader.messages.some((m) => m.type === 'connected'), 'connected');
  assert.equal((await ctx.request('DELETE', `/v2/api-keys/${created.key.id}`)).statusCode, 204);
  await assert.rejects(withTimeout(reader.ended, 5000, 'the iteration to end'), (error: unknown) => error instanceof StreamClosedError);
  await assert.rejects(stream.done, StreamClosedError);
});

test('subscribe on the open socket is answered with the new subscriptions', async () => {
  await ctx.registerVehicle('live-5');
  const stream = await fleet.openStream({ vehicleId: 'live-5', events: ['battery'] });
  const reader = collect(stream);
  await reader.until(() => reader.messages.some((m) => m.type === 'connected'), 'connected');
  assert.equal(stream.send({ type: 'subscribe', events: ['location'] }), true);
  await reader.until(() => reader.messages.some((m) => m.type === 'subscriptions'), 'subscriptions');
  const answer = reader.messages.find((m) => m.type === 'subscriptions');
  assert.deepEqual(answer?.type === 'subscriptions' ? [...answer.subscriptions].sort() : [], ['battery', 'location']);
  await stream.close();
});

test('the socket is attached with batch=true unless asked not to; a frame of several messages gives each once, in order', async () => {
  for (const batch of [true, false]) {
    const vehicleId = `live-batch-${batch}`;
    await ctx.registerVehicle(vehicleId);
    await send(ctx, vehicleId, { battery: 50 });
    const urls: string[] = [];
    const frames: string[] = [];
    class Recording extends WebSocket {
      constructor(url: string) {
        super(url);
        urls.push(url);
        this.addEventListener('message', (event) => frames.push(String(event.data)));
      }
    }
    const stream = await fleet.openStream({ vehicleId, events: ['battery'], interval: 0, WebSocket: Recording, ...(batch ? {} : { batch: false }) });
    const reader = collect(stream);
    // On attach the service sends `connected` and the snapshot in one turn: one frame when batched.
    await reader.until(() => batteries(reader.messages).length === 1, 'the snapshot');
    for (let i = 51; i <= 53; i++) await send(ctx, vehicleId, { battery: i });
    await reader.until(() => batteries(reader.messages).length === 4, 'three more');
    assert.deepEqual(batteries(reader.messages), [50, 51, 52, 53]);
    assert.equal(new URL(urls[0]!).searchParams.get('batch'), batch ? 'true' : null);
    assert.equal(frames.some((frame) => frame.includes('\n')), batch, batch ? 'a frame held several messages' : 'one message a frame');
    await stream.close();
    await withTimeout(reader.ended, 3000, 'the iteration to end');
  }
});
