// Webhook deliveries survive SIGKILL (docs/API.md "Webhooks": pending deliveries survive a restart
// and a crash; delivery is at least once). A real Fleet process records events while its one
// endpoint's receiver is down (connection refused), so deliveries are attempted, fail and wait for
// their retry; it is SIGKILLed with status changes still coming in, some committed and not yet
// fanned out or sent. The receiver then comes up on the same port, a new process starts on the same
// SQLite file, and every event in the log must reach the receiver (deduplicated by webhook-id), each
// signed as the Standard Webhooks reference verifier expects.
import assert from 'node:assert/strict';
import { generateApiKey } from '../src/auth/keys.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { request, type RunningFleet, startFleet, tempDir, withTimeout } from './helpers/process.ts';

const VEHICLES = ['crash-1', 'crash-2', 'crash-3', 'crash-4'];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Every event id in the organization's feed, in order, following `next` until an empty page. */
async function feedIds(fleet: RunningFleet, key: string): Promise<string[]> {
  const ids: string[] = [];
  let after = '';
  for (let pages = 0; pages < 100; pages++) {
    const res = await request(fleet, 'GET', `/v2/events?limit=1000${after === '' ? '' : `&after=${after}`}`, { key });
    assert.equal(res.status, 200, await res.clone().text());
    const page = (await res.json()) as { events: Array<{ id: string }>; next: string };
    if (page.events.length === 0) return ids;
    ids.push(...page.events.map((e) => e.id));
    after = page.next;
  }
  throw new Error('more than 100 pages of events');
}

