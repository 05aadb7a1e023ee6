// A live stream that survives disconnects. It creates the stream (POST /v2/telemetry/{vehicleId}/stream
// or POST /v2/telemetry/stream), attaches the WebSocket with the ticket URL the service answers,
// and delivers each message. When the socket drops for any reason but the stream's end, it asks
// for a new ticket (POST /v2/streams/{streamId}/tickets) and attaches again with `lastSeq`, the
// seq of the last message delivered: the service replays what came after it, so nothing is lost,
// and a message whose seq was already delivered is dropped, so nothing is repeated. Should the
// service no longer hold every message after `lastSeq` (a gap longer than its replay window, at
// least 60 s), the `connected` message says `resumed: false` and a snapshot of the current state
// follows instead.
//
// Tickets, not an Authorization header, are what the socket carries: browsers cannot set headers
// on a WebSocket, and Node 24's global WebSocket is the same API.
import type { Client } from 'openapi-fetch';
import { FleetApiError, fail } from './errors.ts';
import type {
  CreatedStream, FleetEvent, FleetStreamRequest, StreamEventType, TelemetryData, VehicleStatus, VehicleStreamRequest, paths,
} from './types.ts';

interface Sequenced {
  seq: number;
  vehicleId: string;
  timestamp: string;
}
export interface LocationMessage extends Sequenced {
  type: 'location';
  data: Pick<TelemetryData, 'location' | 'speed' | 'heading'>;
}
export interface BatteryMessage extends Sequenced {
  type: 'battery';
  data: Pick<TelemetryData, 'battery'>;
}
export interface DiagnosticsMessage extends Sequenced {
  type: 'diagnostics';
  data: Pick<TelemetryData, 'temperature' | 'odometer' | 'diagnostics'>;
}
export interface StatusMessage extends Sequenced {
  type: 'status';
  data: { from: VehicleStatus | null; to: VehicleStatus; reason: string | null };
}
export interface EventMessage extends Sequenced {
  type: 'event';
  data: FleetEvent;
}
/** First message on every socket; `resumed` says whether the replay after `lastSeq` was complete. */
export interface ConnectedMessage {
  type: 'connected';
  streamId: string;
  subscriptions: StreamEventType[];
  interval: number;
  resumed: boolean;
  lastSeq: number;
}
export interface SubscriptionsMessage {
  type: 'subscriptions';
  subscriptions: StreamEventType[];
}
export interface ErrorMessage {
  type: 'error';
  code: string;
  detail: string;
}
export type DataMessage = LocationMessage | BatteryMessage | DiagnosticsMessage | StatusMessage | EventMessage;
export type StreamMessage = DataMessage | ConnectedMessage | SubscriptionsMessage | ErrorMessage;

/** The part of the WebSocket API (browsers, Node 24's global) the stream uses. */
export interface SocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'error', listener: () => void): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
}
export type SocketConstructor = new (url: string) => SocketLike;

export interface ReconnectOptions {
  /** Failed attempts in a row before giving up (default 10). */
  attempts?: number;
  /** Wait before the second attempt, doubling after each failure, ms (default 250). */
  minDelayMs?: number;
  /** Longest wait between attempts, ms (default 5000). */
  maxDelayMs?: number;
}

export type OpenStreamOptions = (
  | ({ vehicleId: string } & VehicleStreamRequest)
  | ({ vehicleId?: undefined } & FleetStreamRequest)
) & {
  reconnect?: ReconnectOptions;
  /** The WebSocket class (default: the global one). */
  WebSocket?: SocketConstructor;
  /**
   * Attach with `batch=true` (default true): the service sends the messages of one of its turns in
   * one frame, a message a line, far fewer frames under load. The messages delivered are the same.
   */
  batch?: boolean;
};

/** The socket closed for good: the stream ended (1000), was taken over (4000), or could not be reattached. */
export class StreamClosedError extends Error {
  readonly code: number | undefined;
  constructor(message: string, code?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StreamClosedError';
    this.code = code;
  }
}

const OPEN = 1;

export class LiveStream implements AsyncIterable<StreamMessage> {
  /** The stream's id (`str_…`). */
  readonly streamId: string;
  /** What the service answered when the stream was created. */
  readonly created: CreatedStream;
  /** The seq of the last message delivered, which a reattach resumes after. */
  lastSeq: number | undefined;
  /** How many times the socket was attached again after a drop. */
  reconnects = 0;
  /** Settles when the stream is over: resolves on its end or close(), rejects when reattaching failed. */
  readonly done: Promise<void>;

  readonly #client: Client<paths>;
  readonly #Socket: SocketConstructor;
  readonly #reconnect: Required<ReconnectOptions>;
  readonly #batch: boolean;
  #socket: SocketLike | undefined;
  #queue: StreamMessage[] = [];
  #wake: (() => void) | undefined;
  #finished = false;
  #error: Error | undefined;
  #closing = false;
  #settle!: (error?: Error) => void;

