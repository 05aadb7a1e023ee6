import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging, PlainText } from '../schema/common.ts';
import { SCOPES } from './scopes.ts';
import { named } from '../schema/named.ts';
import { CredentialGroups } from '../groups/schema.ts';

export const ScopeSchema = named('Scope', Type.Enum(SCOPES, { description: 'A permission a credential holds.' }));

export const ScopeList = Type.Array(ScopeSchema, {
  minItems: 1,
  uniqueItems: true,
  description: 'Scopes; never more than the creator holds.',
});

const apiKeyProperties = {
  id: Type.String({ examples: ['key_3x9Zb0qLrT2wYp1m'] }),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the key, to tell keys apart.', examples: ['fleet_Ab12Cd34'] }),
  scopes: Type.Array(ScopeSchema),
  groupIds: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'The vehicle groups the key is limited to; null: the whole organization.' }),
  createdAt: IsoTimestamp,
  lastUsedAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'Updated at most once a minute.' }),
  expiresAt: Type.Union([IsoTimestamp, Type.Null()]),
};

export const ApiKeyView = named('ApiKey', Type.Object(apiKeyProperties, { additionalProperties: false }), 'An API key, without its secret.');

export const CreatedApiKey = named('CreatedApiKey', Type.Object(
  {
    ...apiKeyProperties,
    key: Type.String({ description: 'The secret. Shown in this response only; store it now.' }),
  },
  { additionalProperties: false },
), 'A new API key, with its secret (shown this once).');

export const CreateApiKeyBody = named('ApiKeyCreation', Type.Object(
  {
    name: PlainText({ minLength: 1, maxLength: 100 }),
    scopes: ScopeList,
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the key stops working; in the future.' })),
    groupIds: Type.Optional(CredentialGroups),
  },
  { additionalProperties: false, examples: [
    { name: 'telematics gateway', scopes: ['telemetry:write'], expiresAt: '2027-06-30T00:00:00.000Z' },
    { name: 'Berlin dispatch board', scopes: ['fleet:read', 'telemetry:read', 'streams', 'events:read'], groupIds: ['grp_7Qm2Lw9ZbT4kX1cNp8Rs'] },
  ] },
), 'An API key to create.');
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;

export const ApiKeyList = named('ApiKeyList', Type.Object(
  { apiKeys: Type.Array(ApiKeyView), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { additionalProperties: false },
), 'A page of API keys.');

export const PageQuery = Type.Object(Paging, { additionalProperties: false });
export type PageQuery = Static<typeof PageQuery>;

export const IdParams = Type.Object(
  { id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'The key id (`key_…`).', examples: ['key_3x9Zb0qLrT2wYp1m'] }) },
  { additionalProperties: false },
);
