// Organizations are created by the platform organization (the one made on first start); each
// new one comes with its first admin key. Nobody else sees that other organizations exist.
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { toApiKeyView } from '../auth/keys-routes.ts';
import { CreatedApiKey, IdParams, PageQuery } from '../auth/keys-schema.ts';
import type { AuthService } from '../auth/service.ts';
import type { OrganizationRecord } from '../auth/store.ts';
import { iso } from '../clock.ts';
import { IsoTimestamp, PlainText, pageOf, responses } from '../schema/common.ts';

const OrganizationView = Type.Object(
  {
    id: Type.String({ examples: ['org_Qm2k9XrB7tLw0aZc'] }),
    name: Type.String(),
    platform: Type.Boolean({ description: 'True for the organization that operates this service.' }),
    createdAt: IsoTimestamp,
  },
  { additionalProperties: false },
);

const CreateOrganizationBody = Type.Object(
  { name: PlainText({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false, examples: [{ name: 'Northside Deliveries' }] },
);

const CreatedOrganization = Type.Object(
  { ...OrganizationView.properties, adminKey: CreatedApiKey },
  { additionalProperties: false },
);

const OrganizationList = Type.Object(
  { organizations: Type.Array(OrganizationView), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { additionalProperties: false },
);

function toView(org: OrganizationRecord) {
  return { id: org.id, name: org.name, platform: org.platform, createdAt: iso(org.createdAt) };
}

export async function organizationRoutes(app: FastifyInstance, opts: { auth: AuthService }) {
  const tags = ['organizations'];

  app.post('/v2/organizations', {
    config: { scope: 'admin', platform: true, secret: true },
    schema: {
      operationId: 'createOrganization', tags, summary: 'Create an organization with its first admin key',
      description: 'Platform organization only. The admin key\'s secret is in this response only.',
      body: CreateOrganizationBody,
      response: responses({ 201: CreatedOrganization }, { body: true }),
    },
  }, async (request, reply) => {
    const { name } = request.body as Static<typeof CreateOrganizationBody>;
    const { organization, key, secret } = await opts.auth.createOrganization({ name });
    return reply
      .code(201)
      .header('location', `/v2/organizations/${organization.id}`)
      .send({ ...toView(organization), adminKey: { ...toApiKeyView(key), key: secret } });
  });

  app.get('/v2/organizations/:id', {
    config: { scope: 'admin', platform: true },
    schema: {
      operationId: 'getOrganization', tags, summary: 'Read an organization',
      description: 'Platform organization only.',
      params: IdParams,
      response: responses({ 200: OrganizationView }, { errors: [404] }),
    },
  }, async (request) => toView(await opts.auth.getOrganization((request.params as { id: string }).id)));

  app.get('/v2/organizations', {
    config: { scope: 'admin', platform: true },
    schema: {
      operationId: 'listOrganizations', tags, summary: 'List organizations',
      description: 'Platform organization only. Oldest first.',
      querystring: PageQuery,
      response: responses({ 200: OrganizationList }),
    },
  }, async (request) => {
    const page = pageOf(request.query as PageQuery);
    const { organizations, total } = await opts.auth.listOrganizations(page);
    return { organizations: organizations.map(toView), total, ...page };
  });
}
