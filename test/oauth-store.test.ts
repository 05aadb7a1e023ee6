// The SQLite OAuthStore against the contract every OAuthStore must meet.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAuthService } from '../src/auth/service.ts';
import { systemClock } from '../src/clock.ts';
import { createSqliteStores } from '../src/storage/sqlite/index.ts';
import { oauthStoreContract } from './contract/oauth-store.ts';

oauthStoreContract('sqlite', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fleet-oauth-store-'));
  const stores = createSqliteStores(path.join(dir, 'fleet.db'));
  const auth = createAuthService({ store: stores.auth, clock: systemClock });
  const platform = await auth.bootstrap(undefined);
  const other = await auth.createOrganization({ name: 'Other' });
  return {
    store: stores.oauth,
    organizations: [platform!.organization.id, other.organization.id],
    async close() {
      await stores.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
