// `npm run --silent key`: prints a new key in Fleet's format, for FLEET_ADMIN_KEY (the first
// admin key of an empty store). Nothing is stored: the key becomes a credential only when a first
// start uses it.
//
// `npm run --silent key -- --admin`: adds an admin key (every scope) to an existing store, the one
// the configuration names (FLEET_DATABASE_URL), and prints it once: the way
// back in when the first key was lost. The embedded store must not be in use by a running service.
import { parseArgs } from 'node:util';
import { createAuthService } from '../auth/service.ts';
import { generateApiKey } from '../auth/keys.ts';
import { SCOPES } from '../auth/scopes.ts';
import { systemClock } from '../clock.ts';
import { loadConfig } from '../config.ts';
import { openStores } from '../storage/stores.ts';

const USAGE = `Usage:
  npm run --silent key                  a new key in Fleet's format, stored nowhere (for FLEET_ADMIN_KEY)
  npm run --silent key -- --admin       a new admin key (every scope) in the configured store, printed once
      [--organization <org id>]         of this organization (default: the first one, made on the first start)
      [--name <text>]                   the key's name (default "Admin key (command line)")
  npm run --silent key -- --help        this text

The store is the one the service uses, FLEET_DATABASE_URL (default sqlite:./data/fleet.db). The
embedded store can be opened by one process at a time: stop the service first.
`;

function fail(message: string, code = 1): never {
  process.stderr.write(`fleet key: ${message}\n`);
  process.exit(code);
}

let args;
try {
  args = parseArgs({
    options: { admin: { type: 'boolean' }, organization: { type: 'string' }, name: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  }).values;
} catch (error) {
  fail(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`, 2);
}

if (args.help === true) {
  process.stdout.write(USAGE);
} else if (args.admin !== true) {
  if (args.organization !== undefined || args.name !== undefined) fail(`--organization and --name go with --admin\n\n${USAGE}`, 2);
  process.stdout.write(`${generateApiKey()}\n`);
} else {
  await addAdminKey(args.organization, args.name ?? 'Admin key (command line)');
}

async function addAdminKey(organizationId: string | undefined, name: string): Promise<void> {
  const loaded = loadConfig();
  if (!loaded.ok) fail(`invalid configuration:\n${loaded.errors.map((e) => `  - ${e}`).join('\n')}`, 2);
  let stores;
  try {
    stores = await openStores(loaded.config);
  } catch (error) {
    fail(`cannot open the store: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    const auth = createAuthService({ store: stores.auth, clock: systemClock });
    const organization = organizationId === undefined
      ? (await auth.listOrganizations({ limit: 1, offset: 0 })).organizations[0]
      : await stores.auth.getOrganization(organizationId);
    if (organization === undefined) {
      fail(organizationId === undefined
        ? 'the store has no organization yet: start the service once (it makes the first one and prints its key)'
        : `no organization "${organizationId}" in the store`);
    }
    const { key, secret } = await auth.createKey(organization.id, { name, scopes: SCOPES, expiresAt: null });
    process.stderr.write(`Admin API key ${key.id} of ${organization.name} (${organization.id}), shown once, store it now:\n`);
    process.stdout.write(`${secret}\n`);
  } finally {
    await stores.close();
  }
}
