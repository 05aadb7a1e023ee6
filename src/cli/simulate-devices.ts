// The simulator's device protocols: each simulated vehicle gets a device (registered through
// /v2/devices through the SDK), and its records go out as that device would send them: an OsmAnd
// GET per record, or a Teltonika TCP connection per vehicle sending Codec 8 Extended packets. Those
// are the devices' own protocols, with no API key: plain fetch and TCP, not the SDK. A connection
// that cannot be made is said to be one (`cannot connect to host:port (ECONNREFUSED)`): only
// Fleet's own answer refuses an IMEI.
import { createHash } from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FleetClient, FleetApiError } from '@fleet/sdk';
import { COMMAND_TYPE, MAX_COMMAND_BYTES, RESPONSE_TYPE, decodeCodec12, encodeCodec12 } from '../protocols/teltonika/codec12.ts';
import { CODEC_8E } from '../protocols/teltonika/decode.ts';
import { type EncodableRecord, encodePacket, imeiLogin } from '../protocols/teltonika/encode.ts';
import type { TelemetryData } from '../telemetry/schema.ts';

export type DeviceProtocol = 'osmand' | 'teltonika';

/** What a run has sent and how it was answered, counted by every transport. */
export interface Counters {
  sent: number;
  /**
   * Records acknowledged by Fleet: a 202 or 200 with its counts, a Teltonika record count, the
   * PUBACK of its own MQTT listener. Over another broker, its PUBACKs, printed as the broker's.
   */
  accepted: number;
  duplicates: number;
  errors: number;
  skipped: number;
  lastError: string | undefined;
  /** Since when every attempt to reach the service has failed; undefined while it answers. */
  failingSince: number | undefined;
}

interface Record {
  vehicleId: string;
  timestamp: string;
  data: TelemetryData;
}

function codeOf(body: unknown): string {
  const code = typeof body === 'object' && body !== null ? (body as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : '';
}

/** How long a connection may take to be made, and then a Teltonika IMEI to be answered. */
const CONNECT_TIMEOUT_MS = 10_000;
const LOGIN_TIMEOUT_MS = 10_000;

/** `host:port`, an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The system's code for a failed connection (ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH), else the message. */
export function failureCode(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? code : String(message);
}

/** The host and port of an http(s) URL, its scheme's port when it names none. */
export function targetOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port: parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port) };
}

