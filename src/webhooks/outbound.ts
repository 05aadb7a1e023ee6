// Outbound HTTP for webhook deliveries, on undici. The target's addresses are checked on every
// attempt after the name is resolved, and the connection goes to the address that was checked
// (the lookup is undici's own, so a name that resolves elsewhere a moment later gains nothing).
// Redirects are never followed, and at most 64 KiB of a response is read.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { forbiddenAddress } from './addresses.ts';

export const RESPONSE_READ_LIMIT = 64 * 1024;

export interface PostResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
}

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
 * attempt: about 2 µs each, at tens of thousands of attempts a second.)
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
    /** A signal aborted `ms` from now (or a little later), unless `done` is called first. */
    start(ms: number): { signal: AbortSignal; done(): void } {
      const controller = new AbortController();
      open.set(controller, performance.now() + ms);
      timer ??= setInterval(sweep, TICK_MS).unref();
      return { signal: controller.signal, done: () => open.delete(controller) };
    },
    close(): void {
      clearInterval(timer);
      timer = undefined;
      open.clear();
    },
  };
}

export function createOutbound(options: { allowPrivate: boolean; timeoutMs: number; connections?: number }) {
  const deadlines = createDeadlines();
  const agent = new Agent({
    connect: { lookup: checkedLookup(options.allowPrivate), timeout: options.timeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    connections: options.connections ?? 32,
  });

  async function post(url: string, headers: Record<string, string>, body: string): Promise<PostResult> {
    const started = performance.now();
    const done = (ok: boolean, status: number | null, error: string | null): PostResult =>
      ({ ok, status, error, durationMs: Math.round(performance.now() - started) });
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
    try {
      const { signal } = deadline;
      const response = await request(target, { method: 'POST', headers, body, dispatcher: agent, signal });
      // Read (and drop) at most 64 KiB, so the connection can be reused; past that it is closed.
      await response.body.dump({ limit: RESPONSE_READ_LIMIT, signal });
      const status = response.statusCode;
      if (status >= 200 && status < 300) return done(true, status, null);
      return done(false, status, status >= 300 && status < 400 ? `redirect (${status}) not followed` : `answered ${status}`);
    } catch (error) {
      return done(false, null, describe(error));
    } finally {
      deadline.done();
    }
  }

  return {
    post,
    close: () => {
      deadlines.close();
      return agent.close();
    },
  };
}

export type Outbound = ReturnType<typeof createOutbound>;

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause : undefined;
  if (error instanceof ForbiddenTarget || cause instanceof ForbiddenTarget) return `refused: ${(cause ?? error).message}`;
  if (error.name === 'TimeoutError' || error.name === 'AbortError' || /timeout/i.test(error.name)) return 'timed out';
  const code = (error as { code?: string }).code ?? (cause as { code?: string } | undefined)?.code;
  return code === undefined ? error.message : `${code}: ${(cause ?? error).message}`.slice(0, 300);
}
