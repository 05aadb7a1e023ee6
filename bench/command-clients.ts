// The clients of the commands benchmark, in a process of their own (never on the server's event
// loop): `devices` Teltonika trackers logged in, each sending AVL packets closed-loop (when
// `ingest`) and answering every Codec 12 command at once; and, when `rate` > 0, commands sent
// through the API at that pace, each timed from its POST to its frame on the tracker's socket and
// to its `command.succeeded` event on a live stream. The parent sends the spec and gets the counts.
import http from 'node:http';
import net from 'node:net';
import { RESPONSE_TYPE, decodeCodec12, encodeCodec12 } from '../src/protocols/teltonika/codec12.ts';
import { CODEC_8E } from '../src/protocols/teltonika/decode.ts';
import { encodePacket, imeiLogin } from '../src/protocols/teltonika/encode.ts';

export interface CommandClientSpec {
  host: string;
  httpPort: number;
  teltonikaPort: number;
  key: string;
  devices: Array<{ vehicleId: string; imei: string }>;
  seconds: number;
  ingest: boolean;
  /** Commands a second through the API (0: none). */
  rate: number;
  /** Record k of a vehicle is stamped start + k ms: unique within a run. */
  start: number;
}

export interface CommandClientResult {
  records: number;
  seconds: number;
  commands: number;
  /** ms from each POST to the frame on the tracker's socket, and to its command.succeeded event. */
  toFrame: number[];
  toSucceeded: number[];
  ids: string[];
  errors: number;
}

const spec = await new Promise<CommandClientSpec>((resolve) => process.once('message', (m) => resolve(m as CommandClientSpec)));
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const auth = { authorization: `Bearer ${spec.key}`, 'content-type': 'application/json' };

function request(method: string, path: string, body: string | undefined): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: spec.host, port: spec.httpPort, method, path, agent, headers: auth }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** When each command (by its text) was posted, arrived, and succeeded. */
const posted = new Map<string, number>();
const framed = new Map<string, number>();
const idOf = new Map<string, string>();
const succeeded = new Map<string, number>();
let records = 0;
let errors = 0;

/** A logged-in tracker: acks count records; Codec 12 commands are timed and answered at once. */
async function tracker(imei: string) {
  const socket = net.connect({ host: spec.host, port: spec.teltonikaPort, noDelay: true });
  let buffered = Buffer.alloc(0);
  let loggedIn: (() => void) | undefined;
  let acked: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    if (loggedIn !== undefined && buffered.length >= 1) {
      buffered = buffered.subarray(1);
      loggedIn();
      loggedIn = undefined;
    }
    while (buffered.length >= 4) {
      if (buffered.readUInt32BE(0) !== 0) {
        records += buffered.readUInt32BE(0);
        buffered = buffered.subarray(4);
        acked?.();
        continue;
      }
      if (buffered.length < 8 || buffered.length < 12 + buffered.readUInt32BE(4)) return;
      const size = 12 + buffered.readUInt32BE(4);
      const message = decodeCodec12(buffered.subarray(8, size - 4));
      buffered = buffered.subarray(size);
      if ('malformed' in message) continue;
      framed.set(message.text, performance.now());
      socket.write(encodeCodec12(`ok ${message.text}`, RESPONSE_TYPE));
    }
  });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => {
    loggedIn = resolve;
    socket.write(imeiLogin(imei));
  });
  return { socket, ack: () => new Promise<void>((resolve) => (acked = resolve)) };
}

const links = [];
for (let i = 0; i < spec.devices.length; i += 200) links.push(...(await Promise.all(spec.devices.slice(i, i + 200).map((d) => tracker(d.imei)))));

// The command.succeeded events, as they are recorded, on one fleet stream.
let stream: WebSocket | undefined;
if (spec.rate > 0) {
  const created = await request('POST', '/v2/telemetry/stream', JSON.stringify({ events: ['events'] }));
  const { url } = JSON.parse(created.body) as { url: string };
  // The stream's url names the service's public address; the benchmark's server listens here.
  const attach = new URL(url);
  attach.protocol = 'ws:';
  attach.host = `${spec.host}:${spec.httpPort}`;
  attach.searchParams.set('batch', 'true');
  stream = new WebSocket(attach);
  await new Promise<void>((resolve, reject) => {
    stream!.addEventListener('open', () => resolve());
    stream!.addEventListener('error', () => reject(new Error(`the stream at ${attach.origin} could not be attached`)));
  });
  stream.addEventListener('message', (event) => {
    for (const line of String(event.data).split('\n')) {
      const m = JSON.parse(line) as { type?: string; data?: { type?: string; data?: { id?: string; params?: { text?: string } } } };
      if (m.type === 'event' && m.data?.type === 'command.succeeded') {
        const text = m.data.data?.params?.text;
        if (text !== undefined) succeeded.set(text, performance.now());
      }
    }
  });
}

const started = performance.now();
const until = started + spec.seconds * 1000;
const work: Promise<void>[] = [];
if (spec.ingest) {
  work.push(...links.map(async (link, i) => {
    let k = 0;
    while (performance.now() < until) {
      const packet = encodePacket(CODEC_8E, Array.from({ length: 10 }, (_, r) => ({
        timestamp: spec.start + i * 100_000 + k++, priority: 0, latitude: 52.5 + r / 1000, longitude: 13.4, altitude: 40, angle: 90, satellites: 9, speed: 40, eventId: 0,
        io: [{ id: 239, size: 1 as const, value: 1 }],
      })));
      const ack = link.ack();
      link.socket.write(packet);
      await ack;
    }
  }));
}
if (spec.rate > 0) {
  work.push((async () => {
    const sends: Promise<void>[] = [];
    for (let n = 0; performance.now() < until; n++) {
      // Paced open-loop: the n-th command leaves at n / rate s, whatever the answers before it.
      const due = started + (n * 1000) / spec.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const device = spec.devices[n % spec.devices.length]!;
      const text = `c${n}`;
      posted.set(text, performance.now());
      sends.push(request('POST', `/v2/fleet/vehicles/${device.vehicleId}/commands`, JSON.stringify({ type: 'custom', params: { text } })).then((res) => {
        if (res.status === 202) idOf.set(text, (JSON.parse(res.body) as { id: string }).id);
        else errors++;
      }, () => void errors++));
    }
    await Promise.all(sends);
  })());
}
await Promise.all(work);
const seconds = (performance.now() - started) / 1000;
// The last commands' answers and events, bounded.
const settleUntil = performance.now() + 5_000;
while (performance.now() < settleUntil && succeeded.size < idOf.size) await new Promise((resolve) => setTimeout(resolve, 50));
stream?.close();
for (const link of links) link.socket.destroy();
const toFrame: number[] = [];
const toSucceeded: number[] = [];
for (const [text, at] of posted) {
  const frame = framed.get(text);
  const done = succeeded.get(text);
  if (frame !== undefined) toFrame.push(frame - at);
  if (done !== undefined) toSucceeded.push(done - at);
}
process.send!({ records, seconds, commands: posted.size, toFrame, toSucceeded, ids: [...idOf.values()], errors } satisfies CommandClientResult, () => process.exit(0));
