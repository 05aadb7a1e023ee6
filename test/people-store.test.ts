// The SQLite PeopleStore against the contract every PeopleStore must meet.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { addGroups, addOrganization } from './contract/fixtures.ts';
import { peopleStoreContract } from './contract/people-store.ts';

peopleStoreContract('sqlite', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-people-store-'));
  const stores = createSqliteStores(path.join(dir, 'fleet.db'));
  const organizations: [string, string] = [await addOrganization(stores), await addOrganization(stores)];
  await addGroups(stores, organizations[0], ['grp_1', 'grp_2', 'grp_3']);
  return {
    store: stores.people,
    organizations,
    async close() {
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
