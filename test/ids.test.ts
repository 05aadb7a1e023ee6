// Ids (src/ids.ts): each kind keeps its public form, one that the routes taking it accept; ids are
// unique; event, alert and delivery ids begin with the time they were made, so they sort by it
// (and the store's index of them grows at its end); the rest is random.
import { CommandIdParams } from '../src/commands/schema.ts';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { IdParams as KeyIdParams } from '../src/auth/keys-schema.ts';
import { OAuthClientId } from '../src/auth/oauth/schema.ts';
import { randomBase62 } from '../src/base62.ts';
import { DeviceId } from '../src/devices/schema.ts';
import { GeofenceIdParams } from '../src/geofences/schema.ts';
import { type IdPrefix, type TimeOrderedIdPrefix, newId, newTimeOrderedId } from '../src/ids.ts';
import { AlertIdParams, RuleIdParams } from '../src/rules/schema.ts';
import { UserIdParams } from '../src/people/schema.ts';
import { StreamIdParams } from '../src/streams/schema.ts';
import { DeliveryParams, WebhookIdParams } from '../src/webhooks/schema.ts';
import { AuditQuery } from '../src/audit/schema.ts';
import { GroupIdParams } from '../src/groups/schema.ts';
import { AssignmentIdParams, DriverIdParams } from '../src/drivers/schema.ts';
import { ScheduleIdParams } from '../src/maintenance/schema.ts';
import { ReportIdParams, ReportScheduleIdParams } from '../src/reports/schedules/schema.ts';

const BASE64URL_16 = /^[A-Za-z0-9_-]{16}$/;
const base62 = (length: number) => new RegExp(`^[0-9A-Za-z]{${length}}$`);

/** The characters after `<prefix>_`, and the schema of the route parameter that takes such an id, if one does. */
const FORMS: Record<IdPrefix, { rest: RegExp; param?: TSchema }> = {
  org: { rest: BASE64URL_16 },
  key: { rest: BASE64URL_16, param: KeyIdParams.properties.id },
  dev: { rest: BASE64URL_16, param: DeviceId },
  str: { rest: BASE64URL_16, param: StreamIdParams.properties.streamId },
  oc: { rest: base62(22), param: OAuthClientId },
  gf: { rest: base62(20), param: GeofenceIdParams.properties.id },
  rule: { rest: base62(20), param: RuleIdParams.properties.id },
  wh: { rest: base62(20), param: WebhookIdParams.properties.id },
  usr: { rest: base62(20), param: UserIdParams.properties.id },
  grp: { rest: base62(20), param: GroupIdParams.properties.id },
  drv: { rest: base62(20), param: DriverIdParams.properties.id },
  asg: { rest: base62(20), param: AssignmentIdParams.properties.id },
  mnt: { rest: base62(20), param: ScheduleIdParams.properties.id },
  svc: { rest: base62(20) },
  rps: { rest: base62(20), param: ReportScheduleIdParams.properties.id },
  rpt: { rest: base62(20), param: ReportIdParams.properties.id },
};
const TIME_ORDERED_FORMS: Record<TimeOrderedIdPrefix, { rest: RegExp; param?: TSchema }> = {
  evt: { rest: base62(24) },
  alert: { rest: base62(20), param: AlertIdParams.properties.id },
  dlv: { rest: base62(20), param: DeliveryParams.properties.deliveryId },
  aud: { rest: base62(20), param: AuditQuery.properties.cursor },
  cmd: { rest: base62(20), param: CommandIdParams.properties.id },
};

test('every kind of id has its public form, one its routes accept, and 10,000 of a kind are distinct', () => {
  const kinds: Array<[string, () => string, { rest: RegExp; param?: TSchema }]> = [
    ...Object.entries(FORMS).map(([prefix, form]) => [prefix, () => newId(prefix as IdPrefix), form] as [string, () => string, typeof form]),
    ...Object.entries(TIME_ORDERED_FORMS).map(([prefix, form]) => [prefix, () => newTimeOrderedId(prefix as TimeOrderedIdPrefix), form] as [string, () => string, typeof form]),
  ];
  assert.equal(kinds.length, 21);
  for (const [prefix, make, { rest, param }] of kinds) {
    const ids = Array.from({ length: 10_000 }, make);
    for (const id of ids) {
      assert.ok(id.startsWith(`${prefix}_`), id);
      assert.match(id.slice(prefix.length + 1), rest, id);
      if (param !== undefined) assert.ok(Value.Check(param, id), `${id} is accepted where a ${prefix} id is taken`);
    }
    assert.equal(new Set(ids).size, ids.length, `${prefix} ids are distinct`);
  }
});

test('random ids use the whole alphabet of their kind', () => {
  // 2,000 ids × 16 characters: a character missing from all of them would have probability
  // 64 × (63/64)^32,000, far below 1e-100.
  const seen = (make: () => string, prefix: string) => new Set(Array.from({ length: 2000 }, make).flatMap((id) => [...id.slice(prefix.length + 1)]));
  assert.equal(seen(() => newId('dev'), 'dev').size, 64);
  assert.equal(seen(() => newId('gf'), 'gf').size, 62);
});

test('a time-ordered id sorts by its time, across every base62 digit boundary, and keeps its length', () => {
  const times = [0, 1, 9, 10, 35, 36, 61, 62, 63, 3843, 3844, 238_327, 238_328, Date.UTC(2026, 10, 27), Date.UTC(2026, 10, 27) + 1, Date.UTC(9999, 11, 31)];
  for (const prefix of ['evt', 'alert', 'dlv'] as const) {
    const ids = times.map((at) => newTimeOrderedId(prefix, at));
    for (const id of ids) assert.match(id.slice(prefix.length + 1), TIME_ORDERED_FORMS[prefix].rest);
    assert.deepEqual([...ids].sort(), ids, `${prefix}: string order is time order`);
  }
  // Same millisecond: same time part, different ids.
  const same = Array.from({ length: 1000 }, () => newTimeOrderedId('dlv', 1_800_000_000_000));
  assert.equal(new Set(same).size, 1000);
  assert.ok(same.every((id) => id.slice(0, 'dlv_'.length + 8) === same[0]!.slice(0, 'dlv_'.length + 8)));
  // Made now: the time part is the present's.
  const before = newTimeOrderedId('evt', Date.now() - 1);
  const now = newTimeOrderedId('evt');
  const later = newTimeOrderedId('evt', Date.now() + 1000);
  assert.ok(before < now && now < later, `${before} < ${now} < ${later}`);
});

test('random base62 characters: the length asked for, every character equally likely', () => {
  for (const length of [0, 1, 20, 5000]) assert.match(randomBase62(length), base62(length));
  // 62 × 10,000 characters: each count near 10,000. Chi-square with 61 degrees of freedom is above
  // 130 with probability about 1e-6; a bias of the byte-to-character step (`byte % 62` over all
  // 256 bytes puts the first 8 characters at 5/4 of the others) gives far above 1000.
  const counts = new Map<string, number>();
  for (let i = 0; i < 62; i++) {
    for (const c of randomBase62(10_000)) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  assert.equal(counts.size, 62);
  let chiSquare = 0;
  for (const n of counts.values()) chiSquare += (n - 10_000) ** 2 / 10_000;
  assert.ok(chiSquare < 130, `chi-square ${chiSquare.toFixed(1)}`);
});
