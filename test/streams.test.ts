// Live streams (docs/API.md "Live streams"), over real sockets with real ws clients: creating, reading and
// ending streams; attaching by ticket or bearer and every refusal before the upgrade; the
// protocol (connected, snapshot, events with seq, status events, client messages); replay.
// Timing-heavy behaviour (throttling, heartbeats, slow consumers, expiry, shutdown) is in
// streams-flow.test.ts.
import { systemClock } from '../src/clock.ts';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildApp } from '../src/app.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { testConfig } from './helpers/app.ts';
import {
  type Message,
  type StreamApp,
  type StreamClient,
  attach,
  closeAll,
  createStream,
  createStreamApp,
  refused,
  send,
  stamp,
  withTimeout,
} from './helpers/streams.ts';

let ctx: StreamApp;
const clients: StreamClient[] = [];
before(async () => {
  ctx = await createStreamApp({ env: { FLEET_QUOTA_STREAMS: '1000' } });
});
after(async () => {
  await closeAll(clients);
  await ctx.close();
});

const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
const streamUrl = (id: string, query = '') => `${ctx.wsUrl}/v2/streams/${id}${query}`;
const isEvent = (type?: string) => (m: Message) => m.seq !== undefined && (type === undefined || m.type === type);

/** Attaches with the creation ticket and reads the `connected` message. */
async function open(created: Record<string, any>): Promise<StreamClient> {
  const client = await attach(created.url, {}, clients);
  const connected = await client.next();
  assert.equal(connected.type, 'connected');
  return client;
}

