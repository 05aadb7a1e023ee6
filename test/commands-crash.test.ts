// Commands across SIGKILL and restart (docs/API.md "Commands"): every command answered 202 is
// still there after the process is killed mid-stream; after the restart the tracker is sent each
// queued command once, oldest first, none past its expiry; a command in flight when the process
// died is never sent again, and times out. Processes are killed in t.after; every wait is bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateApiKey } from '../src/auth/keys.ts';
import { RESPONSE_TYPE, encodeCodec12 } from '../src/protocols/teltonika/codec12.ts';
import { freePort } from './helpers/mqtt.ts';
import { request, startFleet, tempDir } from './helpers/process.ts';
import { connectTracker, readCommand } from './helpers/teltonika.ts';
import { waitUntil } from './helpers/wait.ts';

const IMEI = '354000000000001';
type Command = { id: string; status: string; expiresAt: string; sentAt: string | null };

test('queued commands survive SIGKILL: each goes out once after the restart, oldest first, none past its expiry; one in flight is never resent', { timeout: 120_000 }, async (t) => {
  const key = generateApiKey();
  const cwd = tempDir(t, 'fleet-commands-crash-');
  const port = await freePort();
  const env = { FLEET_ADMIN_KEY: key, FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_TELTONIKA_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1', FLEET_COMMAND_TIMEOUT_SECONDS: '1' };
  const first = await startFleet(t, { cwd, env });
  for (const body of [{ vehicleId: 'crash-van', type: 'van' }]) assert.equal((await request(first, 'POST', '/v2/fleet/vehicles', { key, body })).status, 201);
  assert.equal((await request(first, 'POST', '/v2/devices', { key, body: { protocol: 'teltonika', identifier: IMEI, vehicleId: 'crash-van' } })).status, 201);
  const send = (body: unknown) => request(first, 'POST', '/v2/fleet/vehicles/crash-van/commands', { key, body });

  // One command in flight when the process dies: sent to the tracker, never answered.
  const tracker = await connectTracker(port);
  t.after(() => tracker.end());
  assert.deepEqual(await tracker.login(IMEI), Buffer.from([1]));
  const inFlight = (await (await send({ type: 'reboot' })).json()) as Command;
  assert.equal(await readCommand(tracker), 'cpureset');
  // Some that expire before the restart; then commands sent concurrently until the kill.
  const expiring: string[] = [];
  for (let i = 0; i < 3; i++) expiring.push(((await (await send({ type: 'custom', params: { text: `stale ${i}` }, expiresInSeconds: 10 })).json()) as Command).id);
  const acknowledged: Array<{ id: string; text: string }> = [];
  let n = 0;
  let stop = false;
  const clients = Array.from({ length: 4 }, async () => {
    while (!stop) {
      const text = `c${n++}`;
      const res = await send({ type: 'custom', params: { text } }).catch(() => undefined);
      if (res?.status === 202) acknowledged.push({ id: ((await res.json()) as Command).id, text });
      else if (res !== undefined && res.status !== 202) throw new Error(`${res.status} ${await res.text()}`);
    }
  });
  await waitUntil(() => acknowledged.length >= 40, '40 commands acknowledged', 30_000);
  first.child.kill('SIGKILL');
  stop = true;
  await Promise.allSettled(clients);
  await first.closed;
  tracker.end();
  const expiresAt = Date.now() + 10_000;

  const second = await startFleet(t, { cwd, env });
  const read = async (id: string) => (await (await request(second, 'GET', `/v2/commands/${id}`, { key })).json()) as Command;
  for (const { id } of acknowledged) assert.equal((await read(id)).status, 'queued', `acknowledged command ${id} kept`);
  // The tracker comes back once the short expiries have passed.
  await waitUntil(() => Date.now() > expiresAt, 'the short expiries to pass', 15_000, { every: 200 });
  const again = await connectTracker(port);
  t.after(() => again.end());
  assert.deepEqual(await again.login(IMEI), Buffer.from([1]));
  // Answered one by one: the tracker sees the kept ones in the order they were queued, once each.
  // Until the last acknowledged one has come (then a short quiet: a stored command whose 202 was
  // lost with the process may follow); the wait for each is long, for a busy machine.
  // Concurrent requests are queued in the order the service made them (their ids), not the order their 202s came back.
  const expected = [...acknowledged].sort((a, b) => (a.id < b.id ? -1 : 1)).map((c) => c.text);
  const texts: string[] = [];
  const last = expected.at(-1)!;
  for (;;) {
    const text = await readCommand(again, texts.includes(last) ? 300 : 15_000);
    if (text === 'timeout') break;
    assert.notEqual(text, 'closed');
    texts.push(text);
    again.send(encodeCodec12(`ok ${text}`, RESPONSE_TYPE));
  }
  // Commands whose 202 was lost with the process may be there too (stored, not acknowledged): they keep their place.
  const sentAcknowledged = texts.filter((text) => expected.includes(text));
  assert.deepEqual(sentAcknowledged, expected, 'every acknowledged command once, oldest first');
  assert.ok(!texts.includes('cpureset'), 'the command in flight at the kill is not sent again');
  assert.ok(texts.every((text) => !text.startsWith('stale')), 'nothing past its expiry');
  await waitUntil(async () => (await read(inFlight.id)).status === 'timed_out', 'the command in flight to time out', 20_000, { every: 200 });
  for (const id of expiring) await waitUntil(async () => (await read(id)).status === 'expired', `${id} expired`, 10_000, { every: 100 });
});
