// The clients of the protocols benchmark, in a process of their own (so they never take the
// server's event loop): each mode keeps `concurrency` requests or packets outstanding, closed-loop,
// for `seconds`, and reports how many records were acknowledged. The parent sends the spec and
// gets `{records, seconds, errors}`; in `idle` mode it gets `{opened}` and later sends `{end: true}`.
import http from 'node:http';
import net from 'node:net';
import { CODEC_8E } from '../src/protocols/teltonika/decode.ts';
import { type EncodableRecord, encodePacket, imeiLogin } from '../src/protocols/teltonika/encode.ts';

export interface ClientSpec {
  mode: 'teltonika' | 'fleet-batch' | 'osmand' | 'single' | 'idle';
  host: string;
  port: number;
  key: string;
  /** Vehicle ids and their IMEIs (Teltonika) or OsmAnd identifiers. */
  devices: Array<{ vehicleId: string; identifier: string }>;
  concurrency: number;
  seconds: number;
  /** Record k of a vehicle is stamped start + k ms: unique within a run. */
  start: number;
  perPacket: number;
}

const spec = await new Promise<ClientSpec>((resolve) => process.once('message', (m) => resolve(m as ClientSpec)));
const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
const sequence = new Map<string, number>();
const nextTime = (vehicleId: string) => {
  const k = sequence.get(vehicleId) ?? 0;
  sequence.set(vehicleId, k + 1);
  return spec.start + k;
};

function avl(timestamp: number, i: number): EncodableRecord {
  return {
    timestamp, priority: 0, latitude: 52.5 + (i % 100) / 1000, longitude: 13.4, altitude: 40, angle: i % 360, satellites: 9, speed: 40 + (i % 20), eventId: 0,
    io: [{ id: 239, size: 1, value: 1 }, { id: 113, size: 1, value: 80 }, { id: 16, size: 4, value: 100_000 + i }],
  };
}

function data(i: number) {
  return { location: { lat: 52.5 + (i % 100) / 1000, lng: 13.4 }, speed: 40 + (i % 20), heading: i % 360, battery: 80, odometer: (100_000 + i) / 1000 };
}

function request(method: string, path: string, body: string | undefined, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: spec.host, port: spec.port, method, path, agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A Teltonika tracker connection, logged in. */
async function tracker(imei: string): Promise<{ socket: net.Socket; ack(): Promise<number> }> {
  const socket = net.connect({ host: spec.host, port: spec.port, noDelay: true });
  let buffered = Buffer.alloc(0);
  let waiter: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    waiter?.();
  });
  socket.on('error', () => {});
  const take = async (n: number) => {
    while (buffered.length < n) await new Promise<void>((resolve) => (waiter = resolve));
    const out = buffered.subarray(0, n);
    buffered = buffered.subarray(n);
    return out;
  };
  socket.write(imeiLogin(imei));
  if ((await take(1))[0] !== 1) throw new Error(`login refused for ${imei}`);
  return { socket, ack: async () => (await take(4)).readUInt32BE(0) };
}

async function closedLoop(worker: (index: number) => Promise<number>): Promise<{ records: number; seconds: number; errors: number }> {
  let records = 0;
  let errors = 0;
  const started = performance.now();
  const until = started + spec.seconds * 1000;
  await Promise.all(Array.from({ length: spec.concurrency }, async (_, index) => {
    while (performance.now() < until) {
      try {
        // Not `records += await ...`: that reads `records` before the await and loses the other workers' counts.
        const n = await worker(index);
        records += n;
      } catch {
        errors++;
      }
    }
  }));
  return { records, seconds: (performance.now() - started) / 1000, errors };
}

const auth = { authorization: `Bearer ${spec.key}`, 'content-type': 'application/json' };
let result: unknown;
switch (spec.mode) {
  case 'teltonika': {
    const links = await Promise.all(spec.devices.slice(0, spec.concurrency).map((d) => tracker(d.identifier)));
    result = await closedLoop(async (i) => {
      const { vehicleId } = spec.devices[i]!;
      links[i]!.socket.write(encodePacket(CODEC_8E, Array.from({ length: spec.perPacket }, (_, r) => avl(nextTime(vehicleId), r))));
      return links[i]!.ack();
    });
    for (const link of links) link.socket.destroy();
    break;
  }
  case 'fleet-batch':
    result = await closedLoop(async (i) => {
      const { vehicleId } = spec.devices[i % spec.devices.length]!;
      const records = Array.from({ length: spec.perPacket }, (_, r) => ({ vehicleId, timestamp: new Date(nextTime(vehicleId)).toISOString(), data: data(r) }));
      const res = await request('POST', '/v2/telemetry', JSON.stringify({ records }), auth);
      if (res.status !== 202) throw new Error(res.body);
      return spec.perPacket;
    });
    break;
  case 'osmand':
    result = await closedLoop(async (i) => {
      const { vehicleId, identifier } = spec.devices[i % spec.devices.length]!;
      const d = data(i);
      const query = `id=${identifier}&timestamp=${nextTime(vehicleId)}&lat=${d.location.lat}&lon=${d.location.lng}&speed=${d.speed / 1.852}&bearing=${d.heading}&batt=${d.battery}`;
      const res = await request('GET', `/osmand?${query}`, undefined, {});
      if (res.status !== 200) throw new Error(res.body);
      return 1;
    });
    break;
  case 'single':
    result = await closedLoop(async (i) => {
      const { vehicleId } = spec.devices[i % spec.devices.length]!;
      const body = JSON.stringify({ timestamp: new Date(nextTime(vehicleId)).toISOString(), data: data(i) });
      const res = await request('POST', `/v2/telemetry/${vehicleId}`, body, auth);
      if (res.status !== 202) throw new Error(res.body);
      return 1;
    });
    break;
  case 'idle': {
    const links = [];
    // Many connections may log in with one IMEI; a tracker that reconnects does just that.
    for (let i = 0; i < spec.concurrency; i += 500) {
      const batch = Array.from({ length: Math.min(500, spec.concurrency - i) }, (_, j) => spec.devices[(i + j) % spec.devices.length]!);
      links.push(...await Promise.all(batch.map((d) => tracker(d.identifier))));
    }
    process.send!({ opened: links.length });
    await new Promise((resolve) => process.once('message', resolve));
    for (const link of links) link.socket.destroy();
    result = { closed: links.length };
    break;
  }
}
agent.destroy();
process.send!(result, () => process.exit(0));