describe('creating a stream', () => {
  test('one vehicle: 201 with the stream, its ws URL with a ticket, and a Location', async () => {
    await ctx.registerVehicle('c-1');
    const res = await ctx.request('POST', '/v2/telemetry/c-1/stream', { body: { events: ['location', 'status'], interval: 250 } });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.match(body.streamId, /^str_[A-Za-z0-9_-]{16}$/);
    assert.equal(res.headers.location, `/v2/streams/${body.streamId}`);
    assert.deepEqual(Object.keys(body).sort(), ['expiresAt', 'interval', 'status', 'streamId', 'subscriptions', 'url', 'vehicleId']);
    assert.equal(body.status, 'connected');
    assert.deepEqual(body.subscriptions, ['location', 'status']);
    assert.equal(body.vehicleId, 'c-1');
    assert.equal(body.interval, 250);
    const url = new URL(body.url);
    assert.equal(`${url.protocol}//${url.host}`, ctx.wsUrl, 'the host of FLEET_PUBLIC_URL, http → ws');
    assert.equal(url.pathname, `/v2/streams/${body.streamId}`);
    assert.match(url.searchParams.get('ticket')!, /^[A-Za-z0-9_-]{43}$/, '256 random bits');
    const ttl = Date.parse(body.expiresAt) - Date.now();
    assert.ok(ttl > 55_000 && ttl <= 60_000, `expires in 60 s, got ${ttl} ms`);
    assert.match(body.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  test('defaults: interval 1000; the fleet form answers vehicleIds null, or the list given', async () => {
    await ctx.registerVehicle('c-2');
    await ctx.registerVehicle('c-3');
    const one = await createStream(ctx, { events: ['battery'] }, 'c-2');
    assert.equal(one.interval, 1000);
    const fleet = await createStream(ctx, { events: ['battery', 'location'] });
    assert.equal(fleet.vehicleIds, null);
    assert.equal(fleet.vehicleId, undefined);
    assert.deepEqual(fleet.subscriptions, ['location', 'battery'], 'in the contract\'s order');
    const listed = await createStream(ctx, { events: ['status'], vehicleIds: ['c-2', 'c-3'], interval: 0 });
    assert.deepEqual(listed.vehicleIds, ['c-2', 'c-3']);
    assert.equal(listed.interval, 0);
  });

  test('bad bodies: 400 naming the problem', async () => {
    await ctx.registerVehicle('c-4');
    const cases: unknown[] = [
      {},
      { events: [] },
      { events: ['location', 'location'] },
      { events: ['speed'] },
      { events: 'location' },
      { events: ['location'], interval: -1 },
      { events: ['location'], interval: 3_600_001 },
      { events: ['location'], interval: 1.5 },
      { events: ['location'], interval: '1000' },
      { events: ['location'], extra: true },
      { events: ['location'], vehicleIds: ['c-4'] },
    ];
    for (const body of cases) {
      const res = await ctx.request('POST', '/v2/telemetry/c-4/stream', { body });
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
      assert.equal(res.json().code, 'validation-failed');
    }
    for (const body of [{ events: ['location'], vehicleIds: [] }, { events: ['location'], vehicleIds: ['a', 'a'] }, { events: ['location'], vehicleIds: ['bad id'] }]) {
      const res = await ctx.request('POST', '/v2/telemetry/stream', { body });
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    }
    const edge = await ctx.request('POST', '/v2/telemetry/c-4/stream', { body: { events: ['location'], interval: 3_600_000 } });
    assert.equal(edge.statusCode, 201, 'the maximum interval is allowed');
  });

  test('an unknown vehicle, or another organization\'s, answers 404 alike', async () => {
    const other = await ctx.otherOrganization('Streams B');
    await ctx.registerVehicle('b-only', {}, other.key);
    const missing = await ctx.request('POST', '/v2/telemetry/nowhere/stream', { body: { events: ['location'] } });
    const foreign = await ctx.request('POST', '/v2/telemetry/b-only/stream', { body: { events: ['location'] } });
    for (const res of [missing, foreign]) {
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'vehicle-not-found');
    }
    const listed = await ctx.request('POST', '/v2/telemetry/stream', { body: { events: ['location'], vehicleIds: ['c-1', 'b-only'] } });
    assert.equal(listed.statusCode, 404);
    assert.match(listed.json().detail, /"b-only"/);
  });

  test('the scope is `streams`', async () => {
    const key = await ctx.keyWith(['telemetry:read', 'fleet:read']);
    const res = await ctx.request('POST', '/v2/telemetry/c-1/stream', { body: { events: ['location'] }, key });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'insufficient-scope');
  });

  test('an https public URL gives a wss URL', async () => {
    const stores = createSqliteStores(':memory:');
    const app = await buildApp({ config: testConfig({ FLEET_PUBLIC_URL: 'https://fleet.example.com/base' }), stores });
    try {
      const first = (await import('../src/auth/service.ts')).createAuthService({ store: stores.auth, clock: systemClock });
      const org = await first.createOrganization({ name: 'x' });
      const headers = { authorization: `Bearer ${org.secret}`, 'content-type': 'application/json' };
      await app.inject({ method: 'POST', url: '/v2/fleet/vehicles', headers, payload: { vehicleId: 'w', type: 'van' } });
      const res = await app.inject({ method: 'POST', url: '/v2/telemetry/w/stream', headers, payload: { events: ['location'] } });
      assert.equal(res.statusCode, 201, res.body);
      assert.match(res.json().url, /^wss:\/\/fleet\.example\.com\/base\/v2\/streams\/str_[A-Za-z0-9_-]+\?ticket=[A-Za-z0-9_-]{43}$/);
    } finally {
      await app.close();
      await stores.close();
    }
  });
});

describe('reading and ending a stream', () => {
  test('GET reads it; DELETE ends it, closing its socket with 1000; it then reads as closed', async () => {
    await ctx.registerVehicle('r-1');
    const created = await createStream(ctx, { events: ['location'], interval: 0 }, 'r-1');
    const before = (await ctx.request('GET', `/v2/streams/${created.streamId}`)).json();
    assert.equal(before.status, 'connected');
    assert.equal(before.attached, false);
    assert.equal(before.expiresAt, created.expiresAt);
    assert.equal(before.vehicleId, 'r-1');
    assert.equal(before.lastSeq, 0);

    const client = await open(created);
    const during = (await ctx.request('GET', `/v2/streams/${created.streamId}`)).json();
    assert.equal(during.attached, true);
    assert.equal(during.expiresAt, null);

    const del = await ctx.request('DELETE', `/v2/streams/${created.streamId}`);
    assert.equal(del.statusCode, 204);
    assert.equal(del.body, '');
    const closed = await client.closed;
    assert.equal(closed.code, 1000);

    const afterEnd = (await ctx.request('GET', `/v2/streams/${created.streamId}`)).json();
    assert.equal(afterEnd.status, 'closed');
    assert.equal(afterEnd.attached, false);
    assert.ok(afterEnd.closedAt !== null);
    assert.equal((await ctx.request('DELETE', `/v2/streams/${created.streamId}`)).statusCode, 204, 'ending it again is a no-op');
    // An ended stream cannot be attached, nor given tickets.
    const again = await refused(streamUrl(created.streamId), bearer(ctx.adminKey), clients);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'stream-closed');
    assert.equal((await ctx.request('POST', `/v2/streams/${created.streamId}/tickets`)).statusCode, 409);
  });

  test('another organization\'s stream answers 404 to read, end and tickets, as a missing one', async () => {
    const created = await createStream(ctx, { events: ['location'] });
    const other = await ctx.otherOrganization('Streams C');
    for (const [method, path] of [['GET', ''], ['DELETE', ''], ['POST', '/tickets']] as const) {
      const foreign = await ctx.request(method, `/v2/streams/${created.streamId}${path}`, { key: other.key });
      const missing = await ctx.request(method, `/v2/streams/str_nothing${path}`, { key: other.key });
      for (const res of [foreign, missing]) {
        assert.equal(res.statusCode, 404, `${method} ${path}: ${res.body}`);
        assert.equal(res.json().code, 'stream-not-found');
      }
    }
    assert.equal((await ctx.request('GET', `/v2/streams/${created.streamId}`)).json().status, 'connected', 'untouched');
  });
});

