import type { FastifyInstance } from 'fastify';
import { responses } from '../schema/common.ts';
import type { FeedService } from './feed.ts';
import { FeedPage, FeedQuery } from './schema.ts';
import { typed } from '../http/typed.ts';

export async function eventRoutes(instance: FastifyInstance, opts: { feed: FeedService }) {
  const app = typed(instance);
  app.get('/v2/events', {
    config: { scope: 'events:read' },
    schema: {
      operationId: 'listEvents',
      tags: ['events'],
      summary: 'The event feed',
      description: 'The organization\'s events in the order they were recorded, oldest first. Follow `next` (pass it as `after`): ' +
        'no event is ever skipped or repeated, across restarts and nodes. `webhook.test` events are not in the feed. ' +
        'An `after` older than the retention period answers 410 `cursor-expired`. ' +
        'A credential limited to groups reads only the events of the vehicles in its groups now (events of no vehicle are left out). The `Link` header names the next page ' +
        '(`rel="next"`, this request with `after` set to `next`) before the body, so a reader can ask for it while it reads this one.',
      querystring: FeedQuery,
      response: responses({ 200: FeedPage }, { errors: [410], headers: { 200: ['Link'] } }),
    },
  }, async (request, reply) => {
    const { body, next } = await opts.feed.read(request.principal.organizationId, request.query, request.principal.groupIds);
    // The next page's address before the body: a reader can ask for it while it reads this one.
    return reply.header('link', `<${nextPage(request.query, next)}>; rel="next"`).type('application/json; charset=utf-8').send(body);
  });
}

/** The request again, from `next` on. */
export function nextPage(query: FeedQuery, next: string): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (name !== 'after' && value !== undefined) params.set(name, String(value));
  params.set('after', next);
  return `/v2/events?${params.toString()}`;
}
