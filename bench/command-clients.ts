// The clients of the commands benchmark, in a process of their own (never on the server's event
// loop, and one clock for every timing): the Teltonika trackers, logged in for the whole run, each
// answering every Codec 12 command at once and, in phases with ingest, sending AVL packets
// closed-loop; the commands, POSTed through the API at a fixed pace over the trackers in turn; and
// one reader of the event feed that notes when each `command.succeeded` appears.
//
// The parent sends `setup`, then one `phase` at a time (each answered with its result), then `end`.
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { COMMAND_TYPE, RESPONSE_TYPE, decodeCodec12, encodeCodec12 } from '../src/protocols/teltonika/codec12.ts';
import { CODEC_8E } from '../src/protocols/teltonika/decode.ts';
import { type EncodableRecord, encodePacket, imeiLogin } from '../src/protocols/teltonika/encode.ts';

export interface CommandClientSetup {
  host: string;
  httpPort: number;
  teltonikaPort: number;
  key: string;
  devices: Array<{ vehicleId: string; imei: string }>;
  /** Record k of a tracker is stamped start + k s: unique for the whole run. */
  start: number;
}

export interface CommandPhase {
  /** Commands a second (0: none), each `positionSingle` to the next tracker in turn. */
  rate: number;
  seconds: number;
  /** Every tracker sends packets of 10 records, each after the last one's acknowledgement. */
  ingest: boolean;
  /** Read the feed for `command.succeeded` meanwhile (timing each); after the phase it is read in any case. */
  feed: boolean;
  /** After the phase, wait at most this long for every command of it to be seen succeeded in the feed. */
  settleSeconds: number;
}

export interface CommandPhaseResult {
  /** The phase's length; with ingest, until its last packet was acknowledged. */
  seconds: number;
  /** Records acknowledged by the server. */
  records: number;
  posted: number;
  /** Answered 202. */
  accepted: number;
  /** Other answers or failed requests, and the first such answer. */
  refused: number;
  firstRefusal: string | undefined;
  /** The ids of the accepted commands. */
  ids: string[];
  /** ms from each POST to its frame on the tracker's socket, and to its `command.succeeded` in the feed. */
  toFrame: number[];
  toSucceeded: number[];
  /** Seen succeeded in the feed, during the phase or after it. */
  succeeded: number;
  /** From the first POST to the last `command.succeeded` seen. */
  completedSeconds: number;
  /** Frames no command of the tracker waited for, or not the text `getgps`. */
  strayFrames: number;
  /** How late the pacer sent its latest command, ms: a client that could not keep the pace. */
  pacerLateMs: number;
  /** Trackers whose connection the service closed (so far in the run). */
  closed: number;
}

export type CommandClientMessage = { kind: 'setup'; setup: CommandClientSetup } | { kind: 'phase'; phase: CommandPhase } | { kind: 'end' };

interface Sent {
  postedAt: number;
  framedAt?: number;
  id?: string;
}

interface Tracker {
  socket: net.Socket;
  vehicleId: string;
  /** Commands POSTed to this tracker's vehicle and not yet framed, oldest first: the server sends them in that order. */
  pending: Sent[];
  acked: (() => void) | undefined;
  /** Records sent so far. */
  k: number;
  closed: boolean;
}

// A tracker's answer to `getgps`, as Teltonika devices word it.
const ANSWER = encodeCodec12('GPS:1 Sat:9 Lat:52.500000 Long:13.400000 Alt:40 Speed:40 Dir:90 Date: 2026/11/28 Time: 06:00:00', RESPONSE_TYPE);
const BODY = JSON.stringify({ type: 'positionSingle' });

let setup: CommandClientSetup;
let agent: http.Agent;
let auth: Record<string, string>;
const trackers: Tracker[] = [];
let nextTracker = 0;
let records = 0;
let strayFrames = 0;
/** When each command id was first seen succeeded in the feed. */
const succeededAt = new Map<string, number>();
let feedCursor: string | undefined;