describe('attaching: every check happens before the upgrade', () => {
  let created: Record<string, any>;
  before(async () => {
    await ctx.registerVehicle('a-1');
  });

  test('a ticket attaches once; reused it is refused with 401, never a 101', async () => {
    created = await createStream(ctx, { events: ['location'], interval: 0 }, 'a-1');
    const client = await open(created);
    const reused = await refused(created.url, {}, clients);
    assert.equal(reused.status, 401);
    assert.equal(reused.body.code, 'invalid-token');
    await client.close();
    const reusedAfterClose = await refused(created.url, {}, clients);
    assert.equal(reusedAfterClose.status, 401, 'single-use, even once the socket is gone');
  });

  test('no ticket and no bearer: 401; a made-up ticket: 401; a ticket of another stream: 401', async () => {
    const target = await createStream(ctx, { events: ['location'] }, 'a-1');
    const otherStream = await createStream(ctx, { events: ['location'] }, 'a-1');
    const none = await refused(streamUrl(target.streamId), {}, clients);
    assert.equal(none.status, 401);
    assert.equal(none.body.code, 'unauthorized');
    const madeUp = await refused(streamUrl(target.streamId, `?ticket=${'A'.repeat(43)}`), {}, clients);
    assert.equal(madeUp.status, 401);
    const otherTicket = new URL(otherStream.url).searchParams.get('ticket')!;
    const crossed = await refused(streamUrl(target.streamId, `?ticket=${otherTicket}`), {}, clients);
    assert.equal(crossed.status, 401);
    // The target's own ticket still works: refusals did not touch it.
    await open(target);
  });

  test('bearer of the same organization with `streams` and the types\' scopes attaches; without either 403; another organization 404', async () => {
    const target = await createStream(ctx, { events: ['location'] }, 'a-1');
    const noScope = await refused(streamUrl(target.streamId), bearer(await ctx.keyWith(['telemetry:read'])), clients);
    assert.equal(noScope.status, 403);
    assert.equal(noScope.body.code, 'insufficient-scope');
    const other = await ctx.otherOrganization('Streams D');
    const foreign = await refused(streamUrl(target.streamId), bearer(other.key), clients);
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.code, 'stream-not-found');
    const badKey = await refused(streamUrl(target.streamId), bearer('fleet_not-a-key'), clients);
    assert.equal(badKey.status, 401);
    // `streams` alone cannot read another credential's location stream: it would not create one.
    const streamsOnly = await refused(streamUrl(target.streamId), bearer(await ctx.keyWith(['streams'])), clients);
    assert.equal(streamsOnly.status, 403);
    assert.equal(streamsOnly.body.code, 'insufficient-scope');
    const client = await attach(streamUrl(target.streamId), bearer(await ctx.keyWith(['streams', 'telemetry:read'])), clients);
    assert.equal((await client.next()).type, 'connected');
  });

  test('another organization\'s ticket-less attach with its own stream id mix-up: 404, no 101', async () => {
    const other = await ctx.otherOrganization('Streams E');
    await ctx.registerVehicle('e-1', {}, other.key);
    const theirs = await createStream(ctx, { events: ['location'] }, 'e-1', other.key);
    const res = await refused(streamUrl(theirs.streamId), bearer(ctx.adminKey), clients);
    assert.equal(res.status, 404);
    await open(theirs); // and their ticket is still good
  });

  test('an unknown stream: 404; a malformed lastSeq: 400', async () => {
    const missing = await refused(streamUrl('str_missing'), bearer(ctx.adminKey), clients);
    assert.equal(missing.status, 404);
    const target = await createStream(ctx, { events: ['location'] }, 'a-1');
    const bad = await refused(`${target.url}&lastSeq=-1`, {}, clients);
    assert.equal(bad.status, 400);
  });

  test('a browser Origin not on the list: 403 before the ticket is even looked at; the public URL\'s origin and no Origin attach', async () => {
    const target = await createStream(ctx, { events: ['location'] }, 'a-1');
    for (const origin of ['https://evil.example', 'null', `${ctx.publicUrl}.evil.example`, ctx.publicUrl.replace('127.0.0.1', 'localhost')]) {
      const res = await refused(target.url, { origin }, clients);
      assert.equal(res.status, 403, origin);
      assert.equal(res.body.code, 'origin-not-allowed');
    }
    const bearerEvil = await refused(streamUrl(target.streamId), { origin: 'https://evil.example', ...bearer(ctx.adminKey) }, clients);
    assert.equal(bearerEvil.status, 403, 'a bearer token does not bypass the origin check');
    const client = await attach(target.url, { origin: ctx.publicUrl }, clients);
    assert.equal((await client.next()).type, 'connected');
    const noOrigin = await attach(streamUrl(target.streamId), bearer(ctx.adminKey), clients);
    assert.equal((await noOrigin.next()).type, 'connected');
  });

  test('a second socket takes the stream over; the first is closed with 4000', async () => {
    const target = await createStream(ctx, { events: ['location'], interval: 0 }, 'a-1');
    const first = await open(target);
    const second = await attach(streamUrl(target.streamId), bearer(ctx.adminKey), clients);
    assert.equal((await second.next()).type, 'connected');
    assert.equal((await first.closed).code, 4000);
    await send(ctx, 'a-1', { speed: 7 });
    assert.equal((await second.next(isEvent('location'))).data!.speed, 7);
  });

  test('POST /v2/streams/{id}/tickets gives a new single-use ticket', async () => {
    const target = await createStream(ctx, { events: ['location'] }, 'a-1');
    const res = await ctx.request('POST', `/v2/streams/${target.streamId}/tickets`);
    assert.equal(res.statusCode, 200, res.body);
    const { url, streamId, expiresAt } = res.json();
    assert.equal(streamId, target.streamId);
    assert.ok(Date.parse(expiresAt) > Date.now());
    assert.notEqual(url, target.url);
    await open({ url });
    assert.equal((await refused(url, {}, clients)).status, 401);
  });
});

