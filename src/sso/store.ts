// Persistence of single sign-on: each organization's OpenID provider, the sign-ins under way (the
// state, nonce and PKCE verifier of each, so that any node of a cluster can finish the flow), and
// the users the provider signs in. Times are milliseconds since the epoch.
import type { Role } from '../people/roles.ts';
import type { UserRecord } from '../people/store.ts';

export interface SsoConfigRecord {
  organizationId: string;
  issuer: string;
  clientId: string;
  /** Kept in clear: the service sends it to the provider's token endpoint (docs/SECURITY.md). */
  clientSecret: string;
  /** The ID token claim whose values roleMap maps to roles. */
  roleClaim: string;
  roleMap: Record<string, Role>;
  /** Lower-case email domains allowed to sign in; null: any. */
  allowedEmailDomains: string[] | null;
  createdAt: number;
  updatedAt: number;
}

/** A sign-in sent to the provider and not yet back. */
export interface SsoLoginRecord {
  /** SHA-256 (hex) of the `fleet_sso` cookie's value: the value itself is never stored. */
  idHash: string;
  organizationId: string;
  state: string;
  nonce: string;
  codeVerifier: string;
  /** A path on this origin. */
  returnTo: string;
  expiresAt: number;
}

/** Why a sign-in found no user to sign in: the email is another organization's user's, or the user is disabled. */
/** `last-admin`: the provider's role would leave the organization without an active admin. */
export type SsoRefusal = 'email-taken' | 'disabled' | 'last-admin';

export interface SsoStore {
  /** Creates or replaces the organization's configuration; a replacement keeps its createdAt. */
  putConfig(config: SsoConfigRecord): Promise<SsoConfigRecord>;
  getConfig(organizationId: string): Promise<SsoConfigRecord | undefined>;
  /** False when there was none. */
  deleteConfig(organizationId: string): Promise<boolean>;

  /** Stores a sign-in under way, and forgets those expired by `now`. */
  insertLogin(login: SsoLoginRecord, now: number): Promise<void>;
  /**
   * Takes (deletes) a sign-in once: undefined when it is unknown, already taken (on any node) or
   * expired by `now`.
   */
  takeLogin(idHash: string, now: number): Promise<SsoLoginRecord | undefined>;

  /**
   * The user the provider signed in, by `candidate.emailKey`, in one transaction: created as
   * `candidate` when there is none; otherwise, when it is the candidate's organization's and not
   * disabled, given `candidate.role` (and made active if it was invited). A user of another
   * organization, or a disabled one, is refused and left as it was; so is the organization's last
   * active admin whom the provider's role would demote.
   */
  signInUser(candidate: UserRecord, at: number): Promise<UserRecord | SsoRefusal>;
}