  private constructor(client: Client<paths>, created: CreatedStream, options: OpenStreamOptions) {
    this.#client = client;
    this.created = created;
    this.streamId = created.streamId;
    const Socket = options.WebSocket ?? (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
    if (Socket === undefined) throw new TypeError('No WebSocket class: pass one as the WebSocket option.');
    this.#Socket = Socket;
    this.#reconnect = { attempts: 10, minDelayMs: 250, maxDelayMs: 5000, ...options.reconnect };
    this.#batch = options.batch ?? true;
    this.done = new Promise<void>((resolve, reject) => {
      this.#settle = (error) => (error === undefined ? resolve() : reject(error));
    });
    this.done.catch(() => {}); // read through the iterator or `done`; never an unhandled rejection
  }

  /** Creates the stream and attaches to it. */
  static async open(client: Client<paths>, options: OpenStreamOptions): Promise<LiveStream> {
    const body: VehicleStreamRequest = { events: options.events, ...(options.interval === undefined ? {} : { interval: options.interval }) };
    const result = options.vehicleId === undefined
      ? await client.POST('/v2/telemetry/stream', { body: { ...body, ...(options.vehicleIds === undefined ? {} : { vehicleIds: options.vehicleIds }) } })
      : await client.POST('/v2/telemetry/{vehicleId}/stream', { params: { path: { vehicleId: options.vehicleId } }, body });
    if (!result.response.ok || result.data === undefined) fail(result.response, result.error);
    const stream = new LiveStream(client, result.data, options);
    try {
      await stream.#attach(result.data.url);
    } catch (error) {
      // Not left to expire unattached: it counts against the organization's quota until then.
      await client.DELETE('/v2/streams/{streamId}', { params: { path: { streamId: stream.streamId } } }).catch(() => undefined);
      throw error;
    }
    return stream;
  }

  /** Messages as they arrive, until the stream ends. Breaking out of the loop leaves the stream open. */
  async *[Symbol.asyncIterator](): AsyncGenerator<StreamMessage, void, undefined> {
    for (;;) {
      const next = this.#queue.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.#finished) {
        if (this.#error !== undefined) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Sends a client message (`subscribe`, `unsubscribe`) if the socket is open; false if not. */
  send(message: { type: 'subscribe' | 'unsubscribe'; events: StreamEventType[] }): boolean {
    if (this.#socket?.readyState !== OPEN) return false;
    this.#socket.send(JSON.stringify(message));
    return true;
  }

  /** Ends the stream (DELETE /v2/streams/{streamId}) and its socket; the iteration ends. */
  async close(): Promise<void> {
    if (this.#finished) return;
    this.#closing = true;
    try {
      const { response, error } = await this.#client.DELETE('/v2/streams/{streamId}', { params: { path: { streamId: this.streamId } } });
      if (!response.ok && response.status !== 404) fail(response, error);
    } finally {
      this.#socket?.close(1000);
      this.#finish();
    }
  }

  /** Drops the socket without ending the stream, as a network failure would; it is reattached. */
  disconnect(): void {
    this.#socket?.close(4001, 'client reconnects');
  }

  /** The ticket's URL with this stream's options: `batch`, and `lastSeq` once a message came. */
  #socketUrl(ticketUrl: string): string {
    const url = new URL(ticketUrl);
    if (this.#batch) url.searchParams.set('batch', 'true');
    if (this.lastSeq !== undefined) url.searchParams.set('lastSeq', String(this.lastSeq));
    return url.toString();
  }

  #attach(ticketUrl: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = new this.#Socket(this.#socketUrl(ticketUrl));
      let opened = false;
      socket.addEventListener('open', () => {
        opened = true;
        this.#socket = socket;
        resolve();
      });
      socket.addEventListener('message', (event) => this.#receive(event.data));
      socket.addEventListener('error', () => {}); // a close event follows, which decides
      socket.addEventListener('close', ({ code, reason }) => {
        if (!opened) return reject(new StreamClosedError(`could not attach (${code}${reason === '' ? '' : ` ${reason}`})`, code));
        if (this.#socket === socket) this.#dropped(code, reason);
      });
    });
  }

  #receive(data: unknown): void {
    if (typeof data !== 'string') return;
    // A batched frame holds a message a line (JSON text itself never holds a raw newline).
    for (const line of data.split('\n')) {
      let message: StreamMessage;
      try {
        message = JSON.parse(line) as StreamMessage;
      } catch {
        continue;
      }
      if ('seq' in message && typeof message.seq === 'number') {
        if (this.lastSeq !== undefined && message.seq <= this.lastSeq) continue; // delivered before a reattach
        this.lastSeq = message.seq;
      }
      this.#queue.push(message);
    }
    this.#wakeUp();
  }

  #dropped(code: number, reason: string): void {
    this.#socket = undefined;
    if (this.#closing || this.#finished) return;
    if (code === 1000) return this.#finish(); // the stream ended
    if (code === 4000) return this.#finish(new StreamClosedError(`another connection took the stream over (${reason})`, code));
    void this.#reattach();
  }

  async #reattach(): Promise<void> {
    const { attempts, minDelayMs, maxDelayMs } = this.#reconnect;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) await sleep(Math.min(maxDelayMs, minDelayMs * 2 ** (attempt - 2)) * (0.5 + Math.random() / 2));
      if (this.#closing) return;
      let url: string;
      try {
        const { data, error, response } = await this.#client.POST('/v2/streams/{streamId}/tickets', {
          params: { path: { streamId: this.streamId } },
        });
        if (!response.ok || data === undefined) fail(response, error);
        url = data.url;
      } catch (error) {
        lastError = error;
        // An ended, unknown or no longer permitted stream will not come back.
        if (error instanceof FleetApiError && [401, 403, 404, 409].includes(error.status)) break;
        continue;
      }
      try {
        if (this.#closing) return;
        await this.#attach(url);
        this.reconnects++;
        return;
      } catch (error) {
        lastError = error;
      }
    }
    this.#finish(new StreamClosedError(`could not reattach stream ${this.streamId}`, undefined, { cause: lastError }));
  }

  #finish(error?: Error): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#error = error;
    this.#settle(error);
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
