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
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

/** Persistence of organizations and credentials. Times are milliseconds since the epoch. */
export interface AuthStore {
  /** Creates the organization and its first key together, or neither. */
  createOrganizationWithKey(org: OrganizationRecord, key: ApiKeyRecord): Promise<void>;
  insertKey(key: ApiKeyRecord): Promise<void>;
  countOrganizations(): Promise<number>;
  findKey(lookupId: string): Promise<{ key: ApiKeyRecord; organization: OrganizationRecord } | undefined>;
  touchKey(id: string, at: number): Promise<void>;
}
