// What a suite does when something it needs (PostgreSQL, Redis, a broker, Chromium) is not there:
// skip with a loud message, except under CI=true, where the absence is a failing test.
import { test } from 'node:test';

/**
 * For `describe(name, { skip }, ...)`: false when `missing` is undefined; otherwise the reason to
 * skip, after the warning (or, under CI=true, a failing test). `what` names what is missing
 * ("PostgreSQL at postgres://…"), `suites` what is skipped, `remedy` how to provide it.
 */
export function skipUnless(missing: string | undefined, what: string, suites: string, remedy: string): string | false {
  if (missing === undefined) return false;
  const message = `${what} is ${missing}`;
  if (process.env.CI === 'true') {
    test(`${suites}: what they need is there (required under CI=true)`, () => {
      throw new Error(`${message}; ${remedy}`);
    });
  } else {
    process.stderr.write(`\n${'!'.repeat(100)}\n!!! SKIPPING ${suites}: ${message}.\n!!! ${remedy} to run them.\n${'!'.repeat(100)}\n\n`);
  }
  return `${message}: skipped`;
}