describe('messages', () => {
  test('connected, then a snapshot of each subscribed type with state, then events with seq +1', async () => {
    await ctx.registerVehicle('m-1');
    const t0 = stamp();
    await send(ctx, 'm-1', { location: { lat: 52.5, lng: 13.4 }, speed: 30, heading: 90, battery: 80, temperature: 21, odometer: 1200, diagnostics: { dtc: 'P0420' } }, t0);
    const created = await createStream(ctx, { events: ['location', 'battery', 'diagnostics', 'status'], interval: 0 }, 'm-1');
    const client = await attach(created.url, {}, clients);
    const [connected, ...snapshot] = await client.take(5);
    assert.deepEqual(connected, {
      type: 'connected', streamId: created.streamId, subscriptions: ['location', 'battery', 'diagnostics', 'status'], interval: 0, resumed: false, lastSeq: 0,
    });
    const byType = Object.fromEntries(snapshot.map((m) => [m.type, m]));
    assert.deepEqual(snapshot.map((m) => m.seq), [1, 2, 3, 4]);
    assert.deepEqual(byType.location, { type: 'location', seq: byType.location!.seq, vehicleId: 'm-1', timestamp: t0, data: { location: { lat: 52.5, lng: 13.4 }, speed: 30, heading: 90 } });
    assert.deepEqual(byType.battery!.data, { battery: 80 });
    assert.deepEqual(byType.diagnostics!.data, { temperature: 21, odometer: 1200, diagnostics: { dtc: 'P0420' } });
    assert.deepEqual(byType.status!.data, { from: 'registered', to: 'active', reason: 'first telemetry' });
    assert.deepEqual(Object.keys(byType.location), ['type', 'seq', 'vehicleId', 'timestamp', 'data'], 'field order as the contract writes it');

    // A record carrying only battery: one battery event, nothing else.
    const t1 = stamp();
    await send(ctx, 'm-1', { battery: 79.5 }, t1);
    const battery = await client.next();
    assert.deepEqual(battery, { type: 'battery', seq: 5, vehicleId: 'm-1', timestamp: t1, data: { battery: 79.5 } });
    // A record carrying speed only: the location event carries the newest of each location field.
    const t2 = stamp();
    await send(ctx, 'm-1', { speed: 31 }, t2);
    const location = await client.next();
    assert.deepEqual(location, { type: 'location', seq: 6, vehicleId: 'm-1', timestamp: t2, data: { location: { lat: 52.5, lng: 13.4 }, speed: 31, heading: 90 } });
    // One record across types: one message per type, consecutive seqs.
    await send(ctx, 'm-1', { speed: 32, odometer: 1201 });
    const [a, b] = await client.take(2);
    assert.deepEqual([a!.type, b!.type, a!.seq, b!.seq], ['location', 'diagnostics', 7, 8]);
    // A duplicate (same vehicle and timestamp) and a late record that changes nothing send nothing.
    await send(ctx, 'm-1', { speed: 31 }, t2);
    await send(ctx, 'm-1', { battery: 10 }, new Date(Date.parse(t0) - 1000).toISOString());
    assert.deepEqual(await client.quiet(200), []);
  });

  test('status events: a status change, and the first telemetry activating a vehicle', async () => {
    await ctx.registerVehicle('s-1');
    const created = await createStream(ctx, { events: ['status'], interval: 0 }, 's-1');
    const client = await open(created);
    const snapshot = await client.next();
    assert.deepEqual(snapshot.data, { from: null, to: 'registered', reason: null }, 'the snapshot is the current status');

    await send(ctx, 's-1', { speed: 1 });
    const activation = await client.next();
    assert.equal(activation.type, 'status');
    assert.deepEqual(activation.data, { from: 'registered', to: 'active', reason: 'first telemetry' });

    const res = await ctx.request('PUT', '/v2/fleet/vehicles/s-1/status', { body: { status: 'maintenance', reason: 'brakes' } });
    assert.equal(res.statusCode, 200);
    const change = await client.next();
    assert.deepEqual(
      { type: change.type, vehicleId: change.vehicleId, data: change.data, timestamp: change.timestamp },
      { type: 'status', vehicleId: 's-1', data: { from: 'active', to: 'maintenance', reason: 'brakes' }, timestamp: res.json().statusChangedAt },
    );
    await ctx.request('PUT', '/api/v1/vehicles/s-1/status', { body: { status: 'active' } });
    assert.deepEqual((await client.next()).data, { from: 'maintenance', to: 'active', reason: null });
    // Telemetry is not subscribed: none of it arrives.
    await send(ctx, 's-1', { speed: 2, battery: 3 });
    assert.deepEqual(await client.quiet(150), []);
  });

  test('a fleet stream carries every vehicle, even one registered after it was created; a listed one only those', async () => {
    const other = await ctx.otherOrganization('Fleet F');
    const key = other.key;
    await ctx.registerVehicle('f-1', {}, key);
    const fleet = await createStream(ctx, { events: ['battery'], interval: 0 }, undefined, key);
    const listed = await createStream(ctx, { events: ['battery'], interval: 0, vehicleIds: ['f-1'] }, undefined, key);
    const all = await open(fleet);
    const one = await open(listed);
    await ctx.registerVehicle('f-2', {}, key);
    await send(ctx, 'f-2', { battery: 22 }, undefined, key);
    await send(ctx, 'f-1', { battery: 11 }, undefined, key);
    const got = await all.take(2, isEvent('battery'));
    assert.deepEqual(got.map((m) => [m.vehicleId, m.data!.battery]), [['f-2', 22], ['f-1', 11]]);
    const mine = await one.next(isEvent('battery'));
    assert.deepEqual([mine.vehicleId, mine.data!.battery], ['f-1', 11]);
    // The first organization's telemetry never reaches these streams.
    await ctx.registerVehicle('f-1');
    await send(ctx, 'f-1', { battery: 99 });
    assert.deepEqual(await all.quiet(150), []);
    assert.deepEqual(await one.quiet(0), []);
  });

  test('batch ingestion: one message per vehicle and type per commit', async () => {
    await ctx.registerVehicle('b-1');
    await ctx.registerVehicle('b-2');
    const created = await createStream(ctx, { events: ['location'], interval: 0, vehicleIds: ['b-1', 'b-2'] });
    const client = await open(created);
    const t1 = stamp();
    const t2 = stamp();
    const res = await ctx.request('POST', '/v2/telemetry', {
      body: { records: [{ vehicleId: 'b-1', timestamp: t1, data: { speed: 1 } }, { vehicleId: 'b-1', timestamp: t2, data: { speed: 2 } }, { vehicleId: 'b-2', timestamp: t1, data: { speed: 3 } }] },
    });
    assert.equal(res.statusCode, 202);
    const got = await client.take(2, isEvent('location'));
    assert.deepEqual(got.map((m) => [m.vehicleId, m.data!.speed, m.timestamp]).sort(), [['b-1', 2, t2], ['b-2', 3, t1]]);
  });
});

