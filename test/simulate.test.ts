// The simulator as a user runs it (`npm run simulate`): a child process against a real Fleet
// process, over HTTP, MQTT and the device protocols, sending where the service says its devices
// send unless told otherwise. Every process is killed in t.after and every wait is bounded.
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import net from 'node:net';
import type { Readable } from 'node:stream';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { generateApiKey } from '../src/auth/keys.ts';
import { teltonikaTransport } from '../src/cli/simulate-devices.ts';
import { COMPILE_CACHE, type Exit, request, type RunningFleet, startFleet, withTimeout } from './helpers/process.ts';
import { waitUntil } from './helpers/wait.ts';
import { freePort } from './helpers/ports.ts';

const SIMULATE = fileURLToPath(new URL('../src/cli/simulate.ts', import.meta.url));
// Bounds, not expectations: two tests run at once beside other test files on a busy machine.
const TEST_TIMEOUT = 90_000;
const adminKey = () => generateApiKey();

interface Simulator {
  child: ChildProcessByStdio<null, Readable, Readable>;
  stdout(): string;
  stderr(): string;
  closed: Promise<Exit>;
  waitFor(predicate: () => boolean, what: string, ms?: number): Promise<void>;
}

function simulate(t: TestContext, args: string[], key: string): Simulator {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...COMPILE_CACHE, FLEET_KEY: key };
  const child = spawn(process.execPath, [SIMULATE, '--report', '0.5', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let ended = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const closed = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      ended = true;
      resolve({ code, signal });
    });
  });
  t.after(async () => {
    if (!ended) {
      child.kill('SIGKILL');
      await withTimeout(closed, 5_000, 'a killed simulator to exit');
    }
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    closed,
    waitFor(predicate, what, ms = 30_000) {
      const output = () => `\n--- stdout:\n${out}\n--- stderr:\n${err}`;
      return waitUntil(() => {
        if (predicate()) return true;
        if (ended) throw new Error(`the simulator exited before ${what}${output()}`);
        return false;
      }, what, ms, { seen: output });
    },
  };
}

/** The totals of the simulator's last status line. */
function totals(stdout: string): { sent: number; accepted: number; errors: number } {
  const lines = [...stdout.matchAll(/sent (\d+) \([\d.]+\/s\)\s+accepted (\d+)(?:\s+duplicates \d+)?\s+errors (\d+)/g)];
  const last = lines.at(-1);
  if (last === undefined) return { sent: 0, accepted: 0, errors: 0 };
  return { sent: Number(last[1]), accepted: Number(last[2]), errors: Number(last[3]) };
}

/** Runs until `accepted` records are acknowledged and at least `ms` have passed, then signals it. */
async function runFor(sim: Simulator, ms: number, accepted: number, signal: NodeJS.Signals = 'SIGTERM') {
  const started = Date.now();
  await sim.waitFor(() => totals(sim.stdout()).accepted >= accepted && Date.now() - started >= ms, `${accepted} records accepted`);
  sim.child.kill(signal);
  const exit = await withTimeout(sim.closed, 10_000, `the simulator to stop after ${signal}`);
  assert.deepEqual(exit, { code: 0, signal: null }, `exit after ${signal}\n--- stdout:\n${sim.stdout()}\n--- stderr:\n${sim.stderr()}`);
  assert.match(sim.stdout(), /fleet-simulate: stopped\. \d+ sent, \d+ accepted, 0 errors\./);
  return totals(sim.stdout());
}

async function json(res: Promise<Response>): Promise<any> {
  const answer = await res;
  assert.equal(answer.status, 200, await answer.clone().text());
  return answer.json();
}

