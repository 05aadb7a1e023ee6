// A webhook receiver for bench/events.bench.ts, in its own process (forked, with an IPC channel):
// a bare node:http server answering 204 to every POST once its body is read. For each request it
// notes the receipt time and, when the body is an event envelope, the time from the event's
// `occurredAt` (taken just before the commit of the status change) to receipt. The parent asks for
// the figures and resets them over IPC.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceiverRequest = { op: 'stats'; ask: number } | { op: 'reset'; ask: number };

export interface ReceiverStats {
  /** Requests received since the last reset. */
  received: number;
  /** Distinct (path, webhook-id) pairs: deliveries, duplicates counted once. */
  distinct: number;
  /** ms since the epoch of the first and last receipt (0 when none). */
  first: number;
  last: number;
  /** Commit (occurredAt) to receipt, in ms, over envelopes received since the reset. */
  p50: number;
  p99: number;
  max: number;
  /** CPU the receiver used since the reset, in CPU seconds. */
  cpu: number;
}

let latencies: number[] = [];
let seen = new Set<string>();
let received = 0;
let first = 0;
let last = 0;
let cpu = process.cpuUsage();

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const now = Date.now();
    received++;
    if (first === 0) first = now;
    last = now;
    const id = req.headers['webhook-id'];
    if (typeof id === 'string') seen.add(`${req.url ?? ''} ${id}`);
    const body = Buffer.concat(chunks).toString();
    // The envelope's occurredAt, without parsing the whole body: `"occurredAt":"…Z"`.
    const at = body.indexOf('"occurredAt":"');
    if (at >= 0) {
      const occurred = Date.parse(body.slice(at + 14, at + 38));
      if (!Number.isNaN(occurred)) latencies.push(now - occurred);
    }
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function stats(): ReceiverStats {
  const sorted = Float64Array.from(latencies).sort();
  const used = process.cpuUsage(cpu);
  return {
    received, distinct: seen.size, first, last,
    p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: sorted.length === 0 ? NaN : sorted[sorted.length - 1]!,
    cpu: (used.user + used.system) / 1e6,
  };
}

process.on('message', (message: ReceiverRequest) => {
  if (message.op === 'reset') {
    latencies = [];
    seen = new Set();
    received = 0;
    first = 0;
    last = 0;
    cpu = process.cpuUsage();
    process.send!({ ask: message.ask });
  } else {
    process.send!({ ask: message.ask, stats: stats() });
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
