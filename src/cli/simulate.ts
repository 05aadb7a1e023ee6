// Fleet simulator: registers N vehicles and drives believable telemetry at R records per second in
// total against a running service, over HTTP (a batch per tick, POST /v2/telemetry), MQTT (QoS 1
// publishes to fleet/{id}/telemetry), or as devices speaking OsmAnd or Teltonika (each vehicle
// gets a registered device; see simulate-devices.ts). MQTT and the device protocols go where the
// service says its devices send (GET /v2/device-endpoints) unless told otherwise, and "accepted"
// counts only what Fleet itself acknowledged. The motion model is src/cli/simulation.ts; every
// call to the Fleet API goes through the SDK (simulate-api.ts).
//
//   FLEET_KEY=fleet_... npm run simulate -- --vehicles 20 --rate 50
//
// Exit status: 0 after Ctrl-C / SIGTERM, 1 when the service or its listener is unreachable or off,
// or refuses the key, 2 for bad arguments.
import { type CommandParams, type CommandType, teltonikaText } from '../commands/model.ts';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  type Api, Fatal, type OutRecord, type Transport, checkReachable, connect, deviceEndpoints, httpTransport,
  prepareDrivers, prepareGeofences, prepareVehicles, shown,
} from './simulate-api.ts';
import {
  type Counters, type DeviceProtocol, type TrackerState, answerCommand, canConnect, hostPort, osmandTransport, prepareDevices, targetOf, teltonikaTransport,
} from './simulate-devices.ts';
import { advance, createScheduler, sample } from './simulation.ts';

const USAGE = `Usage: npm run simulate -- [options]

  --vehicles N       vehicles to simulate (default 20), ids <prefix>-0001...
  --rate R           records per second in total, over all vehicles (default 10)
  --url URL          the Fleet service (default $FLEET_URL or http://localhost:8080)
  --key KEY          API key (default $FLEET_KEY; prefer the variable: arguments show in ps)
  --mqtt             publish over MQTT (QoS 1) instead of HTTP batches
  --mqtt-url URL     the MQTT broker (default: the service's, as it says; see below)
  --protocol P       send as devices: osmand (a GET per record) or teltonika (TCP per vehicle);
                     each vehicle gets a device of that protocol, registered if missing
  --osmand-url URL   where OsmAnd reports go (default: the service's OsmAnd port, else <url>/osmand)
  --teltonika-url U  the Teltonika listener, tcp://host:port (default: the service's, as it says)
  --geofences N      place N geofences (circles and small polygons) just ahead of the vehicles
                     on their routes, named <prefix>-geofence-01...; a re-run reuses those of
                     the same names, moved onto the new positions. Their geofence.entered and
                     geofence.exited events come within a minute: GET /v2/events
  --prefix P         vehicle id prefix (default sim)
  --tick MS          how often a batch is sent, ms (default 1000)
  --report S         seconds between status lines (default 5)
  --seed N           varies routes and everything random (default 0)
  -h, --help         this text

Without --mqtt-url, --osmand-url or --teltonika-url, the simulator asks the service at --url where
its devices send (GET /v2/device-endpoints, with the key: it needs telemetry:write) and sends
there; a listener the service has off is an error (OsmAnd falls back to <url>/osmand). "accepted"
counts only what Fleet acknowledged once the records were stored: the 202 of a batch, the 200 of an
OsmAnd report, a Teltonika record count, the PUBACK of Fleet's own MQTT listener. The PUBACK of any
other broker (one Fleet subscribes to, or an --mqtt-url that is not the service's listener) is
counted as "acknowledged by the broker": it does not mean Fleet stored the records. A connection
that cannot be made is "cannot connect to host:port (ECONNREFUSED)" (or ETIMEDOUT, EHOSTUNREACH),
never a refusal by Fleet; only Fleet's 0x00 answer to an IMEI is "refused IMEI".

Vehicles drive loops around the city, stop at lights, park for 5 to 15 minutes now and then (a
delivery: half of them within their first quarter of an hour), and charge at their depot, so
trips, stops and reports have something to show early on. Their engines run while they drive
(ignition), and most of the first 100 have an iButton reader shared by two or three drivers, who
take turns at the depot: the drivers are registered (with fleet:write), so the records assign them.
Vehicles are registered 1000 a request.

With --protocol or --mqtt the vehicles take commands (POST /v2/fleet/vehicles/{id}/commands), each
printed: Teltonika trackers and MQTT devices answer getgps with their last fix, setdigout with their
outputs, getinfo, getver and cpureset; an OsmAnd app is handed a command's text and only shows it.

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
  /** The destinations given; those not given are asked of the service. */
  mqttUrl: string | undefined;
  protocol: DeviceProtocol | undefined;
  osmandUrl: string | undefined;
  teltonika: { host: string; port: number } | undefined;
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
        'mqtt-url': { type: 'string' },
        protocol: { type: 'string' },
        'osmand-url': { type: 'string' },
        'teltonika-url': { type: 'string' },
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
  const given = parsed['teltonika-url'];
  const teltonikaUrl = given === undefined ? undefined : new URL(url('teltonika-url', given, ['tcp:']));
  if (teltonikaUrl !== undefined && teltonikaUrl.port === '') usageError(`--teltonika-url "${given}" names no port: tcp://host:port`);
  return {
    protocol,
    osmandUrl: parsed['osmand-url'] === undefined ? undefined : url('osmand-url', parsed['osmand-url'], ['http:', 'https:']),
    teltonika: teltonikaUrl === undefined ? undefined : { host: teltonikaUrl.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(teltonikaUrl.port) },
    vehicles: number('vehicles', parsed.vehicles, 1, 100_000, true),
    rate: number('rate', parsed.rate, 0.01, 1_000_000, false),
    url: url('url', parsed.url, ['http:', 'https:']),
    key: parsed.key,
    mqtt: parsed.mqtt,
    mqttUrl: parsed['mqtt-url'] === undefined ? undefined : url('mqtt-url', parsed['mqtt-url'], ['mqtt:', 'mqtts:', 'tcp:', 'ws:', 'wss:']),
    geofences: number('geofences', parsed.geofences, 0, 1000, true),
    prefix: parsed.prefix,
    tickMs: number('tick', parsed.tick, 50, 60_000, true),
    reportMs: number('report', parsed.report, 0.2, 3600, false) * 1000,
    seed: number('seed', parsed.seed, 0, 2 ** 31, true),
  };
}

