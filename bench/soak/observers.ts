// What the soak watches besides its own requests: each node's process figures from /metrics, live
// streams read by WebSocket clients, and a webhook receiver that checks every delivery's signature.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import WebSocket from 'ws';
import type { Node } from './nodes.ts';

// ---- /metrics -----------------------------------------------------------------------------------

export interface Scrape {
  /** process_resident_memory_bytes */
  rss: number;
  /** nodejs_heap_size_used_bytes: live objects and garbage not yet collected. */
  heapUsed: number;
  /** nodejs_heap_size_total_bytes: what V8 holds for its heap. */
  heapTotal: number;
  /** fleet_nodejs_heap_live_bytes: the heap used right after the latest full collection (0 before the first). */
  heapLive: number;
  /** nodejs_external_memory_bytes: memory of Buffers and other objects outside the heap. */
  external: number;
  /** nodejs_eventloop_lag_p99_seconds, in ms: over the time since the previous scrape (prom-client resets its histogram on each). */
  lagP99: number;
  lagMax: number;
  /** Open handles: the sum of nodejs_active_handles over its types. */
  handles: number;
  /** fleet_http_requests_total answered 5xx, all routes, since the start. */
  http5xx: number;
}

/** One value of a metric without labels (prom-client's default metrics have none here). */
function value(text: string, name: string): number {
  const match = new RegExp(`^${name} ([^\\s]+)`, 'm').exec(text);
  if (match === null) throw new Error(`/metrics has no ${name}`);
  return Number(match[1]);
}

export async function scrape(node: Node, key: string): Promise<Scrape> {
  const res = await fetch(`${node.url}/metrics`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${node.name} /metrics: ${res.status} ${text.slice(0, 200)}`);
  let http5xx = 0;
  for (const match of text.matchAll(/^fleet_http_requests_total\{[^}]*status_code="5\d\d"[^}]*\} (\d+)/gm)) http5xx += Number(match[1]);
  return {
    rss: value(text, 'fleet_process_resident_memory_bytes'),
    heapUsed: value(text, 'fleet_nodejs_heap_size_used_bytes'),
    heapTotal: value(text, 'fleet_nodejs_heap_size_total_bytes'),
    heapLive: value(text, 'fleet_nodejs_heap_live_bytes'),
    external: value(text, 'fleet_nodejs_external_memory_bytes'),
    lagP99: value(text, 'fleet_nodejs_eventloop_lag_p99_seconds') * 1000,
    lagMax: value(text, 'fleet_nodejs_eventloop_lag_max_seconds') * 1000,
    // Fleet leaves out prom-client's `_total` gauge (a counter's name); the per-type gauge sums to it.
    handles: [...text.matchAll(/^fleet_nodejs_active_handles\{[^}]*\} (\S+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0),
    http5xx,
  };
}

// ---- live streams -------------------------------------------------------------------------------

export interface StreamReader {
  name: string;
  /** Messages received, and of them since the last take(). */
  messages(): number;
  take(): number;
  /** Why the socket closed, when it closed before close() was called. */
  lost(): string | undefined;
  close(): Promise<void>;
}

/**
 * Creates a stream with `POST path` on `node` and attaches a WebSocket client to it (with the key,
 * as a non-browser client may); resolves once the `connected` message has arrived.
 */
export async function openStream(node: Node, key: string, name: string, path: string, body: object): Promise<StreamReader> {
  const res = await fetch(`${node.url}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const created = (await res.json()) as { streamId?: string };
  if (res.status !== 201 || created.streamId === undefined) throw new Error(`creating the stream "${name}": ${res.status} ${JSON.stringify(created)}`);
  const ws = new WebSocket(`${node.url.replace('http:', 'ws:')}/v2/streams/${created.streamId}`, { headers: { authorization: `Bearer ${key}` } });
  let total = 0;
  let taken = 0;
  let closing = false;
  let lost: string | undefined;
  const closed = new Promise<void>((resolve) => ws.once('close', (code, reason) => {
    if (!closing) lost = `closed with ${code} ${reason.toString()}`.trim();
    resolve();
  }));
  ws.on('error', (error) => (lost ??= error.message));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stream "${name}": no connected message within 10 s`)), 10_000);
    ws.on('message', (data: Buffer) => {
      total++;
      if (total === 1) {
        clearTimeout(timer);
        const first = JSON.parse(data.toString()) as { type?: string };
        if (first.type === 'connected') resolve();
        else reject(new Error(`stream "${name}": first message ${data.toString().slice(0, 200)}`));
      }
    });
    void closed.then(() => reject(new Error(`stream "${name}": ${lost ?? 'closed'}`)));
  });
  return {
    name,
    messages: () => total,
    take() {
      const n = total - taken;
      taken = total;
      return n;
    },
    lost: () => lost,
    async close() {
      closing = true;
      await fetch(`${node.url}/v2/streams/${created.streamId}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) })
        .catch(() => undefined);
      const timer = setTimeout(() => ws.terminate(), 5_000);
      ws.close();
      await closed;
      clearTimeout(timer);
    },
  };
}

// ---- webhooks -----------------------------------------------------------------------------------

export interface Receiver {
  url: string;
  /** Verify deliveries with this secret from now on. */
  setSecret(secret: string): void;
  /** Requests received, those whose signature did not verify, and distinct status-change events of `vehicles`. */
  stats(): { requests: number; badSignatures: number; statusEvents: number };
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 that answers 204 to every delivery once it has checked its signature. */
export async function webhookReceiver(isStatusVehicle: (vehicleId: string) => boolean): Promise<Receiver> {
  let verifier: Webhook | undefined;
  let requests = 0;
  let badSignatures = 0;
  const events = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests++;
      const body = Buffer.concat(chunks).toString();
      try {
        if (verifier === undefined) throw new Error('no secret yet');
        verifier.verify(body, req.headers as Record<string, string>);
        const envelope = JSON.parse(body) as { id: string; type: string; vehicleId?: string };
        if (envelope.type === 'vehicle.status_changed' && envelope.vehicleId !== undefined && isStatusVehicle(envelope.vehicleId)) events.add(envelope.id);
      } catch {
        badSignatures++;
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    setSecret: (secret) => (verifier = new Webhook(secret)),
    stats: () => ({ requests, badSignatures, statusEvents: events.size }),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
