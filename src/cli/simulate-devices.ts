// The simulator's device protocols: each simulated vehicle gets a device (registered through
// /v2/devices through the SDK), and its records go out as that device would send them: an OsmAnd
// GET per record, or a Teltonika TCP connection per vehicle sending Codec 8 Extended packets. Those
// are the devices' own protocols, with no API key: plain fetch and TCP, not the SDK.
import { createHash } from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FleetClient, FleetApiError } from '@fleet/sdk';
import { CODEC_8E } from '../protocols/teltonika/decode.ts';
import { type EncodableRecord, encodePacket, imeiLogin } from '../protocols/teltonika/encode.ts';
import type { TelemetryData } from '../telemetry/schema.ts';

export type DeviceProtocol = 'osmand' | 'teltonika';

/** What a run has sent and how it was answered, counted by every transport. */
export interface Counters {
  sent: number;
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

/** One GET per record, as OsmAnd sends, at most `maxInFlight` at a time over kept-alive connections. */
export function osmandTransport(url: string, identifiers: Map<string, string>, counters: Counters, maxInFlight = 16) {
  const inFlight = new Set<Promise<void>>();
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
    try {
      const res = await fetch(`${url}?${query.toString()}`, { signal: AbortSignal.timeout(10_000) });
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
      counters.lastError = `request failed: ${(error as Error).message}`;
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
  const { location, speed, heading, battery, odometer } = record.data;
  const io: EncodableRecord['io'] = [{ id: 239, size: 1, value: (speed ?? 0) > 0 ? 1 : 0 }];
  if (battery !== undefined) io.push({ id: 113, size: 1, value: Math.round(battery) });
  if (odometer !== undefined) io.push({ id: 16, size: 4, value: Math.round(odometer * 1000) });
  return {
    timestamp: Date.parse(record.timestamp), priority: 0, eventId: 0,
    latitude: location?.lat ?? 0, longitude: location?.lng ?? 0, altitude: 0,
    angle: Math.round(heading ?? 0) % 360, satellites: location === undefined ? 0 : 9, speed: Math.round(speed ?? 0), io,
  };
}

/** A TCP connection per vehicle; records gathered while a packet awaits its answer go in the next one (up to 255). */
export async function teltonikaTransport(host: string, port: number, identifiers: Map<string, string>, counters: Counters) {
  interface Link { socket: net.Socket; waiting: number; queued: Record[]; onAck: (() => void) | undefined }
  const links = new Map<string, Link>();
  let closing = false;
  await Promise.all([...identifiers].map(async ([vehicleId, imei]) => {
    const socket = net.connect({ host, port, noDelay: true });
    const link: Link = { socket, waiting: 0, queued: [], onAck: undefined };
    let login: ((ok: boolean) => void) | undefined;
    const loggedIn = new Promise<boolean>((resolve) => {
      login = resolve;
    });
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      if (login !== undefined) {
        const ok = chunk[0] === 1;
        login(ok);
        login = undefined;
        chunk = chunk.subarray(1);
      }
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4) {
        counters.accepted += pending.readUInt32BE(0);
        pending = pending.subarray(4);
        link.waiting = 0;
        flush(link);
      }
    });
    socket.on('error', (error) => {
      counters.lastError = `teltonika: ${error.message}`;
      login?.(false);
    });
    socket.on('close', () => {
      links.delete(vehicleId);
      if (closing) return;
      counters.errors += link.waiting;
      counters.lastError = `teltonika: the connection of ${vehicleId} closed`;
      counters.failingSince ??= Date.now();
    });
    socket.write(imeiLogin(imei));
    if (!(await loggedIn)) throw new Error(`the Teltonika listener at ${host}:${port} refused IMEI ${imei} (or cannot be reached)`);
    links.set(vehicleId, link);
  }));

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