// --- Where records go ----------------------------------------------------------------------------

/** Where MQTT publishes go, and whose their PUBACKs are. */
interface MqttTarget {
  url: string;
  /** The PUBACKs come from Fleet's own listener, each sent once its records are stored. */
  fleetAcks: boolean;
  /** What the start line says of it, when the service named it. */
  about: string | undefined;
  /** Why its PUBACKs are not Fleet's (printed at the start), when they are not. */
  note: string | undefined;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The port an MQTT URL names, or its scheme's default. */
function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  const secure = url.protocol === 'mqtts:' || url.protocol === 'wss:';
  return url.protocol.startsWith('ws') ? (secure ? 443 : 80) : secure ? 8883 : 1883;
}

/** The broker a URL names, for comparing two: mqtt: and tcp: alike, loopback names alike, default ports filled in. */
function brokerOf(text: string): string {
  const url = new URL(text);
  const host = url.hostname.toLowerCase();
  return `${url.protocol === 'tcp:' ? 'mqtt:' : url.protocol}//${LOOPBACK.has(host) ? 'loopback' : host}:${portOf(url)}`;
}

async function mqttTarget(api: Api, options: Options): Promise<MqttTarget> {
  const service = shown(options.url);
  const asked = await deviceEndpoints(api, options.url);
  const own = 'endpoints' in asked ? asked.endpoints.mqtt : undefined;
  const given = options.mqttUrl;
  if (given === undefined) {
    if (!('endpoints' in asked)) throw new Fatal(`${asked.unanswered}; pass --mqtt-url.`);
    if (own === null || own === undefined) throw new Fatal(`the service at ${service} has its MQTT listener off: pass --mqtt-url or enable it`);
    if (own.broker === 'embedded') return { url: own.url, fleetAcks: true, about: 'the service\'s own listener', note: undefined };
    return {
      url: own.url, fleetAcks: false, about: 'the broker the service subscribes to',
      note: `it is the broker the service at ${service} subscribes to, which answers on its own terms (and devices log in as it says)`,
    };
  }
  if (own !== null && own !== undefined && own.broker === 'embedded' && brokerOf(own.url) === brokerOf(given)) {
    return { url: given, fleetAcks: true, about: 'the service\'s own listener', note: undefined };
  }
  const why = own === undefined ? (asked as { unanswered: string }).unanswered
    : own === null ? `the service at ${service} has its MQTT listener off`
      : own.broker === 'embedded' ? `the MQTT listener of the service at ${service} is ${own.url}`
        : brokerOf(own.url) === brokerOf(given) ? `it is the broker the service at ${service} subscribes to, which answers on its own terms`
          : `the service at ${service} subscribes to ${own.url}`;
  return { url: given, fleetAcks: false, about: undefined, note: why };
}