function request(method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: setup.host, port: setup.httpPort, method, path, agent, headers: auth }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function commandFrame(tracker: Tracker, data: Uint8Array): void {
  const at = performance.now();
  const message = decodeCodec12(data);
  if ('malformed' in message || message.type !== COMMAND_TYPE) {
    strayFrames++;
    return;
  }
  const sent = tracker.pending.shift();
  if (sent === undefined || message.text !== 'getgps') strayFrames++;
  if (sent !== undefined) sent.framedAt = at;
  tracker.socket.write(ANSWER);
}

async function connect(vehicleId: string, imei: string): Promise<Tracker> {
  const socket = net.connect({ host: setup.host, port: setup.teltonikaPort, noDelay: true });
  const tracker: Tracker = { socket, vehicleId, pending: [], acked: undefined, k: 0, closed: false };
  let buffered: Buffer = Buffer.alloc(0);
  let login: ((accepted: boolean) => void) | undefined;
  const loggedIn = new Promise<boolean>((resolve) => (login = resolve));
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    if (login !== undefined) {
      login(buffered[0] === 1);
      login = undefined;
      buffered = buffered.subarray(1);
    }
    // An acknowledgement is a record count (never 0 here: every packet holds 10); a frame begins with 4 zero bytes.
    while (buffered.length >= 4) {
      const count = buffered.readUInt32BE(0);
      if (count !== 0) {
        records += count;
        buffered = buffered.subarray(4);
        const acked = tracker.acked;
        tracker.acked = undefined;
        acked?.();
        continue;
      }
      if (buffered.length < 8) return;
      const size = 8 + buffered.readUInt32BE(4) + 4;
      if (buffered.length < size) return;
      commandFrame(tracker, buffered.subarray(8, size - 4));
      buffered = buffered.subarray(size);
    }
  });
  socket.on('error', () => {});
  socket.once('close', () => {
    login?.(false);
    // A packet in flight is never acknowledged now: its loop ends rather than wait for ever.
    tracker.closed = true;
    const acked = tracker.acked;
    tracker.acked = undefined;
    acked?.();
  });
  socket.write(imeiLogin(imei));
  if (!(await loggedIn)) throw new Error(`tracker ${imei} was refused at login`);
  return tracker;
}

function avl(tracker: Tracker, r: number): EncodableRecord {
  const k = tracker.k++;
  return {
    timestamp: setup.start + k * 1000, priority: 0, latitude: 52.5 + (k % 1000) / 100_000, longitude: 13.4, altitude: 40, angle: 90, satellites: 9,
    speed: 40 + (r % 5), eventId: 0, io: [{ id: 239, size: 1, value: 1 }, { id: 16, size: 4, value: 100_000 + k }],
  };
}

/** Reads the feed's `command.succeeded` events from where it last stopped; how many it read. */
async function readFeed(): Promise<number> {
  const query = new URLSearchParams({ types: 'command.succeeded', limit: '1000' });
  if (feedCursor !== undefined) query.set('after', feedCursor);
  const res = await request('GET', `/v2/events?${query.toString()}`);
  if (res.status !== 200) throw new Error(`the feed answered ${res.status}: ${res.body.slice(0, 300)}`);
  const page = JSON.parse(res.body) as { events: Array<{ data: { id: string } }>; next: string };
  const at = performance.now();
  for (const event of page.events) if (!succeededAt.has(event.data.id)) succeededAt.set(event.data.id, at);
  feedCursor = page.next;
  return page.events.length;
}

