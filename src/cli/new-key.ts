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
import { type Fail, failureOf, withOrganization } from './organization-store.ts';

const USAGE = `Usage:
  npm run --silent key                  a new key in Fleet's format, stored nowhere (for FLEET_ADMIN_KEY)
  npm run --silent key -- --admin       a new admin key (every scope) in the configured store, printed once
      [--organization <org id>]         of this organization (default: the first one, made on the first start)
      [--name <text>]                   the key's name (default "Admin key (command line)")
  npm run --silent key -- --help        this text

The store is the one the service uses, FLEET_DATABASE_URL (default sqlite:./data/fleet.db). The
embedded store can be opened by one process at a time: stop the service first.
`;

const fail: Fail = failureOf('key');

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
  await withOrganization(fail, organizationId, async ({ stores, organization }) => {
    const auth = createAuthService({ store: stores.auth, clock: systemClock });
    const { key, secret } = await auth.createKey(organization.id, { name, scopes: SCOPES, expiresAt: null });
    process.stderr.write(`Admin API key ${key.id} of ${organization.name} (${organization.id}), shown once, store it now:\n`);
    process.stdout.write(`${secret}\n`);
  });
}
