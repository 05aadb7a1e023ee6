// Live updates over the fleet stream (docs/API.md "Live streams"), as a browser must do it: create the
// stream with the API key, attach the WebSocket with the single-use ticket from its `url`
// (browsers cannot send Authorization on a WebSocket). When the socket drops, ask for a fresh
// ticket and resume after the last `seq` seen; when the stream has ended or expired, create a
// new one. Retries back off up to 30 s.
//
// The socket is attached with `batch=true`: a fleet of thousands sends thousands of messages a
// second, and a browser pays for every WebSocket frame (its network process, its IPC, a task on
// the page's main thread) whatever the frame holds; batched, the messages of one turn of the
// server come in one frame, one per line. At 10,000 one-message frames a second that cost was most
// of a core, and the page kept 14 frames a second (docs/BENCHMARKS.md, "The dashboard under 10,000
// moving vehicles"); batched, about 10 frames a second carry the same messages.
import { ApiError, api, onPageOrigin, socketClosedWhy, type CreatedStream, type StreamTicket, type TelemetryData, type VehicleStatus } from './api.ts';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'off';

export type LiveMessage =
  | { type: 'location' | 'battery' | 'diagnostics'; seq: number; vehicleId: string; timestamp: string; data: TelemetryData }
  | { type: 'status'; seq: number; vehicleId: string; timestamp: string; data: { from: VehicleStatus | null; to: VehicleStatus; reason: string | null } };

type Listener = (message: LiveMessage) => void;
type StateListener = (state: LiveState, detail?: string) => void;

const EVENTS = ['location', 'battery', 'status'];
const INTERVAL_MS = 500;

export interface Live {
  start(): void;
  stop(): Promise<void>;
  onMessage(listener: Listener): () => void;
  onState(listener: StateListener): () => void;
  state(): LiveState;
}

export function createLive(): Live {
  const listeners = new Set<Listener>();
  const stateListeners = new Set<StateListener>();
  let state: LiveState = 'off';
  let streamId: string | undefined;
  let socket: WebSocket | undefined;
  let lastSeq: number | undefined;
  let running = false;
  let attempt = 0;
  let retryTimer: number | undefined;

  function setState(next: LiveState, detail?: string) {
    state = next;
    for (const listener of stateListeners) listener(next, detail);
  }

  async function newStream(): Promise<string> {
    const created = await api<CreatedStream>('POST', '/v2/telemetry/stream', { body: { events: EVENTS, interval: INTERVAL_MS } });
    streamId = created.streamId;
    lastSeq = undefined;
    return created.url;
  }

  async function attachUrl(): Promise<string> {
    if (streamId === undefined) return newStream();
    try {
      const ticket = await api<StreamTicket>('POST', `/v2/streams/${encodeURIComponent(streamId)}/tickets`);
      return lastSeq === undefined ? ticket.url : `${ticket.url}&lastSeq=${lastSeq}`;
    } catch (error) {
      // Ended or expired (409), or gone (404): start over with a new stream and its snapshot.
      if (error instanceof ApiError && (error.status === 409 || error.status === 404)) return newStream();
      throw error;
    }
  }

  async function connect() {
    if (!running) return;
    setState(attempt === 0 ? 'connecting' : 'reconnecting');
    let url: string;
    try {
      url = await attachUrl();
    } catch (error) {
      if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        running = false;
        setState('off', error.detail ?? error.title);
        return;
      }
      retry();
      return;
    }
    if (!running) return;
    const ws = new WebSocket(onPageOrigin(`${url}&batch=true`));
    socket = ws;
    let opened = false;
    ws.addEventListener('open', () => (opened = true));
    ws.addEventListener('message', (event: MessageEvent) => {
      if (typeof event.data !== 'string') return;
      for (const line of event.data.split('\n')) received(line);
    });
    ws.addEventListener('close', (event: CloseEvent) => {
      if (socket !== ws) return;
      socket = undefined;
      if (!running) return;
      // 1000: the stream was ended; a new one is needed, not a ticket for the old one.
      if (event.code === 1000) streamId = undefined;
      retry(socketClosedWhy(event, opened));
    });
  }

  function received(text: string) {
    let message: { type?: unknown; seq?: unknown };
    try {
      message = JSON.parse(text) as { type?: unknown; seq?: unknown };
    } catch {
      return;
    }
    if (message.type === 'connected') {
      attempt = 0;
      setState('live');
      return;
    }
    if (typeof message.seq === 'number') lastSeq = message.seq;
    if (message.type === 'location' || message.type === 'battery' || message.type === 'status' || message.type === 'diagnostics') {
      for (const listener of listeners) listener(message as LiveMessage);
    }
  }

  /** Tries again after a back-off; `why` the last try failed, shown while reconnecting. */
  function retry(why?: string) {
    if (!running) return;
    setState('reconnecting', why);
    const delay = Math.min(30_000, 500 * 2 ** attempt);
    attempt++;
    retryTimer = window.setTimeout(() => void connect(), delay);
  }

  return {
    start() {
      if (running) return;
      running = true;
      attempt = 0;
      void connect();
    },
    async stop() {
      running = false;
      window.clearTimeout(retryTimer);
      const ws = socket;
      socket = undefined;
      ws?.close(1000, 'signed out');
      const id = streamId;
      streamId = undefined;
      setState('off');
      // Free the organization's stream quota now rather than when the stream expires.
      if (id !== undefined) await api('DELETE', `/v2/streams/${encodeURIComponent(id)}`).catch(() => undefined);
    },
    onMessage(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onState(listener) {
      stateListeners.add(listener);
      return () => stateListeners.delete(listener);
    },
    state: () => state,
  };
}
