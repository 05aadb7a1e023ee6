// The service as operators run it: real `node src/main.ts` processes, real sockets, real files.
// Each test spawns its own processes (killed in t.after), in its own temp directories, and
// bounds every wait.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MqttClient } from 'mqtt';
import WebSocket from 'ws';
import { generateApiKey, isWellFormedApiKey } from '../src/auth/keys.ts';
import { connectDevice, endAll, freePort } from './helpers/mqtt.ts';
import {
  type FleetProcess,
  printedKeys,
  request,
  spawnFleet,
  startFleet,
  tempDir,
  withTimeout,
} from './helpers/process.ts';
import { waitUntil } from './helpers/wait.ts';

const TEST_TIMEOUT = 90_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface History {
  vehicleId: string;
  total: number;
  history: { from: string | null; to: string; reason: string | null; at: string; by: string }[];
}

/** An operator-chosen admin key: 3 + 48 printable characters, not in Fleet's own format. */
const operatorKey = () => generateApiKey();

/** Resolves when a TCP connection to the port is refused; rejects if one is accepted. */
function connectOutcome(port: number): Promise<'refused' | 'accepted'> {
  return withTimeout(
    new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve('accepted');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ECONNREFUSED') resolve('refused');
        else reject(error);
      });
    }),
    3_000,
    `a TCP connection attempt to port ${port}`,
  );
}

async function stopCleanly(fleet: FleetProcess) {
  const exit = await fleet.stop('SIGTERM');
  assert.deepEqual(exit, { code: 0, signal: null }, `exit after SIGTERM\n--- stdout:\n${fleet.stdout()}\n--- stderr:\n${fleet.stderr()}`);
  return exit;
}