async function runPhase(phase: CommandPhase): Promise<CommandPhaseResult> {
  const recordsBefore = records;
  const strayBefore = strayFrames;
  const sent: Sent[] = [];
  const accepted: Sent[] = [];
  let refused = 0;
  let firstRefusal: string | undefined;
  let pacerLateMs = 0;
  const started = performance.now();
  const until = started + phase.seconds * 1000;
  const work: Promise<unknown>[] = [];

  let ingestEnded = started;
  if (phase.ingest) {
    work.push(Promise.all(trackers.map(async (tracker) => {
      while (performance.now() < until && !tracker.closed) {
        const packet = encodePacket(CODEC_8E, Array.from({ length: 10 }, (_, r) => avl(tracker, r)));
        const acked = new Promise<void>((resolve) => (tracker.acked = resolve));
        tracker.socket.write(packet);
        await acked;
      }
    })).then(() => void (ingestEnded = performance.now())));
  }

  const answers: Promise<void>[] = [];
  if (phase.rate > 0) {
    work.push((async () => {
      // Open loop: the n-th command leaves at n / rate s, whatever became of those before it.
      for (let n = 0; ; n++) {
        const due = started + (n * 1000) / phase.rate;
        if (due >= until) break;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        pacerLateMs = Math.max(pacerLateMs, performance.now() - due);
        const tracker = trackers[nextTracker++ % trackers.length]!;
        const command: Sent = { postedAt: performance.now() };
        sent.push(command);
        tracker.pending.push(command);
        const refuse = (why: string) => {
          refused++;
          firstRefusal ??= why;
          const at = tracker.pending.indexOf(command);
          if (at >= 0) tracker.pending.splice(at, 1);
        };
        answers.push(request('POST', `/v2/fleet/vehicles/${tracker.vehicleId}/commands`, BODY).then((res) => {
          if (res.status !== 202) return refuse(`${res.status} ${res.body.slice(0, 300)}`);
          command.id = (JSON.parse(res.body) as { id: string }).id;
          accepted.push(command);
        }, (error: unknown) => refuse(String(error))));
      }
      await Promise.all(answers);
    })());
  }

  let reading = phase.rate > 0 && phase.feed;
  const reader = (async () => {
    while (reading) {
      // Back to back while pages come full; a short pause after a page that caught up.
      if ((await readFeed()) < 1000) await sleep(5);
    }
  })();
  await Promise.all(work);
  reading = false;
  await reader;
  // Every command of the phase succeeded (or the time is up) before the next phase begins.
  const settleUntil = performance.now() + phase.settleSeconds * 1000;
  while (!accepted.every((c) => succeededAt.has(c.id!)) && performance.now() < settleUntil) {
    if ((await readFeed()) < 1000) await sleep(5);
  }

  const toFrame = sent.filter((c) => c.framedAt !== undefined).map((c) => c.framedAt! - c.postedAt);
  // Timed only when the feed was read all along; after the phase, a success is only counted.
  const toSucceeded: number[] = [];
  let succeeded = 0;
  let lastSucceeded = started;
  for (const command of accepted) {
    const at = succeededAt.get(command.id!);
    if (at === undefined) continue;
    succeeded++;
    if (phase.feed) toSucceeded.push(at - command.postedAt);
    lastSucceeded = Math.max(lastSucceeded, at);
  }
  return {
    // With ingest, until its last packet was acknowledged (the commands' last answers may come later).
    seconds: phase.ingest ? (ingestEnded - started) / 1000 : phase.seconds, records: records - recordsBefore, posted: sent.length, accepted: accepted.length, refused, firstRefusal,
    ids: accepted.map((c) => c.id!), toFrame, toSucceeded, succeeded, completedSeconds: (lastSucceeded - (sent[0]?.postedAt ?? started)) / 1000,
    strayFrames: strayFrames - strayBefore, pacerLateMs, closed: trackers.filter((t) => t.closed).length,
  };
}

process.on('message', (message: CommandClientMessage) => {
  void (async () => {
    switch (message.kind) {
      case 'setup': {
        setup = message.setup;
        agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
        auth = { authorization: `Bearer ${setup.key}`, 'content-type': 'application/json' };
        for (let i = 0; i < setup.devices.length; i += 250) {
          trackers.push(...await Promise.all(setup.devices.slice(i, i + 250).map((d) => connect(d.vehicleId, d.imei))));
        }
        // The feed read from its end: what is there already is no phase's.
        while ((await readFeed()) === 1000);
        process.send!({ connected: trackers.length });
        break;
      }
      case 'phase':
        process.send!(await runPhase(message.phase));
        break;
      case 'end':
        for (const tracker of trackers) tracker.socket.destroy();
        agent.destroy();
        process.send!({ ended: true }, () => process.exit(0));
        break;
    }
  })().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
});