describe('client messages', () => {
  let client: StreamClient;
  before(async () => {
    await ctx.registerVehicle('k-1');
    await send(ctx, 'k-1', { location: { lat: 1, lng: 1 }, battery: 50, temperature: 20 });
    const created = await createStream(ctx, { events: ['location', 'battery'], interval: 0 }, 'k-1');
    client = await open(created);
    await client.take(2); // the snapshot
  });

  test('unsubscribe stops a type, subscribe adds one and sends its current state first', async () => {
    client.send({ type: 'unsubscribe', events: ['location'] });
    assert.deepEqual(await client.next(), { type: 'subscriptions', subscriptions: ['battery'] });
    await send(ctx, 'k-1', { speed: 5, battery: 49 });
    const only = await client.next();
    assert.equal(only.type, 'battery');
    assert.deepEqual(await client.quiet(100, isEvent('location')), []);

    client.send({ type: 'subscribe', events: ['diagnostics', 'battery'] });
    assert.deepEqual(await client.next(), { type: 'subscriptions', subscriptions: ['battery', 'diagnostics'] });
    const snapshot = await client.next();
    assert.equal(snapshot.type, 'diagnostics');
    assert.deepEqual(snapshot.data, { temperature: 20 });
    assert.deepEqual(await client.quiet(100), [], 'battery was already subscribed: no snapshot for it');
    await send(ctx, 'k-1', { temperature: 25, location: { lat: 2, lng: 2 } });
    assert.deepEqual((await client.next()).data, { temperature: 25 });
    const seqs = client.all(isEvent()).map((m) => m.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => seqs[0]! + i), 'seq stays contiguous across subscription changes');
  });

  test('anything else gets an error message, and the socket stays open', async () => {
    const bad: Array<[string | Buffer, string]> = [
      ['not json', 'invalid-message'],
      ['[1,2]', 'invalid-message'],
      ['{"type":"ping"}', 'unknown-type'],
      ['{"events":["location"]}', 'unknown-type'],
      ['{"type":"subscribe"}', 'invalid-events'],
      ['{"type":"subscribe","events":[]}', 'invalid-events'],
      ['{"type":"subscribe","events":["speed"]}', 'invalid-events'],
      ['{"type":"subscribe","events":["battery","battery"]}', 'invalid-events'],
      ['{"type":"subscribe","events":["battery"],"interval":5}', 'invalid-message'],
      [Buffer.from('{"type":"subscribe","events":["battery"]}'), 'invalid-message'],
    ];
    for (const [message, code] of bad) {
      client.ws.send(message, { binary: Buffer.isBuffer(message) });
      const reply = await client.next();
      assert.equal(reply.type, 'error', String(message));
      assert.equal(reply.code, code, String(message));
      assert.equal(typeof reply.detail, 'string');
      assert.equal(reply.seq, undefined, 'errors are not part of the stream\'s sequence');
    }
    assert.ok(client.isOpen);
    await send(ctx, 'k-1', { battery: 40 });
    assert.deepEqual((await client.next(isEvent('battery'))).data, { battery: 40 }, 'events still flow');
  });

  test('a message just under 64 KiB is answered; one over it closes the socket with 1009', async () => {
    client.send(JSON.stringify({ type: 'x', pad: 'a'.repeat(64 * 1024 - 40) }));
    assert.equal((await client.next()).code, 'unknown-type');
    client.send('a'.repeat(64 * 1024 + 1));
    assert.equal((await client.closed).code, 1009);
  });
});