// Each test owns its processes, directories and (OS-chosen) ports, so a few run side by side.
describe('fleet as a process', { concurrency: 3 }, () => {
  test('bad configuration stops the start and names every bad variable', { timeout: TEST_TIMEOUT }, async (t) => {
    const fleet = spawnFleet(t, { env: { FLEET_HOST: '127.0.0.1', FLEET_PORT: 'abc', FLEET_DATABASE_URL: 'mysql://x' } });
    // Loading the modules comes first: on a busy machine that alone took over 5 s.
    const exit = await withTimeout(fleet.closed, 20_000, 'a misconfigured fleet to exit');
    assert.equal(exit.signal, null);
    assert.notEqual(exit.code, 0, 'a misconfigured process exits non-zero');
    assert.notEqual(exit.code, null);
    assert.match(fleet.stderr(), /FLEET_PORT/);
    assert.match(fleet.stderr(), /FLEET_DATABASE_URL/);
    assert.doesNotMatch(fleet.stdout(), /Server listening/);
    assert.deepEqual(readdirSync(fleet.cwd), [], 'nothing is created (no store) when the configuration is bad');
  });

  test('first start of an empty store prints a generated admin key once, on stderr only', { timeout: TEST_TIMEOUT }, async (t) => {
    const cwd = tempDir(t);
    // No FLEET_DATABASE_URL: the default store, ./data/fleet.db under cwd.
    const first = await startFleet(t, { cwd });
    await first.waitFor(() => printedKeys(first.stderr()).length > 0, 'the generated key on stderr', 5_000);
    const printed = printedKeys(first.stderr());
    const key = printed[0]!;
    assert.ok(isWellFormedApiKey(key), `${key} is a well-formed Fleet key`);
    assert.ok(printed.every((k) => k === key), 'only one key is printed');

    const ok = await request(first, 'GET', '/v2/fleet/vehicles', { key });
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { vehicles: [], total: 0, limit: 50, offset: 0 });
    const anonymous = await request(first, 'GET', '/v2/fleet/vehicles');
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();

    await stopCleanly(first);
    assert.ok(!first.stdout().includes(key), 'the key never appears in the JSON logs');
    assert.ok(existsSync(path.join(cwd, 'data', 'fleet.db')), 'the default store is <cwd>/data/fleet.db');

    const second = await startFleet(t, { cwd });
    const again = await request(second, 'GET', '/v2/fleet/vehicles', { key });
    assert.equal(again.status, 200, 'the first key still works after a restart');
    await again.body?.cancel();
    await stopCleanly(second);
    assert.deepEqual(printedKeys(second.stderr()), [], 'a second start prints no key');
    assert.ok(!second.stdout().includes(key));
  });

  test('FLEET_ADMIN_KEY on an empty store becomes the admin key and is never printed', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = operatorKey();
    const cwd = tempDir(t);
    const fleet = await startFleet(t, { cwd, env: { FLEET_ADMIN_KEY: key } });

    const ok = await request(fleet, 'GET', '/v2/fleet/vehicles', { key });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    const wrong = await request(fleet, 'GET', '/v2/fleet/vehicles', { key: operatorKey() });
    assert.equal(wrong.status, 401);
    await wrong.body?.cancel();

    await stopCleanly(fleet);
    assert.ok(!fleet.stderr().includes(key), 'the configured key is not printed on stderr');
    assert.ok(!fleet.stdout().includes(key), 'the configured key is not logged');
    assert.deepEqual(printedKeys(fleet.stderr()), [], 'no key is generated and printed');

    // Once the store has an organization, a (different) FLEET_ADMIN_KEY changes nothing.
    const other = operatorKey();
    const restarted = await startFleet(t, { cwd, env: { FLEET_ADMIN_KEY: other } });
    const withOld = await request(restarted, 'GET', '/v2/fleet/vehicles', { key });
    assert.equal(withOld.status, 200);
    await withOld.body?.cancel();
    const withNew = await request(restarted, 'GET', '/v2/fleet/vehicles', { key: other });
    assert.equal(withNew.status, 401, 'FLEET_ADMIN_KEY is only used on the first start of an empty store');
    await withNew.body?.cancel();
    await stopCleanly(restarted);
    assert.ok(!restarted.stdout().includes(other) && !restarted.stderr().includes(other));
  });

  test('a generated-format FLEET_ADMIN_KEY works too and is not printed', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = generateApiKey();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key } });
    const ok = await request(fleet, 'GET', '/v2/fleet/vehicles', { key });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    await stopCleanly(fleet);
    assert.ok(!fleet.stderr().includes(key) && !fleet.stdout().includes(key));
  });

  test('data survives a restart on the same FLEET_DATABASE_URL', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = operatorKey();
    const dbDir = tempDir(t, 'fleet-db-');
    const env = { FLEET_ADMIN_KEY: key, FLEET_DATABASE_URL: `sqlite:${dbDir}/fleet.db` };

    const first = await startFleet(t, { env });
    const created = await request(first, 'POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'van-7', type: 'van' } });
    assert.equal(created.status, 201);
    await created.body?.cancel();
    const changed = await request(first, 'PUT', '/v2/fleet/vehicles/van-7/status', {
      key,
      body: { status: 'maintenance', reason: 'x' },
    });
    assert.equal(changed.status, 200);
    await changed.body?.cancel();
    const vehicleBefore = (await (await request(first, 'GET', '/v2/fleet/vehicles/van-7', { key })).json()) as { status: string };
    const historyBefore = (await (await request(first, 'GET', '/v2/fleet/vehicles/van-7/status-history', { key })).json()) as History;
    assert.equal(vehicleBefore.status, 'maintenance');
    assert.equal(historyBefore.total, 2);
    assert.deepEqual(
      historyBefore.history.map((e) => [e.from, e.to, e.reason]),
      [['registered', 'maintenance', 'x'], [null, 'registered', null]],
    );
    await stopCleanly(first);

    // A different cwd: the store is where the URL says, not relative to the working directory.
    const second = await startFleet(t, { env });
    const vehicleAfter = await request(second, 'GET', '/v2/fleet/vehicles/van-7', { key });
    assert.equal(vehicleAfter.status, 200);
    assert.deepEqual(await vehicleAfter.json(), vehicleBefore);
    const historyAfter = await request(second, 'GET', '/v2/fleet/vehicles/van-7/status-history', { key });
    assert.equal(historyAfter.status, 200);
    assert.deepEqual(await historyAfter.json(), historyBefore);
    await stopCleanly(second);

    assert.ok(existsSync(path.join(dbDir, 'fleet.db')));
    assert.ok(!existsSync(path.join(first.cwd, 'data')) && !existsSync(path.join(second.cwd, 'data')));
  });

  test('a second process on the same SQLite file refuses to start; a SIGKILLed owner leaves the file free', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = operatorKey();
    const dbDir = tempDir(t, 'fleet-db-');
    const env = { FLEET_ADMIN_KEY: key, FLEET_DATABASE_URL: `sqlite:${dbDir}/fleet.db` };
    const first = await startFleet(t, { env });
    const created = await request(first, 'POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'van-1', type: 'van' } });
    assert.equal(created.status, 201);
    await created.body?.cancel();

    const second = spawnFleet(t, { env: { ...env, FLEET_HOST: '127.0.0.1', FLEET_PORT: '0', FLEET_MQTT_PORT: '0' } });
    const exit = await withTimeout(second.closed, 15_000, 'the second process to give up');
    assert.deepEqual(exit, { code: 1, signal: null }, second.stderr());
    assert.match(second.stderr(), new RegExp(`^fleet: cannot open the store: \\S*fleet\\.db is in use by another process \\(pid ${first.child.pid}\\)`));
    assert.ok(!second.stdout().includes('Server listening'), 'it never served');

    // The owner serves on, undisturbed.
    const read = await request(first, 'GET', '/v2/fleet/vehicles/van-1', { key });
    assert.equal(read.status, 200);
    await read.body?.cancel();
    const ready = await request(first, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    await ready.body?.cancel();

    // Killed without a chance to let go: the kernel drops its lock, and the next process starts.
    first.child.kill('SIGKILL');
    assert.equal((await withTimeout(first.closed, 5_000, 'the owner to die')).signal, 'SIGKILL');
    const third = await startFleet(t, { env });
    const after = await request(third, 'GET', '/v2/fleet/vehicles/van-1', { key });
    assert.equal(after.status, 200, 'the same data, served by the new owner');
    await after.body?.cancel();
    await stopCleanly(third);
  });

  /**
   * Starts a POST /v2/fleet/vehicles whose body arrives in two halves, with SIGTERM in between:
   * headers and half the body are sent; once the server has logged the request ("incoming
   * request", so it is routed and in flight) SIGTERM is sent; once the server has logged that it
   * is shutting down, the rest of the body is written. Returns the response and the process.
   */
  async function requestAcrossSigterm(fleet: FleetProcess & { port: number }, key: string, vehicleId: string, agent: http.Agent) {
    const requestId = `inflight-${vehicleId}`;
    const body = JSON.stringify({ vehicleId, type: 'van' });
    const half = Math.floor(body.length / 2);
    const req = http.request({
      host: '127.0.0.1',
      port: fleet.port,
      method: 'POST',
      path: '/v2/fleet/vehicles',
      agent,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'x-request-id': requestId,
      },
    });
    const response = withTimeout(
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
        req.once('response', (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
          res.once('error', reject);
        });
        req.once('error', reject);
      }),
      10_000,
      'the response to the in-flight request',
    );
    // Keep a rejection from going unhandled while we are still driving the request.
    response.catch(() => undefined);

    req.write(body.slice(0, half));
    await fleet.waitFor(
      () => fleet.logs().some((l) => l.reqId === requestId && l.msg === 'incoming request'),
      'the server to receive the slow request',
      5_000,
    );
    fleet.child.kill('SIGTERM');
    await fleet.waitFor(() => fleet.logs().some((l) => l.signal === 'SIGTERM'), 'the shutdown to begin', 5_000);

    // While the request is in flight the listener closes: new connections are refused.
    const deadline = Date.now() + 2_000;
    let outcome = await connectOutcome(fleet.port);
    while (outcome === 'accepted' && Date.now() < deadline) {
      await sleep(20);
      outcome = await connectOutcome(fleet.port);
    }
    assert.equal(outcome, 'refused', 'the listener is closed during shutdown');
    assert.ok(fleet.running(), 'the process waits for the in-flight request');

    await sleep(50);
    req.end(body.slice(half));
    return { response: await response, requestId };
  }

  test('SIGTERM is graceful: the in-flight request completes, exit 0, then the port is closed', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = operatorKey();
    const dbDir = tempDir(t, 'fleet-db-');
    const env = { FLEET_ADMIN_KEY: key, FLEET_DATABASE_URL: `sqlite:${dbDir}/fleet.db` };
    const fleet = await startFleet(t, { env });
    // An idle keep-alive connection (fetch pools it) must not hold up the shutdown either.
    const warm = await request(fleet, 'GET', '/healthz');
    assert.equal(warm.status, 200);
    await warm.body?.cancel();

    const agent = new http.Agent({ keepAlive: false });
    t.after(() => agent.destroy());
    const { response, requestId } = await requestAcrossSigterm(fleet, key, 'slow-1', agent);
    assert.equal(response.status, 201, response.body);
    assert.equal(JSON.parse(response.body).id, 'slow-1');

    const exit = await withTimeout(fleet.closed, 5_000, 'fleet to exit after its last request');
    assert.deepEqual(exit, { code: 0, signal: null }, fleet.stdout());
    const messages = fleet.logs().map((l) => (l.reqId === requestId ? `${String(l.msg)}:${requestId}` : l.msg));
    assert.ok(messages.includes('shut down cleanly'), 'the "shut down cleanly" line is logged');
    assert.ok(
      messages.indexOf(`request completed:${requestId}`) < messages.indexOf('shut down cleanly'),
      'the in-flight request completed before the store was closed',
    );
    assert.equal(await connectOutcome(fleet.port), 'refused', 'after shutdown the port refuses connections');

    // The vehicle created by the in-flight request was committed.
    const again = await startFleet(t, { env });
    const read = await request(again, 'GET', '/v2/fleet/vehicles/slow-1', { key });
    assert.equal(read.status, 200);
    await read.body?.cancel();
    await stopCleanly(again);
  });

  test('SIGTERM is graceful for a keep-alive client too: exit 0 promptly after the in-flight response', { timeout: TEST_TIMEOUT }, async (t) => {
    // Real clients (fetch/undici, browsers, proxies) keep connections alive. The in-flight
    // request must complete and the process must still exit 0 promptly, not wait for the client
    // to hang up (the response should carry `Connection: close`, or the socket be closed once idle).
    const key = operatorKey();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key } });
    const agent = new http.Agent({ keepAlive: true });
    t.after(() => agent.destroy());
    const { response } = await requestAcrossSigterm(fleet, key, 'slow-ka', agent);
    assert.equal(response.status, 201, response.body);

    const exit = await Promise.race([fleet.closed, sleep(5_000, 'still running' as const)]);
    assert.notEqual(
      exit,
      'still running',
      'the process is still running 5 s after SIGTERM although its only request was answered: the idle ' +
        `keep-alive connection holds app.close() open (response connection header: ${String(response.headers.connection)})`,
    );
    assert.deepEqual(exit, { code: 0, signal: null }, fleet.stdout());
  });

  test('SIGTERM with idle clients of every kind attached: each is closed, the webhook attempt under way is given back, exit 0 within the deadline', { timeout: TEST_TIMEOUT }, async (t) => {
    // None of these connections ends by itself before the 10 s shutdown deadline (keep-alive 72 s,
    // MQTT keepalive 60 s, Teltonika idle 600 s): one that shutdown does not close makes the process
    // overrun it, log so, and exit 1. A webhook attempt left to run would hold it up to 10 s, and
    // end as a timeout recorded against the endpoint.
    const key = operatorKey();
    const [port, mqttPort, teltonikaPort] = [await freePort(), await freePort(), await freePort()];
    const fleet = await startFleet(t, {
      env: {
        FLEET_ADMIN_KEY: key, FLEET_WEBHOOK_ALLOW_PRIVATE: 'true', FLEET_PORT: String(port), FLEET_PUBLIC_URL: `http://127.0.0.1:${port}`,
        FLEET_MQTT_PORT: String(mqttPort), FLEET_TELTONIKA_PORT: String(teltonikaPort),
      },
    });
    const post = async (pathname: string, body: unknown) => {
      const res = await request(fleet, 'POST', pathname, { key, body });
      const text = await res.text();
      assert.ok(res.status < 300, `${pathname}: ${res.status} ${text}`);
      return (text === '' ? {} : JSON.parse(text)) as Record<string, string>;
    };
    await post('/v2/fleet/vehicles', { vehicleId: 'idle-1', type: 'van' });
    const imei = '356307042441013';
    await post('/v2/devices', { protocol: 'teltonika', identifier: imei, vehicleId: 'idle-1' });
    const closed: string[] = [];

    // Two live streams, attached and idle.
    const codes: number[] = [];
    for (let i = 0; i < 2; i++) {
      const { url } = await post('/v2/telemetry/stream', { events: ['location'] });
      const ws = new WebSocket(url!);
      t.after(() => ws.terminate());
      ws.on('error', () => undefined);
      ws.on('close', (code) => codes.push(code));
      await withTimeout(once(ws, 'open'), 5_000, 'a stream socket to open');
    }
    // A kept-alive HTTP connection, idle after its one request.
    const agent = new http.Agent({ keepAlive: true });
    t.after(() => agent.destroy());
    await new Promise<void>((resolve, reject) => {
      http.get(`${fleet.url}/healthz`, { agent }, (res) => res.resume().once('end', resolve)).once('error', reject);
    });
    const kept = Object.values(agent.freeSockets).flat();
    assert.equal(kept.length, 1, 'the connection is kept alive');
    kept[0]!.once('close', () => closed.push('http'));
    // An MQTT device, connected and idle.
    const devices: MqttClient[] = [];
    t.after(() => endAll(devices));
    const mqtt = await connectDevice(`mqtt://127.0.0.1:${mqttPort}`, { username: 'device', password: key, protocolVersion: 4 }, devices);
    mqtt.on('error', () => undefined);
    mqtt.once('close', () => closed.push('mqtt'));
    // A Teltonika tracker, logged in and idle.
    const tracker = net.connect(teltonikaPort, '127.0.0.1');
    t.after(() => tracker.destroy());
    tracker.on('error', () => undefined);
    const login = Buffer.alloc(2 + imei.length);
    login.writeUInt16BE(imei.length);
    login.write(imei, 2);
    tracker.write(login);
    const [accepted] = (await withTimeout(once(tracker, 'data'), 5_000, 'the IMEI to be accepted')) as [Buffer];
    assert.deepEqual([...accepted], [0x01]);
    tracker.once('close', () => closed.push('teltonika'));
    // A webhook endpoint that never answers, with an attempt under way.
    let attempts = 0;
    const receiver = http.createServer((req) => {
      attempts++;
      req.resume();
      req.socket.once('close', () => closed.push('webhook'));
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    t.after(() => {
      receiver.closeAllConnections();
      receiver.close();
    });
    const hook = await post('/v2/webhooks', { url: `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`, eventTypes: ['*'] });
    await post(`/v2/webhooks/${hook.id}/test`, {});
    await fleet.waitFor(() => attempts === 1, 'the webhook attempt to reach the endpoint', 10_000);

    fleet.child.kill('SIGTERM');
    const exit = await withTimeout(fleet.closed, 20_000, 'fleet to exit after SIGTERM');
    const messages = fleet.logs().map((l) => l.msg);
    assert.deepEqual(exit, { code: 0, signal: null }, `exit after SIGTERM\n--- stdout:\n${fleet.stdout()}\n--- stderr:\n${fleet.stderr()}`);
    assert.ok(!messages.some((m) => typeof m === 'string' && m.startsWith('shutdown took longer')), 'the shutdown kept within its deadline');
    assert.ok(messages.includes('shut down cleanly'), 'every part closed, the store last');
    await waitUntil(() => codes.length === 2 && closed.length === 4, 'every client to see its connection closed', 5_000, {
      seen: () => `stream close codes ${JSON.stringify(codes)}, closed ${JSON.stringify(closed)}`,
    });
    assert.deepEqual(codes, [1001, 1001], 'each stream socket closed with 1001 (going away)');
    assert.deepEqual(closed.sort(), ['http', 'mqtt', 'teltonika', 'webhook']);

    // The attempt cut short is neither lost nor counted: the delivery is due again, never attempted,
    // and nothing is held against the endpoint.
    const db = new DatabaseSync(path.join(fleet.cwd, 'data', 'fleet.db'), { readOnly: true });
    t.after(() => db.close());
    assert.deepEqual(
      { ...db.prepare('SELECT status, attempt FROM webhook_deliveries').get() },
      { status: 'pending', attempt: 0 },
    );
    assert.deepEqual({ ...db.prepare('SELECT count(*) AS n FROM webhook_attempts').get() }, { n: 0 });
    assert.deepEqual({ ...db.prepare('SELECT failing_since FROM webhooks').get() }, { failing_since: null });
  });

  test('/healthz and /readyz answer without credentials on the live process', { timeout: TEST_TIMEOUT }, async (t) => {
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: operatorKey() } });
    const health = await request(fleet, 'GET', '/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const ready = await request(fleet, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ready', checks: { store: 'up', mqtt: 'disabled', osmand: 'disabled', teltonika: 'disabled', cluster: 'disabled' } });
    await stopCleanly(fleet);
  });

  test('X-Request-Id: a valid one is echoed as-is, an invalid or missing one is replaced by a generated one', { timeout: TEST_TIMEOUT }, async (t) => {
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: operatorKey() } });
    const idOf = async (headers: Record<string, string>) => {
      const res = await request(fleet, 'GET', '/healthz', { headers });
      await res.body?.cancel();
      return res.headers.get('x-request-id');
    };

    assert.equal(await idOf({ 'x-request-id': 'trace-42.abc:def_ghi-JKL' }), 'trace-42.abc:def_ghi-JKL');
    assert.equal(await idOf({ 'x-request-id': 'x'.repeat(128) }), 'x'.repeat(128));

    for (const invalid of ['a b', 'x'.repeat(129), 'semi;colon', '<script>']) {
      const replaced = await idOf({ 'x-request-id': invalid });
      assert.match(replaced ?? '', UUID, `"${invalid}" is replaced by a generated id`);
    }
    const generatedA = await idOf({});
    const generatedB = await idOf({});
    assert.match(generatedA ?? '', UUID);
    assert.match(generatedB ?? '', UUID);
    assert.notEqual(generatedA, generatedB);

    // Error responses carry it too (header and problem body).
    const unauthorized = await request(fleet, 'GET', '/v2/fleet/vehicles', { headers: { 'x-request-id': 'err-1' } });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers.get('x-request-id'), 'err-1');
    assert.equal(((await unauthorized.json()) as { requestId: string }).requestId, 'err-1');
    await stopCleanly(fleet);
  });

  test('logs are JSON lines with a request id, and never contain the Authorization value', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = operatorKey();
    const wrongToken = `fleet_${'Z'.repeat(38)}`;
    const unknownToken = operatorKey();
    // The most verbose level: nothing may leak even there.
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key, FLEET_LOG_LEVEL: 'trace' } });

    const calls: [string, string, Parameters<typeof request>[3]][] = [
      ['GET', '/v2/fleet/vehicles', { key, headers: { 'x-request-id': 'log-ok' } }],
      ['GET', '/v2/fleet/vehicles', { key: wrongToken, headers: { 'x-request-id': 'log-bad-checksum' } }],
      ['GET', '/v2/fleet/vehicles', { key: unknownToken, headers: { 'x-request-id': 'log-unknown' } }],
      ['POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'v-1', type: 'spaceship' }, headers: { 'x-request-id': 'log-invalid' } }],
      ['GET', '/v2/fleet/vehicles/nope', { key, headers: { 'x-request-id': 'log-404' } }],
    ];
    for (const [method, url, options] of calls) {
      const res = await request(fleet, method, url, options);
      await res.body?.cancel();
    }
    const malformed = await fetch(`${fleet.url}/v2/fleet/vehicles`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': 'log-malformed' },
      body: '{not json',
      signal: AbortSignal.timeout(5_000),
    });
    assert.equal(malformed.status, 400);
    await malformed.body?.cancel();
    await stopCleanly(fleet);

    const stdout = fleet.stdout();
    const lines = stdout.split('\n').filter((line) => line !== '');
    assert.ok(lines.length > 0);
    for (const line of lines) {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        assert.fail(`a stdout line is not JSON: ${line}`);
      }
      assert.equal(typeof parsed.level, 'number', line);
      assert.equal(typeof parsed.time, 'number', line);
      assert.equal(typeof parsed.msg, 'string', line);
    }
    const logs = fleet.logs();
    for (const id of ['log-ok', 'log-bad-checksum', 'log-unknown', 'log-invalid', 'log-404', 'log-malformed']) {
      assert.ok(logs.some((l) => l.reqId === id && l.msg === 'incoming request'), `incoming request logged with reqId ${id}`);
      assert.ok(logs.some((l) => l.reqId === id && l.msg === 'request completed'), `completion logged with reqId ${id}`);
    }
    for (const line of logs.filter((l) => l.req !== undefined || l.res !== undefined)) {
      assert.equal(typeof line.reqId, 'string', `every request log line has a reqId: ${JSON.stringify(line)}`);
    }

    for (const secret of [key, wrongToken, unknownToken]) {
      assert.ok(!stdout.includes(secret), 'an Authorization value appears in the logs');
      assert.ok(!fleet.stderr().includes(secret), 'an Authorization value appears on stderr');
    }
    assert.doesNotMatch(stdout, /Bearer/i);
  });
});
