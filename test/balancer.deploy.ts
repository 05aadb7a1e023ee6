// The load balancer of the compose file (deploy/haproxy.cfg), with HAProxy from Debian in front of
// two service processes on one PostgreSQL and one Redis, as deploy/compose.yaml runs them: the API,
// a live stream's WebSocket, MQTT, OsmAnd and Teltonika all pass through it, and a node that stops
// leaves the other serving. The configuration is the file itself, its addresses replaced by the
// test's ports. Run by `npm run test:deploy` (CI's deployment step).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { MqttClient } from 'mqtt';
import { generateApiKey } from '../src/auth/keys.ts';
import { ROOT } from './helpers/container.ts';
import { connectDevice, endAll, freePort, publishOutcome } from './helpers/mqtt.ts';
import { TEST_DATABASE_URL, adminQuery, skipUnlessPostgres } from './helpers/postgres.ts';
import { type RunningFleet, request, startFleet, tempDir } from './helpers/process.ts';
import { skipUnlessRedis, testPrefix } from './helpers/redis.ts';
import { skipUnless } from './helpers/skip.ts';
import { type StreamClient, attach, closeAll } from './helpers/streams.ts';
import { type Tracker, connectTracker, fix, packetOf } from './helpers/teltonika.ts';
import { waitUntil } from './helpers/wait.ts';

const haproxyMissing = spawnSync('haproxy', ['-v']).error === undefined ? undefined : 'not installed';
const skip = (await skipUnlessPostgres()) || (await skipUnlessRedis())
  || skipUnless(haproxyMissing, 'HAProxy', 'the load balancer test', 'apt-get install haproxy');
const ADMIN_KEY = generateApiKey();
const IMEI = '356307042441013';
const PORTS = { http: 8080, osmand: 5055, mqtt: 1883, teltonika: 5027 } as const;
type Ports = Record<keyof typeof PORTS, number>;

