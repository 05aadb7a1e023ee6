// `npm run --silent key`: prints a new key in Fleet's format, for FLEET_ADMIN_KEY (the first
// admin key of an empty store). Nothing is stored: the key becomes a credential only when a first
// start uses it.
import { generateApiKey } from '../auth/keys.ts';

process.stdout.write(`${generateApiKey()}\n`);
