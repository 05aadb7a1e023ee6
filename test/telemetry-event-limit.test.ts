// A batch whose records would record more events than a batch may (docs/API.md "Telemetry":
// 10,000) is refused with a 400 and nothing of it stored, while another organization's records,
// sent meanwhile over HTTP, MQTT and Teltonika, are all committed; a batch under the limit records
// every entry and exit. On both stores.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { MqttClient } from 'mqtt';
import { MAX_EVENTS_PER_BATCH } from '../src/telemetry/store.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { connectDevice, endAll, freePort, publishOutcome } from './helpers/mqtt.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { type Tracker, connectTracker, count, fix, packetOf } from './helpers/teltonika.ts';

/** Overlapping circles: a record inside is inside all of them. */
const GEOFENCES = 200;
const CENTER = { lat: 52.52, lng: 13.4 };
const OUTSIDE = { lat: 52.6, lng: 13.4 };

for (const backend of ['sqlite', 'postgres'] as const) {
  const skip = backend === 'postgres' ? await skipUnlessPostgres() : false;
  describe(`the events one batch may record (${backend})`, { skip }, () => {
    let ctx: TestApp;
    let other: { organizationId: string; key: string };
    let mqttUrl: string;
    let teltonikaPort: number;
    const clients: MqttClient[] = [];
    const trackers: Tracker[] = [];
    before(async () => {
      const mqttPort = await freePort();
      teltonikaPort = await freePort();
      mqttUrl = `mqtt://127.0.0.1:${mqttPort}`;
      ctx = await createTestApp({
        backend,
        env: { FLEET_MQTT_PORT: String(mqttPort), FLEET_MQTT_HOST: '127.0.0.1', FLEET_TELTONIKA_PORT: String(teltonikaPort), FLEET_PROTOCOLS_HOST: '127.0.0.1' },
      });
      other = await ctx.otherOrganization();
      for (let i = 0; i < GEOFENCES; i++) {
        const res = await ctx.request('POST', '/v2/geofences', {
          key: other.key, body: { name: `ring ${i}`, geometry: { type: 'Circle', coordinates: [CENTER.lng, CENTER.lat], radius: 1000 + i } },
        });
        assert.equal(res.statusCode, 201, res.body);
      }
    });
    after(async () => {
      await endAll(clients);
      for (const t of trackers) t.end();
      await ctx.close();
    });

    /** `n` records, one a second from `t0`, alternating inside every geofence and outside them all. */
    const alternating = (n: number, t0: number) => ({
      records: Array.from({ length: n }, (_, i) => ({ timestamp: new Date(t0 + i * 1000).toISOString(), data: { location: i % 2 === 0 ? CENTER : OUTSIDE } })),
    });

    async function eventCount(vehicleId: string, key: string): Promise<number> {
      let total = 0;
      let after: string | undefined;
      for (;;) {
        const res = await ctx.request('GET', '/v2/events', { key, query: { vehicleId, types: 'geofence.entered,geofence.exited', limit: '1000', ...(after === undefined ? {} : { after }) } });
        const page = res.json<{ events: unknown[]; next: string }>();
        if (page.events.length === 0) return total;
        total += page.events.length;
        after = page.next;
      }
    }

    test('a batch over the limit is refused whole; the other organization\'s HTTP, MQTT and Teltonika records all commit', async () => {
      await ctx.registerVehicle('bomb', {}, other.key);
      for (const v of ['calm-http', 'calm-mqtt', 'calm-tel']) await ctx.registerVehicle(v);
      const imei = '351000000000001';
      assert.equal((await ctx.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: imei, vehicleId: 'calm-tel' } })).statusCode, 201);
      const tracker = await connectTracker(teltonikaPort, trackers);
      assert.deepEqual(await tracker.login(imei), Buffer.from([1]));
      const device = await connectDevice(mqttUrl, { username: 'calm-mqtt', password: await ctx.keyWith(['telemetry:write']) }, clients);

      const t0 = Date.now() - 3_600_000;
      const rounds = 3;
      for (let round = 0; round < rounds; round++) {
        const at = t0 + round * 600_000;
        // 100 records, each entering or leaving all 200 geofences: 20,000 events.
        const bomb = ctx.request('POST', '/v2/telemetry/bomb', { key: other.key, body: alternating(100, at) });
        const http = Array.from({ length: 5 }, (_, i) => ctx.request('POST', '/v2/telemetry/calm-http', { body: { timestamp: new Date(at + i).toISOString(), data: { speed: i } } }));
        const mqtt = Array.from({ length: 5 }, (_, i) =>
          publishOutcome(device, 'fleet/calm-mqtt/telemetry', JSON.stringify({ timestamp: new Date(at + i).toISOString(), data: { speed: i } }), 1, 10_000));
        tracker.send(packetOf([fix(at, 52.5, 13.4), fix(at + 1000, 52.501, 13.4)]));
        const refused = await bomb;
        const answers = await Promise.all(http);
        assert.equal(refused.statusCode, 400, refused.body);
        const problem = refused.json();
        assert.equal(problem.code, 'validation-failed');
        assert.deepEqual(problem.errors.map((e: { path: string }) => e.path), ['/records']);
        assert.match(problem.errors[0].message, new RegExp(`more than ${MAX_EVENTS_PER_BATCH} events`));
        for (const answer of answers) assert.equal(answer.statusCode, 202, answer.body);
        assert.deepEqual(await Promise.all(mqtt), Array(5).fill('acked'));
        assert.deepEqual(await tracker.read(4, 10_000), count(2));
      }

      for (const v of ['calm-http', 'calm-mqtt', 'calm-tel']) {
        const history = await ctx.request('GET', `/v2/telemetry/${v}/history`);
        assert.equal(history.json().records.length, v === 'calm-tel' ? 2 * rounds : 5 * rounds, v);
      }
      assert.deepEqual((await ctx.request('GET', '/v2/telemetry/bomb/history', { key: other.key })).json().records, []);
      assert.equal(await eventCount('bomb', other.key), 0);
      assert.deepEqual((await ctx.request('GET', '/v2/fleet/vehicles/bomb/geofences', { key: other.key })).json(), { geofences: [] });
      assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/bomb', { key: other.key })).json().status, 'registered');
    });

    test('a batch under the limit records every entry and exit', async () => {
      await ctx.registerVehicle('busy', {}, other.key);
      // 40 records: 20 entries into and 20 exits from each of 200 geofences.
      const res = await ctx.request('POST', '/v2/telemetry/busy', { key: other.key, body: alternating(40, Date.now() - 600_000) });
      assert.equal(res.statusCode, 202, res.body);
      // On PostgreSQL an event is readable once every older transaction on the server has ended.
      const deadline = Date.now() + 15_000;
      let count = await eventCount('busy', other.key);
      while (count < 40 * GEOFENCES && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        count = await eventCount('busy', other.key);
      }
      assert.equal(count, 40 * GEOFENCES);
    });
  });
}
