// Real WebSocket clients (ws) over real sockets for the live-stream suites. The app listens on
// 127.0.0.1 at the port its FLEET_PUBLIC_URL names, so the `url` it hands out is the real one.
// Every wait is bounded; every client and app is closed by the suite's after hook.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import WebSocket from 'ws';
import type { StreamSettings } from '../../src/streams/settings.ts';
import type { Env } from '../../src/config.ts';
import { createTestApp, type TestApp } from './app.ts';
import { freePort } from './oauth.ts';
import { withTimeout } from './process.ts';

export { withTimeout };

export type StreamApp = TestApp & { publicUrl: string; wsUrl: string };

export async function createStreamApp(
  options: { env?: Env; streams?: Partial<StreamSettings> } & Pick<Parameters<typeof createTestApp>[0] & object, 'backend' | 'cluster' | 'join' | 'clock' | 'dispatcher'> = {},
): Promise<StreamApp> {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const { env, ...rest } = options;
  const ctx = await createTestApp({
    ...rest,
    env: { FLEET_PORT: String(port), FLEET_PUBLIC_URL: publicUrl, FLEET_RATE_LIMIT_REQUESTS: '0', ...env },
  });
  await ctx.app.listen({ host: '127.0.0.1', port });
  return Object.assign(ctx, { publicUrl, wsUrl: publicUrl.replace(/^http/, 'ws') });
}

export interface Message {
  type: string;
  seq?: number;
  vehicleId?: string;
  timestamp?: string;
  data?: Record<string, any>;
  [key: string]: any;
}

/** A ws client that keeps every message it receives, with bounded waits for the next ones. */
export class StreamClient {
  readonly ws: WebSocket;
  readonly messages: Message[] = [];
  /** Receive time (ms) of each message, same index as `messages`. */
  readonly receivedAt: number[] = [];
  /** How many messages each frame held (more than one only on a socket attached with `batch=true`). */
  readonly frames: number[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #waiters = new Set<() => void>();
  #read = 0;

  constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) => {
      ws.once('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const wake of this.#waiters) wake();
      });
    });
    ws.on('message', (data, isBinary) => {
      assert.equal(isBinary, false, 'server messages are text frames');
      const lines = (data as Buffer).toString('utf8').split('\n');
      for (const line of lines) {
        this.messages.push(JSON.parse(line) as Message);
        this.receivedAt.push(Date.now());
      }
      this.frames.push(lines.length);
      for (const wake of this.#waiters) wake();
    });
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Messages matching `match`, among all received so far. */
  all(match: (m: Message) => boolean = () => true): Message[] {
    return this.messages.filter(match);
  }

  /** Waits until `count` messages after the read position match, returns them and moves past them. */
  async take(count: number, match: (m: Message) => boolean = () => true, ms = 5_000): Promise<Message[]> {
    const found = await this.waitFor(() => {
      const out: number[] = [];
      for (let i = this.#read; i < this.messages.length && out.length < count; i++) if (match(this.messages[i]!)) out.push(i);
      return out.length === count ? out : undefined;
    }, ms, `${count} message(s)`);
    this.#read = found.at(-1)! + 1;
    return found.map((i) => this.messages[i]!);
  }

  async next(match: (m: Message) => boolean = () => true, ms = 5_000): Promise<Message> {
    return (await this.take(1, match, ms))[0]!;
  }

  /** Moves the read position past everything received so far. */
  skip(): void {
    this.#read = this.messages.length;
  }

  /** Resolves with `check()`'s first defined value; rejects after `ms`, or if the socket closes first. */
  waitFor<T>(check: () => T | undefined, ms: number, what: string): Promise<T> {
    return withTimeout(new Promise<T>((resolve, reject) => {
      const wake = () => {
        const value = check();
        if (value !== undefined) {
          this.#waiters.delete(wake);
          resolve(value);
        } else if (this.ws.readyState === WebSocket.CLOSED) {
          this.#waiters.delete(wake);
          reject(new Error(`the socket closed while waiting for ${what}; got ${JSON.stringify(this.messages.slice(-5))}`));
        }
      };
      this.#waiters.add(wake);
      wake();
    }), ms, `${what} (got ${this.messages.length} messages, last ${JSON.stringify(this.messages.at(-1))})`);
  }

  /** Nothing more matching arrives within `ms`. */
  async quiet(ms: number, match: (m: Message) => boolean = () => true): Promise<Message[]> {
    const from = this.messages.length;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.messages.slice(from).filter(match);
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    this.ws.close();
    await withTimeout(this.closed, 3_000, 'a client socket to close').catch(() => this.ws.terminate());
  }
}

export type Refusal = { status: number; contentType: string; body: any };

/**
 * Opens a WebSocket; resolves with the client once upgraded, or with the HTTP answer when the
 * server refused the upgrade (the client never got a 101).
 */
export function connect(
  url: string, options: { headers?: Record<string, string>; origin?: string; autoPong?: boolean; lookup?: LookupFunction } = {}, opened: StreamClient[] = [],
): Promise<StreamClient | Refusal> {
  const ws = new WebSocket(url, {
    headers: options.headers ?? {},
    ...(options.origin === undefined ? {} : { origin: options.origin }),
    ...(options.lookup === undefined ? {} : { lookup: options.lookup }),
    autoPong: options.autoPong ?? true,
    handshakeTimeout: 5_000,
  });
  const client = new StreamClient(ws);
  opened.push(client);
  return withTimeout(new Promise<StreamClient | Refusal>((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // left as text
        }
        ws.terminate();
        resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type']), body });
      });
    });
    ws.once('error', reject);
  }), 7_000, `a WebSocket connection to ${url}`);
}

/** Connects and insists on the upgrade. */
export async function attach(url: string, options: Parameters<typeof connect>[1] = {}, opened: StreamClient[] = []): Promise<StreamClient> {
  const result = await connect(url, options, opened);
  if (!(result instanceof StreamClient)) assert.fail(`expected a 101, got ${result.status} ${JSON.stringify(result.body)}`);
  return result;
}

/** Connects and insists on a refusal over HTTP (no 101), answered as problem+json. */
export async function refused(url: string, options: Parameters<typeof connect>[1] = {}, opened: StreamClient[] = []): Promise<Refusal> {
  const result = await connect(url, options, opened);
  if (result instanceof StreamClient) assert.fail(`expected the upgrade to be refused, but it was accepted (${url})`);
  assert.match(result.contentType, /^application\/problem\+json/, `refusal content-type for ${url}`);
  return result;
}

export async function closeAll(clients: StreamClient[]): Promise<void> {
  await Promise.all(clients.splice(0).map((client) => client.close()));
}

/** Creates a stream; returns the 201 body. */
export async function createStream(ctx: TestApp, body: Record<string, unknown>, vehicleId?: string, key?: string): Promise<Record<string, any>> {
  const url = vehicleId === undefined ? '/v2/telemetry/stream' : `/v2/telemetry/${vehicleId}/stream`;
  const res = await ctx.request('POST', url, { body, key });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

let last = 0;
/** Now, but never the same millisecond twice (a record's vehicle and timestamp identify it). */
export function stamp(): string {
  last = Math.max(Date.now(), last + 1);
  return new Date(last).toISOString();
}

/** Sends one record over HTTP and waits for its 202. */
export async function send(ctx: TestApp, vehicleId: string, data: Record<string, unknown>, timestamp = stamp(), key?: string) {
  const res = await ctx.request('POST', `/v2/telemetry/${vehicleId}`, { body: { timestamp, data }, key });
  assert.equal(res.statusCode, 202, res.body);
}
