// Reads the service pushed back: a GET answered 429 (the credential's rate limit) or 503 (the
// service shedding load) with a Retry-After is sent again once that time has passed, a few times,
// so a page opened while a script uses up the key's budget fills in a moment later instead of
// staying empty. Writes are sent once: the person sees the problem and decides. DOM-free (fetch
// and timers only), so it is tested in Node against a real service.

/** How many times a read is sent while the service answers 429 or 503 with a Retry-After. */
export const READ_ATTEMPTS = 4;
/** The longest Retry-After a read waits out, seconds (longer: the problem is shown at once). */
export const READ_RETRY_MAX_SECONDS = 30;

/** Seconds from `Retry-After` (delay-seconds only, as the service sends it), when present. */
export function retryAfterOf(res: Response): number | undefined {
  const value = res.headers.get('retry-after');
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

/** Resolves after `ms`, or rejects with the signal's reason (an AbortError) once it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason as Error);
      return;
    }
    const aborted = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/** `fetch`, with a read pushed back sent again after its Retry-After (see above). */
export async function fetchPatiently(url: string, init: RequestInit): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(url, init);
    const wait = res.status === 429 || res.status === 503 ? retryAfterOf(res) : undefined;
    if ((init.method ?? 'GET') !== 'GET' || wait === undefined || wait > READ_RETRY_MAX_SECONDS || attempt >= READ_ATTEMPTS) return res;
    await res.body?.cancel();
    await pause(wait * 1000, init.signal ?? undefined);
  }
}
