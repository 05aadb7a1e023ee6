// The live event stream of the alerts and event-log panels: a fleet stream of the type `events`
// (docs/API.md "Live streams", "Events"), opened the way every browser must open one: create it
// with the API key or the session cookie, attach the WebSocket with the single-use ticket of its `url`, and on a drop
// ask for a fresh ticket and resume after the last `seq`. Events are never throttled, so a resumed
// socket misses nothing; a stream that ended or expired is created anew, and then `onRestart`
// tells each panel to catch up from what it read last (the event feed, the alert list). Each
// newly attached stream does so once it is live, the first one too: what was recorded while the
// panel read the API and the socket was not yet attached is read again, never lost.
//
// It runs while at least one panel listens, and is ended (DELETE) when the last one leaves.
import { ApiError, api, onPageOrigin, socketClosedWhy, type CreatedStream, storedKey, type StreamTicket, type EventEnvelope } from './api.ts';

export type { EventEnvelope };

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'off';

interface Listener {
  event(envelope: EventEnvelope): void;
  state?(state: StreamState, detail?: string): void;
  /** A new stream is live: events recorded before it attached are read from the API instead. */
  restart?(): void;
}

const listeners = new Set<Listener>();
let state: StreamState = 'off';
let detail: string | undefined;
let running = false;
let streamId: string | undefined;
/** The key the stream was made with, to end it after a sign-out has forgotten the key. */
let streamKey: string | undefined;
let socket: WebSocket | undefined;
let lastSeq: number | undefined;
let attempt = 0;
let retryTimer: number | undefined;
let generation = 0;
/** A new stream was made: tell the panels once it is live. */
let fresh = false;

function setState(next: StreamState, why?: string) {
  state = next;
  detail = why;
  for (const listener of listeners) listener.state?.(next, why);
}

async function newStream(mine: number): Promise<string> {
  const key = storedKey();
  const created = await api<CreatedStream>('POST', '/v2/telemetry/stream', { body: { events: ['events'], interval: 0 } });
  if (mine !== generation) {
    // Stopped meanwhile: end it now rather than leave it to expire.
    endStream(created.streamId, key);
    throw new Error('stopped');
  }
  streamId = created.streamId;
  streamKey = key;
  lastSeq = undefined;
  fresh = true;
  return created.url;
}

async function attachUrl(mine: number): Promise<string> {
  if (streamId === undefined) return newStream(mine);
  try {
    const ticket = await api<StreamTicket>('POST', `/v2/streams/${encodeURIComponent(streamId)}/tickets`);
    return lastSeq === undefined ? ticket.url : `${ticket.url}&lastSeq=${lastSeq}`;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 409 || error.status === 404)) return newStream(mine);
    throw error;
  }
}

async function connect(mine: number) {
  if (!running || mine !== generation) return;
  setState(attempt === 0 ? 'connecting' : 'reconnecting');
  let url: string;
  try {
    url = await attachUrl(mine);
  } catch (error) {
    if (mine !== generation) return;
    if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      running = false;
      setState('off', error.detail ?? error.title);
      return;
    }
    retry(mine);
    return;
  }
  if (!running || mine !== generation) return;
  const ws = new WebSocket(onPageOrigin(url));
  socket = ws;
  let opened = false;
  ws.addEventListener('open', () => (opened = true));
  ws.addEventListener('message', (message: MessageEvent) => {
    if (typeof message.data !== 'string') return;
    let parsed: { type?: unknown; seq?: unknown; data?: unknown };
    try {
      parsed = JSON.parse(message.data) as typeof parsed;
    } catch {
      return;
    }
    if (parsed.type === 'connected') {
      attempt = 0;
      setState('live');
      if (fresh) {
        fresh = false;
        for (const listener of listeners) listener.restart?.();
      }
      return;
    }
    if (typeof parsed.seq === 'number') lastSeq = parsed.seq;
    if (parsed.type !== 'event' || typeof parsed.data !== 'object' || parsed.data === null) return;
    const envelope = parsed.data as EventEnvelope;
    if (typeof envelope.id !== 'string' || typeof envelope.type !== 'string') return;
    for (const listener of listeners) listener.event(envelope);
  });
  ws.addEventListener('close', (event: CloseEvent) => {
    if (socket !== ws) return;
    socket = undefined;
    if (!running || mine !== generation) return;
    if (event.code === 1000) streamId = undefined;
    retry(mine, socketClosedWhy(event, opened));
  });
}

/** Tries again after a back-off; `why` the last try failed, shown while reconnecting. */
function retry(mine: number, why?: string) {
  if (!running || mine !== generation) return;
  setState('reconnecting', why);
  const delay = Math.min(30_000, 500 * 2 ** attempt);
  attempt++;
  retryTimer = window.setTimeout(() => void connect(mine), delay);
}

function start() {
  if (running) return;
  running = true;
  attempt = 0;
  generation++;
  void connect(generation);
}

function stop() {
  running = false;
  generation++;
  window.clearTimeout(retryTimer);
  const ws = socket;
  socket = undefined;
  ws?.close(1000, 'panel closed');
  const id = streamId;
  const key = streamKey;
  streamId = undefined;
  streamKey = undefined;
  lastSeq = undefined;
  state = 'off';
  detail = undefined;
  if (id !== undefined) endStream(id, key);
}

/**
 * Frees the organization's stream quota now rather than when the stream expires: with the key it
 * was made with (the person may have signed out since), or with the session cookie.
 */
function endStream(id: string, key: string | undefined) {
  void api('DELETE', `/v2/streams/${encodeURIComponent(id)}`, key === undefined ? {} : { key }).catch(() => undefined);
}

/** Listens to the organization's events; the returned function stops listening. */
export function listenToEvents(listener: Listener): () => void {
  listeners.add(listener);
  listener.state?.(state, detail);
  start();
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) stop();
  };
}

const STATE_TEXT: Record<StreamState, string> = {
  connecting: 'Connecting to live events…',
  live: 'Live: new events appear as they happen.',
  reconnecting: 'Reconnecting to live events…',
  off: 'Live events are off',
};

/** A one-line status of the stream for a panel. */
export function describeState(next: StreamState, why?: string): string {
  if (why === undefined) return STATE_TEXT[next];
  if (next === 'off') return `${STATE_TEXT.off}: ${why}`;
  return next === 'reconnecting' ? `${STATE_TEXT.reconnecting} (last try: ${why})` : STATE_TEXT[next];
}
