// API key management for an organization's admins: create (secret shown once), list, read, revoke.
import type { FastifyInstance } from 'fastify';
import { iso } from '../clock.ts';
import { NoContent, pageOf, responses } from '../schema/common.ts';
import { ApiKeyList, ApiKeyView, CreateApiKeyBody, CreatedApiKey, IdParams, PageQuery } from './keys-schema.ts';
import type { AuthService } from './service.ts';
import type { ApiKeyRecord } from './store.ts';
import { typed } from '../http/typed.ts';

export function toApiKeyView(key: ApiKeyRecord) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.displayPrefix,
    scopes: key.scopes,
    groupIds: key.groupIds,
    createdAt: iso(key.createdAt),
    lastUsedAt: key.lastUsedAt === null ? null : iso(key.lastUsedAt),
    expiresAt: key.expiresAt === null ? null : iso(key.expiresAt),
  };
}

export async function apiKeyRoutes(instance: FastifyInstance, opts: { auth: AuthService }) {
  const app = typed(instance);
  const { auth } = opts;
  const tags = ['credentials'];

  app.post('/v2/api-keys', {
    config: { scope: 'admin', secret: true },
    schema: {
      operationId: 'createApiKey', tags, summary: 'Create an API key',
      description: 'The secret is in this response only. Scopes must be a subset of the caller\'s (403 otherwise). ' +
        'With `groupIds` the key sees only the vehicles in those groups (docs/API.md "Scoped credentials"); it cannot hold an organization-wide scope (400), and a group that does not exist answers 404.',
      body: CreateApiKeyBody,
      response: responses({ 201: CreatedApiKey }, { body: true, location: true, errors: [404] }),
    },
  }, async (request, reply) => {
    const body = request.body;
    const { key, secret } = await auth.issueKey(request.principal, {
      name: body.name,
      scopes: body.scopes,
      ...(body.groupIds === undefined ? {} : { groupIds: body.groupIds }),
      ...(body.expiresAt === undefined ? {} : { expiresAt: Date.parse(body.expiresAt) }),
    });
    return reply.code(201).header('location', `/v2/api-keys/${key.id}`).send({ ...toApiKeyView(key), key: secret });
  });

  app.get('/v2/api-keys', {
    config: { scope: 'admin' },
    schema: {
      operationId: 'listApiKeys', tags, summary: 'List the organization\'s API keys',
      description: 'Unrevoked keys, oldest first, without secrets.',
      querystring: PageQuery,
      response: responses({ 200: ApiKeyList }),
    },
  }, async (request) => {
    const page = pageOf(request.query);
    const { keys, total } = await auth.listKeys(request.principal, page);
    return { apiKeys: keys.map(toApiKeyView), total, ...page };
  });

  app.get('/v2/api-keys/:id', {
    config: { scope: 'admin' },
    schema: {
      operationId: 'getApiKey', tags, summary: 'Read an API key (without its secret)',
      params: IdParams,
      response: responses({ 200: ApiKeyView }, { errors: [404] }),
    },
  }, async (request) => toApiKeyView(await auth.getKey(request.principal, request.params.id)));

  app.delete('/v2/api-keys/:id', {
    config: { scope: 'admin' },
    schema: {
      operationId: 'revokeApiKey', tags, summary: 'Revoke an API key',
      description: 'Takes effect at once: the next request with the key is refused.',
      params: IdParams,
      response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await auth.revokeKey(request.principal, request.params.id);
    return reply.code(204).send();
  });
}
