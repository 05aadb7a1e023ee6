// OAuth routes: management under /v2 (JSON, bearer-authenticated, scope `admin`) and the protocol
// endpoints (endpoints.ts). `oauthRoutes` is the one plugin app/http.ts registers.
import type { FastifyInstance } from 'fastify';
import { iso } from '../../clock.ts';
import { NoContent, responses } from '../../schema/common.ts';
import type { OAuthService } from './clients.ts';
import { type OAuthEndpointOptions, oauthEndpoints } from './endpoints.ts';
import {
  CreateOAuthClientBody,
  CreatedOAuthClient,
  OAuthClient,
  OAuthClientList,
  OAuthClientParams,
  RotatedKey,
} from './schema.ts';
import type { OAuthClientRecord } from './store.ts';
import { typed } from '../../http/typed.ts';

const base = '/v2/oauth-clients';
const TAGS = ['oauth'];

const view = (client: OAuthClientRecord) => ({
  id: client.id,
  name: client.name,
  scopes: client.scopes,
  groupIds: client.groupIds,
  createdAt: iso(client.createdAt),
});

async function managementRoutes(instance: FastifyInstance, opts: { oauth: OAuthService }) {
  const app = typed(instance);
  const { oauth } = opts;

  app.post(base, {
    config: { scope: 'admin', secret: true },
    schema: {
      tags: TAGS, operationId: 'createOAuthClient', summary: 'Create an OAuth client',
      description:
        'The client belongs to the caller\'s organization; its `scopes` must be a subset of the caller\'s. ' +
        '`clientSecret` appears in this response only. Past `FLEET_QUOTA_OAUTH_CLIENTS` answers `403 quota-exceeded`. ' +
        'With `groupIds` its tokens see only the vehicles in those groups (docs/API.md "Scoped credentials"); it cannot hold an organization-wide scope (400).',
      body: CreateOAuthClientBody,
      response: responses({ 201: CreatedOAuthClient }, { body: true, location: true, errors: [404] }),
    },
  }, async (request, reply) => {
    const { client, secret } = await oauth.createClient(request.principal, request.body);
    return reply
      .code(201)
      .header('location', `${base}/${client.id}`)
      .send({ ...view(client), clientSecret: secret });
  });

  app.get(base, {
    config: { scope: 'admin' },
    schema: {
      tags: TAGS, operationId: 'listOAuthClients', summary: 'List the organization\'s OAuth clients',
      description: 'Oldest first, without secrets.',
      response: responses({ 200: OAuthClientList }),
    },
  }, async (request) => {
    const clients = await oauth.listClients(request.principal);
    return { oauthClients: clients.map(view), total: clients.length };
  });

  app.get(`${base}/:id`, {
    config: { scope: 'admin' },
    schema: {
      tags: TAGS, operationId: 'getOAuthClient', summary: 'Read an OAuth client',
      params: OAuthClientParams,
      response: responses({ 200: OAuthClient }, { errors: [404] }),
    },
  }, async (request) => view(await oauth.getClient(request.principal, request.params.id)));

  app.delete(`${base}/:id`, {
    config: { scope: 'admin' },
    schema: {
      tags: TAGS, operationId: 'deleteOAuthClient', summary: 'Delete an OAuth client',
      description: 'At once: its secret no longer authenticates and every access token issued to it is refused.',
      params: OAuthClientParams,
      response: responses({ 204: NoContent }, { errors: [404] }),
    },
  }, async (request, reply) => {
    await oauth.deleteClient(request.principal, request.params.id);
    return reply.code(204).send();
  });

  app.post('/v2/oauth/signing-keys', {
    config: { scope: 'admin', platform: true },
    schema: {
      tags: TAGS, operationId: 'rotateOAuthSigningKey', summary: 'Rotate the token signing key',
      description:
        'A new ES256 key signs every token from now on. Older keys stay in the JWKS until every token they signed has ' +
        'expired (the token TTL), then they are dropped. Platform organization only.',
      response: responses({ 201: RotatedKey }),
    },
  }, async (_request, reply) => {
    const key = await oauth.rotateSigningKey();
    return reply.code(201).send({ kid: key.kid, createdAt: iso(key.createdAt) });
  });
}

export async function oauthRoutes(app: FastifyInstance, opts: OAuthEndpointOptions) {
  await app.register(managementRoutes, { oauth: opts.oauth });
  await app.register(oauthEndpoints, opts);
}
