// The soak's load: one channel per kind of client (HTTP ingest single and batched, MQTT QoS 1,
// OsmAnd, Teltonika, reads of the latest state and of history, status changes). A channel runs one
// operation at a time per slot; each operation counts its own outcome and settles its records in
// the ledger. closedLoop() measures what the service does with every channel busy at once;
// Pacer offers each channel a fixed rate (open loop), so that a slower service shows as longer
// latencies and shed operations instead of a lower offered load.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { type MqttClient, connect } from 'mqtt';
import { Pool } from 'undici';
import { CODEC_8E } from '../../src/protocols/teltonika/decode.ts';
import { type EncodableRecord, encodePacket, imeiLogin } from '../../src/protocols/teltonika/encode.ts';
import { type Ledger, OUTCOME } from './ledger.ts';
import type { Node } from './nodes.ts';

/** An operation that has not finished after this long counts as failed (its records as unknown). */
export const OPERATION_TIMEOUT_MS = 30_000;

/** Latencies in 0.1 ms steps up to 1 s, then 10 ms steps up to 60 s (and one bucket above). */
export class Histogram {
  private readonly counts = new Uint32Array(10_000 + 5_900 + 1);
  private total = 0;

  add(ms: number): void {
    const i = ms < 1000 ? Math.floor(ms * 10) : Math.min(15_900, 10_000 + Math.floor((ms - 1000) / 10));
    this.counts[Math.max(0, i)]!++;
    this.total++;
  }

  /** The p-quantile (0 to 1) in ms, at the bucket's upper edge; NaN when empty. */
  quantile(p: number): number {
    if (this.total === 0) return NaN;
    const rank = Math.ceil(p * this.total);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return i < 10_000 ? (i + 1) / 10 : 1000 + (i - 10_000 + 1) * 10;
    }
    return Infinity;
  }
}

export interface Counters {
  /** Operations finished. */
  ops: number;
  ok: number;
  /** Records acknowledged (ingest channels). */
  records: number;
  status5xx: number;
  /** Of those, 503s with Retry-After: the service shedding load it cannot answer in time. */
  shedByService: number;
  /** Any other unexpected answer: 4xx, a wrong status, a short Teltonika count, an MQTT error. */
  refused: number;
  /** No answer: timeouts, refused or broken connections. */
  errors: number;
  /** Operations the pacer could not start because every slot was busy. */
  shed: number;
  latency: Histogram;
  /** The first few different failures, to say why. */
  why: string[];
}

function counters(): Counters {
  return { ops: 0, ok: 0, records: 0, status5xx: 0, shedByService: 0, refused: 0, errors: 0, shed: 0, latency: new Histogram(), why: [] };
}

export interface Channel {
  name: string;
  /** Whether the channel writes records (its rate is part of the ingest figure). */
  ingest: boolean;
  /** Concurrency in the capacity measurement. */
  workers: number;
  /** Operations that may be in flight at once under the paced load (at least `workers`). */
  slots: number;
  /** One operation on `slot`; never throws. */
  run(slot: number): Promise<void>;
  counters: Counters;
}

type Result = { ok: true; records?: number } | { ok: false; status?: number; error?: string; retryAfter?: boolean };

