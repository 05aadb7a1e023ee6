import { Type, type Static } from 'typebox';
import { IsoTimestamp } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { RoleSchema } from '../people/schema.ts';

const Issuer = Type.String({
  minLength: 8, maxLength: 2048,
  description: 'The provider\'s issuer identifier (`iss`): `{issuer}/.well-known/openid-configuration` must describe it. https; http only with `FLEET_SSO_ALLOW_PRIVATE=true`.',
  examples: ['https://login.example.com/realms/acme'],
});
const RoleMap = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), RoleSchema, {
  minProperties: 1, maxProperties: 100,
  description: 'Values of the role claim and the role each gives; a person with several gets the highest.',
  examples: [{ 'fleet-admins': 'admin', dispatch: 'operator' }],
});
const Domains = Type.Array(Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$' }), {
  minItems: 1, maxItems: 100, description: 'Only emails of these domains may sign in (compared without regard to case).',
});

export const SsoSettings = named('SsoSettings', Type.Object({
  issuer: Issuer,
  clientId: Type.String({ minLength: 1, maxLength: 256, description: 'The client id Fleet is registered with at the provider.' }),
  clientSecret: Type.String({ minLength: 1, maxLength: 1024, description: 'The client secret; never shown again.' }),
  roleClaim: Type.Optional(Type.String({ minLength: 1, maxLength: 100, default: 'groups', description: 'The ID token claim (a string or a list of strings) whose values `roleMap` maps; default `groups`.' })),
  roleMap: RoleMap,
  allowedEmailDomains: Type.Optional(Domains),
}, {
  additionalProperties: false,
  examples: [{
    issuer: 'https://login.example.com/realms/acme', clientId: 'fleet', clientSecret: 'from-the-provider',
    roleMap: { 'fleet-admins': 'admin', dispatch: 'operator' }, allowedEmailDomains: ['example.com'],
  }],
}), 'The organization\'s OpenID provider, as configured.');
export type SsoSettings = Static<typeof SsoSettings>;

export const SsoConfiguration = named('SsoConfiguration', Type.Object({
  issuer: Type.String(),
  clientId: Type.String(),
  roleClaim: Type.String(),
  roleMap: Type.Record(Type.String(), RoleSchema),
  allowedEmailDomains: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'null: any domain.' }),
  redirectUri: Type.String({ description: 'The redirect URI to register at the provider.' }),
  signInUrl: Type.String({ description: 'Where the organization\'s people start a single sign-on.' }),
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
}, { additionalProperties: false }), 'The organization\'s OpenID provider (the client secret is never shown).');

export const SsoStartParams = Type.Object(
  { organizationId: Type.String({ pattern: '^org_[A-Za-z0-9_-]{16}$', description: 'The organization whose provider signs the person in.', examples: ['org_3q2Yx1lK0m9Zb7aQ'] }) },
  { additionalProperties: false },
);

export const SsoStartQuery = Type.Object({
  returnTo: Type.Optional(Type.String({ maxLength: 2048, description: 'A path on this service to land on once signed in; anything else lands on `/`.' })),
}, { additionalProperties: false });

export const SsoCallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  state: Type.Optional(Type.String({ maxLength: 1024 })),
  iss: Type.Optional(Type.String({ maxLength: 2048 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 4096 })),
}, { additionalProperties: true, description: 'The provider\'s authorization response.' });

export const Redirect = Type.Null({ description: 'A redirect: the browser follows `Location`.' });