/** Resolves once a TCP connection to host:port is made (and closes it); else rejects: `cannot connect to host:port (ECONNREFUSED)`. */
export function canConnect(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })), CONNECT_TIMEOUT_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot connect to ${hostPort(host, port)} (${failureCode(error)})`));
    });
  });
}

/** A stable identifier per vehicle: the vehicle id for OsmAnd, a 15-digit IMEI made from it for Teltonika. */
export function identifierFor(protocol: DeviceProtocol, vehicleId: string): string {
  if (protocol === 'osmand') return vehicleId;
  const digits = BigInt(`0x${createHash('sha256').update(vehicleId).digest('hex').slice(0, 15)}`) % 10n ** 13n;
  return `35${digits.toString().padStart(13, '0')}`;
}

/**
 * Each vehicle's device identifier, registering the devices that are missing. Throws (a message
 * for the user) when an identifier is taken by a device this key cannot see.
 */
export async function prepareDevices(fleet: FleetClient, protocol: DeviceProtocol, vehicleIds: readonly string[]): Promise<Map<string, string>> {
  const ours = new Map<string, string>();
  try {
    for await (const d of fleet.paginate.devices({ limit: 1000 })) if (d.protocol === protocol) ours.set(d.vehicleId, d.identifier);
  } catch (error) {
    if (!(error instanceof FleetApiError)) throw error;
    throw new Error(`listing devices failed (${error.status} ${codeOf(error.problem)}); the key needs fleet:read`, { cause: error });
  }
  for (const vehicleId of vehicleIds) {
    if (ours.has(vehicleId)) continue;
    const identifier = identifierFor(protocol, vehicleId);
    const { error, response } = await fleet.POST('/v2/devices', { body: { protocol, identifier, vehicleId } });
    if (response.status !== 201) {
      throw new Error(`registering a ${protocol} device for ${vehicleId} failed (${response.status} ${codeOf(error)}); another --prefix may help`);
    }
    ours.set(vehicleId, identifier);
  }
  return ours;
}

const KMH_PER_KNOT = 1.852;

/**
 * One GET per record, as OsmAnd sends, at most `maxInFlight` at a time over kept-alive connections.
 * A report answered with a queued command's text (`text/plain`, not the counts) was stored all the
 * same; the text is told to `onCommand`, and, as OsmAnd apps only show it, nothing answers it.
 */
export function osmandTransport(
  url: string, identifiers: Map<string, string>, counters: Counters,
  onCommand?: (vehicleId: string, command: string) => void, maxInFlight = 16,
) {
  const inFlight = new Set<Promise<void>>();
  const { host, port } = targetOf(url);
  const target = hostPort(host, port);
  async function report(record: Record) {
    const { location, speed, heading, battery } = record.data;
    const query = new URLSearchParams({ id: identifiers.get(record.vehicleId)!, timestamp: String(Date.parse(record.timestamp)) });
    if (location !== undefined) {
      query.set('lat', String(location.lat));
      query.set('lon', String(location.lng));
    }
    if (speed !== undefined) query.set('speed', String(speed / KMH_PER_KNOT));
    if (heading !== undefined) query.set('bearing', String(heading));
    if (battery !== undefined) query.set('batt', String(battery));
    if (record.data.ignition !== undefined) query.set('ignition', String(record.data.ignition));
    if (record.data.driverIdentifier !== undefined) query.set('driverUniqueId', record.data.driverIdentifier);
    try {
      const res = await fetch(`${url}?${query.toString()}`, { signal: AbortSignal.timeout(10_000) });
      if (res.status === 200 && res.headers.get('content-type')?.startsWith('text/plain') === true) {
        const command = await res.text();
        counters.failingSince = undefined;
        counters.accepted++;
        onCommand?.(record.vehicleId, command);
        return;
      }
      const body = (await res.json().catch(() => ({}))) as { accepted?: number; duplicates?: number; code?: string };
      counters.failingSince = undefined;
      if (res.status === 200) {
        counters.accepted += body.accepted ?? 0;
        counters.duplicates += body.duplicates ?? 0;
      } else {
        counters.errors++;
        counters.lastError = `${res.status} ${body.code ?? ''}`;
      }
    } catch (error) {
      counters.errors++;
      // fetch's own message ("fetch failed") says nothing: the cause names the connection's failure.
      const cause = (error as { cause?: unknown }).cause;
      counters.lastError = cause !== undefined && typeof (cause as { code?: unknown }).code === 'string'
        ? `cannot connect to ${target} (${failureCode(cause)})`
        : `request failed: ${(error as Error).message}`;
      counters.failingSince ??= Date.now();
    }
  }
  return {
    name: 'OsmAnd',
    send(records: Record[]) {
      for (const record of records) {
        if (inFlight.size >= maxInFlight) {
          counters.skipped++;
          continue;
        }
        counters.sent++;
        const request = report(record).finally(() => inFlight.delete(request));
        inFlight.add(request);
      }
    },
    async close() {
      await Promise.race([Promise.allSettled([...inFlight]), sleep(5000)]);
    },
  };
}

function toAvl(record: Record): EncodableRecord {
  const { location, speed, heading, battery, odometer, ignition, driverIdentifier } = record.data;
  const io: EncodableRecord['io'] = [{ id: 239, size: 1, value: (ignition ?? (speed ?? 0) > 0) ? 1 : 0 }];
  if (driverIdentifier !== undefined) io.push({ id: 78, size: 8, value: BigInt(`0x${driverIdentifier}`) });
  if (battery !== undefined) io.push({ id: 113, size: 1, value: Math.round(battery) });
  if (odometer !== undefined) io.push({ id: 16, size: 4, value: Math.round(odometer * 1000) });
  return {
    timestamp: Date.parse(record.timestamp), priority: 0, eventId: 0,
    latitude: location?.lat ?? 0, longitude: location?.lng ?? 0, altitude: 0,
    angle: Math.round(heading ?? 0) % 360, satellites: location === undefined ? 0 : 9, speed: Math.round(speed ?? 0), io,
  };
}

/**
 * Logs one vehicle's tracker in. Once Fleet has answered its IMEI with 0x01, `opened` takes the
 * connection over (and what came after the answer), and the promise resolves. Else it rejects, the
 * connection closed, with what went wrong: no connection made (refused, timed out, unreachable),
 * the IMEI refused (Fleet's 0x00), or no answer.
 */
function teltonikaLogin(host: string, port: number, imei: string, opened: (socket: net.Socket, rest: Buffer) => void): Promise<void> {
  const where = hostPort(host, port);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, noDelay: true });
    let connected = false;
    let timer: NodeJS.Timeout;
    const done = () => {
      clearTimeout(timer);
      socket.off('error', onError).off('close', onClose).off('data', onData);
    };
    const fail = (message: string) => {
      done();
      socket.destroy();
      reject(new Error(message));
    };
    const onError = (error: Error) => fail(connected
      ? `the connection to the Teltonika listener at ${where} failed before IMEI ${imei} was answered (${failureCode(error)})`
      : `cannot connect to ${where} (${failureCode(error)})`);
    const onClose = () => fail(`the Teltonika listener at ${where} closed the connection without answering IMEI ${imei}`);
    const onData = (chunk: Buffer) => {
      if (chunk[0] !== 0x01) {
        fail(chunk[0] === 0x00
          ? `the Teltonika listener at ${where} refused IMEI ${imei} (0x00): it knows no teltonika device with it, or holds this address back for unknown IMEIs`
          : `the Teltonika listener at ${where} answered IMEI ${imei} with 0x${chunk[0]!.toString(16).padStart(2, '0')}: is it a Teltonika listener?`);
        return;
      }
      done();
      opened(socket, chunk.subarray(1));
      resolve();
    };
    timer = setTimeout(() => fail(`cannot connect to ${where} (ETIMEDOUT)`), CONNECT_TIMEOUT_MS);
    socket.on('error', onError).on('close', onClose).on('data', onData);
    socket.once('connect', () => {
      connected = true;
      clearTimeout(timer);
      timer = setTimeout(() => fail(`the Teltonika listener at ${where} did not answer IMEI ${imei} within ${LOGIN_TIMEOUT_MS / 1000} s`), LOGIN_TIMEOUT_MS);
      socket.write(imeiLogin(imei));
    });
  });
}

/** What a simulated tracker knows of itself, to answer commands with: its last fix and its outputs. */
export interface TrackerState {
  last: Record | undefined;
  /** Digital outputs 1 to 4. */
  outputs: [boolean, boolean, boolean, boolean];
}

const two = (n: number) => String(n).padStart(2, '0');

/**
 * A tracker's answer to a Codec 12 command, in the words Teltonika's trackers use: `getgps` its
 * fix, `setdigout` the outputs it sets (one character per output: `1`, `0`, or `?` to leave it;
 * a single character sets output 1), `getinfo`, `getver`, `cpureset`; anything else is unknown.
 */
export function answerCommand(text: string, state: TrackerState): string {
  const [name, arg] = text.trim().split(/\s+/, 2);
  const outputs = () => state.outputs.map((on, i) => `DOUT${i + 1}:${on ? 1 : 0}`).join(' ');
  switch (name) {
    case 'getgps': {
      const r = state.last;
      if (r?.data.location === undefined) return 'GPS:0 Sat:0 Lat:0 Long:0 Alt:0 Speed:0 Dir:0';
      const at = new Date(r.timestamp);
      const date = `${at.getUTCFullYear()}/${two(at.getUTCMonth() + 1)}/${two(at.getUTCDate())}`;
      const time = `${two(at.getUTCHours())}:${two(at.getUTCMinutes())}:${two(at.getUTCSeconds())}`;
      return `GPS:1 Sat:9 Lat:${r.data.location.lat.toFixed(6)} Long:${r.data.location.lng.toFixed(6)} Alt:0 ` +
        `Speed:${Math.round(r.data.speed ?? 0)} Dir:${Math.round(r.data.heading ?? 0)} Date: ${date} Time: ${time}`;
    }
    case 'setdigout': {
      if (arg === undefined || !/^[01?]{1,4}$/.test(arg)) return 'Wrong setdigout parameters';
      [...arg].forEach((c, i) => {
        if (c !== '?') state.outputs[i] = c === '1';
      });
      return outputs();
    }
    case 'getinfo':
      return `RTC:${new Date().toISOString().slice(0, 19).replace('T', ' ')} ${outputs()} SIM:1 GPS:1 SAT:9`;
    case 'getver':
      return 'Ver:03.28.07 Hw:FMB920 Mod:12 IMEI:simulated';
    case 'cpureset':
      return 'Device will reboot';
    case undefined:
    default:
      return 'Unknown command';
  }
}

/**
 * A TCP connection per vehicle; records gathered while a packet awaits its answer go in the next
 * one (up to 255). Accepted: the record counts Fleet answers, once the records are committed.
 * Commands Fleet sends (Codec 12) are answered at once (answerCommand), and told to `onCommand`.
 */
export async function teltonikaTransport(
  host: string, port: number, identifiers: Map<string, string>, counters: Counters,
  onCommand?: (vehicleId: string, command: string, answer: string) => void,
) {
  interface Link { socket: net.Socket; waiting: number; queued: Record[]; state: TrackerState }
  const links = new Map<string, Link>();
  let closing = false;

  function open(vehicleId: string, socket: net.Socket, rest: Buffer) {
    const link: Link = { socket, waiting: 0, queued: [], state: { last: undefined, outputs: [false, false, false, false] } };
    links.set(vehicleId, link);
    let pending = Buffer.alloc(0);
    // Fleet sends two things: a record count (4 bytes, never 0: a packet holds at least one
    // record) answering a packet, and Codec 12 commands, which begin with 4 zero bytes.
    const onData = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4) {
        if (pending.readUInt32BE(0) === 0) {
          if (pending.length < 8) return;
          const length = pending.readUInt32BE(4);
          if (length > MAX_COMMAND_BYTES + 8) {
            // No command is that long: the stream is out of step, and nothing after can be read.
            counters.lastError = `teltonika: a frame of ${length} bytes from Fleet, longer than any command`;
            socket.destroy();
            return;
          }
          const size = 8 + length + 4;
          if (pending.length < size) return;
          const message = decodeCodec12(pending.subarray(8, size - 4));
          pending = pending.subarray(size);
          if ('malformed' in message || message.type !== COMMAND_TYPE) continue;
          const answer = answerCommand(message.text, link.state);
          socket.write(encodeCodec12(answer, RESPONSE_TYPE));
          onCommand?.(vehicleId, message.text, answer);
          continue;
        }
        counters.accepted += pending.readUInt32BE(0);
        pending = pending.subarray(4);
        link.waiting = 0;
        flush(link);
      }
    };
    socket.on('data', onData);
    socket.on('error', (error) => {
      counters.lastError = `teltonika: ${failureCode(error)}`;
    });
    socket.on('close', () => {
      links.delete(vehicleId);
      if (closing) return;
      counters.errors += link.waiting;
      counters.lastError = `teltonika: the connection of ${vehicleId} closed`;
      counters.failingSince ??= Date.now();
    });
    if (rest.length > 0) onData(rest);
  }

  const logins = await Promise.allSettled([...identifiers].map(([vehicleId, imei]) =>
    teltonikaLogin(host, port, imei, (socket, rest) => open(vehicleId, socket, rest))));
  const failed = logins.find((login) => login.status === 'rejected');
  if (failed !== undefined) {
    closing = true;
    for (const link of links.values()) link.socket.destroy();
    throw failed.reason as Error;
  }

  function flush(link: Link) {
    if (link.waiting > 0 || link.queued.length === 0) return;
    const batch = link.queued.splice(0, 255);
    link.waiting = batch.length;
    counters.sent += batch.length;
    link.socket.write(encodePacket(CODEC_8E, batch.map(toAvl)));
  }

  return {
    name: 'Teltonika',
    send(records: Record[]) {
      for (const record of records) {
        const link = links.get(record.vehicleId);
        if (link === undefined || link.queued.length >= 255) {
          counters.skipped++;
          continue;
        }
        link.queued.push(record);
        link.state.last = record;
      }
      for (const link of links.values()) flush(link);
    },
    async close() {
      const deadline = Date.now() + 5000;
      while ([...links.values()].some((l) => l.waiting > 0) && Date.now() < deadline) await sleep(20);
      closing = true;
      for (const link of links.values()) link.socket.destroy();
    },
  };
}
