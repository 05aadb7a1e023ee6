// Geofences and alert rules on two real service processes sharing one PostgreSQL database and one
// Redis (cluster mode), as behind a load balancer that spreads each vehicle's records over both
// nodes. Each step of a vehicle's drive is two records of the same state, 400 ms apart, sent at
// once, one to each node: whichever commit comes first makes the transition, the other must find
// it made (the per-vehicle advisory lock and the state it guards), so each transition gives one
// event and each alert opens once. Then one node is SIGKILLed in the middle of a drive and the
// other carries on; and an offline rule, checked by both nodes every second, opens each silent
// vehicle's alert once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateApiKey } from '../src/auth/keys.ts';
import { freePort } from './helpers/mqtt.ts';
import { TEST_DATABASE_URL, adminQuery, skipUnlessPostgres } from './helpers/postgres.ts';
import { type RunningFleet, request, startFleet } from './helpers/process.ts';
import { TEST_REDIS_URL, skipUnlessRedis, testPrefix } from './helpers/redis.ts';

const skip = (await skipUnlessPostgres()) || (await skipUnlessRedis());
const ADMIN_KEY = generateApiKey();

// A circle of 200 m; one point inside it and one 1.1 km north.
const CIRCLE = { type: 'Circle', coordinates: [13.4, 52.52], radius: 200 };
const INSIDE = { lat: 52.52, lng: 13.4 };
const OUTSIDE = { lat: 52.53, lng: 13.4 };

interface Envelope {
  id: string;
  type: string;
  vehicleId: string;
  occurredAt: string;
  data: Record<string, any>;
}

