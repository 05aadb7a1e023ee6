// Fleet simulator: registers N vehicles and drives believable telemetry at R records per second in
// total against a running service, over HTTP (a batch per tick, POST /v2/telemetry), MQTT (QoS 1
// publishes to fleet/{id}/telemetry), or as devices speaking OsmAnd or Teltonika (each vehicle
// gets a registered device; see simulate-devices.ts). The motion model is src/cli/simulation.ts;
// every call to the Fleet API goes through the SDK (simulate-api.ts).
//
//   FLEET_KEY=fleet_... npm run simulate -- --vehicles 20 --rate 50
//
// Exit status: 0 after Ctrl-C / SIGTERM, 1 when the service is unreachable or refuses the key,
// 2 for bad arguments.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  Fatal, type OutRecord, type Transport, checkReachable, connect, httpTransport, prepareGeofences, prepareVehicles, shown,
} from './simulate-api.ts';
import { type Counters, type DeviceProtocol, osmandTransport, prepareDevices, teltonikaTransport } from './simulate-devices.ts';
import { advance, createScheduler, sample } from './simulation.ts';

const USAGE = `Usage: npm run simulate -- [options]

  --vehicles N       vehicles to simulate (default 20), ids <prefix>-0001...
  --rate R           records per second in total, over all vehicles (default 10)
  --url URL          the Fleet service (default $FLEET_URL or http://localhost:8080)
  --key KEY          API key (default $FLEET_KEY; prefer the variable: arguments show in ps)
  --mqtt             publish over MQTT (QoS 1) instead of HTTP batches
  --mqtt-url URL     MQTT listener (default $FLEET_MQTT_URL or mqtt://localhost:1883)
  --protocol P       send as devices: osmand (a GET per record) or teltonika (TCP per vehicle);
                     each vehicle gets a device of that protocol, registered if missing
  --osmand-url URL   where OsmAnd reports go (default <url>/osmand; the OsmAnd port is http://host:5055)
  --teltonika-url U  the Teltonika listener, tcp://host:port (default $FLEET_TELTONIKA_URL or tcp://<host of url>:5027)
  --geofences N      place N geofences (circles and small polygons) just ahead of the vehicles
                     on their routes, named <prefix>-geofence-01...; a re-run reuses those of
                     the same names, moved onto the new positions. Their geofence.entered and
                     geofence.exited events come within a minute: GET /v2/events
  --prefix P         vehicle id prefix (default sim)
  --tick MS          how often a batch is sent, ms (default 1000)
  --report S         seconds between status lines (default 5)
  --seed N           varies routes and everything random (default 0)
  -h, --help         this text

Vehicles drive loops around the city, stop at lights, park for 5 to 15 minutes now and then (a
delivery: half of them within their first quarter of an hour), and charge at their depot, so
trips, stops and reports have something to show early on.

The key needs fleet:write to register vehicles (already registered ones are reused) and
telemetry:write to send; with fleet:read and telemetry:read a re-run resumes each vehicle
where the service last saw it. --geofences needs fleet:read and rules.`;

const GIVE_UP_AFTER_MS = 30_000;

function write(line: string): void {
  process.stdout.write(`${line}\n`);
}

