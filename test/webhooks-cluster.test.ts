// Webhooks and the event feed with two nodes on one PostgreSQL schema (docs/API.md "Events" and
// "Webhooks"): both nodes run the delivery worker, and two nodes never send the same attempt; the
// feed followed with `next` across both nodes while both commit never skips or repeats an event.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { adminQuery, skipUnlessPostgres } from './helpers/postgres.ts';

const skip = await skipUnlessPostgres();

/** Both nodes' workers poll often, so that both take part in every stretch of deliveries. */
const WEBHOOKS = { pollMs: 20, retryDelaysMs: [200] };

describe('webhooks and the feed on two nodes', { skip }, () => {
  let a: TestApp;
  let b: TestApp;
  let schema: string;

  before(async () => {
    const env = { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true', FLEET_RATE_LIMIT_REQUESTS: '0' };
    a = await createTestApp({ backend: 'postgres', env, webhooks: WEBHOOKS });
    b = await createTestApp({ join: { stores: a.stores, adminKey: a.adminKey, organizationId: a.organizationId }, env, webhooks: WEBHOOKS });
    schema = (a.stores as unknown as { schema: string }).schema;
  });
  after(async () => {
    // b first: closing a drops the schema.
    await b?.close();
    await a?.close();
  });

  test('200 events recorded through both nodes: each delivered, each attempt sent once', { timeout: 60_000 }, async (t) => {
    const received = new Map<string, number>();
    const bad: string[] = [];
    let verifier: Webhook | undefined;
    const receiver: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const id = req.headers['webhook-id'] as string;
        try {
          verifier!.verify(Buffer.concat(chunks).toString(), req.headers as Record<string, string>);
        } catch (error) {
          bad.push(`${id}: ${(error as Error).message}`);
        }
        received.set(id, (received.get(id) ?? 0) + 1);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const created = await a.request('POST', '/v2/webhooks', { body: { url, eventTypes: ['vehicle.status_changed'] } });
      assert.equal(created.statusCode, 201, created.body);
      const { id: webhookId, secret } = created.json<{ id: string; secret: string }>();
      verifier = new Webhook(secret);
      // How many deliveries each node claims: both must take part, or "never twice" proves little.
      const claimed = new Map<TestApp, number>();
      for (const node of [a, b]) {
        const store = node.stores.webhooks;
        const claim = store.claim.bind(store);
        store.claim = async (...args) => {
          const got = await claim(...args);
          claimed.set(node, (claimed.get(node) ?? 0) + got.length);
          return got;
        };
      }

      // 10 vehicles, each changed 20 times, alternately through a and b (the 200 events).
      const vehicles = Array.from({ length: 10 }, (_, i) => `dual-${i}`);
      for (const id of vehicles) await a.registerVehicle(id);
      const recorded: string[] = [];
      await Promise.all(vehicles.map(async (vehicleId, v) => {
        for (let n = 0; n < 20; n++) {
          const node = (n + v) % 2 === 0 ? a : b;
          const res = await node.request('PUT', `/v2/fleet/vehicles/${vehicleId}/status`, { body: { status: n % 2 === 0 ? 'active' : 'inactive' } });
          assert.equal(res.statusCode, 200, res.body);
          recorded.push(`${vehicleId}#${n}`);
        }
      }));
      assert.equal(recorded.length, 200);
      const events = await adminQuery<{ id: string }>(
        `SELECT id FROM ${schema}.events WHERE organization_id = $1 AND type = 'vehicle.status_changed' ORDER BY tx, seq`, [a.organizationId]);
      assert.equal(events.length, 200);

      const deadline = Date.now() + 30_000;
      while (!events.every((e) => received.has(e.id))) {
        assert.ok(Date.now() < deadline, `${events.filter((e) => received.has(e.id)).length} of 200 delivered after 30 s`);
        await sleep(20);
      }
      // Anything sent twice would arrive within moments: give it the time of a few polls.
      await sleep(500);
      assert.deepEqual(bad, []);
      assert.deepEqual([...received.entries()].filter(([, n]) => n > 1), [], 'no webhook-id received twice');
      assert.equal(received.size, 200);

      // The store agrees: one delivery per event, each succeeded at its first attempt.
      let rows: Array<{ status: string; attempt: number; n: number }> = [];
      for (const until = Date.now() + 10_000; Date.now() < until; await sleep(50)) {
        rows = await adminQuery(`SELECT status, attempt, count(*)::int AS n FROM ${schema}.webhook_deliveries WHERE webhook_id = $1 GROUP BY 1, 2`, [webhookId]);
        if (rows.length === 1 && rows[0]!.status === 'succeeded') break;
      }
      assert.deepEqual(rows, [{ status: 'succeeded', attempt: 1, n: 200 }]);
      assert.ok((claimed.get(a) ?? 0) > 0 && (claimed.get(b) ?? 0) > 0, `both nodes delivered (a: ${claimed.get(a)}, b: ${claimed.get(b)})`);
      assert.equal((claimed.get(a) ?? 0) + (claimed.get(b) ?? 0), 200, 'every delivery claimed once');
      t.diagnostic(`claimed by a: ${claimed.get(a)}, by b: ${claimed.get(b)}`);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  test('the feed followed across both nodes while both commit: the log, in order, no skip, no repeat', { timeout: 60_000 }, async () => {
    const vehiclesA = Array.from({ length: 4 }, (_, i) => `feed-a${i}`);
    const vehiclesB = Array.from({ length: 4 }, (_, i) => `feed-b${i}`);
    for (const id of vehiclesA) await a.registerVehicle(id);
    for (const id of vehiclesB) await b.registerVehicle(id);

    // Both nodes commit concurrently: 4 writers each, 40 changes per writer.
    let writing = true;
    const writer = (node: TestApp, vehicleId: string) => (async () => {
      for (let n = 0; n < 40; n++) {
        const res = await node.request('PUT', `/v2/fleet/vehicles/${vehicleId}/status`, { body: { status: n % 2 === 0 ? 'active' : 'inactive' } });
        assert.equal(res.statusCode, 200, res.body);
      }
    })();
    const writers = Promise.all([...vehiclesA.map((v) => writer(a, v)), ...vehiclesB.map((v) => writer(b, v))]).finally(() => (writing = false));

    // The reader follows `next`, asking a and b in turn, with small pages, while the writers run.
    const read: string[] = [];
    let after: string | undefined;
    let reads = 0;
    const page = async () => {
      const node = reads++ % 2 === 0 ? a : b;
      const res = await node.request('GET', '/v2/events', { query: { limit: '7', ...(after === undefined ? {} : { after }) } });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json<{ events: Array<{ id: string }>; next: string }>();
      read.push(...body.events.map((e) => e.id));
      after = body.next;
      return body.events.length;
    };
    while (writing) await page();
    await writers;

    // Then to the end: what the log holds now, read up to an empty page (bounded: a transaction
    // elsewhere on the server can hold the settled horizon back for a moment).
    const logged = async () => (await adminQuery<{ id: string }>(
      `SELECT id FROM ${schema}.events WHERE organization_id = $1 ORDER BY tx, seq`, [a.organizationId])).map((row) => row.id);
    const expected = await logged();
    const deadline = Date.now() + 20_000;
    for (;;) {
      const got = await page();
      if (got === 0 && read.length >= expected.length) break;
      assert.ok(Date.now() < deadline, `read ${read.length} of ${expected.length} events after 20 s`);
      if (got === 0) await sleep(20);
    }
    assert.equal(new Set(read).size, read.length, 'no event read twice');
    assert.deepEqual(read, expected, 'the events read are the log, in its order');
    assert.ok(reads > 20, `the reader read while the writers wrote (${reads} pages)`);
  });
});
