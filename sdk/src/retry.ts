// Retries of 429 and 503 answers, honouring Retry-After, as a wrapper around fetch.
//
// The rule for what is repeated:
// - 429 Too Many Requests: any request. Fleet refuses a rate-limited request before it reads the
//   body or does anything else, so sending it again cannot do anything twice.
// - 503 Service Unavailable: only a request that is safe to repeat, because a 503 may come from a
//   part (a database, a proxy) after the request did something. Safe are the idempotent methods
//   (GET, HEAD, OPTIONS, PUT, DELETE), and telemetry ingestion (POST /v2/telemetry and
//   POST /v2/telemetry/{vehicleId}) when every record carries its own timestamp: the service stores
//   a record of a vehicle and timestamp once, so a repeat is counted as a duplicate. A record
//   without a timestamp gets the time it was received, which differs on a repeat: not retried.
//   `isSafeToRepeat` replaces this judgement for POST and PATCH.
// - Nothing else is retried (not 500, not a network error): the caller sees the answer.
//
// The wait is what Retry-After says (seconds, or an HTTP date), plus up to 10 % (at most one
// second) of random jitter, so that many clients refused together do not come back together.
// Without Retry-After it is exponential (base × 2^n, full jitter between half and all of it).
// A wait longer than `maxDelayMs` is not waited out: the answer is returned as it is.

export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  attempts: number;
  /** Delay before the first retry when the answer has no Retry-After, ms (default 500). */
  baseDelayMs: number;
  /** Longest wait accepted; a longer Retry-After returns the answer instead (default 30,000). */
  maxDelayMs: number;
  /** Whether a POST or PATCH answered 503 may be sent again (default: telemetry with timestamps). */
  isSafeToRepeat: (request: Request, body: string) => boolean;
}

type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);
const TELEMETRY_PATH = /\/v2\/telemetry(?:\/(?!stream$)[^/]+)?$/;

/** Telemetry ingestion in which every record has a timestamp (see the rule above). */
export function isRepeatableTelemetry(request: Request, body: string): boolean {
  if (request.method !== 'POST' || !TELEMETRY_PATH.test(new URL(request.url).pathname)) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return false;
  }
  if (typeof parsed !== 'object' || parsed === null) return false;
  const records = (parsed as { records?: unknown }).records;
  const list = Array.isArray(records) ? (records as unknown[]) : [parsed];
  return list.every((r) => typeof r === 'object' && r !== null && typeof (r as { timestamp?: unknown }).timestamp === 'string');
}

export const DEFAULT_RETRY: RetryOptions = {
  attempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  isSafeToRepeat: isRepeatableTelemetry,
};

/**
 * Milliseconds a Retry-After value asks to wait (RFC 9110: delay-seconds or an HTTP date), or
 * undefined when it is absent or neither. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wait before attempt `attempt + 1` (attempt counts from 1), or undefined: do not retry. */
export function retryDelay(response: Response, attempt: number, options: RetryOptions, random = Math.random): number | undefined {
  const asked = parseRetryAfter(response.headers.get('retry-after'));
  let delay: number;
  if (asked !== undefined) {
    delay = asked + Math.min(1000, asked * 0.1) * random();
  } else {
    const full = options.baseDelayMs * 2 ** (attempt - 1);
    delay = full / 2 + (full / 2) * random();
  }
  return delay > options.maxDelayMs ? undefined : delay;
}

async function mayRepeat(request: Request, status: number, options: RetryOptions): Promise<boolean> {
  if (status === 429) return true;
  if (status !== 503) return false;
  if (IDEMPOTENT.has(request.method)) return true;
  if (request.method !== 'POST' && request.method !== 'PATCH') return false;
  return options.isSafeToRepeat(request, await request.clone().text());
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** fetch, with the retries above. The request's abort signal also ends a wait. */
export function retryingFetch(fetchImpl: Fetch, options: Partial<RetryOptions> = {}): Fetch {
  const settings: RetryOptions = { ...DEFAULT_RETRY, ...options };
  return async (input, init) => {
    let request = input;
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= settings.attempts;
      // A spare copy before the body is sent; only a retry uses it.
      const spare = last ? undefined : request.clone();
      const response = await fetchImpl(request, init);
      if (spare === undefined || !(await mayRepeat(spare, response.status, settings))) return response;
      const delay = retryDelay(response, attempt, settings);
      if (delay === undefined) return response;
      await response.body?.cancel();
      await sleep(delay, spare.signal);
      request = spare;
    }
  };
}
