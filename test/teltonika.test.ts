// Teltonika over real TCP (docs/API.md "Devices and protocols"): login, acknowledgement only after
// the commit, and what bad input does: no crash, bounded buffers, nothing stored unacknowledged.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { captureLogs } from './helpers/logs.ts';
import { freePort } from './helpers/mqtt.ts';
import { waitUntil } from './helpers/wait.ts';
import { DOC, type Tracker, connectTracker, count, fix, packetOf } from './helpers/teltonika.ts';

let ctx: TestApp;
let port: number;
const trackers: Tracker[] = [];
before(async () => {
  port = await freePort();
  // Every tracker here connects from 127.0.0.1, and stays open to the end: 2,000 at once in one test, and the others'.
  ctx = await createTestApp({ env: { FLEET_TELTONIKA_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1', FLEET_TELTONIKA_CONNECTIONS_PER_ADDRESS: '2100' } });
});
after(async () => {
  for (const t of trackers) t.end();
  await ctx.close();
});

let imeis = 350000000000000;
/** A vehicle with a Teltonika device; its IMEI. */
async function trackerVehicle(vehicleId: string): Promise<string> {
  const imei = String(++imeis);
  await ctx.registerVehicle(vehicleId);
  const res = await ctx.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: imei, vehicleId } });
  assert.equal(res.statusCode, 201, res.body);
  return imei;
}

async function stored(vehicleId: string) {
  const res = await ctx.request('GET', `/v2/telemetry/${vehicleId}/history`);
  return res.json().records as Array<{ timestamp: string; data: Record<string, unknown> }>;
}

const now = () => Date.now() - 60_000;

