// The client: openapi-fetch over the generated paths, so every call is typed by the OpenAPI
// document (path, parameters, body, each status's answer), with the credential sent on every
// request, 429/503 retried (retry.ts), and the helpers integrators otherwise write by hand.
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { type EventFeed, eventFeed } from './events.ts';
import { type Paginators, paginators } from './paging.ts';
import { type RetryOptions, retryingFetch } from './retry.ts';
import { LiveStream, type OpenStreamOptions } from './stream.ts';
import type { paths } from './types.ts';

export interface FleetClientOptions {
  /** Where the service is, e.g. `https://fleet.example.com` (no `/v2`: paths carry it). */
  baseUrl: string;
  /** An API key (`fleet_…`). */
  apiKey?: string;
  /** An OAuth access token, or a function that gives a current one (asked before every request). */
  token?: string | (() => string | Promise<string>);
  /** The fetch to use (default: the global one). */
  fetch?: (input: Request, init?: RequestInit) => Promise<Response>;
  /** Retries of 429 and 503 answers (see retry.ts for what is repeated); `false` turns them off. */
  retry?: Partial<RetryOptions> | false;
  /** Headers sent with every request besides Authorization. */
  headers?: Record<string, string>;
}

export type FleetClient = Client<paths> & {
  /** Async iterators over every paged list. */
  readonly paginate: Paginators;
  /** The event feed: the pages up to now, or following it as it grows. */
  readonly events: EventFeed;
  /** Creates a live stream and attaches to it; it reattaches by itself after a drop. */
  openStream(options: OpenStreamOptions): Promise<LiveStream>;
};

export function createFleetClient(options: FleetClientOptions): FleetClient {
  const { baseUrl, apiKey, token, retry, headers } = options;
  if ((apiKey === undefined) === (token === undefined)) throw new TypeError('Give exactly one of apiKey and token.');
  const baseFetch = options.fetch ?? ((input: Request, init?: RequestInit) => globalThis.fetch(input, init));
  const client = createClient<paths>({
    baseUrl,
    fetch: retry === false ? baseFetch : retryingFetch(baseFetch, retry),
    ...(headers === undefined ? {} : { headers }),
  });

  const credential: Middleware = {
    async onRequest({ request }) {
      const secret = apiKey ?? (typeof token === 'function' ? await token() : token);
      request.headers.set('authorization', `Bearer ${secret}`);
      return request;
    },
  };
  client.use(credential);

  return Object.assign(client, {
    paginate: paginators(client),
    events: eventFeed(client),
    openStream: (streamOptions: OpenStreamOptions) => LiveStream.open(client, streamOptions),
  });
}
