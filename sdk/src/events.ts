// The event feed, GET /v2/events: pages `{events, next}` oldest first; `next` is never null and is
// passed back as `after`. Following `next` skips and repeats nothing, so a consumer that stores the
// `next` of each page it has handled, and starts again from it, sees every event once.
import type { Client } from 'openapi-fetch';
import { fail } from './errors.ts';
import type { EventPage, QueryParams, paths } from './types.ts';

export type FeedQuery = QueryParams<'/v2/events'>;

export interface FollowOptions extends FeedQuery {
  /** Wait between requests once the feed is caught up, ms (default 1000). */
  pollIntervalMs?: number;
  /** Stops following (the loop ends without an error). */
  signal?: AbortSignal;
}

const DEFAULT_LIMIT = 100;

async function readPage(client: Client<paths>, query: FeedQuery, signal?: AbortSignal): Promise<EventPage> {
  const { data, error, response } = await client.GET('/v2/events', { params: { query }, ...(signal === undefined ? {} : { signal }) });
  if (!response.ok || data === undefined) fail(response, error);
  return data;
}

const aborted = (signal: AbortSignal | undefined) => signal?.aborted === true;

function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export function eventFeed(client: Client<paths>) {
  return {
    /**
     * The pages from `after` (or the oldest event kept) up to now: ends with the first page that
     * is not full. Each page's `next` is where to continue later.
     */
    async *pages(query: FeedQuery = {}): AsyncGenerator<EventPage, void, undefined> {
      const limit = query.limit ?? DEFAULT_LIMIT;
      let after = query.after;
      for (;;) {
        const page = await readPage(client, { ...query, limit, ...(after === undefined ? {} : { after }) });
        yield page;
        if (page.events.length < limit) return;
        after = page.next;
      }
    },

    /**
     * Every page with events from `after` on, forever: once caught up, it asks again every
     * `pollIntervalMs`. Store each page's `next` after handling its events to resume there.
     * Ends when `signal` aborts.
     */
    async *follow(options: FollowOptions = {}): AsyncGenerator<EventPage, void, undefined> {
      const { pollIntervalMs = 1000, signal, ...query } = options;
      const limit = query.limit ?? DEFAULT_LIMIT;
      let after = query.after;
      while (!aborted(signal)) {
        let page: EventPage;
        try {
          page = await readPage(client, { ...query, limit, ...(after === undefined ? {} : { after }) }, signal);
        } catch (error) {
          if (aborted(signal)) return;
          throw error;
        }
        after = page.next;
        if (page.events.length > 0) yield page;
        if (page.events.length < limit) await wait(pollIntervalMs, signal);
      }
    },
  };
}

export type EventFeed = ReturnType<typeof eventFeed>;