describe('deploy/haproxy.cfg in front of two nodes', { skip, timeout: 120_000 }, () => {
  const database = `fleet_lb_${process.pid}_${randomBytes(4).toString('hex')}`;
  const { prefix, cleanup } = testPrefix('balancer');
  const cleanups: (() => Promise<void> | void)[] = [];
  const clients: StreamClient[] = [];
  const devices: MqttClient[] = [];
  const trackers: Tracker[] = [];
  let nodes: (RunningFleet & { ports: Ports })[] = [];
  let balancer: ChildProcess;
  let front: Ports;
  const lb = () => ({ url: `http://127.0.0.1:${front.http}` });
  const api = async (method: string, pathname: string, body?: unknown) => {
    const res = await request(lb(), method, pathname, { key: ADMIN_KEY, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  };

  before(async () => {
    await adminQuery(`CREATE DATABASE ${database}`);
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${database}`;
    const ctx = { after: (fn: () => Promise<void> | void) => void cleanups.push(fn) } as unknown as Parameters<typeof startFleet>[0];
    const freePorts = async (): Promise<Ports> => ({ http: await freePort(), osmand: await freePort(), mqtt: await freePort(), teltonika: await freePort() });
    front = await freePorts();
    const node = async () => {
      const ports = await freePorts();
      const fleet = await startFleet(ctx, {
        env: {
          FLEET_DATABASE_URL: url.toString(), FLEET_REDIS_URL: 'redis://127.0.0.1:6379', FLEET_REDIS_PREFIX: prefix, FLEET_ADMIN_KEY: ADMIN_KEY,
          FLEET_PORT: String(ports.http), FLEET_OSMAND_PORT: String(ports.osmand), FLEET_MQTT_PORT: String(ports.mqtt), FLEET_TELTONIKA_PORT: String(ports.teltonika),
          FLEET_PUBLIC_URL: `http://127.0.0.1:${front.http}`, FLEET_RATE_LIMIT_REQUESTS: '0',
        },
      });
      return { ...fleet, ports };
    };
    nodes = await Promise.all([node(), node()]);

    // The compose file's balancer configuration, pointed at this test's ports.
    let config = readFileSync(path.join(ROOT, 'deploy/haproxy.cfg'), 'utf8');
    for (const [name, port] of Object.entries(PORTS) as [keyof Ports, number][]) {
      config = config.replace(`bind :${port}\n`, `bind 127.0.0.1:${front[name]}\n`);
      nodes.forEach((n, i) => (config = config.replace(`fleet${i + 1}:${port} `, `127.0.0.1:${n.ports[name]} `)));
    }
    assert.doesNotMatch(config, /fleet\d:\d+|bind :\d/, 'every address of the file replaced');
    const file = path.join(tempDir(ctx), 'haproxy.cfg');
    writeFileSync(file, config.replace('  timeout connect 5s', '  timeout connect 5s\n  default-server inter 500ms fall 1 rise 1'));
    balancer = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    balancer.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    await waitUntil(async () => (await fetch(`${lb().url}/readyz`).catch(() => undefined))?.status === 200, `the balancer to answer (${errors})`, 20_000);
  });
  after(async () => {
    await closeAll(clients);
    await endAll(devices);
    for (const tracker of trackers) tracker.end();
    balancer?.kill('SIGTERM');
    await Promise.all(nodes.filter((n) => n.running()).map((n) => n.stop('SIGTERM')));
    for (const fn of cleanups) await fn();
    await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await cleanup();
  });

  test('the API, a live stream, MQTT, OsmAnd and Teltonika pass through it, balanced over both nodes', async () => {
    assert.equal((await api('POST', '/v2/fleet/vehicles', { vehicleId: 'lb-1', type: 'van' })).status, 201);
    const stream = await api('POST', '/v2/telemetry/lb-1/stream', { events: ['location'], interval: 0 });
    assert.equal(stream.status, 201, JSON.stringify(stream.body));
    assert.ok(String(stream.body.url).startsWith(`ws://127.0.0.1:${front.http}/`), stream.body.url);
    const client = await attach(stream.body.url, {}, clients);
    await client.next((m) => m.type === 'connected');
    // Round robin: of four requests, each node takes some; the stream hears every one.
    for (let i = 1; i <= 4; i++) {
      const sent = await api('POST', '/v2/telemetry/lb-1', { timestamp: new Date(Date.UTC(2026, 10, 28, 9, 0, i)).toISOString(), data: { location: { lat: 48, lng: 11 + i / 100 } } });
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
    }
    await client.waitFor(() => (client.all((m) => m.type === 'location').length >= 4 ? true : undefined), 10_000, 'four locations on the stream');
    const served = (n: RunningFleet) => n.logs().filter((l) => (l.req as { url?: string } | undefined)?.url === '/v2/telemetry/lb-1').length;
    assert.ok(nodes.every((n) => served(n) > 0), `requests per node: ${nodes.map(served).join(', ')}`);

    const device = await connectDevice(`mqtt://127.0.0.1:${front.mqtt}`, { username: 'lb-1', password: ADMIN_KEY }, devices);
    assert.equal(await publishOutcome(device, 'fleet/lb-1/telemetry', JSON.stringify({ timestamp: '2026-11-28T09:01:00Z', data: { speed: 30 } }), 1, 10_000), 'acked');

    assert.equal((await api('POST', '/v2/devices', { protocol: 'osmand', identifier: 'lb-1-osmand-k7Qm2xZp9w', vehicleId: 'lb-1' })).status, 201);
    const osmand = await fetch(`http://127.0.0.1:${front.osmand}/?id=lb-1-osmand-k7Qm2xZp9w&lat=48.2&lon=11.2&timestamp=${Date.UTC(2026, 10, 28, 9, 2) / 1000}&speed=12`);
    assert.equal(osmand.status, 200, await osmand.text());

    assert.equal((await api('POST', '/v2/devices', { protocol: 'teltonika', identifier: IMEI, vehicleId: 'lb-1' })).status, 201);
    const tracker = await connectTracker(front.teltonika, trackers);
    assert.deepEqual(await tracker.login(IMEI), Buffer.from([1]));
    tracker.send(packetOf([fix(Date.UTC(2026, 10, 28, 9, 3), 48.3, 11.3)]));
    assert.deepEqual(await tracker.read(4, 10_000), Buffer.from([0, 0, 0, 1]));

    const history = await api('GET', '/v2/telemetry/lb-1/history?limit=100');
    assert.equal(history.status, 200);
    assert.equal(history.body.records.length, 7, JSON.stringify(history.body.records.map((r: { timestamp: string }) => r.timestamp)));
  });

  test('a node that stops leaves the other serving through the balancer', async () => {
    await nodes[0]!.stop('SIGTERM');
    await waitUntil(async () => {
      const answers = await Promise.all(Array.from({ length: 4 }, () => api('GET', '/v2/fleet/vehicles/lb-1').then((r) => r.status, () => 0)));
      return answers.every((status) => status === 200);
    }, 'every request answered by the node left', 15_000, { every: 250 });
    const sent = await api('POST', '/v2/telemetry/lb-1', { timestamp: '2026-11-28T09:05:00Z', data: { speed: 5 } });
    assert.equal(sent.status, 202);
  });
});
