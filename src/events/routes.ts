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
        'An `after` older than the retention period answers 410 `cursor-expired`.',
      querystring: FeedQuery,
      response: responses({ 200: FeedPage }, { errors: [410] }),
    },
  }, async (request, reply) => reply.type('application/json; charset=utf-8').send(await opts.feed.read(request.principal.organizationId, request.query)));
}
