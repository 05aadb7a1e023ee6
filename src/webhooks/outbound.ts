// Outbound HTTP for webhook deliveries, on undici. The target's addresses are checked on every
// attempt after the name is resolved, and the connection goes to the address that was checked
// (the lookup is undici's own, so a name that resolves elsewhere a moment later gains nothing).
// Redirects are never followed, and at most 64 KiB of a response is read.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { STATUS_CODES } from 'node:http';
import { isIP } from 'node:net';
import { Worker } from 'node:worker_threads';
import { Agent, request } from 'undici';
import { forbiddenAddress } from './addresses.ts';
import type { ThreadPost, ThreadReply, ThreadRequest } from './outbound-thread.ts';

export const RESPONSE_READ_LIMIT = 64 * 1024;

export interface PostResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
  /** Failed in this process, not at the endpoint: the outbound's thread failed or was closed. */
  local?: true;
  /**
   * Cut short by this process before the endpoint answered (the caller's signal, or the outbound
   * closing at shutdown): not an attempt of the endpoint's. Local too.
   */
  aborted?: true;
}

/** Why an attempt was cut short by this process: told from the deadline's TimeoutError by identity. */
const STOPPED = new DOMException('The attempt was stopped: the process is shutting down', 'AbortError');
const STOPPED_ERROR = 'stopped: the process is shutting down';