test('every event is delivered after a SIGKILL between commit and delivery, once the receiver is up', { timeout: 90_000 }, async (t) => {
  const key = generateApiKey();
  const cwd = tempDir(t, 'fleet-webhooks-crash-');
  const env = { FLEET_ADMIN_KEY: key, FLEET_RATE_LIMIT_REQUESTS: '0', FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' };
  // The receiver's port, closed for now: every attempt is refused.
  const port = await freePort();
  const first = await startFleet(t, { cwd, env });

  const created = await request(first, 'POST', '/v2/webhooks', { key, body: { url: `http://127.0.0.1:${port}/hook`, eventTypes: ['*'] } });
  assert.equal(created.status, 201, await created.clone().text());
  const { id: webhookId, secret } = (await created.json()) as { id: string; secret: string };
  for (const vehicleId of VEHICLES) {
    const res = await request(first, 'POST', '/v2/fleet/vehicles', { key, body: { vehicleId, type: 'van' } });
    assert.equal(res.status, 201);
  }

  // One client per vehicle, toggling its status as fast as the process answers.
  const acknowledged: string[] = [];
  let stopped = false;
  // A failed assertion before the kill must not leave the clients asking for ever.
  t.after(() => {
    stopped = true;
  });
  let inFlight = 0;
  const clients = VEHICLES.map(async (vehicleId) => {
    for (let n = 0; !stopped; n++) {
      inFlight++;
      try {
        const res = await request(first, 'PUT', `/v2/fleet/vehicles/${vehicleId}/status`, { key, body: { status: n % 2 === 0 ? 'active' : 'inactive' } });
        if (res.status === 200) acknowledged.push(`${vehicleId}#${n}`);
        await res.arrayBuffer();
      } catch {
        // Killed under this request: not acknowledged, so not promised (it may still be in the log).
      } finally {
        inFlight--;
      }
    }
  });

  // Attempts are made and refused while the changes go on.
  await first.waitFor(() => acknowledged.length >= 40, '40 acknowledged status changes', 20_000);
  const refusedBy = Date.now() + 15_000;
  for (;;) {
    const res = await request(first, 'GET', `/v2/webhooks/${webhookId}/deliveries?limit=100`, { key });
    const { deliveries } = (await res.json()) as { deliveries: Array<{ attempt: number; error: string | null }> };
    if (deliveries.some((d) => d.attempt >= 1 && d.error !== null && /ECONNREFUSED|refused/i.test(d.error))) break;
    assert.ok(Date.now() < refusedBy, 'no refused attempt within 15 s');
    await sleep(20);
  }
  await sleep(200);
  const deadline = Date.now() + 2_000;
  while (inFlight < 2 && Date.now() < deadline) await sleep(1);
  first.child.kill('SIGKILL');
  const killedAt = Date.now();
  const exit = await withTimeout(first.closed, 5_000, 'the killed process to exit');
  stopped = true;
  await withTimeout(Promise.all(clients), 15_000, 'the clients to stop');
  assert.equal(exit.signal, 'SIGKILL');

  // Where the deliveries stood at the kill.
  const db = new DatabaseSync(path.join(cwd, 'data', 'fleet.db'));
  const one = (sql: string, ...params: number[]) => Number(Object.values(db.prepare(sql).get(...params)!)[0] ?? 0);
  const state = {
    events: one('SELECT count(*) FROM events'),
    notFannedOut: one('SELECT count(*) FROM events WHERE seq > (SELECT fanned_seq FROM event_log_state)'),
    neverAttempted: one(`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND attempt = 0 AND (lease_until IS NULL OR lease_until <= ?)`, killedAt),
    leasedUnrecorded: one(`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND lease_until > ?`, killedAt),
    failedAwaitingRetry: one(`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND attempt >= 1 AND (lease_until IS NULL OR lease_until <= ?)`, killedAt),
    succeeded: one(`SELECT count(*) FROM webhook_deliveries WHERE status = 'succeeded'`),
    latestLease: one(`SELECT coalesce(max(lease_until), 0) FROM webhook_deliveries WHERE status = 'pending'`),
  };
  db.close();
  t.diagnostic(`at the kill: ${state.events} events in the log, ${state.notFannedOut} not yet fanned out; deliveries: ` +
    `${state.neverAttempted} never attempted, ${state.leasedUnrecorded} claimed with no result recorded (lease up to ` +
    `${Math.max(0, state.latestLease - killedAt)} ms after the kill), ${state.failedAwaitingRetry} refused and awaiting their retry; ` +
    `${acknowledged.length} status changes acknowledged`);
  assert.equal(state.succeeded, 0, 'nothing could be delivered before the kill');
  assert.ok(state.failedAwaitingRetry >= 1, 'some deliveries were attempted and refused before the kill');

  // The receiver comes up on the endpoint's port before the restart.
  const received = new Map<string, number>();
  const bad: string[] = [];
  const verifier = new Webhook(secret);
  const receiver: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      try {
        const envelope = verifier.verify(body, req.headers as Record<string, string>) as { id: string };
        assert.equal(envelope.id, req.headers['webhook-id']);
        received.set(envelope.id, (received.get(envelope.id) ?? 0) + 1);
      } catch (error) {
        bad.push(`${req.headers['webhook-id'] as string}: ${(error as Error).message}`);
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  const restartedAt = Date.now();
  const second = await startFleet(t, { cwd, env });
  const logged = await feedIds(second, key);
  assert.equal(logged.length, state.events, 'the log after the restart is the log at the kill');
  assert.ok(logged.length >= VEHICLES.length + acknowledged.length, 'every acknowledged change is in the log');
  await second.waitFor(() => logged.every((id) => received.has(id)), 'every event of the log to reach the receiver', 60_000);
  const tookMs = Date.now() - restartedAt;
  const duplicates = [...received.values()].filter((n) => n > 1).length;
  t.diagnostic(`all ${logged.length} events delivered ${tookMs} ms after the restart began (${duplicates} received more than once)`);
  assert.deepEqual(bad, [], 'every delivery verifies with the endpoint secret');
  assert.deepEqual([...received.keys()].filter((id) => !logged.includes(id)), [], 'nothing delivered that is not in the log');
  assert.deepEqual(await second.stop('SIGTERM'), { code: 0, signal: null });
});