/** Runs `work`, bounded by OPERATION_TIMEOUT_MS, and counts what it came to. */
async function measured(c: Counters, work: (signal: AbortSignal) => Promise<Result>): Promise<Result> {
  const started = performance.now();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let result: Result;
  try {
    result = await Promise.race([
      work(controller.signal),
      new Promise<Result>((resolve) => {
        timer = setTimeout(() => {
          controller.abort();
          resolve({ ok: false, error: `no answer after ${OPERATION_TIMEOUT_MS / 1000} s` });
        }, OPERATION_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    result = { ok: false, error: (error as Error).message || String(error) };
  } finally {
    clearTimeout(timer);
  }
  c.ops++;
  c.latency.add(performance.now() - started);
  if (result.ok) {
    c.ok++;
    c.records += result.records ?? 0;
  } else {
    if (result.status !== undefined && result.status >= 500) {
      c.status5xx++;
      if (result.status === 503 && result.retryAfter === true) c.shedByService++;
    }
    else if (result.status !== undefined) c.refused++;
    else c.errors++;
    const why = result.status === undefined ? (result.error ?? 'failed') : `${result.status} ${result.error ?? ''}`.trim();
    if (c.why.length < 5 && !c.why.includes(why)) c.why.push(why);
  }
  return result;
}

/** A realistic record's `data`, varied by `i`, as JSON text. */
function dataText(i: number): string {
  const lat = (52.4 + (i % 97) / 1000).toFixed(5);
  const lng = (13.3 + (i % 89) / 1000).toFixed(5);
  return `{"location":{"lat":${lat},"lng":${lng}},"speed":${(i * 7) % 90},"heading":${(i * 13) % 360},"battery":${100 - (i % 80)},"odometer":${12_000 + i / 4}}`;
}

export interface Fleet {
  nodes: Node[];
  key: string;
  ledger: Ledger;
  /** OsmAnd identifier of each vehicle of the ledger. */
  osmand: string[];
  /** Teltonika devices: IMEI and the ledger's vehicle index. */
  teltonika: Array<{ imei: string; vehicle: number }>;
  /** Vehicles that only change status (no telemetry). */
  statusVehicles: string[];
}

/** HTTP clients per node: the API port and the OsmAnd port. */
export class Clients {
  readonly api: Pool[];
  readonly osmand: Pool[];

  constructor(nodes: Node[]) {
    const options = { connections: 128, headersTimeout: OPERATION_TIMEOUT_MS, bodyTimeout: OPERATION_TIMEOUT_MS, keepAliveTimeout: 30_000 };
    this.api = nodes.map((n) => new Pool(n.url, options));
    this.osmand = nodes.map((n) => new Pool(`http://127.0.0.1:${n.osmandPort}`, options));
  }

  async close(): Promise<void> {
    await Promise.all([...this.api, ...this.osmand].map((pool) => pool.close()));
  }
}

async function call(
  pool: Pool, method: 'GET' | 'POST' | 'PUT', path: string, signal: AbortSignal, key?: string, body?: string,
): Promise<{ status: number; text: string; retryAfter: boolean }> {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await pool.request({ method, path, headers, body, signal });
  return { status: res.statusCode, text: await res.body.text(), retryAfter: res.headers['retry-after'] !== undefined };
}

/** The answer as a Result: `expected` is success, anything else is named with its body's start. */
function answer(res: { status: number; text: string; retryAfter?: boolean }, expected: number, records?: number): Result {
  if (res.status === expected) return { ok: true, ...(records === undefined ? {} : { records }) };
  return { ok: false, status: res.status, error: res.text.slice(0, 200), retryAfter: res.retryAfter === true };
}

// ---- ingest over HTTP ---------------------------------------------------------------------------

/** `POST /v2/telemetry/{vehicle}` with `size` records (one record's body when size is 1). */
export function vehicleIngest(fleet: Fleet, clients: Clients, name: string, size: number, workers: number): Channel {
  const c = counters();
  const V = fleet.ledger.vehicles.length;
  let n = 0;
  return {
    name, ingest: true, workers, slots: workers * 8, counters: c,
    async run(slot) {
      const i = n++;
      const v = i % V;
      const ks = Array.from({ length: size }, () => fleet.ledger.take(v));
      const records = ks.map((k) => `{"timestamp":"${new Date(fleet.ledger.timestamp(k)).toISOString()}","data":${dataText(k)}}`);
      const body = size === 1 ? records[0]! : `{"records":[${records.join(',')}]}`;
      const pool = clients.api[slot % clients.api.length]!;
      const result = await measured(c, async (signal) =>
        answer(await call(pool, 'POST', `/v2/telemetry/${fleet.ledger.vehicles[v]}`, signal, fleet.key, body), 202, size));
      fleet.ledger.settleAll(v, ks, result.ok ? OUTCOME.ACKED : OUTCOME.UNKNOWN);
    },
  };
}

/** `POST /v2/telemetry` with `size` records spread over consecutive vehicles. */
export function fleetIngest(fleet: Fleet, clients: Clients, size: number, workers: number): Channel {
  const c = counters();
  const V = fleet.ledger.vehicles.length;
  let n = 0;
  return {
    name: `HTTP fleet batch (${size} records)`, ingest: true, workers, slots: workers * 8, counters: c,
    async run(slot) {
      const first = n;
      n += size;
      const taken = Array.from({ length: size }, (_, i) => {
        const v = (first + i) % V;
        return { v, k: fleet.ledger.take(v) };
      });
      const body = `{"records":[${taken.map(({ v, k }) =>
        `{"vehicleId":"${fleet.ledger.vehicles[v]}","timestamp":"${new Date(fleet.ledger.timestamp(k)).toISOString()}","data":${dataText(k)}}`).join(',')}]}`;
      const pool = clients.api[slot % clients.api.length]!;
      const result = await measured(c, async (signal) => answer(await call(pool, 'POST', '/v2/telemetry', signal, fleet.key, body), 202, size));
      for (const { v, k } of taken) fleet.ledger.settle(v, k, result.ok ? OUTCOME.ACKED : OUTCOME.UNKNOWN);
    },
  };
}

// ---- OsmAnd -------------------------------------------------------------------------------------

/** `GET /?id=…&timestamp=…` on the OsmAnd port, as the apps send; 200 acknowledges the record. */
export function osmandIngest(fleet: Fleet, clients: Clients, workers: number): Channel {
  const c = counters();
  const V = fleet.ledger.vehicles.length;
  let n = 0;
  return {
    name: 'OsmAnd', ingest: true, workers, slots: workers * 8, counters: c,
    async run(slot) {
      const v = n++ % V;
      const k = fleet.ledger.take(v);
      const query = `id=${fleet.osmand[v]}&timestamp=${fleet.ledger.timestamp(k)}&lat=${(52.4 + (k % 97) / 1000).toFixed(5)}` +
        `&lon=${(13.3 + (k % 89) / 1000).toFixed(5)}&speed=${((k * 7) % 90) / 1.852}&bearing=${(k * 13) % 360}&batt=${100 - (k % 80)}`;
      const pool = clients.osmand[slot % clients.osmand.length]!;
      const result = await measured(c, async (signal) => answer(await call(pool, 'GET', `/?${query}`, signal), 200, 1));
      fleet.ledger.settle(v, k, result.ok ? OUTCOME.ACKED : OUTCOME.UNKNOWN);
    },
  };
}

// ---- Teltonika ----------------------------------------------------------------------------------

/** A tracker's TCP connection, logged in with its IMEI. */
class Tracker {
  private buffered: Buffer = Buffer.alloc(0);
  private waiter: (() => void) | undefined;
  private ended: string | undefined;
  private readonly socket: net.Socket;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.waiter?.();
    });
    socket.on('error', (error) => (this.ended ??= error.message));
    socket.on('close', () => {
      this.ended ??= 'connection closed';
      this.waiter?.();
    });
  }

  static async open(port: number, imei: string, signal?: AbortSignal): Promise<Tracker> {
    const tracker = new Tracker(net.connect({ host: '127.0.0.1', port, noDelay: true }));
    tracker.socket.write(imeiLogin(imei));
    const reply = await tracker.read(1, signal);
    if (reply[0] !== 1) {
      tracker.close();
      throw new Error(`login refused for ${imei}`);
    }
    return tracker;
  }

  get usable(): boolean {
    return this.ended === undefined;
  }

  send(packet: Buffer): void {
    this.socket.write(packet);
  }

  async read(n: number, signal?: AbortSignal): Promise<Buffer> {
    while (this.buffered.length < n) {
      if (this.ended !== undefined) throw new Error(`Teltonika: ${this.ended}`);
      if (signal?.aborted === true) throw new Error('Teltonika: no acknowledgement');
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
      this.waiter = undefined;
    }
    const out = this.buffered.subarray(0, n);
    this.buffered = this.buffered.subarray(n);
    return out;
  }

  close(): void {
    this.socket.destroy();
  }
}

function avl(timestamp: number, k: number): EncodableRecord {
  return {
    timestamp, priority: 0, latitude: 52.4 + (k % 97) / 1000, longitude: 13.3 + (k % 89) / 1000, altitude: 40, angle: (k * 13) % 360,
    satellites: 9, speed: (k * 7) % 90, eventId: 0,
    io: [{ id: 239, size: 1, value: 1 }, { id: 113, size: 1, value: 100 - (k % 80) }, { id: 16, size: 4, value: 12_000_000 + k }],
  };
}

/**
 * Teltonika trackers, one connection each (a tracker waits for each packet's acknowledgement before
 * the next), `perPacket` records a packet. A connection that fails is opened again by its next packet.
 */
export function teltonikaIngest(fleet: Fleet, perPacket: number, workers: number): Channel & { close(): void } {
  const c = counters();
  const trackers = new Map<number, Tracker>();
  return {
    name: `Teltonika (${perPacket} records a packet)`, ingest: true, workers, slots: fleet.teltonika.length, counters: c,
    async run(slot) {
      const device = fleet.teltonika[slot]!;
      const node = fleet.nodes[slot % fleet.nodes.length]!;
      const v = device.vehicle;
      const ks = Array.from({ length: perPacket }, () => fleet.ledger.take(v));
      const result = await measured(c, async (signal) => {
        let tracker = trackers.get(slot);
        if (tracker === undefined || !tracker.usable) {
          tracker?.close();
          tracker = await Tracker.open(node.teltonikaPort, device.imei, signal);
          trackers.set(slot, tracker);
        }
        tracker.send(encodePacket(CODEC_8E, ks.map((k) => avl(fleet.ledger.timestamp(k), k))));
        try {
          const count = (await tracker.read(4, signal)).readUInt32BE(0);
          return count === perPacket ? { ok: true, records: perPacket } : { ok: false, status: 0, error: `acknowledged ${count} of ${perPacket} records` };
        } catch (error) {
          // The answer may still come: the connection is out of step, so the next packet opens another.
          tracker.close();
          throw error;
        }
      });
      fleet.ledger.settleAll(v, ks, result.ok ? OUTCOME.ACKED : OUTCOME.UNKNOWN);
    },
    close() {
      for (const tracker of trackers.values()) tracker.close();
    },
  };
}

// ---- MQTT ---------------------------------------------------------------------------------------

/**
 * Devices on the embedded MQTT listener, publishing QoS 1: the PUBACK acknowledges the record. A
 * client that loses its connection reconnects (mqtt.js resends what was not acknowledged; the
 * timestamps make a resend a duplicate the store does not keep twice); each loss is counted.
 */
export async function mqttIngest(fleet: Fleet, clientCount: number, workers: number): Promise<Channel & { close(): Promise<void>; disconnects(): number }> {
  const c = counters();
  let disconnects = 0;
  let ending = false;
  const clients: MqttClient[] = await Promise.all(Array.from({ length: clientCount }, (_, i) => new Promise<MqttClient>((resolve, reject) => {
    const node = fleet.nodes[i % fleet.nodes.length]!;
    const client = connect(`mqtt://127.0.0.1:${node.mqttPort}`, {
      clientId: `soak-${i}-${randomBytes(4).toString('hex')}`, protocolVersion: 4, username: 'soak', password: fleet.key,
      reconnectPeriod: 1000, connectTimeout: 10_000, keepalive: 30,
    });
    client.once('connect', () => {
      client.on('close', () => {
        if (!ending) disconnects++;
      });
      resolve(client);
    });
    client.once('error', reject);
  })));
  for (const client of clients) client.on('error', () => {});
  const V = fleet.ledger.vehicles.length;
  let n = 0;
  return {
    name: 'MQTT QoS 1', ingest: true, workers, slots: workers * 8, counters: c,
    async run(slot) {
      const v = n++ % V;
      const k = fleet.ledger.take(v);
      const payload = `{"timestamp":"${new Date(fleet.ledger.timestamp(k)).toISOString()}","data":${dataText(k)}}`;
      const client = clients[slot % clients.length]!;
      const result = await measured(c, () => new Promise<Result>((resolve) => {
        client.publish(`fleet/${fleet.ledger.vehicles[v]}/telemetry`, payload, { qos: 1 }, (error) =>
          resolve(error === undefined || error === null ? { ok: true, records: 1 } : { ok: false, error: `MQTT: ${error.message}` }));
      }));
      fleet.ledger.settle(v, k, result.ok ? OUTCOME.ACKED : OUTCOME.UNKNOWN);
    },
    disconnects: () => disconnects,
    async close() {
      ending = true;
      await Promise.all(clients.map((client) => client.endAsync(true)));
    },
  };
}

// ---- reads --------------------------------------------------------------------------------------

/** `GET /v2/telemetry/{vehicle}`: the latest state. */
export function latestReads(fleet: Fleet, clients: Clients, workers: number): Channel {
  const c = counters();
  const V = fleet.ledger.vehicles.length;
  let n = 0;
  return {
    name: 'read latest state', ingest: false, workers, slots: workers * 8, counters: c,
    async run(slot) {
      const v = n++ % V;
      const pool = clients.api[slot % clients.api.length]!;
      await measured(c, async (signal) => answer(await call(pool, 'GET', `/v2/telemetry/${fleet.ledger.vehicles[v]}`, signal, fleet.key), 200));
    },
  };
}

/** `GET /v2/telemetry/{vehicle}/history`: the vehicle's last 100 records (or so) so far. */
export function historyReads(fleet: Fleet, clients: Clients, workers: number): Channel {
  const c = counters();
  const V = fleet.ledger.vehicles.length;
  let n = 0;
  return {
    name: 'read history (100 records)', ingest: false, workers, slots: workers * 8, counters: c,
    async run(slot) {
      const v = n++ % V;
      const from = new Date(fleet.ledger.timestamp(Math.max(0, fleet.ledger.count(v) - 100))).toISOString();
      const pool = clients.api[slot % clients.api.length]!;
      await measured(c, async (signal) =>
        answer(await call(pool, 'GET', `/v2/telemetry/${fleet.ledger.vehicles[v]}/history?from=${from}&limit=100`, signal, fleet.key), 200));
    },
  };
}

// ---- status changes -----------------------------------------------------------------------------

/**
 * `PUT /v2/fleet/vehicles/{vehicle}/status`, each a change (inactive, active, inactive, …), one at
 * a time per vehicle (slot): every 200 records a `vehicle.status_changed` event for the webhook.
 * After an answer that leaves the status unknown, the vehicle is read before its next change.
 */
export function statusChanges(fleet: Fleet, clients: Clients): Channel & { changed(): number; uncertain(): number } {
  const c = counters();
  const status = fleet.statusVehicles.map(() => 'registered');
  const unsure = fleet.statusVehicles.map(() => false);
  let uncertain = 0;
  return {
    name: 'status changes', ingest: false, workers: 0, slots: fleet.statusVehicles.length, counters: c,
    async run(slot) {
      const vehicle = fleet.statusVehicles[slot]!;
      const pool = clients.api[slot % clients.api.length]!;
      const result = await measured(c, async (signal) => {
        if (unsure[slot] === true) {
          const res = await call(pool, 'GET', `/v2/fleet/vehicles/${vehicle}`, signal, fleet.key);
          if (res.status !== 200) return answer(res, 200);
          status[slot] = (JSON.parse(res.text) as { status: string }).status;
          unsure[slot] = false;
        }
        const to = status[slot] === 'inactive' ? 'active' : 'inactive';
        const res = await call(pool, 'PUT', `/v2/fleet/vehicles/${vehicle}/status`, signal, fleet.key, `{"status":"${to}","reason":"soak"}`);
        if (res.status === 200) status[slot] = to;
        return answer(res, 200);
      });
      if (!result.ok) {
        unsure[slot] = true;
        uncertain++;
      }
    },
    changed: () => c.ok,
    uncertain: () => uncertain,
  };
}

// ---- running them -------------------------------------------------------------------------------

/** Every channel's `workers` busy back to back for `seconds`; each channel's successful operations per second. */
export async function closedLoop(channels: Channel[], seconds: number, stop: () => boolean): Promise<Map<Channel, number>> {
  const before = new Map(channels.map((ch) => [ch, ch.counters.ok]));
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(channels.flatMap((ch) => Array.from({ length: ch.workers }, async (_, slot) => {
    while (performance.now() < until && !stop()) await ch.run(slot);
  })));
  const elapsed = (performance.now() - started) / 1000;
  return new Map(channels.map((ch) => [ch, (ch.counters.ok - before.get(ch)!) / elapsed]));
}

/**
 * Offers each channel `rate` operations per second, started evenly (every 5 ms, those due by
 * then), on a free slot; when every slot of a channel is busy, what is due is shed and counted.
 */
export class Pacer {
  private readonly running = new Set<Promise<void>>();
  private readonly plan: Array<{ channel: Channel; rate: number }>;

  constructor(plan: Array<{ channel: Channel; rate: number }>) {
    this.plan = plan;
  }

  async run(seconds: number, stop: () => boolean): Promise<void> {
    const free = this.plan.map(({ channel }) => Array.from({ length: channel.slots }, (_, i) => channel.slots - 1 - i));
    const offered = this.plan.map(() => 0);
    const started = performance.now();
    for (;;) {
      const elapsed = (performance.now() - started) / 1000;
      if (elapsed >= seconds || stop()) break;
      for (const [i, { channel, rate }] of this.plan.entries()) {
        const due = Math.floor(elapsed * rate) - offered[i]!;
        for (let j = 0; j < due; j++) {
          offered[i]!++;
          const slot = free[i]!.pop();
          if (slot === undefined) {
            channel.counters.shed++;
            continue;
          }
          const op = channel.run(slot).finally(() => {
            free[i]!.push(slot);
            this.running.delete(op);
          });
          this.running.add(op);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Waits for the operations still in flight (each bounded by OPERATION_TIMEOUT_MS). */
  async settle(): Promise<void> {
    await Promise.all(this.running);
  }
}
