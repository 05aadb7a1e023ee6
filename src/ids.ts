// Ids of what the service keeps: a prefix naming the kind, `_`, then random characters. Event,
// alert and webhook delivery ids begin with the time they were made (docs/API.md "Events"): later
// ones sort after earlier ones, to the millisecond, as strings, and a store's index of them grows
// at its end, as its rows do, instead of at a random page for each new one.
//
// Each kind keeps the form it was first given out in: ids already stored and handed to clients
// have it, and route schemas check it (`dev_` and 16 of [A-Za-z0-9_-], `oc_` and 22 base62). The
// first kinds are 16 base64url characters (96 random bits); those added later are base62.
//
// Secrets are not ids and are not made here: API keys (auth/keys.ts), OAuth client secrets
// (auth/oauth/clients.ts), webhook signing secrets (webhooks/signing.ts), stream tickets
// (streams/tickets.ts) and access tokens' `jti` (auth/oauth/tokens.ts).
import { randomBytes } from 'node:crypto';
import { noteNewId } from './audit/context.ts';
import { base62, randomBase62 } from './base62.ts';

/** Random ids: the characters after the prefix. */
const RANDOM = {
  org: { alphabet: 'base64url', length: 16 },
  key: { alphabet: 'base64url', length: 16 },
  dev: { alphabet: 'base64url', length: 16 },
  str: { alphabet: 'base64url', length: 16 },
  oc: { alphabet: 'base62', length: 22 },
  gf: { alphabet: 'base62', length: 20 },
  rule: { alphabet: 'base62', length: 20 },
  wh: { alphabet: 'base62', length: 20 },
  usr: { alphabet: 'base62', length: 20 },
  grp: { alphabet: 'base62', length: 20 },
  drv: { alphabet: 'base62', length: 20 },
  asg: { alphabet: 'base62', length: 20 },
  mnt: { alphabet: 'base62', length: 20 },
  svc: { alphabet: 'base62', length: 20 },
  rps: { alphabet: 'base62', length: 20 },
  rpt: { alphabet: 'base62', length: 20 },
} as const satisfies Record<string, { alphabet: 'base62' | 'base64url'; length: number }>;

/** Time-ordered ids: the base62 characters after the prefix, the first TIME_LENGTH of them the time. */
const TIME_ORDERED = { evt: 24, alert: 20, dlv: 20, aud: 20, cmd: 20 } as const satisfies Record<string, number>;

/** Base62 digits of the time (ms): eight cover every millisecond up to the year 8000. */
const TIME_LENGTH = 8;

export type IdPrefix = keyof typeof RANDOM;
export type TimeOrderedIdPrefix = keyof typeof TIME_ORDERED;

/** A new random id of the kind `prefix` names, e.g. `dev_3q2Yx1lK0m9Zb7aQ`. */
export function newId(prefix: IdPrefix): string {
  const { alphabet, length } = RANDOM[prefix];
  const random = alphabet === 'base62'
    ? randomBase62(length)
    : randomBytes(Math.ceil((length * 3) / 4)).toString('base64url').slice(0, length);
  const id = `${prefix}_${random}`;
  // A creation's resource is the first id of its kind it makes (audit/actions.ts).
  noteNewId(prefix, id);
  return id;
}

/** Base62 digits after the time that count the ids this process made in the same millisecond. */
const SEQUENCE_LENGTH = 3;
const SEQUENCE_MAX = 62 ** SEQUENCE_LENGTH - 1;
/** Per kind: the last millisecond an id was made in, and how many were made in it. Kept apart, so that ids of another kind made on another clock (a test's) in between do not break the count. */
const counters = new Map<TimeOrderedIdPrefix, { lastMs: number; sequence: number }>();

/**
 * A new id of the kind `prefix` names: the time `at` (ms) in its first characters, then a count
 * of the ids of its kind this process made in that millisecond (so that its ids of one millisecond
 * sort in the order they were made: the audit log lists by id, a vehicle's queued commands go out
 * by id), random ones after.
 */
export function newTimeOrderedId(prefix: TimeOrderedIdPrefix, at: number = Date.now()): string {
  const ms = Math.max(0, Math.floor(at));
  let counter = counters.get(prefix);
  if (counter === undefined) counters.set(prefix, (counter = { lastMs: -1, sequence: 0 }));
  counter.sequence = ms === counter.lastMs ? Math.min(counter.sequence + 1, SEQUENCE_MAX) : 0;
  counter.lastMs = ms;
  const sequence = counter.sequence;
  return `${prefix}_${base62(ms, TIME_LENGTH)}${base62(sequence, SEQUENCE_LENGTH)}${randomBase62(TIME_ORDERED[prefix] - TIME_LENGTH - SEQUENCE_LENGTH)}`;
}
