import type { Scope } from '../scopes.ts';
import type { OrganizationRecord } from '../store.ts';

/** A key that signs (or signed) access tokens. The JWKs are JSON text; the private one never leaves the service. */
export interface SigningKeyRecord {
  kid: string;
  algorithm: 'ES256';
  privateJwk: string;
  publicJwk: string;
  createdAt: number;
  /** When a newer key replaced it as the signer; null for the current signer. */
  retiredAt: number | null;
}

export interface OAuthClientRecord {
  id: string;
  organizationId: string;
  name: string;
  /** SHA-256 of the client secret; the secret itself is shown once and never stored. */
  secretHash: Uint8Array;
  scopes: Scope[];
  /** The vehicle groups its tokens are limited to; null: the whole organization. */
  groupIds: string[] | null;
  createdAt: number;
  /** The credential that created it. */
  createdBy: string;
}

/** Persistence of OAuth signing keys, clients and revoked tokens. Times are ms since the epoch. */
export interface OAuthStore {
  /** Every stored signing key, oldest first. */
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  /** Stores `key` only while there is no current signer (so concurrent starts make one); false otherwise. */
  addFirstSigningKey(key: SigningKeyRecord): Promise<boolean>;
  /**
   * In one transaction: retires the current signer(s) at `key.createdAt`, deletes keys retired
   * before `dropRetiredBefore` (every token they signed has expired) and stores `key` as the signer.
   */
  rotateSigningKey(key: SigningKeyRecord, dropRetiredBefore: number): Promise<void>;

  /**
   * Stores the client unless its organization already has `max` clients (counted and inserted in
   * one transaction; `quota`), or one of its groups does not exist (`unknown-group`).
   */
  insertClient(client: OAuthClientRecord, max: number): Promise<'created' | 'quota' | 'unknown-group'>;
  /** The organization's clients, oldest first. */
  listClients(organizationId: string): Promise<OAuthClientRecord[]>;
  getClient(organizationId: string, id: string): Promise<OAuthClientRecord | undefined>;
  /** A client by id alone (token endpoint, token verification), with its organization. */
  findClient(id: string): Promise<{ client: OAuthClientRecord; organization: OrganizationRecord } | undefined>;
  /** False when the organization has no such client. */
  deleteClient(organizationId: string, id: string): Promise<boolean>;

  /** Remembers `jti` as revoked until `expiresAt`; forgets revocations that have run out by `now`. */
  revokeToken(jti: string, expiresAt: number, now: number): Promise<void>;
  isTokenRevoked(jti: string): Promise<boolean>;
}
