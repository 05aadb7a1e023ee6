// The event feed: an organization's events in the order they were recorded, followed with an
// opaque cursor that never skips or repeats an event.
import { AppError } from '../errors.ts';
import { FEED_LIMIT_DEFAULT, type FeedQuery } from './schema.ts';
import { type EventStore, type Position, START } from './store.ts';
import type { EventType } from './types.ts';

export type FeedService = ReturnType<typeof createFeedService>;

export function createFeedService(deps: { store: EventStore }) {
  /** A page of the feed: the JSON text of the response, and its `next` cursor. */
  /** `anyOfGroups`: a credential limited to groups reads only the events of vehicles in them (docs/API.md "Scoped credentials"). */
  async function read(organizationId: string, query: FeedQuery, anyOfGroups?: readonly string[]): Promise<{ body: string; next: string }> {
    const after = query.after === undefined ? START : decodeCursor(query.after);
    const page = await deps.store.feed(organizationId, {
      after,
      types: query.types === undefined ? undefined : ([...new Set(query.types.split(','))] as EventType[]),
      vehicleId: query.vehicleId,
      ...(anyOfGroups === undefined ? {} : { anyOfGroups }),
      limit: query.limit ?? FEED_LIMIT_DEFAULT,
    });
    if (page.gone) {
      throw new AppError('cursor-expired', 'Events after this cursor are no longer kept; start again without `after`.');
    }
    // The store gives the envelopes as JSON text: a page of 1000 is neither parsed nor serialized here.
    const next = encodeCursor(page.next);
    return { body: `{"events":[${page.envelopes}],"next":"${next}"}`, next };
  }
  return { read };
}

export function encodeCursor([tx, seq]: Position): string {
  return Buffer.from(`e1:${tx}:${seq}`).toString('base64url');
}

export function decodeCursor(cursor: string): Position {
  const match = /^e1:(\d{1,16}):(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) {
    throw new AppError('validation-failed', 'The cursor is not one this service issued.', {
      errors: [{ in: 'query', path: '/after', message: 'is not a valid cursor' }],
    });
  }
  return [Number(match[1]), Number(match[2])];
}
