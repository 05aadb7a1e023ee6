// Guessing device identifiers on the device ports (docs/SECURITY.md "Device ports"), on both
// stores, over real sockets: an address that presents too many unknown identifiers is refused
// for a time that doubles, on every device entry point, without its identifiers being looked up;
// registered devices at other addresses are answered as before. Time is the test's clock.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import { createTestApp, manualClock, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';
import { type Tracker, connectTracker, count, fix, packetOf } from './helpers/teltonika.ts';

let sent = Date.parse('2026-11-22T07:00:00.000Z') / 1000;

/** A GET on the OsmAnd port from `localAddress`, each at a time of its own: the status and the Retry-After. */
function report(port: number, id: string, localAddress = '127.0.0.1'): Promise<{ status: number; retryAfter: string | undefined }> {
  const query = new URLSearchParams({ id, lat: '52.5', lon: '13.4', timestamp: String(++sent) });
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: `/?${query.toString()}`, localAddress, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] }));
    });
    request.on('error', reject);
    request.setTimeout(5_000, () => request.destroy(new Error('no answer')));
  });
}

function refusedCount(text: string, protocol: string, reason: string): number {
  const match = new RegExp(`^fleet_device_identifiers_refused_total\\{protocol="${protocol}",reason="${reason}"\\} (\\d+)$`, 'm').exec(text);
  return match === null ? 0 : Number(match[1]);
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`guessing identifiers (${backend})`, { skip: backend === 'postgres' ? await skipUnlessPostgres() : false }, () => {
    test('past a few unknown identifiers an address is refused everywhere, for a doubling time; other addresses are not', async (t) => {
      const clock = manualClock(Date.parse('2026-11-22T08:00:00.000Z'));
      const [osmandPort, teltonikaPort] = [await freePort(), await freePort()];
      const ctx: TestApp = await createTestApp({
        backend, clock,
        env: {
          FLEET_OSMAND_PORT: String(osmandPort), FLEET_TELTONIKA_PORT: String(teltonikaPort), FLEET_PROTOCOLS_HOST: '127.0.0.1',
          FLEET_DEVICE_UNKNOWN_IDENTIFIERS: '3', FLEET_DEVICE_BACKOFF_MAX_SECONDS: '60',
        },
      });
      const trackers: Tracker[] = [];
      t.after(async () => {
        for (const tracker of trackers) tracker.end();
        await ctx.close();
      });
      // The victim: another organization's vehicle, with a device of each protocol.
      const other = await ctx.otherOrganization();
      await ctx.registerVehicle('victim', {}, other.key);
      for (const [protocol, identifier] of [['osmand', 'phone-victim'], ['teltonika', '352093089999999']]) {
        const res = await ctx.request('POST', '/v2/devices', { key: other.key, body: { protocol, identifier, vehicleId: 'victim' } });
        assert.equal(res.statusCode, 201, res.body);
      }
      const stored = async () => (await ctx.request('GET', '/v2/telemetry/victim/history', { key: other.key })).json().records.length;

      // Three distinct unknown identifiers are answered 404; one of them again does not count.
      for (const id of ['guess-1', 'guess-2', 'guess-3', 'guess-1']) assert.equal((await report(osmandPort, id)).status, 404, id);
      assert.equal((await report(osmandPort, 'phone-victim')).status, 200, 'a hit within the allowance is answered');
      // A fourth distinct one (on the Teltonika port: the allowance is the address's, across ports) holds the address back 1 s.
      const guesser = await connectTracker(teltonikaPort, trackers);
      assert.deepEqual(await guesser.login('352093080000004'), Buffer.from([0]));
      assert.deepEqual(await report(osmandPort, 'phone-victim'), { status: 429, retryAfter: '1' }, 'refused, not looked up');
      const held = await connectTracker(teltonikaPort, trackers);
      assert.deepEqual(await held.login('352093089999999'), Buffer.from([0]), 'a registered IMEI from the held address is refused too');
      const main = await ctx.request('GET', '/osmand', { key: null, query: { id: 'phone-victim', lat: '1', lon: '1' } });
      assert.equal(main.statusCode, 429, 'and /osmand on the main port');
      assert.equal(main.json().code, 'rate-limited');
      assert.equal(await stored(), 1);

      // Another address is not held back: its registered devices are answered and stored.
      assert.equal((await report(osmandPort, 'phone-victim', '127.0.0.2')).status, 200);
      const elsewhere = await connectTracker(teltonikaPort, trackers, '127.0.0.2');
      assert.deepEqual(await elsewhere.login('352093089999999'), Buffer.from([1]));
      elsewhere.send(packetOf([fix(clock.now() - 60_000, 1, 1)]));
      assert.deepEqual(await elsewhere.read(4), count(1));
      assert.equal(await stored(), 3);

      // Once the time is up the address is answered again; its next unknown identifier holds it back twice as long.
      clock.advance(1_000);
      assert.equal((await report(osmandPort, 'guess-5')).status, 404);
      assert.deepEqual(await report(osmandPort, 'guess-6'), { status: 429, retryAfter: '2' });
      clock.advance(1_999);
      assert.equal((await report(osmandPort, 'guess-6')).status, 429);
      clock.advance(1);
      assert.equal((await report(osmandPort, 'guess-6')).status, 404);
      assert.deepEqual(await report(osmandPort, 'guess-7'), { status: 429, retryAfter: '4' });

      const metrics = (await ctx.request('GET', '/metrics')).body;
      assert.equal(refusedCount(metrics, 'osmand', 'unknown'), 6);
      assert.equal(refusedCount(metrics, 'teltonika', 'unknown'), 1);
      assert.equal(refusedCount(metrics, 'osmand', 'held-back'), 5);
      assert.equal(refusedCount(metrics, 'teltonika', 'held-back'), 1);
    });
  });
}
