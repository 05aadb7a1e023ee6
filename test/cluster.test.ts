// Two nodes of one cluster in this process: one PostgreSQL schema, one bus (memory here; the
// Redis bus passes the same contract in bus.test.ts, and cluster-process.test.ts runs two real
// processes on Redis). What one node does, the other must show: latest state, live streams,
// revocations, deletions; and after a bus outage, each node catches up from the database.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMemoryBusNetwork } from '../src/bus/memory.ts';
import { createMemoryStreamDirectory } from '../src/streams/directory.ts';
import { DEFAULT_STREAM_SETTINGS } from '../src/streams/settings.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { type StreamApp, type StreamClient, attach, closeAll, createStream, createStreamApp, refused, send, stamp } from './helpers/streams.ts';
import { waitUntil } from './helpers/wait.ts';

const skip = await skipUnlessPostgres();

/** The stream's attach URL, pointed at `node` instead of the node that made it. */
function at(node: StreamApp, url: string, lastSeq?: number): string {
  const u = new URL(url);
  u.host = new URL(node.wsUrl).host;
  if (lastSeq !== undefined) u.searchParams.set('lastSeq', String(lastSeq));
  return u.toString();
}

describe('two nodes on one bus', { skip }, () => {
  const network = createMemoryBusNetwork();
  const directory = createMemoryStreamDirectory({ maxMessages: DEFAULT_STREAM_SETTINGS.replayMaxMessages });
  let a: StreamApp;
  let b: StreamApp;
  const clients: StreamClient[] = [];

  before(async () => {
    const busA = network.join();
    a = await createStreamApp({ backend: 'postgres', cluster: { bus: busA, directory, state: () => busA.state() } });
    const busB = network.join();
    b = await createStreamApp({ join: a, cluster: { bus: busB, directory, state: () => busB.state() } });
  });
  after(async () => {
    await closeAll(clients);
    await b?.close();
    await a?.close();
  });

  test('a vehicle registered on one node is read on the other', async () => {
    await a.registerVehicle('c-1');
    const res = await b.request('GET', '/v2/fleet/vehicles/c-1');
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().status, 'registered');
  });

  test('telemetry ingested on one node: the other serves it as latest state and in the vehicle view', async () => {
    await a.registerVehicle('c-2');
    await send(a, 'c-2', { speed: 12, battery: 80 });
    await waitUntil(async () => (await b.request('GET', '/v2/telemetry/c-2')).statusCode === 200, 'latest state on node B');
    assert.deepEqual((await b.request('GET', '/v2/telemetry/c-2')).json().data, { speed: 12, battery: 80 });
    // Fields merge across nodes: a record with only speed, on B, keeps A's battery.
    await send(b, 'c-2', { speed: 30 });
    await waitUntil(async () => (await a.request('GET', '/v2/telemetry/c-2')).json().data.speed === 30, 'node A sees B\'s record');
    assert.deepEqual((await a.request('GET', '/v2/telemetry/c-2')).json().data, { speed: 30, battery: 80 });
    const vehicle = (await b.request('GET', '/v2/fleet/vehicles/c-2')).json();
    assert.equal(vehicle.battery, 80);
    assert.equal(vehicle.status, 'active', 'first telemetry activated it');
  });

  test('a WebSocket client of one node receives telemetry and status changes made on the other', async () => {
    await a.registerVehicle('c-3');
    const created = await createStream(b, { events: ['location', 'status'], interval: 0 });
    const client = await attach(created.url, {}, clients);
    await client.next((m) => m.type === 'connected');
    await send(a, 'c-3', { speed: 44, location: { lat: 52.5, lng: 13.4 } });
    // (The stream's snapshot may still be arriving: it holds c-3's `registered` status.)
    const location = await client.next((m) => m.type === 'location' && m.vehicleId === 'c-3');
    assert.equal(location.data?.speed, 44);
    await client.waitFor(() => client.all((m) => m.type === 'status' && m.vehicleId === 'c-3' && m.data?.to === 'active')[0], 5_000, 'the activation');
    const changed = await a.request('PUT', '/v2/fleet/vehicles/c-3/status', { body: { status: 'maintenance', reason: 'tyres' } });
    assert.equal(changed.statusCode, 200, changed.body);
    await client.waitFor(() => client.all((m) => m.type === 'status' && m.vehicleId === 'c-3' && m.data?.to === 'maintenance')[0], 5_000, 'the change');
  });

  test('a stream of a key limited to a group stops carrying a vehicle taken out of it through the other node', async () => {
    const group = (await a.request('POST', '/v2/groups', { body: { name: 'cluster scope' } })).json().id;
    await a.registerVehicle('cs-stay', { groupIds: [group] });
    await a.registerVehicle('cs-leave', { groupIds: [group] });
    const key = (await a.request('POST', '/v2/api-keys', { body: { name: 'scoped', scopes: ['streams', 'telemetry:read'], groupIds: [group] } })).json().key;
    const created = await createStream(b, { events: ['battery'], interval: 0 }, undefined, key);
    const client = await attach(created.url, {}, clients);
    await client.next((m) => m.type === 'connected');
    const carried = (vehicleId: string) => client.all((m) => m.type === 'battery' && m.vehicleId === vehicleId).map((m) => m.data?.battery as number);
    const turn = async (n: number) => {
      await send(a, 'cs-leave', { battery: n });
      await send(a, 'cs-stay', { battery: n });
      await client.waitFor(() => carried('cs-stay').includes(n) || undefined, 10_000, `cs-stay at ${n}`);
    };
    await turn(1);
    assert.ok(carried('cs-leave').includes(1), 'carried while in the group');
    // Out through node a: node b's stream hears it on the bus. Order, not time: turns until one of
    // the leaver's is not carried, then none is.
    assert.equal((await a.request('DELETE', `/v2/groups/${group}/vehicles/cs-leave`)).statusCode, 204);
    let n = 10;
    do await turn(n++);
    while (n < 50 && carried('cs-leave').includes(n - 1));
    assert.ok(n < 50, 'the vehicle that left was still carried after 40 turns');
    const count = carried('cs-leave').length;
    for (let i = 0; i < 3; i++) await turn(n++);
    assert.equal(carried('cs-leave').length, count, 'not carried again');
  });

  test('a client that reconnects to the other node resumes with lastSeq: the messages it missed, then live ones, seqs unbroken', async () => {
    await a.registerVehicle('r-1');
    const created = await createStream(a, { events: ['location'], interval: 0 }, 'r-1');
    const first = await attach(created.url, {}, clients);
    await first.next((m) => m.type === 'connected');
    for (const speed of [1, 2, 3]) await send(a, 'r-1', { speed });
    const seen = await first.take(3, (m) => m.type === 'location');
    assert.deepEqual(seen.map((m) => m.data?.speed), [1, 2, 3]);
    const lastSeq = seen[1]!.seq!; // the client missed speed 3
    await first.close();
    await send(a, 'r-1', { speed: 4 }); // sent while detached: kept for replay

    // A fresh ticket from B, and the socket on B: B takes the stream over.
    const ticket = await b.request('POST', `/v2/streams/${created.streamId}/tickets`);
    assert.equal(ticket.statusCode, 200, ticket.body);
    const second = await attach(at(b, ticket.json().url, lastSeq), {}, clients);
    const connected = await second.next((m) => m.type === 'connected');
    assert.equal(connected.resumed, true);
    const replayed = await second.take(2, (m) => m.type === 'location');
    assert.deepEqual(replayed.map((m) => [m.seq, m.data?.speed]), [[lastSeq + 1, 3], [lastSeq + 2, 4]]);
    // Live again, from telemetry ingested on A, numbered after the replay.
    await send(a, 'r-1', { speed: 5 });
    const live = await second.next((m) => m.type === 'location');
    assert.deepEqual([live.seq, live.data?.speed], [lastSeq + 3, 5]);
    // Both nodes tell the same story: B holds it, attached.
    for (const node of [a, b]) {
      await waitUntil(async () => (await node.request('GET', `/v2/streams/${created.streamId}`)).json().attached === true, 'attached, seen from each node');
    }
    assert.equal((await a.request('GET', `/v2/streams/${created.streamId}`)).json().lastSeq, lastSeq + 3);
  });

  test('a stream moved to another node closes its old socket with 4000; a ticket works once in the whole cluster', async () => {
    await a.registerVehicle('r-2');
    const created = await createStream(a, { events: ['location'] }, 'r-2');
    const onA = await attach(created.url, {}, clients);
    await onA.next((m) => m.type === 'connected');
    const ticket = (await a.request('POST', `/v2/streams/${created.streamId}/tickets`)).json();
    const onB = await attach(at(b, ticket.url), {}, clients);
    await onB.next((m) => m.type === 'connected');
    assert.equal((await onA.closed).code, 4000);
    // The ticket is spent: neither node takes it again.
    for (const node of [a, b]) assert.equal((await refused(at(node, ticket.url), {}, clients)).status, 401);
    await send(a, 'r-2', { speed: 8 });
    assert.equal((await onB.next((m) => m.type === 'location')).data?.speed, 8);
  });

  test('a stream deleted through the node that does not hold it ends on the one that does', async () => {
    await a.registerVehicle('r-3');
    const created = await createStream(a, { events: ['location'] }, 'r-3');
    const onA = await attach(created.url, {}, clients);
    await onA.next((m) => m.type === 'connected');
    assert.equal((await b.request('DELETE', `/v2/streams/${created.streamId}`)).statusCode, 204);
    assert.equal((await onA.closed).code, 1000);
    for (const node of [a, b]) assert.equal((await node.request('GET', `/v2/streams/${created.streamId}`)).json().status, 'closed');
    const other = await a.otherOrganization('Elsewhere');
    assert.equal((await b.request('GET', `/v2/streams/${created.streamId}`, { key: other.key })).statusCode, 404);
  });

  test('a key revoked on one node is refused on the other at once, even while cached there', async () => {
    const created = (await a.request('POST', '/v2/api-keys', { body: { name: 'short-lived', scopes: ['fleet:read'] } })).json();
    assert.equal((await b.request('GET', '/v2/fleet/vehicles', { key: created.key })).statusCode, 200, 'B now holds it in its cache');
    assert.equal((await a.request('DELETE', `/v2/api-keys/${created.id}`)).statusCode, 204);
    // The bus is asynchronous: allow it one turn, far less than the 5 s the cache would keep the key.
    await waitUntil(async () => (await b.request('GET', '/v2/fleet/vehicles', { key: created.key })).statusCode === 401, 'refused on B', 500);
  });

  test('a person disabled on one node is signed out on the other at once, even while their session is cached there', async () => {
    const invited = (await a.request('POST', '/v2/users', { body: { email: 'cluster@example.com', name: 'Cluster', role: 'viewer' } })).json();
    const accepted = await b.request('POST', '/auth/invitations/accept', { key: null, body: { token: invited.invitation.token, password: 'a long enough passphrase' } });
    assert.equal(accepted.statusCode, 200, 'an invitation made on one node is accepted on the other');
    const cookie = String([accepted.headers['set-cookie']].flat()[0]).split(';')[0]!;
    for (const node of [a, b]) {
      assert.equal((await node.request('GET', '/v2/fleet/vehicles', { key: null, headers: { cookie } })).statusCode, 200, 'each node now holds the session');
    }
    assert.equal((await a.request('PATCH', `/v2/users/${invited.id}`, { body: { status: 'disabled' } })).statusCode, 200);
    // Far less than the 5 s a node keeps a session it read.
    await waitUntil(async () => (await b.request('GET', '/v2/fleet/vehicles', { key: null, headers: { cookie } })).statusCode === 401, 'signed out on B', 500);
  });

  test('a key revoked on one node ends the streams it opened on the other: the socket closes 1008, the stream reads closed', async () => {
    await a.registerVehicle('k-1');
    const made = (await a.request('POST', '/v2/api-keys', { body: { name: 'streamer', scopes: ['streams', 'telemetry:read'] } })).json();
    const created = await createStream(a, { events: ['location'] }, 'k-1', made.key);
    const client = await attach(created.url, {}, clients);
    await client.next((m) => m.type === 'connected');
    assert.equal((await b.request('DELETE', `/v2/api-keys/${made.id}`)).statusCode, 204);
    assert.equal((await client.closed).code, 1008);
    for (const node of [a, b]) {
      await waitUntil(async () => (await node.request('GET', `/v2/streams/${created.streamId}`)).json().status === 'closed', 'closed, seen from each node');
    }
  });

  test('a key revoked while the bus is down: its stream\'s ticket is refused at attach all the same', async () => {
    await a.registerVehicle('k-2');
    const made = (await a.request('POST', '/v2/api-keys', { body: { name: 'unheard', scopes: ['streams', 'telemetry:read'] } })).json();
    const created = await createStream(a, { events: ['location'] }, 'k-2', made.key);
    network.setDown(true);
    try {
      assert.equal((await b.request('DELETE', `/v2/api-keys/${made.id}`)).statusCode, 204);
    } finally {
      network.setDown(false);
    }
    // A never heard of it; the ticket's redemption asks the database.
    const res = await refused(created.url, {}, clients);
    assert.equal(res.status, 401);
    assert.equal((await a.request('GET', `/v2/streams/${created.streamId}`)).json().status, 'closed');
  });

  test('a key revoked while the bus is down: its attached stream ends once the bus is back', async () => {
    await a.registerVehicle('k-3');
    const made = (await a.request('POST', '/v2/api-keys', { body: { name: 'unheard too', scopes: ['streams', 'telemetry:read'] } })).json();
    const created = await createStream(a, { events: ['location'] }, 'k-3', made.key);
    const client = await attach(created.url, {}, clients);
    await client.next((m) => m.type === 'connected');
    network.setDown(true);
    try {
      assert.equal((await b.request('DELETE', `/v2/api-keys/${made.id}`)).statusCode, 204);
      assert.ok(client.isOpen, 'A has not heard');
    } finally {
      network.setDown(false);
    }
    assert.equal((await client.closed).code, 1008);
  });

  test('a vehicle deleted on one node is gone from the other\'s latest state', async () => {
    await a.registerVehicle('c-4');
    await send(a, 'c-4', { speed: 5 });
    await waitUntil(async () => (await b.request('GET', '/v2/telemetry/c-4')).statusCode === 200, 'latest on B');
    assert.equal((await a.request('DELETE', '/v2/fleet/vehicles/c-4')).statusCode, 204);
    await waitUntil(async () => (await b.request('GET', '/v2/telemetry/c-4')).statusCode === 404, 'gone on B');
  });

  test('bus lost: each node keeps serving, /readyz says degraded; back: nodes catch up from the database and streams get a fresh snapshot', async () => {
    await a.registerVehicle('c-5');
    await send(a, 'c-5', { speed: 1 });
    const created = await createStream(b, { events: ['location'] }, 'c-5');
    const client = await attach(created.url, {}, clients);
    await client.next((m) => m.type === 'location' && m.data?.speed === 1);

    network.setDown(true);
    try {
      const ready = (await a.request('GET', '/readyz', { key: null })).json();
      assert.equal(ready.status, 'degraded');
      assert.match(ready.checks.cluster, /^degraded: /);
      await send(a, 'c-5', { speed: 2 }, stamp());
      assert.deepEqual(await client.quiet(200, (m) => m.type === 'location'), [], 'nothing crosses while the bus is down');
      assert.equal((await b.request('GET', '/v2/telemetry/c-5')).json().data.speed, 1, 'B has not heard');
      // Meanwhile, a vehicle deleted on A is gone from the database, but B has not heard either.
      await a.registerVehicle('c-6');
      await send(a, 'c-6', { speed: 9 });
    } finally {
      network.setDown(false);
    }
    const update = await client.next((m) => m.type === 'location' && m.data?.speed === 2);
    assert.ok(update.seq! > 0);
    await waitUntil(async () => (await b.request('GET', '/v2/telemetry/c-5')).json().data.speed === 2, 'B reloaded from the database');
    assert.equal((await b.request('GET', '/v2/telemetry/c-6')).json().data.speed, 9);
    assert.equal((await b.request('GET', '/readyz', { key: null })).json().status, 'ready');
  });
});