describe('rules on two service processes, one PostgreSQL and one Redis', { skip, timeout: 120_000 }, () => {
  const database = `fleet_rules_cluster_${process.pid}_${randomBytes(4).toString('hex')}`;
  const { prefix, cleanup } = testPrefix('rules-cluster');
  let a: RunningFleet;
  let b: RunningFleet;
  const cleanups: (() => Promise<void>)[] = [];
  let geofenceId: string;
  let speedingId: string;

  const json = async (fleet: RunningFleet, method: string, path: string, body?: unknown) => {
    const res = await request(fleet, method, path, { key: ADMIN_KEY, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  };

  /**
   * Sends one record to `fleet`; when that node is gone (refused, reset, 5xx), to the other, as a
   * load balancer would retry. A record the lost node stored before dying is a duplicate there.
   */
  async function send(fleet: RunningFleet, vehicleId: string, timestamp: number, data: Record<string, unknown>): Promise<'sent' | 'rerouted'> {
    const body = { timestamp: new Date(timestamp).toISOString(), data };
    try {
      const res = await request(fleet, 'POST', `/v2/telemetry/${vehicleId}`, { key: ADMIN_KEY, body });
      if (res.status === 202) return 'sent';
      assert.ok(res.status >= 500, `${res.status}: ${await res.text()}`);
    } catch (error) {
      if (fleet.running() && !(error instanceof TypeError)) throw error;
    }
    const other = fleet === a ? b : a;
    const res = await request(other, 'POST', `/v2/telemetry/${vehicleId}`, { key: ADMIN_KEY, body });
    assert.equal(res.status, 202, await res.text());
    return 'rerouted';
  }

  /**
   * Drives `vehicleId` through `steps` steps from `start`: outside and slow on even steps, inside
   * and speeding on odd ones. Each step's two records go to both nodes at once, the first to a
   * on even steps and to b on odd ones. `onStep` runs before each step.
   */
  async function drive(vehicleId: string, start: number, steps: number, onStep: (step: number) => void = () => {}) {
    let rerouted = 0;
    for (let step = 0; step < steps; step++) {
      onStep(step);
      const inside = step % 2 === 1;
      const data = { location: inside ? INSIDE : OUTSIDE, speed: inside ? 95 : 30 };
      const [first, second] = step % 2 === 0 ? [a, b] : [b, a];
      const t = start + step * 10_000;
      const outcomes = await Promise.all([send(first, vehicleId, t, data), send(second, vehicleId, t + 400, data)]);
      rerouted += outcomes.filter((o) => o === 'rerouted').length;
    }
    return rerouted;
  }

  /** What `steps` steps must give: one event per transition, one alert per speeding spell. */
  const expected = (steps: number) => {
    const spells = Math.floor(steps / 2);
    const exits = Math.floor((steps - 1) / 2);
    return { 'geofence.entered': spells, 'geofence.exited': exits, 'alert.opened': spells, 'alert.resolved': exits };
  };

  /**
   * The vehicle's events of these types, read from `fleet` until there are `count`; on PostgreSQL an
   * event becomes readable once every older transaction on the server has ended, so this polls.
   * Then a moment more, so that anything written twice would show.
   */
  async function eventsOf(fleet: RunningFleet, vehicleId: string, types: string, count: number): Promise<Envelope[]> {
    const read = async () => (await json(fleet, 'GET', `/v2/events?vehicleId=${vehicleId}&types=${types}&limit=1000`)).body.events as Envelope[];
    let events: Envelope[] = [];
    for (const deadline = Date.now() + 15_000; events.length < count; await sleep(100)) {
      assert.ok(Date.now() < deadline, `${vehicleId}: ${events.length} of ${count} events after 15 s: ${JSON.stringify(events.map((e) => e.type))}`);
      events = await read();
    }
    await sleep(300);
    return read();
  }

  function tally(events: Envelope[]): Record<string, number> {
    const counts: Record<string, number> = { 'geofence.entered': 0, 'geofence.exited': 0, 'alert.opened': 0, 'alert.resolved': 0 };
    for (const e of events) counts[e.type]! += 1;
    return counts;
  }

  /** The events and the alerts of a driven vehicle agree with `steps` steps, read from `fleet`. */
  async function checkDrive(fleet: RunningFleet, vehicleId: string, start: number, steps: number) {
    const want = expected(steps);
    const total = Object.values(want).reduce((sum, n) => sum + n, 0);
    const events = await eventsOf(fleet, vehicleId, Object.keys(want).join(','), total);
    assert.deepEqual(tally(events), want, `${vehicleId}: ${JSON.stringify(events.map((e) => [e.type, e.occurredAt]))}`);
    // Each entry at one of the two records of its own inside step: whichever committed first (a
    // later record committed first makes the earlier one too old to change anything).
    const entered = events.filter((e) => e.type === 'geofence.entered').map((e) => Date.parse(e.occurredAt) - start).sort((x, y) => x - y);
    assert.deepEqual(entered.map((ms) => Math.floor(ms / 10_000)), Array.from({ length: want['geofence.entered'] }, (_, i) => 2 * i + 1), `${vehicleId}: one entry per inside step`);
    assert.ok(entered.every((ms) => ms % 10_000 === 0 || ms % 10_000 === 400), `${vehicleId}: at a record's time: ${entered.join(', ')}`);
    assert.ok(events.filter((e) => e.type.startsWith('geofence.')).every((e) => e.data.geofenceId === geofenceId));
    const alerts = (await json(fleet, 'GET', `/v2/alerts?vehicleId=${vehicleId}&ruleId=${speedingId}&limit=100`)).body.alerts as { status: string }[];
    assert.equal(alerts.length, want['alert.opened'], `${vehicleId}: one alert per speeding spell`);
    assert.deepEqual(alerts.map((x) => x.status).sort(), [...Array(want['alert.resolved']).fill('resolved'), ...(want['alert.opened'] > want['alert.resolved'] ? ['open'] : [])].sort());
  }

  before(async () => {
    await adminQuery(`CREATE DATABASE ${database}`);
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${database}`;
    const env = {
      FLEET_DATABASE_URL: url.toString(),
      FLEET_REDIS_URL: TEST_REDIS_URL,
      FLEET_REDIS_PREFIX: prefix,
      FLEET_ADMIN_KEY: ADMIN_KEY,
      FLEET_RATE_LIMIT_REQUESTS: '0',
      FLEET_OFFLINE_CHECK_SECONDS: '1',
    };
    // The processes live for the whole suite: their clean-up runs in the suite's after hook.
    const ctx = { after: (fn: () => Promise<void> | void) => void cleanups.push(async () => fn()) } as unknown as Parameters<typeof startFleet>[0];
    const node = async () => {
      const port = await freePort();
      return startFleet(ctx, { env: { ...env, FLEET_PORT: String(port), FLEET_PUBLIC_URL: `http://127.0.0.1:${port}` } });
    };
    // Both start at once on the empty database: exactly one creates the first organization.
    [a, b] = await Promise.all([node(), node()]);
    const geofence = await json(a, 'POST', '/v2/geofences', { name: 'Depot', geometry: CIRCLE });
    assert.equal(geofence.status, 201, JSON.stringify(geofence.body));
    geofenceId = geofence.body.id;
    const rule = await json(b, 'POST', '/v2/alert-rules', { name: 'Speeding', condition: { kind: 'threshold', field: 'speed', op: '>', value: 80 } });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    speedingId = rule.body.id;
  });
  after(async () => {
    await Promise.all([a, b].filter((fleet) => fleet?.running()).map((fleet) => fleet.stop('SIGTERM')));
    for (const fn of cleanups) await fn();
    await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await cleanup();
  });

  test('records of the same vehicles sent to both nodes at once: one event per transition, one alert per spell', async () => {
    const vehicles = ['c-1', 'c-2', 'c-3', 'c-4'];
    for (const id of vehicles) assert.equal((await json(a, 'POST', '/v2/fleet/vehicles', { vehicleId: id, type: 'van' })).status, 201);
    const start = Date.now() - 600_000;
    const steps = 8;
    await Promise.all(vehicles.map((id) => drive(id, start, steps)));
    await Promise.all(vehicles.map((id, i) => checkDrive(i % 2 === 0 ? a : b, id, start, steps)));
    // Both nodes read the same state.
    assert.deepEqual((await json(b, 'GET', `/v2/geofences/${geofenceId}/vehicles`)).body, { vehicleIds: vehicles });
    assert.deepEqual((await json(a, 'GET', '/v2/fleet/vehicles/c-1/geofences')).body, { geofences: [{ id: geofenceId, name: 'Depot' }] });
  });

  test('an offline rule checked by both nodes every second opens each silent vehicle\'s alert once; telemetry back resolves it', async () => {
    const vehicles = ['o-1', 'o-2', 'o-3'];
    for (const id of vehicles) assert.equal((await json(b, 'POST', '/v2/fleet/vehicles', { vehicleId: id, type: 'van' })).status, 201);
    const rule = await json(a, 'POST', '/v2/alert-rules', { name: 'Silent', condition: { kind: 'offline', afterSeconds: 60 }, vehicleIds: vehicles });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    // Each last heard from two minutes ago, through either node.
    for (const [i, id] of vehicles.entries()) await send(i % 2 === 0 ? a : b, id, Date.now() - 120_000, { speed: 0 });

    await Promise.all(vehicles.map((id) => eventsOf(a, id, 'alert.opened', 1)));
    // Four more rounds of checks on each node: still one alert each.
    await sleep(4_000);
    await Promise.all(vehicles.map(async (id, i) => {
      const opened = (await eventsOf(i % 2 === 0 ? b : a, id, 'alert.opened', 1)).filter((e) => e.data.ruleId === rule.body.id);
      assert.equal(opened.length, 1, `${id}: ${JSON.stringify(opened)}`);
    }));
    const alerts = (await json(b, 'GET', `/v2/alerts?ruleId=${rule.body.id}&limit=100`)).body.alerts as { vehicleId: string; status: string }[];
    assert.deepEqual(alerts.map((x) => x.vehicleId).sort(), vehicles);
    assert.ok(alerts.every((x) => x.status === 'open'));

    // o-1 speaks again (through b): its alert resolves once, and stays resolved.
    await send(b, 'o-1', Date.now(), { speed: 5 });
    const resolved = await eventsOf(a, 'o-1', 'alert.resolved', 1);
    assert.equal(resolved.length, 1);
    await sleep(2_000);
    assert.equal((await eventsOf(a, 'o-1', 'alert.opened', 1)).length, 1, 'not opened again while it reports');
  });

  test('one node SIGKILLed in the middle of a drive: the other takes its records and judges them as before', async () => {
    const vehicles = ['k-1', 'k-2', 'k-3'];
    for (const id of vehicles) assert.equal((await json(a, 'POST', '/v2/fleet/vehicles', { vehicleId: id, type: 'van' })).status, 201);
    const start = Date.now() - 300_000;
    const steps = 10;
    let killed = false;
    const reroutes = await Promise.all(vehicles.map((id) => drive(id, start, steps, (step) => {
      // Mid-run: when the first vehicle starts step 5, while the others' requests are in flight.
      if (step === 5 && !killed) {
        killed = true;
        a.child.kill('SIGKILL');
      }
    })));
    assert.deepEqual(await a.closed, { code: null, signal: 'SIGKILL' });
    assert.ok(reroutes.every((n) => n > 0), `every vehicle had records meant for the killed node taken by the other: ${reroutes.join(', ')}`);
    await Promise.all(vehicles.map((id) => checkDrive(b, id, start, steps)));
    // b still judges new records on its own: k-1 leaves the geofence (it ended inside).
    await send(b, 'k-1', start + steps * 10_000, { location: OUTSIDE, speed: 10 });
    const exits = await eventsOf(b, 'k-1', 'geofence.exited', expected(steps)['geofence.exited'] + 1);
    assert.equal(exits.length, expected(steps)['geofence.exited'] + 1);
  });
});
