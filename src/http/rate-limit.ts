// Rate limits (docs/API.md "Rate limits"), after authentication: each credential has its own budget, keyed
// by credential id, never by IP, so clients behind one NAT do not share one. Routes whose config
// says `rateLimit: 'ip'` (the OAuth token endpoints, where no credential is known yet) have a
// budget per client address instead, against secret guessing.
//
// Every counted response carries the IETF draft's headers (draft-ietf-httpapi-ratelimit-headers,
// -08 and later, structured fields), refusals included:
//   RateLimit-Policy: "default";q=1200;w=60
//   RateLimit: "default";r=1187;t=1
// A refused request is answered 429 here, in onRequest: its body is never read and its handler
// never runs.
import { isIPv4, isIPv6 } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import type { RateLimitConfig } from '../config.ts';
import { AppError } from '../errors.ts';
import { policyUnits } from '../ratelimit/gcra.ts';
import { createMemoryRateLimitStore } from '../ratelimit/memory.ts';
import type { RateLimitDecision, RateLimitPolicy, RateLimitStore } from '../ratelimit/store.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `'ip'`: also limited per client address, with `FLEET_TOKEN_RATE_LIMIT_REQUESTS`. */
    rateLimit?: 'ip';
  }
}

export interface RateLimitPluginOptions {
  config: RateLimitConfig;
  clock: Clock;
  /** Shared counters (cluster mode, tests). Without one, counters live in this process. */
  store?: RateLimitStore | undefined;
}

/** One budget a request is charged against. */
interface Check {
  policy: NamedPolicy;
  key: string;
}

interface NamedPolicy extends RateLimitPolicy {
  /** The policy's name in the headers. */
  name: string;
  /** Whose budget, for the 429's detail. */
  whose: string;
}

/**
 * The budget key of a client address. IPv4-mapped IPv6 is its IPv4 address; other IPv6 addresses
 * count by their /64, the block one subscriber usually holds, or a single host could take a fresh
 * budget from each of its 2^64 addresses.
 */
export function addressKey(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null && isIPv4(mapped[1]!)) return mapped[1]!;
  if (isIPv4(address)) return address;
  const plain = address.split('%')[0]!; // zone index (fe80::1%eth0)
  if (!isIPv6(plain)) return address;
  const [head = '', tail] = plain.split('::');
  const groups = (part: string | undefined) => (part === undefined || part === '' ? [] : part.split(':'));
  const front = groups(head);
  // A trailing dotted IPv4 part takes two groups; only the first four groups matter anyway.
  const back = groups(tail).flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const full = tail === undefined ? front : [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return `${full.slice(0, 4).map((g) => (g.includes('.') ? '0' : Number.parseInt(g, 16).toString(16))).join(':')}::/64`;
}

const seconds = (ms: number) => Math.ceil(ms / 1000);

function headerValues(checks: Array<{ policy: NamedPolicy; decision: RateLimitDecision }>) {
  return {
    'ratelimit-policy': checks.map(({ policy }) => `"${policy.name}";q=${policy.limit};w=${seconds(policy.windowMs)}`).join(', '),
    ratelimit: checks.map(({ policy, decision }) => `"${policy.name}";r=${decision.remaining};t=${seconds(decision.resetMs)}`).join(', '),
  };
}

export const rateLimitPlugin = fp(async function rateLimit(app: FastifyInstance, opts: RateLimitPluginOptions) {
  const { config, clock } = opts;
  const windowMs = config.windowSeconds * 1000;
  const perCredential: NamedPolicy | undefined =
    config.requests > 0 ? { name: 'default', limit: config.requests, windowMs, whose: 'this credential' } : undefined;
  const perAddress: NamedPolicy = { name: 'ip', limit: config.tokenRequests, windowMs, whose: 'this client address' };
  // A policy the algorithm cannot count exactly fails at start-up, not on the first request.
  for (const policy of [perCredential, perAddress]) {
    if (policy === undefined) continue;
    try {
      policyUnits(policy);
    } catch (error) {
      throw new Error(`rate limit "${policy.name}": ${(error as Error).message}`, { cause: error });
    }
  }

  const store = opts.store ?? createMemoryRateLimitStore({ clock });
  if (opts.store === undefined) app.addHook('onClose', () => store.close());

  function checksFor(request: FastifyRequest): Check[] {
    const checks: Check[] = [];
    if (request.routeOptions.config.rateLimit === 'ip') {
      checks.push({ policy: perAddress, key: `ip:${addressKey(request.socket.remoteAddress)}` });
    }
    // Set by auth for every authenticated request; null on public routes.
    const principal = request.principal as Principal | null;
    if (perCredential !== undefined && principal !== null) {
      checks.push({ policy: perCredential, key: `credential:${principal.credentialId}` });
    }
    return checks;
  }

  async function charge(reply: FastifyReply, checks: Check[]): Promise<void> {
    const now = clock.now();
    const done: Array<{ policy: NamedPolicy; decision: RateLimitDecision }> = [];
    for (const { policy, key } of checks) {
      const decision = await store.consume(key, policy, now);
      done.push({ policy, decision });
      if (!decision.allowed) {
        // The budgets not yet checked are left untouched: a refused request costs nothing more.
        throw new AppError(
          'rate-limited',
          `Rate limit of ${policy.limit} requests per ${seconds(policy.windowMs)} s reached for ${policy.whose}; retry in ${seconds(decision.retryAfterMs)} s.`,
          { headers: { ...headerValues(done), 'retry-after': String(seconds(decision.retryAfterMs)) } },
        );
      }
    }
    void reply.headers(headerValues(done));
  }

  // Registered after auth, so this runs once the credential is known; a request that failed
  // authentication never gets here. One whose credential lacks the route's scope does: it is
  // counted here and answered 403 after (auth.ts). Callback-style: a request with no budget to
  // charge (limits off, a public route) costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) return done();
    const checks = checksFor(request);
    if (checks.length === 0) return done();
    charge(reply, checks).then(() => done(), done);
  });
}, { name: 'rate-limit', dependencies: ['auth', 'problems'] });
