// Every store contract against every backend: SQLite (a temp file per test) and PostgreSQL (a fresh
// schema per test, dropped after it), so the embedded and cluster modes cannot drift apart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe } from 'node:test';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import type { Stores } from '../src/storage/stores.ts';
import { authStoreContract } from './contract/auth-store.ts';
import { eventStoreContract } from './contract/event-store.ts';
import { deviceStoreContract } from './contract/device-store.ts';
import { addGroups, addOrganization } from './contract/fixtures.ts';
import { oauthStoreContract } from './contract/oauth-store.ts';
import { peopleStoreContract } from './contract/people-store.ts';
import { rulesStoreContract } from './contract/rules-store.ts';
import { ssoStoreContract } from './contract/sso-store.ts';
import { telemetryStoreContract } from './contract/telemetry-store.ts';
import { vehicleStoreContract } from './contract/vehicle-store.ts';
import { webhookAttemptsContract } from './contract/webhook-attempts.ts';
import { openAnotherNode, postgresStoresAhead, skipUnlessPostgres } from './helpers/postgres.ts';

async function sqlite(): Promise<Stores> {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-contract-'));
  const file = path.join(dir, 'fleet.db');
  const stores = createSqliteStores(file);
  const wrapped: Stores = {
    ...stores,
    async close() {
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return wrapped;
}

// Each test's schema is made and migrated while the one before runs (it takes longer than most tests).
const postgres: () => Promise<Stores> = postgresStoresAhead({ label: 'contract' });

const contracts = (name: string, makeStores: () => Promise<Stores>, anotherNode?: (stores: Stores) => Promise<Stores>) => {
  vehicleStoreContract(name, makeStores);
  authStoreContract(name, makeStores, anotherNode === undefined ? {} : { anotherNode });
  telemetryStoreContract(name, makeStores);
  eventStoreContract(name, makeStores);
  deviceStoreContract(name, makeStores);
  webhookAttemptsContract(name, makeStores);
  rulesStoreContract(name, makeStores, anotherNode === undefined ? {} : { anotherNode });
  ssoStoreContract(name, makeStores);
};

// No second node on SQLite: one process owns the file (test/sqlite-owner.test.ts).
contracts('sqlite', sqlite);

const skip = await skipUnlessPostgres();
describe('PostgreSQL', { skip }, () => {
  contracts('postgres', postgres, (stores) => openAnotherNode((stores as Stores & { schema: string }).schema));
  // The OAuth contract's SQLite run is in oauth-store.test.ts; its fixture holds two organizations.
  oauthStoreContract('postgres', async () => {
    const stores = await postgres();
    const organizations: [string, string] = [await addOrganization(stores, { platform: true }), await addOrganization(stores)];
    return { store: stores.oauth, organizations, close: () => stores.close() };
  });
  // The people contract's SQLite run is in people-store.test.ts; its fixture holds two organizations.
  peopleStoreContract('postgres', async () => {
    const stores = await postgres();
    const organizations: [string, string] = [await addOrganization(stores), await addOrganization(stores)];
    await addGroups(stores, organizations[0], ['grp_1', 'grp_2', 'grp_3']);
    return { store: stores.people, organizations, close: () => stores.close() };
  });
});