/** Every stored record of a vehicle, all pages. */
async function history(fleet: RunningFleet, key: string, vehicleId: string): Promise<any[]> {
  const records: any[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await json(request(fleet, 'GET', `/v2/telemetry/${vehicleId}/history?limit=500${cursor === null ? '' : `&cursor=${cursor}`}`, { key }));
    records.push(...page.records);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return records;
}


// Each test has a service and simulators of its own, and most of its time is theirs, spent waiting
// for a simulator's records or its vehicles' moves: two at a time.
describe('npm run simulate', { concurrency: 2 }, () => {
  test('over HTTP: registers its vehicles, sends what it says, stops cleanly; a re-run reuses and resumes them', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = adminKey();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key, FLEET_MQTT_PORT: '0' } });

    const first = simulate(t, ['--url', fleet.url, '--vehicles', '4', '--rate', '40'], key);
    const sent = await runFor(first, 2_000, 40);
    assert.match(first.stdout(), /4 vehicles \(4 newly registered\), 40 records\/s over HTTP/);
    assert.equal(sent.errors, 0);
    assert.equal(sent.accepted, sent.sent, 'everything sent was acknowledged');

    const list = await json(request(fleet, 'GET', '/v2/fleet/vehicles', { key }));
    assert.deepEqual(list.vehicles.map((v: any) => v.id), ['sim-0001', 'sim-0002', 'sim-0003', 'sim-0004']);
    assert.deepEqual(list.vehicles.map((v: any) => v.type), ['van', 'shuttle', 'scooter', 'van']);
    for (const vehicle of list.vehicles) {
      assert.equal(vehicle.status, 'active', 'telemetry arrived, so the vehicle is active');
      assert.notEqual(vehicle.location, null);
    }
    let stored = 0;
    for (const vehicle of list.vehicles) stored += (await history(fleet, key, vehicle.id)).length;
    assert.equal(stored, sent.accepted, 'every acknowledged record is in the history');
    // Its drivers are registered, and the vehicles' iButtons assign them; the meters count.
    const drivers = (await json(request(fleet, 'GET', '/v2/drivers?limit=1000', { key }))).drivers as Array<{ identifiers: Array<{ value: string }> }>;
    assert.ok(drivers.length > 0, first.stdout());
    const driven = [];
    for (const vehicle of list.vehicles) {
      const details = await json(request(fleet, 'GET', `/v2/fleet/vehicles/${vehicle.id}`, { key }));
      if (details.driverId !== null) driven.push(vehicle.id);
      const meters = await json(request(fleet, 'GET', `/v2/fleet/vehicles/${vehicle.id}/meters`, { key }));
      assert.ok(meters.odometerKm > 0, `${vehicle.id}: ${JSON.stringify(meters)}`);
    }
    assert.ok(driven.length > 0, 'some vehicle has its driver from its records');

    // A second run: nothing registered again, and every vehicle carries on from where it was.
    const second = simulate(t, ['--url', fleet.url, '--vehicles', '4', '--rate', '40'], key);
    await runFor(second, 1_000, 20, 'SIGINT');
    assert.match(second.stdout(), /4 vehicles \(0 newly registered\)/);
    for (const vehicle of list.vehicles) {
      const records = await history(fleet, key, vehicle.id);
      const odometers = records.map((r) => r.data.odometer as number);
      assert.ok(odometers.every((km, i) => i === 0 || km >= odometers[i - 1]!), `${vehicle.id}: odometer went back across runs`);
      const latest = await json(request(fleet, 'GET', `/v2/telemetry/${vehicle.id}`, { key }));
      assert.deepEqual(latest.data, records.at(-1).data);
    }
  });

  test('--geofences: places geofences on the routes, whose enter and exit events reach the feed; a re-run reuses them by name', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = adminKey();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key } });
    const names = ['geo-geofence-01', 'geo-geofence-02', 'geo-geofence-03'];
    const geofences = async () => (await json(request(fleet, 'GET', '/v2/geofences?limit=1000', { key }))).geofences as { id: string; name: string; geometry: any }[];
    const feed = async () => (await json(request(fleet, 'GET', '/v2/events?types=geofence.entered,geofence.exited&limit=1000', { key }))).events as any[];

    const first = simulate(t, ['--url', fleet.url, '--vehicles', '3', '--rate', '15', '--geofences', '3', '--prefix', 'geo'], key);
    await first.waitFor(() => first.stdout().includes('3 geofences on the routes (3 created, 0 reused)'), 'the geofences line');
    const placed = await geofences();
    assert.deepEqual(placed.map((g) => g.name).sort(), names);
    assert.deepEqual(placed.map((g) => g.geometry.type).sort(), ['Circle', 'Circle', 'Polygon']);
    // Each geofence lies ahead of one of the three vehicles: each is entered, and left, soon.
    let events: any[] = [];
    const seen = (type: string) => new Set(events.filter((e) => e.type === type).map((e) => e.data.name));
    await waitUntil(async () => {
      events = await feed();
      return seen('geofence.entered').size >= 3 && seen('geofence.exited').size >= 1;
    }, 'each geofence entered and one left', 30_000, { every: 250, seen: () => JSON.stringify(events.map((e) => [e.type, e.vehicleId, e.data.name])) });
    await runFor(first, 0, 1);
    for (const e of events) {
      assert.ok(names.includes(e.data.name));
      assert.equal(e.data.geofenceId, placed.find((g) => g.name === e.data.name)!.id);
    }

    // Again: the same three (same ids), moved to where the vehicles are now; nothing new is made.
    const second = simulate(t, ['--url', fleet.url, '--vehicles', '3', '--rate', '15', '--geofences', '3', '--prefix', 'geo'], key);
    await second.waitFor(() => second.stdout().includes('3 geofences on the routes (0 created, 3 reused)'), 'the geofences line of the re-run');
    await runFor(second, 0, 1);
    const again = await geofences();
    assert.deepEqual(again.map((g) => g.id).sort(), placed.map((g) => g.id).sort());
    assert.notDeepEqual(again.map((g) => g.geometry), placed.map((g) => g.geometry), 'moved onto the routes of this run');

    // A key without the rules scope is told so, before anything is sent.
    const created = await request(fleet, 'POST', '/v2/api-keys', { key, body: { name: 'no rules', scopes: ['fleet:read', 'fleet:write', 'telemetry:write'] } });
    const noRules = ((await created.json()) as { key: string }).key;
    const refused = simulate(t, ['--url', fleet.url, '--vehicles', '1', '--geofences', '1', '--prefix', 'geo'], noRules);
    assert.deepEqual(await withTimeout(refused.closed, 10_000, 'the simulator to give up'), { code: 1, signal: null });
    assert.match(refused.stderr(), /--geofences needs the fleet:read and rules scopes/);
  });

  test('exits 1 with a clear message when the service is unreachable or refuses the key', { timeout: TEST_TIMEOUT }, async (t) => {
    const port = await freePort();
    const nowhere = simulate(t, ['--url', `http://127.0.0.1:${port}`], adminKey());
    assert.deepEqual(await withTimeout(nowhere.closed, 10_000, 'the simulator to give up'), { code: 1, signal: null });
    assert.match(nowhere.stderr(), new RegExp(`cannot reach Fleet at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));

    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: adminKey(), FLEET_MQTT_PORT: '0' } });
    const unknownKey = adminKey();
    const refused = simulate(t, ['--url', fleet.url], unknownKey);
    assert.deepEqual(await withTimeout(refused.closed, 10_000, 'the simulator to give up'), { code: 1, signal: null });
    assert.match(refused.stderr(), /the service refused the key \(401 invalid-token/);
    assert.ok(!(refused.stdout() + refused.stderr()).includes(unknownKey), 'the key is never printed');
  });

  test('over MQTT: to the service\'s own listener without --mqtt-url, whose PUBACKs are the records stored; another broker\'s are not counted as accepted', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = adminKey();
    const port = await freePort();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key, FLEET_MQTT_PORT: String(port), FLEET_MQTT_HOST: '127.0.0.1' } });
    const mqttUrl = `mqtt://127.0.0.1:${port}`;
    await fleet.waitFor(() => fleet.logs().some((l) => typeof l.msg === 'string' && l.msg === 'MQTT listener started'), 'the MQTT listener');

    // Only --url and the key: the listener is the one the service names, on the port it bound.
    const sim = simulate(t, ['--url', fleet.url, '--mqtt', '--vehicles', '3', '--rate', '30', '--prefix', 'mq'], key);
    const sent = await runFor(sim, 2_000, 30);
    assert.match(sim.stdout(), new RegExp(`over MQTT to mqtt://127\\.0\\.0\\.1:${port} \\(the service's own listener\\)`));
    let stored = 0;
    for (const id of ['mq-0001', 'mq-0002', 'mq-0003']) stored += (await history(fleet, key, id)).length;
    assert.equal(stored, sent.accepted, 'every PUBACKed record is in the history');

    // Another broker on the machine: its PUBACKs are its own, counted apart from what Fleet accepted.
    const { Aedes } = await import('aedes');
    const other = await Aedes.createBroker();
    const server = net.createServer((socket) => other.handle(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => other.close(() => server.close(() => resolve()))));
    const otherUrl = `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const elsewhere = simulate(t, ['--url', fleet.url, '--mqtt', '--mqtt-url', otherUrl, '--vehicles', '1', '--rate', '20', '--prefix', 'mq'], key);
    await elsewhere.waitFor(() => /acknowledged by the broker [1-9]/.test(elsewhere.stdout()), 'the other broker\'s PUBACKs');
    elsewhere.child.kill('SIGTERM');
    assert.deepEqual(await withTimeout(elsewhere.closed, 10_000, 'the simulator to stop'), { code: 0, signal: null }, elsewhere.stderr());
    assert.match(elsewhere.stdout(), new RegExp(`PUBACKs from ${otherUrl.replaceAll('.', '\\.')} are the broker's, not Fleet's: the MQTT listener of the service at .* is ${mqttUrl.replaceAll('.', '\\.')}\\.`));
    assert.doesNotMatch(elsewhere.stdout(), /accepted/);
    assert.match(elsewhere.stdout(), /stopped\. \d+ sent, \d+ acknowledged by the broker \(not by Fleet\), 0 errors\./);

    // A key without telemetry:write may not ask where to send, nor log in to the listener.
    const created = await request(fleet, 'POST', '/v2/api-keys', { key, body: { name: 'no telemetry', scopes: ['fleet:read', 'fleet:write'] } });
    assert.equal(created.status, 201, await created.clone().text());
    const readOnly = ((await created.json()) as { key: string }).key;
    const unasked = simulate(t, ['--url', fleet.url, '--mqtt', '--vehicles', '1', '--prefix', 'mq'], readOnly);
    assert.deepEqual(await withTimeout(unasked.closed, 10_000, 'the simulator to give up'), { code: 1, signal: null });
    assert.match(unasked.stderr(), /GET \/v2\/device-endpoints needs the telemetry:write scope\); pass --mqtt-url\./);
    const refused = simulate(t, ['--url', fleet.url, '--mqtt', '--mqtt-url', mqttUrl, '--vehicles', '1', '--prefix', 'mq'], readOnly);
    assert.deepEqual(await withTimeout(refused.closed, 10_000, 'the simulator to give up'), { code: 1, signal: null });
    assert.match(refused.stderr(), /the MQTT broker at mqtt:\/\/127\.0\.0\.1:\d+ refused the login/);
  });

  test('as devices: Teltonika to the service\'s own listener without --teltonika-url, OsmAnd to /osmand while its port is off; each vehicle given a device once; every acknowledged record is stored', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = adminKey();
    const teltonikaPort = await freePort();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key, FLEET_TELTONIKA_PORT: String(teltonikaPort), FLEET_PROTOCOLS_HOST: '127.0.0.1' } });
    await fleet.waitFor(() => fleet.logs().some((l) => l.msg === 'Teltonika listener started'), 'the Teltonika listener');

    for (const [protocol, prefix, destination] of [
      ['osmand', 'os', `${fleet.url}/osmand`],
      ['teltonika', 'tk', `tcp://127.0.0.1:${teltonikaPort} (the service's own listener)`],
    ] as const) {
      const sim = simulate(t, ['--url', fleet.url, '--protocol', protocol, '--vehicles', '3', '--rate', '30', '--prefix', prefix], key);
      const sent = await runFor(sim, 1_500, 20);
      assert.ok(sim.stdout().includes(`to ${destination}. Ctrl-C`), `${protocol}: ${sim.stdout()}`);
      assert.equal(sent.errors, 0, protocol);
      const devices = (await json(request(fleet, 'GET', '/v2/devices?limit=1000', { key }))).devices.filter((d: any) => d.protocol === protocol);
      assert.deepEqual(devices.map((d: any) => d.vehicleId).sort(), [`${prefix}-0001`, `${prefix}-0002`, `${prefix}-0003`], protocol);
      let stored = 0;
      for (const d of devices) stored += (await history(fleet, key, d.vehicleId)).length;
      assert.equal(stored, sent.accepted, `${protocol}: every acknowledged record is in the history`);
    }
    // A re-run reuses the devices it registered.
    const again = simulate(t, ['--url', fleet.url, '--protocol', 'osmand', '--vehicles', '3', '--rate', '30', '--prefix', 'os'], key);
    await runFor(again, 500, 5);
    assert.equal((await json(request(fleet, 'GET', '/v2/devices?limit=1000', { key }))).total, 6);
  });

  test('a listener that is off or cannot be reached: one clear line and exit 1, never a refused IMEI', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = adminKey();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key } });
    const fails = async (args: string[], message: RegExp) => {
      const sim = simulate(t, ['--url', fleet.url, '--vehicles', '1', '--prefix', 'off', ...args], key);
      assert.deepEqual(await withTimeout(sim.closed, 15_000, 'the simulator to give up'), { code: 1, signal: null }, sim.stdout() + sim.stderr());
      assert.match(sim.stderr(), message);
      assert.doesNotMatch(sim.stdout() + sim.stderr(), /refused IMEI|accepted/);
    };
    const service = fleet.url.replaceAll('.', '\\.');
    await fails(['--mqtt'], new RegExp(`^fleet-simulate: the service at ${service} has its MQTT listener off: pass --mqtt-url or enable it\n$`));
    await fails(['--protocol', 'teltonika'], new RegExp(`^fleet-simulate: the service at ${service} has its Teltonika listener off: pass --teltonika-url or enable it\n$`));
    const nowhere = await freePort();
    await fails(['--protocol', 'teltonika', '--teltonika-url', `tcp://127.0.0.1:${nowhere}`], new RegExp(`^fleet-simulate: cannot connect to 127\\.0\\.0\\.1:${nowhere} \\(ECONNREFUSED\\) for Teltonika\\.\n$`));
    await fails(['--protocol', 'osmand', '--osmand-url', `http://127.0.0.1:${nowhere}`], new RegExp(`^fleet-simulate: cannot connect to 127\\.0\\.0\\.1:${nowhere} \\(ECONNREFUSED\\) for OsmAnd at http://127\\.0\\.0\\.1:${nowhere}\\.\n$`));
  });

  test('a Teltonika login: only the listener\'s 0x00 is a refused IMEI; a connection closed or refused says so', async (t) => {
    const answers: (Buffer | null)[] = [Buffer.from([0x00]), null];
    const server = net.createServer((socket) => {
      socket.once('data', () => {
        const answer = answers.shift();
        if (answer === null || answer === undefined) socket.destroy();
        else socket.end(answer);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as net.AddressInfo;
    const counters = { sent: 0, accepted: 0, duplicates: 0, errors: 0, skipped: 0, lastError: undefined, failingSince: undefined };
    const login = (at: number) => teltonikaTransport('127.0.0.1', at, new Map([['v-1', '356307042441013']]), counters);
    await assert.rejects(login(port), new RegExp(`^Error: the Teltonika listener at 127\\.0\\.0\\.1:${port} refused IMEI 356307042441013 \\(0x00\\)`));
    await assert.rejects(login(port), /closed the connection without answering IMEI 356307042441013$/);
    const nowhere = await freePort();
    await assert.rejects(login(nowhere), new RegExp(`^Error: cannot connect to 127\\.0\\.0\\.1:${nowhere} \\(ECONNREFUSED\\)$`));
    assert.deepEqual(counters, { sent: 0, accepted: 0, duplicates: 0, errors: 0, skipped: 0, lastError: undefined, failingSince: undefined });
  });

  test('setup registers 1000 vehicles a request, saying how far it got', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = adminKey();
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key, FLEET_MQTT_PORT: '0' } });
    const sim = simulate(t, ['--url', fleet.url, '--vehicles', '1001', '--rate', '0.05', '--prefix', 'bulk'], key);
    await sim.waitFor(() => sim.stdout().includes('1001 vehicles (1001 newly registered)'), 'every vehicle registered', 60_000);
    sim.child.kill('SIGTERM');
    assert.deepEqual(await withTimeout(sim.closed, 10_000, 'the simulator to stop'), { code: 0, signal: null }, sim.stderr());
    assert.match(sim.stdout(), /registered 1000 of 1001 vehicles\n.*registered 1001 of 1001 vehicles\n/);
    const drivers = Number(/(\d+) drivers newly registered/.exec(sim.stdout())?.[1]);
    assert.ok(drivers > 100 && drivers <= 300, `drivers registered a request each: ${drivers} (readers in the first 100 vehicles only)`);
    const metrics = await (await request(fleet, 'GET', '/metrics', { key })).text();
    const batches = /fleet_http_requests_total\{[^}]*route="\/v2\/fleet\/vehicles\/batch"[^}]*status_code="200"[^}]*\} (\d+)/.exec(metrics);
    assert.equal(batches?.[1], '2', 'two registration requests for 1001 vehicles');
    const list = await json(request(fleet, 'GET', '/v2/fleet/vehicles?limit=1000&offset=1000', { key }));
    assert.equal(list.total, 1001);
    assert.deepEqual(list.vehicles.map((v: any) => v.id), ['bulk-1001']);
  });

  test('setup waits out the rate limit, however often a request is refused, and registers every vehicle', { timeout: TEST_TIMEOUT }, async (t) => {
    const key = adminKey();
    // Two requests a second against the setup's requests (eight drivers at a time): most are refused (429) several times over.
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key, FLEET_MQTT_PORT: '0', FLEET_RATE_LIMIT_REQUESTS: '2', FLEET_RATE_LIMIT_WINDOW_SECONDS: '1' } });
    const sim = simulate(t, ['--url', fleet.url, '--vehicles', '12', '--rate', '1', '--prefix', 'rl'], key);
    await sim.waitFor(() => sim.stdout().includes('12 vehicles (12 newly registered)'), 'every vehicle registered', 30_000);
    sim.child.kill('SIGTERM');
    assert.deepEqual(await withTimeout(sim.closed, 10_000, 'the simulator to stop'), { code: 0, signal: null }, sim.stderr());

    // The test's own reads draw on the same budget: each waits its turn as told.
    const read = async (pathname: string): Promise<Response> => {
      for (;;) {
        const res = await request(fleet, 'GET', pathname, { key });
        if (res.status !== 429) return res;
        await sleep(Number(res.headers.get('retry-after')) * 1000);
      }
    };
    const metrics = await (await read('/metrics')).text();
    const refusals = [...metrics.matchAll(/fleet_http_requests_total\{[^}]*route="\/v2\/(?:fleet\/vehicles\/batch|drivers)"[^}]*status_code="429"[^}]*\} (\d+)/g)]
      .reduce((sum, m) => sum + Number(m[1]), 0);
    assert.ok(refusals >= 8, `registrations refused: ${refusals}`);
    const list = await json(read('/v2/fleet/vehicles?limit=1000'));
    assert.deepEqual(list.vehicles.map((v: any) => v.id), Array.from({ length: 12 }, (_, i) => `rl-${String(i + 1).padStart(4, '0')}`));
  });
});
