// What the store contracts share: a factory type, fresh stores per test (closed after it), and
// records built by hand, so each contract talks to the stores alone, without the services.
import { afterEach } from 'node:test';
import type { ApiKeyRecord, OrganizationRecord } from '../../src/auth/store.ts';
import type { Stores } from '../../src/storage/stores.ts';
import type { VehicleStatus } from '../../src/vehicles/schema.ts';

export const T0 = Date.parse('2026-11-22T08:00:00.000Z');

/** Opens a fresh, empty backend; its close() removes whatever it made (file, schema). */
export type MakeStores = () => Promise<Stores>;

/** Call inside a describe: `fresh()` opens stores that are closed after the test that opened them. */
export function freshStores(makeStores: MakeStores): () => Promise<Stores> {
  const opened: Stores[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });
  return async () => {
    const stores = await makeStores();
    opened.push(stores);
    return stores;
  };
}

let n = 0;
const unique = () => `${Date.now().toString(36)}${(++n).toString(36).padStart(4, '0')}`;

export function keyRecord(organizationId: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  const id = unique();
  return {
    id: `key_${id}`,
    organizationId,
    name: `key ${id}`,
    lookupId: `lk${id}`,
    displayPrefix: `fleet_${id.slice(0, 8)}`,
    hash: new Uint8Array(32).fill(n % 256),
    scopes: ['fleet:read', 'admin'],
    groupIds: null,
    createdAt: T0,
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    ...overrides,
  };
}

/** A new organization (with its first key) in the store; its id. */
export async function addOrganization(stores: Stores, overrides: Partial<OrganizationRecord> = {}): Promise<string> {
  const organization: OrganizationRecord = { id: `org_${unique()}`, name: 'Organization', platform: false, createdAt: T0, ...overrides };
  await stores.auth.createOrganizationWithKey(organization, keyRecord(organization.id));
  return organization.id;
}

/** Groups with these ids in the organization (what a credential limited to groups names). */
export async function addGroups(stores: Stores, organizationId: string, ids: readonly string[]): Promise<void> {
  for (const id of ids) await stores.groups.insert({ organizationId, id, name: id, description: null, createdAt: T0, updatedAt: T0 });
}

/** A vehicle `id` of type van in `organizationId`, registered straight into `status`. */
export async function addVehicle(stores: Stores, organizationId: string, id: string, status: VehicleStatus = 'active'): Promise<void> {
  await stores.vehicles.insert(
    { organizationId, id, type: 'van', name: null, status, configuration: {}, createdAt: T0, updatedAt: T0, statusChangedAt: T0, groupIds: [], driverId: null },
    { from: null, to: status, reason: null, at: T0, by: 'k' },
  );
}
