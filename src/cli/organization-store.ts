// What the commands that change a store (`npm run key -- --admin`, `npm run user`) share: the
// configured store, opened as the service would open it, and one of its organizations.
import type { OrganizationRecord } from '../auth/store.ts';
import { type Config, loadConfig } from '../config.ts';
import { type Stores, openStores } from '../storage/stores.ts';

/** Ends the command with a message on stderr and an exit code (2: bad usage or configuration). */
export type Fail = (message: string, code?: number) => never;

/** The `Fail` of the command `fleet <name>`. */
export function failureOf(name: string): Fail {
  return (message, code = 1) => {
    process.stderr.write(`fleet ${name}: ${message}\n`);
    process.exit(code);
  };
}

/** The configuration from the environment, or the command ended naming what is wrong (exit 2). */
export function configOrFail(fail: Fail): Config {
  const loaded = loadConfig();
  if (!loaded.ok) fail(`invalid configuration:\n${loaded.errors.map((e) => `  - ${e}`).join('\n')}`, 2);
  return loaded.config;
}

/**
 * Runs `work` with the configured store and the organization `organizationId` names (default: the
 * first one, made on the first start), then closes the store. Every way it cannot fails the command.
 */
export async function withOrganization(
  fail: Fail,
  organizationId: string | undefined,
  work: (context: { stores: Stores; config: Config; organization: OrganizationRecord }) => Promise<void>,
): Promise<void> {
  const config = configOrFail(fail);
  let stores: Stores;
  try {
    stores = await openStores(config);
  } catch (error) {
    fail(`cannot open the store: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    const organization = organizationId === undefined
      ? (await stores.auth.listOrganizations({ limit: 1, offset: 0 })).organizations[0]
      : await stores.auth.getOrganization(organizationId);
    if (organization === undefined) {
      fail(organizationId === undefined
        ? 'the store has no organization yet: start the service once (it makes the first one and prints its key)'
        : `no organization "${organizationId}" in the store`);
    }
    await work({ stores, config, organization });
  } finally {
    await stores.close();
  }
}