describe('replay', () => {
  test('a client that reconnects with lastSeq misses nothing (ticket or bearer)', async () => {
    await ctx.registerVehicle('p-1');
    const created = await createStream(ctx, { events: ['battery'], interval: 0 }, 'p-1');
    const first = await open(created);
    for (let i = 0; i < 5; i++) await send(ctx, 'p-1', { battery: i });
    const seen = await first.take(5, isEvent());
    const lastSeq = seen.at(-1)!.seq!;
    await first.close();
    await ctx.request('GET', `/v2/streams/${created.streamId}`).then((res) => assert.equal(res.json().attached, false));
    // While detached, updates go on being recorded.
    for (let i = 5; i < 10; i++) await send(ctx, 'p-1', { battery: i });

    const ticket = (await ctx.request('POST', `/v2/streams/${created.streamId}/tickets`)).json();
    const second = await attach(`${ticket.url}&lastSeq=${lastSeq - 2}`, {}, clients);
    const connected = await second.next();
    assert.equal(connected.resumed, true);
    assert.equal(connected.lastSeq, lastSeq + 5);
    const replayed = await second.take(7, isEvent());
    assert.deepEqual(replayed.map((m) => m.seq), [lastSeq - 1, lastSeq, ...[1, 2, 3, 4, 5].map((n) => lastSeq + n)]);
    assert.deepEqual(replayed.map((m) => m.data!.battery), [3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(replayed.slice(0, 2), seen.slice(3), 'replayed messages are the very same messages');
    await send(ctx, 'p-1', { battery: 10 });
    assert.equal((await second.next()).seq, lastSeq + 6, 'then live, seq continuing');
    await second.close();

    // Up to date already: resumed, nothing replayed, no snapshot.
    const third = await attach(streamUrl(created.streamId, `?lastSeq=${lastSeq + 6}`), bearer(ctx.adminKey), clients);
    assert.equal((await third.next()).resumed, true);
    assert.deepEqual(await third.quiet(150), []);
  });

  test('a lastSeq the server no longer holds (or never sent) gets a snapshot instead', async () => {
    await ctx.registerVehicle('p-2');
    await send(ctx, 'p-2', { battery: 1 });
    const created = await createStream(ctx, { events: ['battery'], interval: 0 }, 'p-2');
    const client = await attach(`${created.url}&lastSeq=50`, {}, clients);
    const connected = await client.next();
    assert.equal(connected.resumed, false);
    const snapshot = await client.next();
    assert.deepEqual([snapshot.seq, snapshot.data], [1, { battery: 1 }]);
  });
});

test('telemetry from MQTT feeds streams like HTTP', async () => {
  const { freePort } = await import('./helpers/mqtt.ts');
  const { connect: mqttConnect } = await import('mqtt');
  const mqttPort = await freePort();
  const app = await createStreamApp({ env: { FLEET_MQTT_PORT: String(mqttPort), FLEET_MQTT_HOST: '127.0.0.1' } });
  const device = mqttConnect(`mqtt://127.0.0.1:${mqttPort}`, {
    username: 'mq-1', password: await app.keyWith(['telemetry:write']), reconnectPeriod: 0, connectTimeout: 5_000,
  });
  const connected = withTimeout(new Promise<void>((resolve, reject) => {
    device.once('connect', () => resolve());
    device.once('error', reject);
  }), 7_000, 'the MQTT device to connect');
  try {
    await app.registerVehicle('mq-1');
    const created = await createStream(app, { events: ['location', 'status'], interval: 0 }, 'mq-1');
    const client = await attach(created.url, {}, clients);
    await client.take(2); // connected, status snapshot
    await connected;
    const timestamp = stamp();
    await device.publishAsync('fleet/mq-1/telemetry', JSON.stringify({ timestamp, data: { location: { lat: 3, lng: 4 } } }), { qos: 1 });
    const got = await client.take(2);
    assert.deepEqual(got.map((m) => m.type), ['status', 'location']);
    assert.deepEqual(got[1]!.data, { location: { lat: 3, lng: 4 } });
    assert.equal(got[1]!.timestamp, timestamp);
  } finally {
    await device.endAsync(true);
    await closeAll(clients);
    await app.close();
  }
});

test('the quota of open streams: 403 quota-exceeded; an ended stream frees its place', async () => {
  const app = await createStreamApp({ env: { FLEET_QUOTA_STREAMS: '2' } });
  try {
    await app.registerVehicle('q-1');
    const one = await createStream(app, { events: ['location'] }, 'q-1');
    await createStream(app, { events: ['location'] });
    const third = await app.request('POST', '/v2/telemetry/q-1/stream', { body: { events: ['location'] } });
    assert.equal(third.statusCode, 403, third.body);
    assert.equal(third.json().code, 'quota-exceeded');
    // Another organization has its own quota.
    const other = await app.otherOrganization();
    assert.equal((await app.request('POST', '/v2/telemetry/stream', { body: { events: ['status'] }, key: other.key })).statusCode, 201);
    await app.request('DELETE', `/v2/streams/${one.streamId}`);
    await createStream(app, { events: ['location'] }, 'q-1');
  } finally {
    await app.close();
  }
});

test('OpenAPI documents the attach route\'s two credentials and the streams tag', async () => {
  const doc = (await ctx.request('GET', '/openapi.json', { key: null })).json();
  const get = doc.paths['/v2/streams/{streamId}'].get;
  // The scope is the OAuth scheme's; an API key (bearer), a session cookie and a ticket take none in the document.
  assert.deepEqual(get.security, [{ bearer: [] }, { oauth2: ['streams'] }, { session: [] }, { ticket: [] }]);
  assert.equal(doc.components.securitySchemes.ticket.in, 'query');
  assert.ok(doc.tags.some((t: { name: string }) => t.name === 'streams'));
  for (const path of ['/v2/telemetry/{vehicleId}/stream', '/v2/telemetry/stream']) {
    assert.deepEqual(doc.paths[path].post.security, [{ bearer: [] }, { oauth2: ['streams'] }, { session: [] }]);
    assert.ok(doc.paths[path].post.responses['201']);
  }
});
