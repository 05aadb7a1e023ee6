// Organizations are created by the platform organization (the one made on first start); each
// new one comes with its first admin key. Nobody else sees that other organizations exist.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { toApiKeyView } from '../auth/keys-routes.ts';
import { CreatedApiKey, PageQuery } from '../auth/keys-schema.ts';
import type { AuthService } from '../auth/service.ts';
import type { OrganizationRecord } from '../auth/store.ts';
import { iso } from '../clock.ts';
import { IsoTimestamp, PlainText, pageOf, responses } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { typed } from '../http/typed.ts';

const organizationProperties = {
  id: Type.String({ examples: ['org_Qm2k9XrB7tLw0aZc'] }),
  name: Type.String(),
  platform: Type.Boolean({ description: 'True for the organization that operates this service.' }),
  createdAt: IsoTimestamp,
};

const OrganizationView = named('Organization', Type.Object(organizationProperties, { additionalProperties: false }), 'An organization.');

const CreateOrganizationBody = named('OrganizationCreation', Type.Object(
  { name: PlainText({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false, examples: [{ name: 'Northside Deliveries' }] },
), 'An organization to create.');

const CreatedOrganization = named('CreatedOrganization', Type.Object(
  { ...organizationProperties, adminKey: CreatedApiKey },
  { additionalProperties: false },
), 'A new organization, with its first admin key (shown this once).');

const OrganizationList = named('OrganizationList', Type.Object(
  { organizations: Type.Array(OrganizationView), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { additionalProperties: false },
), 'A page of organizations.');

const IdParams = Type.Object(
  { id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'The organization id (`org_…`).', examples: ['org_Qm2k9XrB7tLw0aZc'] }) },
  { additionalProperties: false },
);

function toView(org: OrganizationRecord) {
  return { id: org.id, name: org.name, platform: org.platform, createdAt: iso(org.createdAt) };
}

export async function organizationRoutes(instance: FastifyInstance, opts: { auth: AuthService }) {
  const app = typed(instance);
  const tags = ['organizations'];

  app.post('/v2/organizations', {
    config: { scope: 'admin', platform: true, secret: true },
    schema: {
      operationId: 'createOrganization', tags, summary: 'Create an organization with its first admin key',
      description: 'Platform organization only. The admin key\'s secret is in this response only.',
      body: CreateOrganizationBody,
      response: responses({ 201: CreatedOrganization }, { body: true, location: true }),
    },
  }, async (request, reply) => {
    const { name } = request.body;
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
  }, async (request) => toView(await opts.auth.getOrganization(request.params.id)));

  app.get('/v2/organizations', {
    config: { scope: 'admin', platform: true },
    schema: {
      operationId: 'listOrganizations', tags, summary: 'List organizations',
      description: 'Platform organization only. Oldest first.',
      querystring: PageQuery,
      response: responses({ 200: OrganizationList }),
    },
  }, async (request) => {
    const page = pageOf(request.query);
    const { organizations, total } = await opts.auth.listOrganizations(page);
    return { organizations: organizations.map(toView), total, ...page };
  });
}