function usageError(message: string): never {
  process.stderr.write(`fleet-simulate: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

interface Options {
  vehicles: number;
  rate: number;
  url: string;
  key: string;
  mqtt: boolean;
  mqttUrl: string;
  protocol: DeviceProtocol | undefined;
  osmandUrl: string;
  teltonika: { host: string; port: number };
  geofences: number;
  prefix: string;
  tickMs: number;
  reportMs: number;
  seed: number;
}

function parseOptions(argv: string[]): Options {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      options: {
        vehicles: { type: 'string', default: '20' },
        rate: { type: 'string', default: '10' },
        url: { type: 'string', default: process.env.FLEET_URL || 'http://localhost:8080' },
        key: { type: 'string', default: process.env.FLEET_KEY ?? '' },
        mqtt: { type: 'boolean', default: false },
        'mqtt-url': { type: 'string', default: process.env.FLEET_MQTT_URL || 'mqtt://localhost:1883' },
        protocol: { type: 'string' },
        'osmand-url': { type: 'string' },
        'teltonika-url': { type: 'string', default: process.env.FLEET_TELTONIKA_URL ?? '' },
        geofences: { type: 'string', default: '0' },
        prefix: { type: 'string', default: 'sim' },
        tick: { type: 'string', default: '1000' },
        report: { type: 'string', default: '5' },
        seed: { type: 'string', default: '0' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    usageError((error as Error).message);
  }
  if (parsed.help) {
    write(USAGE);
    process.exit(0);
  }
  const number = (name: string, text: string, min: number, max: number, integer: boolean): number => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
      usageError(`--${name} "${text}" must be ${integer ? 'a whole number' : 'a number'} from ${min} to ${max}`);
    }
    return value;
  };
  const url = (name: string, text: string, protocols: string[]): string => {
    try {
      const parsedUrl = new URL(text);
      if (!protocols.includes(parsedUrl.protocol)) throw new Error('protocol');
      return text.replace(/\/+$/, '');
    } catch {
      usageError(`--${name} "${text}" is not a ${protocols.join(' or ')} URL`);
    }
  };
  if (parsed.key === '') usageError('no API key: set FLEET_KEY (or pass --key); the service prints its first admin key on first start');
  if (!/^[A-Za-z0-9._:-]{1,40}$/.test(parsed.prefix)) usageError(`--prefix "${parsed.prefix}" must be 1 to 40 of A-Z a-z 0-9 . _ : -`);
  const protocol = parsed.protocol;
  if (protocol !== undefined && protocol !== 'osmand' && protocol !== 'teltonika') usageError(`--protocol "${protocol}" is neither osmand nor teltonika`);
  if (protocol !== undefined && parsed.mqtt) usageError('--protocol and --mqtt exclude each other');
  const base = url('url', parsed.url, ['http:', 'https:']);
  const teltonikaUrl = new URL(url('teltonika-url', parsed['teltonika-url'] || `tcp://${new URL(base).hostname}:5027`, ['tcp:']));
  return {
    protocol,
    osmandUrl: url('osmand-url', parsed['osmand-url'] ?? `${base}/osmand`, ['http:', 'https:']),
    teltonika: { host: teltonikaUrl.hostname, port: Number(teltonikaUrl.port || 5027) },
    vehicles: number('vehicles', parsed.vehicles, 1, 100_000, true),
    rate: number('rate', parsed.rate, 0.01, 1_000_000, false),
    url: url('url', parsed.url, ['http:', 'https:']),
    key: parsed.key,
    mqtt: parsed.mqtt,
    mqttUrl: url('mqtt-url', parsed['mqtt-url'], ['mqtt:', 'mqtts:', 'tcp:', 'ws:', 'wss:']),
    geofences: number('geofences', parsed.geofences, 0, 1000, true),
    prefix: parsed.prefix,
    tickMs: number('tick', parsed.tick, 50, 60_000, true),
    reportMs: number('report', parsed.report, 0.2, 3600, false) * 1000,
    seed: number('seed', parsed.seed, 0, 2 ** 31, true),
  };
}

// --- MQTT -------------------------------------------------------------------------------------

async function mqttTransport(options: Options, counters: Counters): Promise<Transport> {
  const mqtt = await import('mqtt');
  let client: Awaited<ReturnType<typeof mqtt.connectAsync>>;
  try {
    client = await mqtt.connectAsync(
      options.mqttUrl,
      {
        clientId: `fleet-sim-${randomBytes(4).toString('hex')}`,
        username: 'fleet-simulator',
        password: options.key,
        connectTimeout: 5000,
        reconnectPeriod: 1000,
        clean: true,
      },
      false,
    );
  } catch (error) {
    const { code, message } = error as { code?: number | string; message: string };
    if (code === 4 || code === 5 || code === 134 || code === 135) {
      throw new Fatal(`the MQTT listener at ${shown(options.mqttUrl)} refused the key (${message}). It needs the telemetry:write scope.`);
    }
    throw new Fatal(`cannot reach the MQTT listener at ${shown(options.mqttUrl)} (${typeof code === 'string' ? code : message}). Is it enabled? Or pass --mqtt-url.`);
  }
  client.on('error', (error) => {
    counters.lastError = `mqtt: ${error.message}`;
  });
  client.on('offline', () => {
    counters.lastError = 'mqtt: connection lost; reconnecting';
    counters.failingSince ??= Date.now();
  });
  client.on('connect', () => {
    counters.failingSince = undefined;
  });
  let outstanding = 0;
  const maxOutstanding = Math.max(1000, options.rate * 5);
  return {
    name: 'MQTT',
    send(records) {
      for (const { vehicleId, timestamp, data } of records) {
        if (outstanding >= maxOutstanding || !client.connected) {
          counters.skipped++;
          continue;
        }
        outstanding++;
        counters.sent++;
        client.publish(`fleet/${vehicleId}/telemetry`, JSON.stringify({ timestamp, data }), { qos: 1 }, (error) => {
          outstanding--;
          if (error === undefined || error === null) {
            counters.accepted++;
          } else {
            counters.errors++;
            counters.lastError = `mqtt: ${error.message}`;
          }
        });
      }
    },
    async close() {
      const deadline = Date.now() + 5000;
      while (outstanding > 0 && client.connected && Date.now() < deadline) await sleep(20);
      await Promise.race([client.endAsync(true), sleep(2000)]);
    },
  };
}

// --- Main loop ----------------------------------------------------------------------------------

function destination(options: Options): string {
  if (options.protocol === 'osmand') return shown(options.osmandUrl);
  if (options.protocol === 'teltonika') return `tcp://${options.teltonika.host}:${options.teltonika.port}`;
  return shown(options.mqtt ? options.mqttUrl : options.url);
}

function clock(): string {
  return new Date().toTimeString().slice(0, 8);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const api = connect(options.url, options.key);
  await checkReachable(api, options.url);
  const { sims, created } = await prepareVehicles(api, options);
  const geofences = options.geofences > 0 ? await prepareGeofences(api, options, sims) : undefined;

  const counters: Counters = {
    sent: 0, accepted: 0, duplicates: 0, errors: 0, skipped: 0, lastError: undefined, failingSince: undefined,
  };
  let fatal: Fatal | undefined;
  const stop = new AbortController();
  let identifiers: Map<string, string> | undefined;
  if (options.protocol !== undefined) {
    try {
      identifiers = await prepareDevices(api.setup, options.protocol, sims.filter((sim) => !sim.dropped).map((sim) => sim.state.id));
    } catch (error) {
      throw new Fatal((error as Error).message);
    }
  }
  const transport = options.protocol === 'osmand'
    ? osmandTransport(options.osmandUrl, identifiers!, counters)
    : options.protocol === 'teltonika'
      ? await teltonikaTransport(options.teltonika.host, options.teltonika.port, identifiers!, counters).catch((error: unknown) => {
        throw new Fatal((error as Error).message);
      })
      : options.mqtt
        ? await mqttTransport(options, counters)
        : httpTransport(api, counters, {
        fatal(error) {
          fatal ??= error;
          stop.abort();
        },
        refused(vehicleIds, why) {
          for (const sim of sims) {
            if (!sim.dropped && vehicleIds.includes(sim.state.id)) {
              sim.dropped = true;
              write(`${clock()}  ${sim.state.id}: ${why}; no longer simulated`);
            }
          }
          if (sims.every((sim) => sim.dropped)) this.fatal(new Fatal('no vehicle left to simulate.'));
        },
      });

  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) process.exit(130);
    write(`${clock()}  ${signal}: stopping (again to quit at once)`);
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  // The rate is spread over the vehicles still simulated (a deleted or retired one leaves).
  let active = sims.filter((sim) => !sim.dropped);
  let scheduler = createScheduler(active.length, options.rate);

  write(
    `fleet-simulate: ${active.length} vehicles (${created} newly registered), ${options.rate} records/s over ${transport.name} ` +
      `to ${destination(options)}. Ctrl-C to stop.`,
  );
  if (geofences !== undefined) {
    write(
      `fleet-simulate: ${options.geofences} geofences on the routes (${geofences.created} created, ${geofences.reused} reused); ` +
        'their events: GET /v2/events?types=geofence.entered,geofence.exited',
    );
  }

  let last = { sent: 0, accepted: 0, errors: 0, at: Date.now() };
  let lastShownError: string | undefined;
  const report = () => {
    const now = Date.now();
    const perSecond = ((counters.sent - last.sent) * 1000) / Math.max(1, now - last.at);
    let line =
      `${clock()}  sent ${counters.sent} (${perSecond.toFixed(1)}/s)  accepted ${counters.accepted}` +
      (options.mqtt ? '' : `  duplicates ${counters.duplicates}`) +
      `  errors ${counters.errors}`;
    if (counters.skipped > 0) line += `  skipped ${counters.skipped}`;
    if (counters.lastError !== undefined && (counters.errors > last.errors || counters.lastError !== lastShownError)) {
      line += `  (last error: ${counters.lastError})`;
      lastShownError = counters.lastError;
    }
    write(line);
    last = { sent: counters.sent, accepted: counters.accepted, errors: counters.errors, at: now };
  };
  const reporter = setInterval(report, options.reportMs);

  let tickStart = Date.now();
  while (!stop.signal.aborted) {
    try {
      await sleep(Math.max(0, tickStart + options.tickMs - Date.now()), undefined, { signal: stop.signal });
    } catch {
      break; // aborted
    }
    const now = Date.now();
    // The tick just past: each planned record is stamped at its moment within it, and its vehicle
    // is moved on to that moment. A late tick simply covers more time, so the rate holds.
    const records: OutRecord[] = [];
    for (const { index, offsetMs } of scheduler.tick(now - tickStart)) {
      const sim = active[index]!;
      if (sim.dropped) continue;
      const at = Math.max(tickStart + offsetMs, sim.at + 1);
      advance(sim.state, (at - sim.at) / 1000);
      sim.at = at;
      records.push({ vehicleId: sim.state.id, timestamp: new Date(at).toISOString(), data: sample(sim.state) });
    }
    tickStart = now;
    if (records.length > 0) transport.send(records);
    if (active.some((sim) => sim.dropped)) {
      active = active.filter((sim) => !sim.dropped);
      scheduler = createScheduler(Math.max(1, active.length), options.rate);
    }
    if (counters.failingSince !== undefined && now - counters.failingSince > GIVE_UP_AFTER_MS) {
      fatal = new Fatal(`lost the service: nothing got through for ${GIVE_UP_AFTER_MS / 1000} s (last error: ${counters.lastError ?? 'none'}); giving up.`);
      break;
    }
  }

  clearInterval(reporter);
  await transport.close();
  report();
  if (fatal !== undefined) throw fatal;
  write(`fleet-simulate: stopped. ${counters.sent} sent, ${counters.accepted} accepted, ${counters.errors} errors.`);
}

try {
  await main();
  process.exit(0);
} catch (error) {
  if (error instanceof Fatal) {
    process.stderr.write(`fleet-simulate: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
