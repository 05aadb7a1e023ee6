import type { Scope } from './scopes.ts';

export interface OrganizationRecord {
  id: string;
  name: string;
  platform: boolean;
  createdAt: number;
}

export interface ApiKeyRecord {
  id: string;
  organizationId: string;
  name: string;
  /** Indexed public handle the key is found by (see keys.ts lookupIdOf). */
  lookupId: string;
  /** Shown in listings so a person can tell keys apart. */
  displayPrefix: string;
  hash: Uint8Array;
  scopes: Scope[];
  /** The vehicle groups it is limited to; null: the whole organization (docs/API.md "Scoped credentials"). */
  groupIds: string[] | null;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

/** Persistence of organizations and credentials. Times are milliseconds since the epoch. */
export interface AuthStore {
  /** Creates the organization and its first key together, or neither. */
  createOrganizationWithKey(org: OrganizationRecord, key: ApiKeyRecord): Promise<void>;
  /**
   * Creates the organization and its key only if the store holds no organization yet; false when
   * it did. Atomic across every process on the store: of nodes starting together on an empty
   * database, exactly one creates the first organization.
   */
  createFirstOrganization(org: OrganizationRecord, key: ApiKeyRecord): Promise<boolean>;
  /**
   * Stores the key unless its organization already has `maxActive` unrevoked keys (counted and
   * inserted in one transaction; `quota`), or one of its groups does not exist (`unknown-group`;
   * checked under the lock a group's deletion takes, so a group a key names cannot go meanwhile).
   */
  insertKey(key: ApiKeyRecord, maxActive?: number): Promise<'created' | 'quota' | 'unknown-group'>;
  countOrganizations(): Promise<number>;
  getOrganization(id: string): Promise<OrganizationRecord | undefined>;
  /** Oldest first. */
  listOrganizations(page: { limit: number; offset: number }): Promise<{ organizations: OrganizationRecord[]; total: number }>;
  findKey(lookupId: string): Promise<{ key: ApiKeyRecord; organization: OrganizationRecord } | undefined>;
  /** Unrevoked keys of the organization, oldest first. */
  listKeys(organizationId: string, page: { limit: number; offset: number }): Promise<{ keys: ApiKeyRecord[]; total: number }>;
  /** An unrevoked key of the organization. */
  getKey(organizationId: string, id: string): Promise<ApiKeyRecord | undefined>;
  /** Marks the key revoked; the key as it was, or undefined when there was no unrevoked such key. */
  revokeKey(organizationId: string, id: string, at: number): Promise<ApiKeyRecord | undefined>;
  touchKey(id: string, at: number): Promise<void>;
}
