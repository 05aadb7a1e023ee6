// Single sign-on rows to records, for both backends (they differ only in how the role map and the
// domain list arrive: SQLite JSON text, PostgreSQL jsonb and text[]).
import type { Role } from '../people/roles.ts';
import type { UserRecord } from '../people/store.ts';
import type { SsoConfigRecord, SsoLoginRecord } from '../sso/store.ts';
import type { Row } from './rows.ts';

export const SSO_CONFIG_COLUMNS = `organization_id, issuer, client_id, client_secret, role_claim, role_map, allowed_email_domains,
  created_at, updated_at`;
export const SSO_LOGIN_COLUMNS = 'id_hash, organization_id, state, nonce, code_verifier, return_to, expires_at';

export function toSsoConfig(row: Row, roleMap: (value: unknown) => Record<string, Role>, domains: (value: unknown) => string[]): SsoConfigRecord {
  return {
    organizationId: row.organization_id as string,
    issuer: row.issuer as string,
    clientId: row.client_id as string,
    clientSecret: row.client_secret as string,
    roleClaim: row.role_claim as string,
    roleMap: roleMap(row.role_map),
    allowedEmailDomains: row.allowed_email_domains === null || row.allowed_email_domains === undefined ? null : domains(row.allowed_email_domains),
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
  };
}

export function toSsoLogin(row: Row): SsoLoginRecord {
  return {
    idHash: row.id_hash as string,
    organizationId: row.organization_id as string,
    state: row.state as string,
    nonce: row.nonce as string,
    codeVerifier: row.code_verifier as string,
    returnTo: row.return_to as string,
    expiresAt: row.expires_at as number,
  };
}

/** What a later sign-in makes of the user found by email: the provider's role; invited becomes active. */
export function signedInAgain(user: UserRecord, candidate: UserRecord, at: number): UserRecord {
  return { ...user, role: candidate.role, status: user.status === 'invited' ? 'active' : user.status, updatedAt: at };
}