/** The Teltonika listener: the one given, else the service's own. */
async function teltonikaTarget(api: Api, options: Options): Promise<{ host: string; port: number }> {
  if (options.teltonika !== undefined) return options.teltonika;
  const asked = await deviceEndpoints(api, options.url);
  if (!('endpoints' in asked)) throw new Fatal(`${asked.unanswered}; pass --teltonika-url.`);
  const own = asked.endpoints.teltonika;
  if (own === null) throw new Fatal(`the service at ${shown(options.url)} has its Teltonika listener off: pass --teltonika-url or enable it`);
  return own;
}

/** Where OsmAnd reports go: the URL given, else the service's OsmAnd port, else /osmand of the API (served either way). */
async function osmandTarget(api: Api, options: Options): Promise<string> {
  if (options.osmandUrl !== undefined) return options.osmandUrl;
  const asked = await deviceEndpoints(api, options.url);
  const own = 'endpoints' in asked ? asked.endpoints.osmand : null;
  return own === null ? `${options.url}/osmand` : own.url.replace(/\/+$/, '');
}

// --- MQTT -------------------------------------------------------------------------------------

async function mqttTransport(target: MqttTarget, options: Options, counters: Counters): Promise<Transport> {
  const mqtt = await import('mqtt');
  let client: Awaited<ReturnType<typeof mqtt.connectAsync>>;
  try {
    client = await mqtt.connectAsync(
      target.url,
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
      throw new Fatal(target.fleetAcks
        ? `the MQTT listener at ${shown(target.url)} refused the key (${message}). It needs the telemetry:write scope.`
        : `the MQTT broker at ${shown(target.url)} refused the login (${message}). Fleet's own listener takes a key with the telemetry:write scope; another broker, credentials of its own.`);
    }
    if (typeof code === 'string') {
      const url = new URL(target.url);
      throw new Fatal(`cannot connect to ${hostPort(url.hostname.replace(/^\[(.*)\]$/, '$1'), portOf(url))} (${code}) for MQTT at ${shown(target.url)}.`);
    }
    throw new Fatal(`no MQTT answer from ${shown(target.url)} (${message}).`);
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
  // Each vehicle listens for its commands (docs/API.md "Commands") and answers as a tracker would.
  const trackers = new Map<string, TrackerState>();
  client.on('message', (topic, payload) => {
    const vehicleId = /^fleet\/([^/]+)\/commands$/.exec(topic)?.[1];
    const state = vehicleId === undefined ? undefined : trackers.get(vehicleId);
    if (state === undefined) return;
    let command: { id: string; type: CommandType; params: CommandParams };
    try {
      command = JSON.parse(payload.toString()) as typeof command;
    } catch {
      return;
    }
    const text = teltonikaText(command);
    const result = answerCommand(text, state);
    client.publish(`fleet/${vehicleId}/commands/${command.id}/result`, JSON.stringify({ status: 'succeeded', result }), { qos: 1 });
    write(`${clock()}  ${vehicleId}: command "${text}" answered "${result}"`);
  });
  return {
    name: 'MQTT',
    send(records) {
      for (const record of records) {
        const { vehicleId, timestamp, data } = record;
        const tracker = trackers.get(vehicleId);
        if (tracker === undefined) {
          trackers.set(vehicleId, { last: record, outputs: [false, false, false, false] });
          client.subscribe(`fleet/${vehicleId}/commands`, { qos: 1 }, () => undefined);
        } else {
          tracker.last = record;
        }
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

function clock(): string {
  return new Date().toTimeString().slice(0, 8);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const api = connect(options.url, options.key);
  await checkReachable(api, options.url);
  // Where the records go is settled first: a listener that is off ends the run before any setup.
  const mqtt = options.mqtt ? await mqttTarget(api, options) : undefined;
  const teltonika = options.protocol === 'teltonika' ? await teltonikaTarget(api, options) : undefined;
  const osmandUrl = options.protocol === 'osmand' ? await osmandTarget(api, options) : undefined;
  // Connecting once now, a listener that cannot be reached ends the run before any setup too.
  const probe = osmandUrl !== undefined ? { ...targetOf(osmandUrl), what: `OsmAnd at ${shown(osmandUrl)}` }
    : teltonika !== undefined ? { ...teltonika, what: 'Teltonika' } : undefined;
  if (probe !== undefined) await canConnect(probe.host, probe.port).catch((error: unknown) => {
    throw new Fatal(`${(error as Error).message} for ${probe.what}.`);
  });
  const destination = osmandUrl !== undefined ? shown(osmandUrl)
    : teltonika !== undefined ? `tcp://${hostPort(teltonika.host, teltonika.port)}${options.teltonika === undefined ? ' (the service\'s own listener)' : ''}`
      : mqtt !== undefined ? `${shown(mqtt.url)}${mqtt.about === undefined ? '' : ` (${mqtt.about})`}`
        : shown(options.url);
  /** What the count of acknowledged records is called: only Fleet's acknowledgements are "accepted". */
  const acknowledged = mqtt === undefined || mqtt.fleetAcks ? 'accepted' : 'acknowledged by the broker';

  const { sims, created } = await prepareVehicles(api, { ...options, progress: (line) => write(`${clock()}  ${line}`) });
  const geofences = options.geofences > 0 ? await prepareGeofences(api, options, sims) : undefined;
  const drivers = await prepareDrivers(api, sims);

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
  const transport = osmandUrl !== undefined
    ? osmandTransport(osmandUrl, identifiers!, counters, (vehicleId, command) => {
      write(`${clock()}  ${vehicleId}: command "${command}" received (an OsmAnd app shows it; nothing answers)`);
    })
    : teltonika !== undefined
      ? await teltonikaTransport(teltonika.host, teltonika.port, identifiers!, counters, (vehicleId, command, answer) => {
        write(`${clock()}  ${vehicleId}: command "${command}" answered "${answer}"`);
      }).catch((error: unknown) => {
        throw new Fatal((error as Error).message);
      })
      : mqtt !== undefined
        ? await mqttTransport(mqtt, options, counters)
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
      `to ${destination}. Ctrl-C to stop.`,
  );
  if (mqtt?.note !== undefined) {
    write(`fleet-simulate: PUBACKs from ${shown(mqtt.url)} are the broker's, not Fleet's: ${mqtt.note}. They do not mean Fleet stored the records.`);
  }
  if (geofences !== undefined) {
    write(
      `fleet-simulate: ${options.geofences} geofences on the routes (${geofences.created} created, ${geofences.reused} reused); ` +
        'their events: GET /v2/events?types=geofence.entered,geofence.exited',
    );
  }
  write(drivers.refused
    ? 'fleet-simulate: the key may not create drivers (fleet:write); the vehicles\' iButtons stay unknown (driver.unknown events).'
    : `fleet-simulate: ${drivers.created} drivers newly registered; the vehicles' iButtons assign them (GET /v2/driver-assignments), and their meters count (GET /v2/fleet/vehicles/{id}/meters).`);

  let last = { sent: 0, accepted: 0, errors: 0, at: Date.now() };
  let lastShownError: string | undefined;
  const report = () => {
    const now = Date.now();
    const perSecond = ((counters.sent - last.sent) * 1000) / Math.max(1, now - last.at);
    let line =
      `${clock()}  sent ${counters.sent} (${perSecond.toFixed(1)}/s)  ${acknowledged} ${counters.accepted}` +
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
  const ackedBy = acknowledged === 'accepted' ? 'accepted' : 'acknowledged by the broker (not by Fleet)';
  write(`fleet-simulate: stopped. ${counters.sent} sent, ${counters.accepted} ${ackedBy}, ${counters.errors} errors.`);
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
