import { Type, type Static } from 'typebox';
import { ScopeSchema } from '../auth/keys-schema.ts';
import { IsoTimestamp, Paging, PlainText } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { CredentialGroups } from '../groups/schema.ts';
import { ROLES } from './roles.ts';

export const RoleSchema = named('Role', Type.Enum(ROLES, {
  description: 'What a user may do: `admin` every scope; `manager`, `operator` and `viewer` fewer (docs/API.md "Users and sessions").',
}));

/** Case is kept as given; two emails that differ only in case are the same user. */
const Email = Type.String({
  minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$',
  description: 'An email address; unique across the service, compared without regard to case.', examples: ['dana@example.com'],
});
const Password = Type.String({ minLength: 12, maxLength: 256, description: '12 to 256 characters.' });
/** A password given to be checked: any length up to the limit, so a short one is a wrong one, not a 400. */
const GivenPassword = Type.String({ minLength: 1, maxLength: 256 });

const userProperties = {
  id: Type.String({ examples: ['usr_4fJ2k9QmZt7Lw0Xb3nVc'] }),
  email: Type.String(),
  name: Type.String(),
  role: RoleSchema,
  groupIds: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'The groups the user is limited to; null: the whole organization.' }),
  status: Type.Union([Type.Literal('invited'), Type.Literal('active'), Type.Literal('disabled')], {
    description: '`invited` until the invitation is accepted; a `disabled` user cannot sign in.',
  }),
  createdAt: IsoTimestamp,
  lastLoginAt: Type.Union([IsoTimestamp, Type.Null()]),
  totpEnabled: Type.Boolean({ description: 'Sign-in asks for a TOTP code as well.' }),
  sso: Type.Boolean({ description: 'Created by a sign-in through the organization\'s OpenID provider.' }),
};

export const User = named('User', Type.Object(userProperties, { additionalProperties: false }), 'A person who signs in to the organization.');

export const Invitation = named('Invitation', Type.Object({
  token: Type.String({ description: 'Single use; shown in this response only.' }),
  url: Type.String({ description: 'The dashboard page that sets a password with the token.' }),
  expiresAt: IsoTimestamp,
}, { additionalProperties: false }), 'An invitation to set a password: valid 72 hours, once.');

export const InvitedUser = named('InvitedUser', Type.Object(
  { ...userProperties, invitation: Invitation },
  { additionalProperties: false },
), 'A user with a new invitation (shown this once).');

export const UserCreation = named('UserCreation', Type.Object({
  email: Email,
  name: PlainText({ minLength: 1, maxLength: 100 }),
  role: RoleSchema,
  groupIds: Type.Optional(CredentialGroups),
}, { additionalProperties: false, examples: [{ email: 'dana@example.com', name: 'Dana Ortiz', role: 'operator' }, { email: 'lena@example.com', name: 'Lena Vogt', role: 'operator', groupIds: ['grp_4fJ2k9QmZt7Lw0Xb3nVc'] }] }), 'A user to invite.');
export type UserCreation = Static<typeof UserCreation>;

export const UserChange = named('UserChange', Type.Object({
  name: Type.Optional(PlainText({ minLength: 1, maxLength: 100 })),
  role: Type.Optional(RoleSchema),
  groupIds: Type.Optional(Type.Union([CredentialGroups, Type.Null()], { description: 'The groups the user is limited to (replaces the list); null: the whole organization.' })),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')], {
    description: '`disabled` signs the user out everywhere at once; `active` lets them sign in again.',
  })),
}, { additionalProperties: false, minProperties: 1, examples: [{ role: 'manager' }, { status: 'disabled' }] }), 'Changes to a user: only the fields given.');
export type UserChange = Static<typeof UserChange>;

export const UserList = named('UserList', Type.Object(
  { users: Type.Array(User), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { additionalProperties: false },
), 'A page of users, oldest first.');

export const UserIdParams = Type.Object(
  { id: Type.String({ pattern: '^usr_[A-Za-z0-9]{20}$', description: 'The user id (`usr_…`).', examples: ['usr_4fJ2k9QmZt7Lw0Xb3nVc'] }) },
  { additionalProperties: false },
);

export const UserPageQuery = Type.Object(Paging, { additionalProperties: false });

export const SignIn = named('SignIn', Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254 }),
  password: GivenPassword,
  totpCode: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'The 6-digit code of the authenticator app, or a recovery code.' })),
}, { additionalProperties: false, examples: [{ email: 'dana@example.com', password: 'correct horse battery' }] }), 'A password sign-in.');
export type SignIn = Static<typeof SignIn>;

export const Session = named('Session', Type.Object({
  user: User,
  scopes: Type.Array(ScopeSchema, { description: 'What the user\'s role allows.' }),
  csrfToken: Type.String({ description: 'Send it as `X-CSRF-Token` on every POST, PUT, PATCH and DELETE made with the session cookie.' }),
  expiresAt: IsoTimestamp,
}, { additionalProperties: false }), 'The signed-in person: the session cookie `fleet_session` is set with it.');

export const InvitationAcceptance = named('InvitationAcceptance', Type.Object({
  token: Type.String({ minLength: 1, maxLength: 128 }),
  password: Password,
}, { additionalProperties: false }), 'An invitation\'s token and the password to set.');
export type InvitationAcceptance = Static<typeof InvitationAcceptance>;

export const PasswordChange = named('PasswordChange', Type.Object({
  currentPassword: GivenPassword,
  newPassword: Password,
}, { additionalProperties: false }), 'A change of one\'s own password; the other sessions end.');
export type PasswordChange = Static<typeof PasswordChange>;

export const TotpEnrolment = named('TotpEnrolment', Type.Object({
  secret: Type.String({ description: 'Base32; enter it in an authenticator app, or open `otpauthUrl` as a QR code.' }),
  otpauthUrl: Type.String(),
}, { additionalProperties: false }), 'A TOTP secret waiting for its first code.');

export const TotpConfirmation = named('TotpConfirmation', Type.Object({
  code: Type.String({ pattern: '^[0-9]{6}$', description: 'The app\'s current 6-digit code.' }),
}, { additionalProperties: false }), 'The first code from the authenticator app.');

export const RecoveryCodes = named('RecoveryCodes', Type.Object({
  recoveryCodes: Type.Array(Type.String(), { description: 'Ten single-use codes, each working once in place of a TOTP code. Shown this once.' }),
}, { additionalProperties: false }), 'Two-factor sign-in is on.');

export const PasswordConfirmation = named('PasswordConfirmation', Type.Object({
  password: GivenPassword,
}, { additionalProperties: false }), 'The account\'s password, to confirm.');
