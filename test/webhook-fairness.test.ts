// Fair webhook deliveries, on both stores: claims take organizations and their endpoints in turn
// and hold each endpoint to its cap; and with one organization's endpoints answering late and a
// long backlog of its deliveries, another organization's delivery goes out at once. The late
// answers are requests a real local receiver holds open until the test ends.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { systemClock } from '../src/clock.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { createOutbound } from '../src/webhooks/outbound.ts';
import type { WebhookRecord } from '../src/webhooks/store.ts';
import { DEFAULT_DELIVERY_SETTINGS, createDeliveryWorker } from '../src/webhooks/worker.ts';
import { T0, addOrganization } from './contract/fixtures.ts';
import { openPostgresTestStores, skipUnlessPostgres } from './helpers/postgres.ts';

const quiet = { warn() {} };

async function sqlite(): Promise<Stores> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-fair-'));
  const stores = createSqliteStores(path.join(dir, 'fleet.db'));
  return { ...stores, close: async () => { await stores.close(); rmSync(dir, { recursive: true, force: true }); } };
}

const endpoint = (organizationId: string, id: string, url: string, at: number): WebhookRecord => ({
  id, organizationId, url, eventTypes: ['*'], description: null, enabled: true, disabledReason: null,
  secret: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmU=', previousSecret: null, previousSecretUntil: null, failingSince: null,
  createdAt: at, updatedAt: at,
});

async function addDeliveries(stores: Stores, webhookId: string, count: number, at: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await stores.webhooks.addDelivery({ id: `${webhookId}_d${i}`, webhookId, eventId: `evt_${webhookId}_${i}`, eventType: 'webhook.test', payload: `{"n":${i}}`, recordedAt: at }, at);
  }
}

