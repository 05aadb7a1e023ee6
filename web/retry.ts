// Requests the service pushed back: a request answered 429 (the credential's rate limit) or 503
// (the service shedding load) is sent again once its Retry-After has passed, as the SDK does it
// (sdk/src/retry.ts: a 429 is refused before anything is done, so any request is sent again; a
// 503 only for the idempotent methods; up to four attempts; a Retry-After past 30 s is not waited
// out). So a page opened while a script uses up the key's budget fills in a moment later instead
// of staying empty. No POST or PATCH of the dashboard is repeated after a 503: the person sees the
// problem and decides. DOM-free (fetch and timers only), so it is tested in Node against a real
// service.
import { parseRetryAfter, retryingFetch } from '../sdk/src/retry.ts';

const patient = retryingFetch((request) => fetch(request), { isSafeToRepeat: () => false });

/** `fetch`, with a request pushed back sent again after its Retry-After (see above). */
export function fetchPatiently(url: string, init: RequestInit): Promise<Response> {
  return patient(new Request(url, init));
}

/** Whole seconds from `Retry-After`, when present. */
export function retryAfterOf(res: Response): number | undefined {
  const ms = parseRetryAfter(res.headers.get('retry-after'));
  return ms === undefined ? undefined : Math.ceil(ms / 1000);
}