describe('login and acknowledgement', () => {
  test('a registered IMEI gets 0x01; a packet of 10 records is answered 10 once stored, converted; a resend is a duplicate', async () => {
    const imei = await trackerVehicle('t-1');
    const tracker = await connectTracker(port, trackers);
    assert.deepEqual(await tracker.login(imei), Buffer.from([1]));
    const t0 = now();
    const packet = packetOf(Array.from({ length: 10 }, (_, i) => fix(t0 + i * 1000, 52.5 + i / 1000, 13.4)));
    tracker.send(packet);
    assert.deepEqual(await tracker.read(4), count(10));
    const records = await stored('t-1');
    assert.equal(records.length, 10);
    assert.deepEqual(records[0], {
      vehicleId: 't-1',
      timestamp: new Date(t0).toISOString(),
      data: {
        location: { lat: 52.5, lng: 13.4 }, speed: 50, heading: 90, battery: 80, odometer: 5, ignition: true,
        diagnostics: { satellites: 8, altitude: 100, io239: 1, io113: 80, io16: 5000 },
      },
    });
    assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/t-1')).json().status, 'active');
    tracker.send(packet);
    assert.deepEqual(await tracker.read(4), count(10), 'a resent packet is answered again');
    assert.equal((await stored('t-1')).length, 10, 'and stored once');
    const text = (await ctx.request('GET', '/metrics')).body;
    assert.match(text, /fleet_telemetry_records_total\{source="teltonika",outcome="accepted"\} 10\b/);
    assert.match(text, /fleet_telemetry_records_total\{source="teltonika",outcome="duplicate"\} 10\b/);
    const device = (await ctx.request('GET', '/v2/devices', { query: { vehicleId: 't-1' } })).json().devices[0];
    assert.ok(device.lastSeenAt !== null, 'last seen');
  });

  test('the documentation\'s packets, sent one byte at a time and back to back, are each answered with their count', async () => {
    const imei = await trackerVehicle('t-2');
    const tracker = await connectTracker(port, trackers);
    const stream = Buffer.concat([Buffer.from(`000F${Buffer.from(imei).toString('hex')}`, 'hex'), ...[DOC.codec8First, DOC.codec8Third, DOC.codec8E].map((h) => Buffer.from(h, 'hex'))]);
    for (const byte of stream) {
      tracker.socket.write(Uint8Array.of(byte));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(await tracker.read(1 + 12), Buffer.concat([Buffer.from([1]), count(1), count(2), count(1)]));
    assert.deepEqual((await stored('t-2')).map((r) => r.timestamp), [
      '2019-06-10T10:01:01.000Z', '2019-06-10T10:01:19.000Z', '2019-06-10T10:04:46.000Z', '2019-06-10T11:36:32.000Z',
    ]);
  });

  test('an IMEI of no registered device, or not an IMEI: 0x00 and the connection closed', async () => {
    for (const imei of ['999999999999999', 'not-an-imei']) {
      const tracker = await connectTracker(port, trackers);
      assert.deepEqual(await tracker.login(imei), Buffer.from([0]), imei);
      tracker.send(packetOf([fix(now(), 1, 1)]));
      assert.equal(await tracker.read(1), 'closed', imei);
    }
  });

  test('a device that sends as another: it can only log in as a registered IMEI, and its packets go to that IMEI\'s vehicle alone', async () => {
    const mine = await trackerVehicle('t-3');
    await trackerVehicle('t-3-other');
    const tracker = await connectTracker(port, trackers);
    assert.deepEqual(await tracker.login(mine), Buffer.from([1]));
    tracker.send(Buffer.from(`000F${Buffer.from(String(imeis)).toString('hex')}`, 'hex'));
    assert.equal(await tracker.read(1), 'closed', 'a second login on one connection closes it');
    assert.equal((await stored('t-3-other')).length, 0);
  });
});

describe('what is not acknowledged', () => {
  test('a bad CRC: no answer, the connection stays open, the packet sent again is answered', async () => {
    const imei = await trackerVehicle('c-1');
    const tracker = await connectTracker(port, trackers);
    await tracker.login(imei);
    const packet = packetOf([fix(now(), 10, 10)]);
    const damaged = Buffer.from(packet);
    damaged[30]! ^= 0x55;
    tracker.send(damaged);
    assert.equal(await tracker.read(4, 500), 'timeout');
    assert.equal((await stored('c-1')).length, 0);
    tracker.send(packet);
    assert.deepEqual(await tracker.read(4), count(1));
  });

  test('a retired vehicle: no answer, closed, nothing stored; a deleted device likewise', async () => {
    const imei = await trackerVehicle('c-2');
    const tracker = await connectTracker(port, trackers);
    await tracker.login(imei);
    await ctx.request('PUT', '/v2/fleet/vehicles/c-2/status', { body: { status: 'retired' } });
    tracker.send(packetOf([fix(now(), 10, 10)]));
    assert.equal(await tracker.read(4), 'closed');
    assert.equal((await stored('c-2')).length, 0);

    const other = await trackerVehicle('c-3');
    const second = await connectTracker(port, trackers);
    await second.login(other);
    const id = (await ctx.request('GET', '/v2/devices', { query: { vehicleId: 'c-3' } })).json().devices[0].id;
    assert.equal((await ctx.request('DELETE', `/v2/devices/${id}`)).statusCode, 204);
    second.send(packetOf([fix(now(), 10, 10)]));
    assert.equal(await second.read(4), 'closed');
    assert.equal((await stored('c-3')).length, 0);
  });

  test('records that can never be stored (a time far ahead) are answered and dropped, so they do not block the next ones', async () => {
    const imei = await trackerVehicle('c-4');
    const tracker = await connectTracker(port, trackers);
    await tracker.login(imei);
    tracker.send(packetOf([fix(now(), 1, 1), fix(Date.now() + 3_600_000, 1, 1)]));
    assert.deepEqual(await tracker.read(4), count(2));
    assert.equal((await stored('c-4')).length, 0, 'all or nothing');
    tracker.send(packetOf([fix(now(), 2, 2)]));
    assert.deepEqual(await tracker.read(4), count(1));
  });
});

describe('bad input never crashes the service', () => {
  test('garbage, a length claiming gigabytes, an unknown codec, malformed records: each connection closed, the service answers on', async () => {
    const imei = await trackerVehicle('g-1');
    const lengthOf = (n: number) => {
      const b = Buffer.alloc(8);
      b.writeUInt32BE(n, 4);
      return b;
    };
    const codec13 = Buffer.from(DOC.codec8Second, 'hex');
    codec13[8] = 0x0d; // Codec 13 (Codec 12 carries commands: commands-teltonika.test.ts)
    const cases: Array<[string, Buffer, boolean]> = [
      ['random bytes instead of a login', Buffer.from(Array.from({ length: 300 }, () => (Math.random() * 256) | 0)), false],
      ['an HTTP request', Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), false],
      ['a length claiming 4 GiB', lengthOf(0xffffffff), true],
      ['a bad preamble', Buffer.from('0000000100000010', 'hex'), true],
      ['codec 13', codec13, true],
      ['random bytes after login', Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37 + 11) % 256)), true],
    ];
    for (const [label, bytes, loggedIn] of cases) {
      const tracker = await connectTracker(port, trackers);
      if (loggedIn) assert.deepEqual(await tracker.login(imei), Buffer.from([1]), label);
      tracker.send(bytes);
      const answer = await tracker.read(loggedIn ? 4 : 1);
      assert.ok(answer === 'closed' || (!loggedIn && Buffer.isBuffer(answer) && answer[0] === 0), `${label}: ${String(answer)}`);
      if (answer !== 'closed') assert.equal(await tracker.read(1), 'closed', label);
    }
    assert.equal((await stored('g-1')).length, 0);
    assert.equal((await ctx.request('GET', '/readyz', { key: null })).json().checks.teltonika, 'up');
  });

  test('many connections at once (2,000): each logs in and is answered; none is lost', async () => {
    const imei = await trackerVehicle('m-1');
    const n = 2000;
    const many: Tracker[] = [];
    for (let i = 0; i < n; i += 200) {
      many.push(...await Promise.all(Array.from({ length: Math.min(200, n - i) }, () => connectTracker(port, trackers))));
    }
    const logins = await Promise.all(many.map((t) => t.login(imei)));
    assert.equal(logins.filter((a) => Buffer.isBuffer(a) && a[0] === 1).length, n);
    const t0 = now() - n * 10;
    many.forEach((t, i) => t.send(packetOf([fix(t0 + i, 1, 1)])));
    const acks = await Promise.all(many.map((t) => t.read(4, 30_000)));
    assert.equal(acks.filter((a) => Buffer.isBuffer(a) && a.readUInt32BE(0) === 1).length, n);
    assert.equal((await ctx.request('GET', '/v2/telemetry/m-1/history', { query: { limit: '10000' } })).json().records.length, n);
    for (const t of many) t.end();
  });
});