function suite(open: () => Promise<Stores>) {
  test('a claim takes organizations and endpoints in turn, and no more of an endpoint than its cap', async () => {
    const stores = await open();
    try {
      const x = await addOrganization(stores);
      const y = await addOrganization(stores);
      for (const id of ['wh_x1', 'wh_x2', 'wh_x3']) await stores.webhooks.insert(endpoint(x, id, 'http://127.0.0.1:9/x', T0), 100);
      await stores.webhooks.insert(endpoint(y, 'wh_y', 'http://127.0.0.1:9/y', T0), 100);
      for (const id of ['wh_x1', 'wh_x2', 'wh_x3']) await addDeliveries(stores, id, 5, T0);
      await addDeliveries(stores, 'wh_y', 1, T0 + 1);
      const caps = { perEndpoint: 2, perOrganization: 100 };

      const first = await stores.webhooks.claim(T0 + 10, T0 + 1000, 6, caps);
      assert.deepEqual(first.map((d) => d.id), ['wh_x1_d0', 'wh_y_d0', 'wh_x2_d0', 'wh_x3_d0', 'wh_x1_d1', 'wh_x2_d1'],
        "the other organization's delivery, due last, is taken second; each endpoint's oldest first");
      assert.deepEqual((await stores.webhooks.claim(T0 + 10, T0 + 1000, 10, caps)).map((d) => d.id), ['wh_x3_d1'],
        'two of each endpoint leased: only the third endpoint has room');
      await stores.webhooks.release([first[0]!.id]);
      assert.deepEqual((await stores.webhooks.claim(T0 + 10, T0 + 1000, 10, caps)).map((d) => d.id), ['wh_x1_d0'], 'one given back frees its place');
      assert.deepEqual((await stores.webhooks.claim(T0 + 10, T0 + 1000, 10, { perEndpoint: 10, perOrganization: 8 })).map((d) => d.id),
        ['wh_x1_d2', 'wh_x2_d2'], 'an organization is held to its cap too: 6 of its deliveries were leased');
    } finally {
      await stores.close();
    }
  });

  test("another organization's delivery goes out while one organization's slow endpoints hold a long backlog", { timeout: 120_000 }, async () => {
    const stores = await open();
    /** Requests to the slow organization's endpoints, held open: its endpoints answer late. */
    const held: ServerResponse[] = [];
    const open_ = new Map<string, number>();
    let mostAtOnce = 0;
    let quickAt: number | undefined;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/quick') {
          quickAt = held.length;
          res.writeHead(204).end();
          return;
        }
        held.push(res);
        open_.set(req.url!, (open_.get(req.url!) ?? 0) + 1);
        mostAtOnce = Math.max(mostAtOnce, ...open_.values());
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Longer than the test: the held requests stay open to its end. Every endpoint is on this one
    // origin here, so its connections are not what limits the attempts.
    const outbound = createOutbound({ allowPrivate: true, timeoutMs: 300_000, connections: 256 });
    const settings = { ...DEFAULT_DELIVERY_SETTINGS, pollMs: 50 };
    const worker = createDeliveryWorker({ store: stores.webhooks, outbound, clock: systemClock, log: quiet, settings });
    try {
      const now = Date.now();
      const slow = await addOrganization(stores);
      const other = await addOrganization(stores);
      for (let i = 0; i < 20; i++) {
        await stores.webhooks.insert(endpoint(slow, `wh_s${i}`, `${base}/slow/${i}`, now), 100);
        await addDeliveries(stores, `wh_s${i}`, 40, now);
      }
      await stores.webhooks.insert(endpoint(other, 'wh_quick', `${base}/quick`, now), 100);

      worker.start();
      // Every place the slow organization can take is taken (all of them, before this fix).
      const spare = Math.floor(settings.concurrency / 4);
      await until(() => held.length >= settings.concurrency - spare, 'the slow endpoints to take their places');
      await addDeliveries(stores, 'wh_quick', 1, Date.now());
      worker.wake();
      await until(() => quickAt !== undefined, "the other organization's delivery");

      assert.ok(held.length < settings.concurrency, `the slow organization was left places for others (${held.length} under way)`);
      assert.ok(mostAtOnce <= settings.endpointConcurrency, `at most ${settings.endpointConcurrency} attempts at one endpoint at once (${mostAtOnce})`);
      const backlog = await stores.webhooks.deliveries('wh_s0', undefined, 100);
      assert.equal(backlog.filter((d) => d.status === 'pending').length, 40, 'the slow backlog is still pending');
      let recorded: string | undefined;
      await until(() => recorded === 'succeeded', 'the quick delivery recorded', 20_000, async () => {
        recorded = (await stores.webhooks.deliveries('wh_quick', undefined, 10))[0]?.status;
      });
    } finally {
      await worker.stop();
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
      await outbound.close();
      await stores.close();
    }
  });
  test('an attempt that ends frees its endpoint\'s place at once: a backlog held to the caps flows without waiting for the next poll', { timeout: 120_000 }, async () => {
    const stores = await open();
    let received = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received++;
        res.writeHead(204).end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const outbound = createOutbound({ allowPrivate: true, timeoutMs: 30_000 });
    // One attempt of an endpoint at a time, and a poll that never comes within the test: every
    // claim after the first must come from an attempt's end.
    const settings = { ...DEFAULT_DELIVERY_SETTINGS, endpointConcurrency: 1, pollMs: 3_600_000 };
    const worker = createDeliveryWorker({ store: stores.webhooks, outbound, clock: systemClock, log: quiet, settings });
    try {
      const now = Date.now();
      const organization = await addOrganization(stores);
      for (let i = 0; i < 3; i++) {
        await stores.webhooks.insert(endpoint(organization, `wh_c${i}`, `${base}/c/${i}`, now), 100);
        await addDeliveries(stores, `wh_c${i}`, 5, now);
      }
      worker.start();
      await until(() => received >= 15, 'every delivery of the backlog');
      assert.equal(received, 15);
    } finally {
      await worker.stop();
      server.closeAllConnections();
      server.close();
      await outbound.close();
      await stores.close();
    }
  });
}

/** Waits for `condition`; a bound only against a test that would hang, never a measure of speed. */
async function until(condition: () => boolean, what: string, ms = 20_000, look?: () => Promise<void>): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    await look?.();
    if (condition()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// Asked before the SQLite suite starts: its set-up holds the event loop longer than the question may wait.
const skip = await skipUnlessPostgres();
describe('fair deliveries on SQLite', () => suite(sqlite));
describe('fair deliveries on PostgreSQL', { skip }, () => suite(() => openPostgresTestStores({ label: 'fair' })));
