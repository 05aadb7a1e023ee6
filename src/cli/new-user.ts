// `npm run --silent user -- --email <email> --role <role>`: invites a user to an organization of
// the configured store (FLEET_DATABASE_URL) and prints the invitation link, valid 72 hours, that
// sets their password: the way to the first admin user of a new installation. The embedded store
// must not be in use by a running service (with one running, POST /v2/users does the same).
import { parseArgs } from 'node:util';
import { SCOPES } from '../auth/scopes.ts';
import { systemClock } from '../clock.ts';
import { DEFAULT_PEOPLE_SETTINGS, createPeopleService } from '../people/service.ts';
import { ROLES, type Role } from '../people/roles.ts';
import { type Fail, failureOf, withOrganization } from './organization-store.ts';
import { isAppError } from '../errors.ts';

const USAGE = `Usage:
  npm run --silent user -- --email <email> --role <role>   invite a user; prints the invitation link (valid 72 hours)
      [--name <text>]                 their name (default: the part of the email before @)
      [--organization <org id>]       of this organization (default: the first one, made on the first start)
  npm run --silent user -- --help     this text

Roles: ${ROLES.join(', ')}. The link opens the dashboard's page that sets a password; it is made from
FLEET_PUBLIC_URL. The store is the one the service uses, FLEET_DATABASE_URL (default
sqlite:./data/fleet.db). The embedded store can be opened by one process at a time: stop the
service first, or invite through the API (POST /v2/users) while it runs.
`;

const fail: Fail = failureOf('user');

let args;
try {
  args = parseArgs({
    options: {
      email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' }, organization: { type: 'string' }, help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  }).values;
} catch (error) {
  fail(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`, 2);
}

if (args.help === true) {
  process.stdout.write(USAGE);
} else {
  const { email, role } = args;
  if (email === undefined || role === undefined) fail(`--email and --role are needed\n\n${USAGE}`, 2);
  if (!(ROLES as readonly string[]).includes(role)) fail(`--role must be one of ${ROLES.join(', ')}, not "${role}"`, 2);
  if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) fail(`"${email}" is not an email address`, 2);
  const name = args.name ?? email.slice(0, email.indexOf('@'));
  if (name === '' || name.length > 100 || [...name].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) fail('--name must be 1 to 100 characters on one line', 2);
  await invite(email, role as Role, name, args.organization);
}

async function invite(email: string, role: Role, name: string, organizationId: string | undefined): Promise<void> {
  await withOrganization(fail, organizationId, async ({ stores, config, organization }) => {
    const people = createPeopleService({
      store: stores.people, organizations: stores.auth, clock: systemClock, events: { emit() {} },
      settings: { ...DEFAULT_PEOPLE_SETTINGS, publicUrl: config.publicUrl },
    });
    // The command line acts for the organization with every scope, as its first admin key would.
    const operator = { organizationId: organization.id, credentialId: 'cli', scopes: new Set(SCOPES), platform: organization.platform };
    try {
      const { user, invitation } = await people.createUser(operator, { email, name, role });
      process.stderr.write(`Invited ${user.email} (${user.id}) as ${user.role} of ${organization.name}. Open this link within 72 hours to set a password:\n`);
      process.stdout.write(`${invitation.url}\n`);
    } catch (error) {
      if (isAppError(error)) fail(error.detail ?? error.message);
      throw error;
    }
  });
}