describe('settings', () => {
  test('an idle connection is closed after FLEET_TELTONIKA_IDLE_SECONDS', async (t) => {
    const idlePort = await freePort();
    const app = await createTestApp({ env: { FLEET_TELTONIKA_PORT: String(idlePort), FLEET_PROTOCOLS_HOST: '127.0.0.1', FLEET_TELTONIKA_IDLE_SECONDS: '1' } });
    t.after(() => app.close());
    const tracker = await connectTracker(idlePort, trackers);
    const opened = Date.now();
    await tracker.closed;
    const after = Date.now() - opened;
    assert.ok(after >= 900 && after < 5000, `closed after ${after} ms`);
  });

  test('a taken port: a warning and /readyz degraded', async (t) => {
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => squatter.close(() => resolve())));
    const taken = (squatter.address() as net.AddressInfo).port;
    const logs = captureLogs('debug');
    const app = await createTestApp({ logger: logs.logger, env: { FLEET_TELTONIKA_PORT: String(taken), FLEET_PROTOCOLS_HOST: '127.0.0.1' } });
    t.after(() => app.close());
    assert.ok(logs.lines().some((l) => l.level === 40 && String(l.msg).includes('Teltonika listener not started')));
    const ready = (await app.request('GET', '/readyz', { key: null })).json();
    assert.equal(ready.status, 'degraded');
    assert.equal(ready.checks.teltonika, `degraded: port ${taken} on 127.0.0.1 is in use; Teltonika ingestion is off`);
  });

  test('shutdown answers the packet being committed, then closes the connection; a packet arriving meanwhile is not answered', async (t) => {
    const shutPort = await freePort();
    const app = await createTestApp({ env: { FLEET_TELTONIKA_PORT: String(shutPort), FLEET_PROTOCOLS_HOST: '127.0.0.1' } });
    let closed = false;
    t.after(() => (closed ? undefined : app.close()));
    await app.registerVehicle('s-1');
    await app.request('POST', '/v2/devices', { body: { protocol: 'teltonika', identifier: '350999999999999', vehicleId: 's-1' } });
    const store = app.stores.telemetry;
    const commit = store.commit.bind(store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let committing = false;
    store.commit = async (batches, merge) => {
      committing = true;
      await gate;
      return commit(batches, merge);
    };
    const tracker = await connectTracker(shutPort, trackers);
    await tracker.login('350999999999999');
    tracker.send(packetOf([fix(now(), 3, 3)]));
    await waitUntil(() => committing, 'the commit started');
    const closing = app.close().then(() => {
      closed = true;
    });
    tracker.send(packetOf([fix(now() + 1000, 4, 4)]));
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    assert.deepEqual(await tracker.read(4), count(1));
    assert.equal(await tracker.read(4), 'closed');
    await closing;
  });
});
