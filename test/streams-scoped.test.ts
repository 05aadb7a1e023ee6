// A live stream of a credential limited to groups (docs/API.md "Scoped credentials"): it carries
// only the vehicles in its groups, its snapshot included; a vehicle that leaves them stops being
// carried as soon as the change is heard, one that joins is carried from then on; and a person
// whose groups change has their streams ended. Order, not time, is asserted: after the change,
// updates of the vehicle that left and of one that stays are sent in turn until one of the
// leaver's is not carried, and none of the leaver's is carried after that.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Message, type StreamApp, type StreamClient, attach, closeAll, createStream, createStreamApp, send, withTimeout } from './helpers/streams.ts';

let ctx: StreamApp;
const clients: StreamClient[] = [];
let group: string;
let other: string;
let key: string;

before(async () => {
  ctx = await createStreamApp();
  const make = async (name: string) => (await ctx.request('POST', '/v2/groups', { body: { name } })).json<{ id: string }>().id;
  group = await make('scoped streams');
  other = await make('elsewhere');
  await ctx.registerVehicle('ss-stay', { groupIds: [group] });
  await ctx.registerVehicle('ss-leave', { groupIds: [group] });
  await ctx.registerVehicle('ss-join', { groupIds: [other] });
  await ctx.registerVehicle('ss-never', { groupIds: [other] });
  for (const id of ['ss-stay', 'ss-leave', 'ss-join', 'ss-never']) await send(ctx, id, { battery: 90 });
  key = (await ctx.request('POST', '/v2/api-keys', { body: { name: 'scoped', scopes: ['streams', 'telemetry:read'], groupIds: [group] } })).json().key;
});
after(async () => {
  await closeAll(clients);
  await ctx.close();
});

const batteryOf = (client: StreamClient, vehicleId: string) =>
  client.messages.filter((m: Message) => m.type === 'battery' && m.vehicleId === vehicleId).map((m: Message) => (m.data as { battery: number }).battery);

/** Sends `leaver` then `stayer` a battery level `n`, and waits for the stayer's. */
async function turn(client: StreamClient, leaver: string, stayer: string, n: number): Promise<void> {
  await send(ctx, leaver, { battery: n });
  await send(ctx, stayer, { battery: n });
  await withTimeout(client.next((m: Message) => m.type === 'battery' && m.vehicleId === stayer && (m.data as { battery: number }).battery === n), 10_000, `${stayer} at ${n}`);
}

test('a fleet-wide stream carries its groups\' vehicles only; one that leaves stops, one that joins starts', async () => {
  const created = await createStream(ctx, { events: ['battery'], interval: 0 }, undefined, key);
  const client = await attach(created.url, {}, clients);
  assert.equal((await client.next()).type, 'connected');
  // The snapshot: its two vehicles, not the others.
  await withTimeout(client.next((m: Message) => m.type === 'battery' && m.vehicleId === 'ss-leave'), 10_000, 'the snapshot');
  await withTimeout(client.next((m: Message) => m.type === 'battery' && m.vehicleId === 'ss-stay'), 10_000, 'the snapshot');
  await turn(client, 'ss-never', 'ss-stay', 11);
  assert.deepEqual(batteryOf(client, 'ss-never'), [], 'a vehicle outside its groups is never carried');
  assert.deepEqual(batteryOf(client, 'ss-join'), []);

  // ss-leave leaves the group; ss-join joins it.
  assert.equal((await ctx.request('DELETE', `/v2/groups/${group}/vehicles/ss-leave`)).statusCode, 204);
  assert.equal((await ctx.request('POST', `/v2/groups/${group}/vehicles`, { body: { vehicleIds: ['ss-join'] } })).statusCode, 204);
  let n = 20;
  // Turns until one of the leaver's is not carried (the change is heard within the first few).
  do await turn(client, 'ss-leave', 'ss-stay', n++);
  while (n < 60 && batteryOf(client, 'ss-leave').includes(n - 1));
  assert.ok(n < 60, 'the leaver was still carried after 40 turns');
  const carried = batteryOf(client, 'ss-leave').length;
  for (let i = 0; i < 3; i++, n++) await turn(client, 'ss-leave', 'ss-stay', n);
  assert.equal(batteryOf(client, 'ss-leave').length, carried, 'once it left, it is not carried again');
  // The joiner is carried once the change is heard (its turns come after the leaver's stopped).
  await turn(client, 'ss-join', 'ss-stay', 99);
  assert.ok(batteryOf(client, 'ss-join').includes(99), 'a vehicle that joined the group is carried');
  // Back where it was: the leaver's absence is the scope's doing, not the stream's.
  assert.ok(client.isOpen);
});

test('a person whose groups change has their streams ended', async () => {
  const person = await ctx.person('scoped.streamer@example.com', 'Streamer', 'viewer', 'a long enough password');
  const patched = await ctx.request('PATCH', `/v2/users/${person}`, { body: { groupIds: [group] } });
  assert.equal(patched.statusCode, 200, patched.body);
  const session = await ctx.request('POST', '/auth/login', { key: null, body: { email: 'scoped.streamer@example.com', password: 'a long enough password' } });
  assert.equal(session.statusCode, 200, session.body);
  assert.deepEqual(session.json().user.groupIds, [group]);
  assert.ok(!session.json().scopes.includes('rules'));
  const cookie = String([session.headers['set-cookie']].flat()[0]).split(';')[0]!;
  const created = await ctx.request('POST', '/v2/telemetry/stream', {
    key: null, body: { events: ['battery'] }, headers: { cookie, 'x-csrf-token': session.json().csrfToken, origin: ctx.publicUrl },
  });
  assert.equal(created.statusCode, 201, created.body);
  const client = await attach(created.json().url, {}, clients);
  assert.equal((await client.next()).type, 'connected');
  assert.equal((await ctx.request('PATCH', `/v2/users/${person}`, { body: { groupIds: [group, other] } })).statusCode, 200);
  const closed = await withTimeout(client.closed, 10_000, 'the stream to end');
  assert.deepEqual([closed.code, closed.reason], [1008, 'credential changed']);
});
