// MQTT ingestion: the same QoS 1 telemetry through Fleet's embedded listener and through an
// existing broker (Mosquitto, FLEET_BENCH_MQTT_URL, else FLEET_TEST_MQTT_URL, else the local one)
// to which Fleet subscribes. Each side is Fleet on a fresh SQLite store with 100 vehicles; the
// devices (bench/mqtt-devices.ts, 20 connections) run in a process of their own.
//
// Publishing at a broker is acknowledged by the broker, not by Fleet, so the devices are held to a
// window: at most WINDOW messages sent and not yet stored (a broker drops what overflows its queue
// for a subscriber, 1000 messages by default in Mosquitto). The rate is what Fleet stores per
// second; the two sides take turns for BENCH_ROUNDS rounds (default 3) of BENCH_SECONDS (default 4).
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { brokerAnswers, freePort } from '../test/helpers/mqtt.ts';
import { median, startBenchFleet } from './lib.ts';
import type { DeviceSpec } from './mqtt-devices.ts';

const BROKER = process.env.FLEET_BENCH_MQTT_URL || process.env.FLEET_TEST_MQTT_URL || 'mqtt://127.0.0.1:1883';
const seconds = Number(process.env.BENCH_SECONDS ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 20;
const WINDOW = 400;
const VEHICLES = Array.from({ length: 100 }, (_, i) => `veh-${String(i).padStart(3, '0')}`);
const RUN = `${process.pid}`;

if (!(await brokerAnswers(BROKER))) {
  console.log(`No MQTT broker answers at ${BROKER}: the MQTT benchmark is skipped (set FLEET_BENCH_MQTT_URL, or start Mosquitto).`);
  process.exit(0);
}

const dirs: string[] = [];
/** Fleet with MQTT as `env` says, counting what its store accepts, once its MQTT check is up. */
async function startFleet(env: (organizationId: string) => Record<string, string>) {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-mqtt-'));
  dirs.push(dir);
  const fleet = await startBenchFleet(createSqliteStores(path.join(dir, 'fleet.db')), VEHICLES, env);
  const store = fleet.stores.telemetry;
  const commit = store.commit.bind(store);
  const counter = { stored: 0, onCommit: undefined as (() => void) | undefined };
  store.commit = async (batches, merge) => {
    const outcomes = await commit(batches, merge);
    for (const outcome of outcomes) if (outcome.ok) counter.stored += outcome.accepted + outcome.duplicates;
    counter.onCommit?.();
    return outcomes;
  };
  for (let i = 0; ; i++) {
    const ready = (await fleet.app.inject({ url: '/readyz' })).json<{ checks: { mqtt: unknown } }>();
    if (ready.checks.mqtt === 'up') break;
    if (i > 200) throw new Error(`MQTT not up: ${JSON.stringify(ready.checks.mqtt)}`);
    await sleep(25);
  }
  return { ...fleet, counter };
}

const listenerPort = await freePort();
const listener = await startFleet(() => ({ FLEET_MQTT_PORT: String(listenerPort), FLEET_MQTT_HOST: '127.0.0.1' }));
const subscriber = await startFleet((organizationId) => ({
  FLEET_MQTT_URL: BROKER, FLEET_MQTT_ORGANIZATION: organizationId, FLEET_MQTT_SHARE_GROUP: `bench-${RUN}`,
  FLEET_MQTT_CLIENT_ID: `bench-fleet-${RUN}`, FLEET_MQTT_SESSION: 'leave',
}));

let start = Date.now() - 20 * 86_400_000;
type Fleet = typeof listener;
interface Sample { rate: number; serverCpu: number; devicesCpu: number }

/** One round: devices publish within the window for `forSeconds`; what Fleet stored meanwhile. */
async function round(fleet: Fleet, url: string, password: string | undefined, forSeconds: number): Promise<Sample> {
  const spec: DeviceSpec = { url, connections: CONNECTIONS, vehicles: VEHICLES, start, ...(password === undefined ? {} : { password }) };
  start += 10_000_000;
  const devices: ChildProcess = fork(fileURLToPath(new URL('./mqtt-devices.ts', import.meta.url)), [JSON.stringify(spec)]);
  const next = <T>() => new Promise<T>((resolve, reject) => {
    devices.once('message', (message) => resolve(message as T));
    devices.once('error', reject);
  });
  await next<{ ready: true }>();
  const base = fleet.counter.stored;
  let given = WINDOW;
  fleet.counter.onCommit = () => {
    const more = fleet.counter.stored - base + WINDOW - given;
    if (more >= 50) {
      given += more;
      devices.send({ credit: more });
    }
  };
  devices.send({ credit: WINDOW });
  const cpu = process.cpuUsage();
  const before = fleet.counter.stored;
  const started = performance.now();
  await sleep(forSeconds * 1000);
  const elapsed = (performance.now() - started) / 1000;
  const stored = fleet.counter.stored - before;
  const used = process.cpuUsage(cpu);
  fleet.counter.onCommit = undefined;
  // Everything sent is stored before the devices go (nothing is lost: the window holds).
  for (let i = 0; fleet.counter.stored - base < given; i++) {
    if (i > 400) throw new Error(`${given - (fleet.counter.stored - base)} of ${given} messages not stored within 10 s`);
    await sleep(25);
  }
  const ended = next<{ cpu: number }>();
  devices.send({ end: true });
  const { cpu: devicesCpu } = await ended;
  return { rate: stored / elapsed, serverCpu: (used.user + used.system) / 1e6 / elapsed, devicesCpu: devicesCpu / elapsed };
}

const sides = [
  { name: 'Fleet\'s embedded listener (PUBACK after the commit)', run: (s: number) => round(listener, `mqtt://127.0.0.1:${listenerPort}`, listener.secret, s) },
  { name: `an existing broker (${BROKER}), Fleet subscribed with $share`, run: (s: number) => round(subscriber, BROKER, undefined, s) },
];
for (const side of sides) await side.run(1);
const samples: Sample[][] = sides.map(() => []);
for (let r = 0; r < ROUNDS; r++) for (const [i, side] of sides.entries()) samples[i]!.push(await side.run(seconds));

const pct = (fraction: number) => `${Math.round(fraction * 100)} %`;
console.log(`Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? 'CPU'}. ${CONNECTIONS} device connections, QoS 1, one record a message, at most ${WINDOW} messages unstored; ${ROUNDS} rounds of ${seconds} s taking turns; medians.`);
console.log('Server CPU: the Fleet process (both Fleets idle in it but the one measured); devices CPU: the publishing process. The broker\'s own CPU is not counted.\n');
console.log('| ingestion | messages stored/s | server CPU | devices CPU |\n|---|---|---|---|');
for (const [i, side] of sides.entries()) {
  const s = samples[i]!;
  console.log(`| ${side.name} | ${Math.round(median(s.map((x) => x.rate)))} | ${pct(median(s.map((x) => x.serverCpu)))} | ${pct(median(s.map((x) => x.devicesCpu)))} |`);
}
const ratios = samples[1]!.map((x, i) => x.rate / samples[0]![i]!.rate);
console.log(`\nExisting broker / embedded listener: **${median(ratios).toFixed(2)} ×** (rounds: ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}).`);

await subscriber.app.close();
await listener.app.close();
await subscriber.stores.close();
await listener.stores.close();
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