export class ForbiddenTarget extends Error {
  override name = 'ForbiddenTarget';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A DNS lookup that refuses a name when any of its addresses may not be reached. */
export function checkedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true }, (error, addresses) => {
      if (error !== null) return callback(error, []);
      if (!allowPrivate) {
        for (const { address } of addresses) {
          const why = forbiddenAddress(address);
          if (why !== undefined) return callback(Object.assign(new ForbiddenTarget(`${hostname} resolves to ${why}`), { code: 'EFORBIDDEN' }), []);
        }
      }
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      if (options.all === true) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Why a URL's literal host may not be reached (names are checked when resolved). */
export function forbiddenLiteral(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? undefined : forbiddenAddress(host);
}

/**
 * Deadlines for attempts, all watched by one timer: an attempt's controller is aborted once its
 * deadline has passed, within a quarter of a second. (AbortSignal.timeout made a timer per
 * attempt: about 2 µs each, at tens of thousands of attempts a second.) Closing stops every
 * attempt still open.
 */
function createDeadlines() {
  const TICK_MS = 250;
  const open = new Map<AbortController, number>();
  let timer: NodeJS.Timeout | undefined;
  function sweep(): void {
    const now = performance.now();
    for (const [controller, deadline] of open) {
      if (deadline > now) continue;
      open.delete(controller);
      controller.abort(new DOMException('The attempt took too long', 'TimeoutError'));
    }
    if (open.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  }
  return {
    /** A signal aborted `ms` from now (or a little later), or by `stop`, unless `done` is called first. */
    start(ms: number): { signal: AbortSignal; stop: () => void; done: () => void } {
      const controller = new AbortController();
      open.set(controller, performance.now() + ms);
      timer ??= setInterval(sweep, TICK_MS).unref();
      return { signal: controller.signal, stop: () => controller.abort(STOPPED), done: () => open.delete(controller) };
    },
    close(): void {
      clearInterval(timer);
      timer = undefined;
      for (const controller of open.keys()) controller.abort(STOPPED);
      open.clear();
    },
  };
}

export interface OutboundOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  /** Connections per origin (32). */
  connections?: number;
}

export function createOutbound(options: OutboundOptions): Outbound {
  const deadlines = createDeadlines();
  const agent = new Agent({
    connect: { lookup: checkedLookup(options.allowPrivate), timeout: options.timeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connections: options.connections ?? 32,
  });

  let closed: Promise<void> | undefined;

  async function post(url: string, headers: Record<string, string>, body: string, stop?: AbortSignal): Promise<PostResult> {
    const started = performance.now();
    const done = (ok: boolean, status: number | null, error: string | null): PostResult =>
      ({ ok, status, error, durationMs: Math.round(performance.now() - started) });
    if (closed !== undefined) return CLOSED;
    if (stop?.aborted === true) return stopped(started);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return done(false, null, 'not a valid URL');
    }
    if (!options.allowPrivate) {
      const why = forbiddenLiteral(target);
      if (why !== undefined) return done(false, null, `refused: ${why}`);
    }
    const deadline = deadlines.start(options.timeoutMs);
    stop?.addEventListener('abort', deadline.stop, { once: true });
    const { signal } = deadline;
    try {
      const response = await request(target, { method: 'POST', headers, body, dispatcher: agent, signal });
      const status = response.statusCode;
      try {
        // Read (and drop) at most 64 KiB, so the connection can be reused; past that it is closed.
        await response.body.dump({ limit: RESPONSE_READ_LIMIT, signal });
      } catch (error) {
        // Stopped while the rest of the body came: the endpoint has answered all the same.
        if (signal.reason !== STOPPED) throw error;
      }
      if (status >= 200 && status < 300) return done(true, status, null);
      return done(false, status, unexpectedStatus(status));
    } catch (error) {
      if (signal.reason === STOPPED) return stopped(started);
      return done(false, null, describe(error));
    } finally {
      stop?.removeEventListener('abort', deadline.stop);
      deadline.done();
    }
  }

  return {
    post,
    // At shutdown nothing waits for an endpoint: the attempts under way stop at once (aborted),
    // their connections are cut, and their deliveries are tried again later.
    close: () => {
      if (closed === undefined) {
        deadlines.close();
        closed = agent.close();
      }
      return closed;
    },
  };
}

const CLOSED: PostResult = { ok: false, status: null, error: 'the outbound is closed', durationMs: 0, local: true };

function stopped(started: number): PostResult {
  return { ok: false, status: null, error: STOPPED_ERROR, durationMs: Math.round(performance.now() - started), local: true, aborted: true };
}

/**
 * Items pushed during one turn of the event loop, handed to `send` together once the turn is over
 * (`setImmediate`), or at once by `flush`. Both sides of a threaded outbound send this way: the
 * POSTs one way, their results the other, many to a message.
 */
export function perTurn<T>(send: (items: T[]) => void) {
  let items: T[] = [];
  function flush(): void {
    const taken = items;
    items = [];
    if (taken.length > 0) send(taken);
  }
  return {
    push(item: T): void {
      if (items.push(item) === 1) setImmediate(flush);
    },
    flush,
  };
}

export interface Outbound {
  /**
   * One POST; never rejects: a failure is a result. Once `stop` is aborted, it ends at once
   * (unless the endpoint has answered) as `aborted`.
   */
  post(url: string, headers: Record<string, string>, body: string, stop?: AbortSignal): Promise<PostResult>;
  /** Stops the attempts under way (each ends `aborted`) and lets go of every connection. */
  close(): Promise<void>;
}

/**
 * `createOutbound` on a thread of its own, so that the HTTP work of deliveries (undici's request
 * and response handling, about 20 µs an attempt) does not share the event loop with requests.
 * The POSTs of one turn of the event loop go to the thread in one message, and their results come
 * back many to a message. A thread that fails fails what it had in hand (those deliveries are
 * tried again on their schedule), and the next POST starts another. A POST whose `stop` is
 * aborted is stopped on the thread, which answers it as any other. `threadModule` is what the
 * thread runs (outbound-thread.ts; a test gives one that fails).
 */
export function createThreadedOutbound(options: OutboundOptions, threadModule = new URL('./outbound-thread.ts', import.meta.url)): Outbound {
  let thread: { worker: Worker; sent: Set<number> } | undefined;
  let nextId = 0;
  const waiting = new Map<number, (result: PostResult) => void>();
  let closed = false;

  const settle = (id: number, result: PostResult) => {
    waiting.get(id)?.(result);
    waiting.delete(id);
  };
  const fail = (ids: Iterable<number>, error: string) => {
    for (const id of ids) settle(id, { ok: false, status: null, error, durationMs: 0, local: true });
  };

  function start(): { worker: Worker; sent: Set<number> } {
    const started = { worker: new Worker(threadModule, { workerData: options }), sent: new Set<number>() };
    // Never what keeps the process alive: the delivery worker's own timers decide that.
    started.worker.unref();
    started.worker.on('message', (reply: ThreadReply) => {
      if (reply === 'closed') return;
      for (const [id, result] of reply.results) {
        started.sent.delete(id);
        settle(id, result);
      }
    });
    // What this thread had in hand fails; the next POST starts another.
    const lost = (why: string) => {
      if (thread === started) thread = undefined;
      fail(started.sent, why);
      started.sent.clear();
    };
    started.worker.on('error', (error: Error) => lost(`the outbound thread failed: ${error.message}`));
    started.worker.on('exit', () => lost('the outbound thread stopped'));
    return started;
  }

  const posts = perTurn<ThreadPost>((batch) => {
    const to = (thread ??= start());
    try {
      to.worker.postMessage({ posts: batch } satisfies ThreadRequest);
      for (const [id] of batch) to.sent.add(id);
    } catch (error) {
      fail(batch.map(([id]) => id), `not sent to the outbound thread: ${(error as Error).message}`);
    }
  });
  // Sent after the POSTs of the same turn, so the thread has every one it is told to stop.
  const stops = perTurn<number>((ids) => {
    const held = ids.filter((id) => thread?.sent.has(id) === true);
    if (held.length > 0) thread!.worker.postMessage({ stop: held } satisfies ThreadRequest);
  });

  return {
    post(url, headers, body, stop) {
      if (closed) return Promise.resolve(CLOSED);
      if (stop?.aborted === true) return Promise.resolve(stopped(performance.now()));
      const id = nextId++;
      return new Promise<PostResult>((resolve) => {
        if (stop === undefined) {
          waiting.set(id, resolve);
        } else {
          const onStop = () => stops.push(id);
          stop.addEventListener('abort', onStop, { once: true });
          waiting.set(id, (result) => {
            stop.removeEventListener('abort', onStop);
            resolve(result);
          });
        }
        posts.push([id, url, headers, body]);
      });
    },
    async close() {
      closed = true;
      posts.flush();
      const running = thread;
      thread = undefined;
      if (running !== undefined) {
        // Its attempts under way are stopped, and their results come back before it exits. Held
        // meanwhile: otherwise a shutdown with nothing else left to do would end the process here,
        // before the store is closed.
        running.worker.ref();
        const exited = new Promise((resolve) => running.worker.once('exit', resolve));
        running.worker.postMessage('close' satisfies ThreadRequest);
        await exited;
      }
      fail([...waiting.keys()], 'the outbound is closed');
    },
  };
}

/** What a delivery's log says of an answer other than a 2xx. */
export function unexpectedStatus(status: number): string {
  const answered = `The receiver answered ${status}${STATUS_CODES[status] === undefined ? '' : ` ${STATUS_CODES[status]}`}`;
  if (status >= 300 && status < 400) return `${answered}, a redirect, which is not followed; a 2xx was expected`;
  return `${answered}; a 2xx was expected`;
}

// What undici throws at an answer that does not fit a plain POST: its own assertion (a 101
// without an Upgrade header) or a socket error (an unasked 100 Continue, an upgrade, bytes before
// any request). The log is read by people: it says what the receiver did.
const PROTOCOL_FAULTS: readonly [RegExp, string][] = [
  [/bad upgrade|assert\(upgrade\)/, unexpectedStatus(101)],
  [/^bad response$/, 'The receiver sent an answer to no request (an unasked 100 Continue, or bytes before the request); a 2xx was expected'],
];

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : undefined;
  if (error instanceof ForbiddenTarget || cause instanceof ForbiddenTarget) return `refused: ${(cause ?? error).message}`;
  const text = (cause ?? error).message;
  for (const [pattern, words] of PROTOCOL_FAULTS) if (pattern.test(text)) return words;
  if ((error as { code?: string }).code === 'ERR_ASSERTION') return 'The receiver\'s answer broke the HTTP/1.1 protocol; a 2xx was expected';
  if (error.name === 'HTTPParserError') return `The receiver's answer is not HTTP/1.1 (${text}); a 2xx was expected`.slice(0, 300);
  if (error.name === 'TimeoutError' || error.name === 'AbortError' || /timeout/i.test(error.name)) return 'timed out';
  const code = (error as { code?: string }).code ?? (cause as { code?: string } | undefined)?.code;
  return code === undefined ? error.message : `${code}: ${(cause ?? error).message}`.slice(0, 300);
}