describe('the quota of open streams counts the whole cluster', { skip }, () => {
  const network = createMemoryBusNetwork();
  const directory = createMemoryStreamDirectory({ maxMessages: DEFAULT_STREAM_SETTINGS.replayMaxMessages });
  const env = { FLEET_QUOTA_STREAMS: '2' };
  const streams = { openLeaseMs: 600 };
  const nodes: StreamApp[] = [];
  const clients: StreamClient[] = [];
  const join = (first?: StreamApp) => {
    const bus = network.join();
    return createStreamApp({ env, streams, ...(first === undefined ? { backend: 'postgres' as const } : { join: first }), cluster: { bus, directory, state: () => bus.state() } });
  };
  const open = (node: StreamApp) => node.request('POST', '/v2/telemetry/stream', { body: { events: ['location'] } });
  const assertFull = async (node: StreamApp, why: string) => {
    const res = await open(node);
    assert.equal(res.statusCode, 403, `${why}: ${res.body}`);
    assert.equal(res.json().code, 'quota-exceeded');
  };
  after(async () => {
    await closeAll(clients);
    for (const node of nodes.reverse()) await node.close();
  });

  test('streams on two nodes fill one quota; an ended one frees its place on every node; one taken over counts once', async () => {
    const a = await join();
    nodes.push(a);
    const b = await join(a);
    nodes.push(b);
    const onA = await createStream(a, { events: ['location'] });
    const onB = await createStream(b, { events: ['location'] });
    await assertFull(a, 'one on each node');
    await assertFull(b, 'one on each node');

    // Ended through the node that does not hold it.
    assert.equal((await b.request('DELETE', `/v2/streams/${onA.streamId}`)).statusCode, 204);
    const again = await createStream(b, { events: ['location'] });
    await assertFull(a, 'the freed place was taken');

    // Taken over by the other node: still one stream, one place.
    const client = await attach(at(a, onB.url), {}, clients);
    await client.next((m) => m.type === 'connected');
    await assertFull(a, 'after the takeover');
    for (const id of [onB.streamId, again.streamId]) assert.equal((await a.request('DELETE', `/v2/streams/${id}`)).statusCode, 204);
    assert.equal((await open(b)).statusCode, 201);
  });

  test('a node that dies gives its streams\' places back when their leases run out; a live node keeps renewing its own', async () => {
    const [a, b] = nodes as [StreamApp, StreamApp];
    const c = await join(a);
    await createStream(c, { events: ['location'] });
    await assertFull(a, 'one on B (from before), one on C');
    await c.close(); // its streams are not ended: only their leases say they are gone
    await waitUntil(async () => (await open(a)).statusCode === 201, 'C\'s place free once its lease ran out', 5_000);
    // B's stream has outlived several leases, renewed by B: still counted.
    await assertFull(b, 'B\'s own stream and the new one on A');
  });
});
