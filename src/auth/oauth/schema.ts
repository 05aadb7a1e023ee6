// OAuth schemas: management (JSON, /v2) and the OAuth endpoints (form bodies in, RFC-shaped JSON out).
import { Type, type Static } from 'typebox';
import { IsoTimestamp, PlainText } from '../../schema/common.ts';
import { SCOPES } from '../scopes.ts';
import { OAUTH_ERRORS } from './errors.ts';
import { named } from '../../schema/named.ts';
import { CredentialGroups } from '../../groups/schema.ts';

const ScopeSchema = Type.Enum(SCOPES, { description: 'A scope.' });

export const OAuthClientId = Type.String({
  pattern: '^oc_[0-9A-Za-z]{22}$',
  description: 'The client id (`client_id` at the token endpoint).',
  examples: ['oc_4fQz9XbL2mTq7WcR1nYp8k'],
});

export const OAuthClientParams = Type.Object({ id: OAuthClientId }, { additionalProperties: false });

export const CreateOAuthClientBody = named('OAuthClientCreation', Type.Object(
  {
    name: PlainText({ minLength: 1, maxLength: 100, description: 'For people: what the client is.' }),
    scopes: Type.Array(ScopeSchema, {
      minItems: 1,
      uniqueItems: true,
      description: 'The most a token of this client can hold; a subset of the creator\'s scopes.',
    }),
    groupIds: Type.Optional(CredentialGroups),
  },
  { additionalProperties: false, examples: [{ name: 'dispatch backend', scopes: ['fleet:read', 'telemetry:read'] }] },
), 'An OAuth client to create.');
export type CreateOAuthClientBody = Static<typeof CreateOAuthClientBody>;

const clientProperties = {
  id: OAuthClientId,
  name: Type.String(),
  scopes: Type.Array(ScopeSchema),
  groupIds: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'The vehicle groups its tokens are limited to; null: the whole organization.' }),
  createdAt: IsoTimestamp,
};

export const OAuthClient = named('OAuthClient', Type.Object(clientProperties, { additionalProperties: false, description: 'An OAuth client, without its secret.' }));

export const CreatedOAuthClient = named('CreatedOAuthClient', Type.Object(
  {
    ...clientProperties,
    clientSecret: Type.String({ description: 'Shown in this response only; only its SHA-256 is stored.' }),
  },
  { additionalProperties: false, description: 'The new client, with its secret (shown this once).' },
));

export const OAuthClientList = named('OAuthClientList', Type.Object(
  { oauthClients: Type.Array(OAuthClient, { description: 'Oldest first.' }), total: Type.Integer() },
  { additionalProperties: false, description: 'The organization\'s OAuth clients.' },
));

export const RotatedKey = named('SigningKey', Type.Object(
  { kid: Type.String({ description: 'Key id of the new signer, as in the JWKS and token headers.' }), createdAt: IsoTimestamp },
  { additionalProperties: false, description: 'The new signing key.' },
));

// --- OAuth endpoints ------------------------------------------------------------------------

/** RFC 6749 §5.2; also the error shape of revocation and introspection. */
export const OAuthErrorBody = named('OAuthError', Type.Object(
  {
    error: Type.Enum(OAUTH_ERRORS),
    error_description: Type.Optional(Type.String()),
  },
  {
    additionalProperties: false,
    description: 'OAuth 2.0 error (RFC 6749 §5.2), not problem+json.',
    examples: [{ error: 'invalid_client', error_description: 'Client authentication failed.' }],
  },
));

const ClientAuthFields = {
  client_id: Type.Optional(Type.String({ description: 'client_secret_post; or use HTTP Basic (client_secret_basic), not both.' })),
  client_secret: Type.Optional(Type.String()),
};

// RFC 6749 §3.2: unknown parameters are ignored, so these bodies allow additional properties.
export const TokenRequestBody = Type.Object(
  {
    grant_type: Type.String({ description: 'Only `client_credentials`.', examples: ['client_credentials'] }),
    scope: Type.Optional(Type.String({ description: 'Space-separated; narrows the token to these of the client\'s scopes.' })),
    ...ClientAuthFields,
  },
  { additionalProperties: true },
);
export type TokenRequestBody = Static<typeof TokenRequestBody>;

export const TokenResponse = named('TokenResponse', Type.Object(
  {
    access_token: Type.String({ description: 'A JWT (RFC 9068), `typ: at+jwt`, signed ES256.' }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds.' }),
    scope: Type.String({ description: 'Space-separated scopes the token holds.' }),
  },
  { additionalProperties: false, description: 'An access token (RFC 6749 §5.1).' },
));

export const TokenBody = Type.Object(
  {
    token: Type.String({ description: 'The access token.' }),
    token_type_hint: Type.Optional(Type.String()),
    ...ClientAuthFields,
  },
  { additionalProperties: true },
);
export type TokenBody = Static<typeof TokenBody>;

export const Introspection = named('TokenIntrospection', Type.Object(
  {
    active: Type.Boolean(),
    scope: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    sub: Type.Optional(Type.String()),
    exp: Type.Optional(Type.Integer()),
    iat: Type.Optional(Type.Integer()),
    iss: Type.Optional(Type.String()),
    aud: Type.Optional(Type.String()),
    jti: Type.Optional(Type.String()),
    token_type: Type.Optional(Type.Literal('Bearer')),
  },
  { additionalProperties: false, description: 'RFC 7662. Only `{active: false}` for a token that is not live or not of the caller\'s organization.' },
));

export const EmptyBody = Type.Null({ description: 'Empty body.' });

export const Jwks = named('JsonWebKeySet', Type.Object(
  {
    keys: Type.Array(
      // Public members only: the serializer drops anything else (a private `d` can never leave).
      Type.Object(
        {
          kty: Type.String(),
          crv: Type.String(),
          x: Type.String(),
          y: Type.String(),
          kid: Type.String(),
          alg: Type.String(),
          use: Type.Literal('sig'),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: 'JSON Web Key Set (RFC 7517): the keys that verify Fleet\'s access tokens.' },
));

export const ServerMetadata = named('AuthorizationServerMetadata', Type.Object(
  {
    issuer: Type.String(),
    token_endpoint: Type.String(),
    jwks_uri: Type.String(),
    revocation_endpoint: Type.String(),
    introspection_endpoint: Type.String(),
    grant_types_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    introspection_endpoint_auth_methods_supported: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    service_documentation: Type.String(),
  },
  { additionalProperties: false, description: 'OAuth 2.0 authorization server metadata (RFC 8414).' },
));
