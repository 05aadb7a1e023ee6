// Ids of events, alerts and deliveries begin with the time they were made, so they sort by it (and
// the store's index of them grows at its end); the rest is random.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomBase62, timeOrderedId } from '../src/auth/keys.ts';
import { newEventId } from '../src/events/types.ts';
import { newAlertId } from '../src/rules/ids.ts';
import { newDeliveryId } from '../src/webhooks/service.ts';

test('a time-ordered id sorts by its time, across every base62 digit boundary, and keeps its length', () => {
  const times = [0, 1, 9, 10, 35, 36, 61, 62, 63, 3843, 3844, 238_327, 238_328, Date.UTC(2026, 10, 27), Date.UTC(2026, 10, 27) + 1, Date.UTC(9999, 11, 31)];
  const ids = times.map((at) => timeOrderedId(24, at));
  for (const id of ids) assert.match(id, /^[0-9A-Za-z]{24}$/);
  assert.deepEqual([...ids].sort(), ids, 'string order is time order');
  // Same millisecond: same prefix, different ids.
  const same = Array.from({ length: 1000 }, () => timeOrderedId(20, 1_800_000_000_000));
  assert.equal(new Set(same).size, 1000);
  assert.ok(same.every((id) => id.slice(0, 8) === same[0]!.slice(0, 8)));
});

test('event, alert and delivery ids keep their public form, and later ones sort after earlier ones', async () => {
  const first = [newEventId(), newAlertId(), newDeliveryId()];
  await new Promise((resolve) => setTimeout(resolve, 2));
  const later = [newEventId(), newAlertId(), newDeliveryId()];
  for (const [i, pattern] of [/^evt_[0-9A-Za-z]{24}$/, /^alert_[0-9A-Za-z]{20}$/, /^dlv_[0-9A-Za-z]{20}$/].entries()) {
    assert.match(first[i]!, pattern);
    assert.ok(first[i]! < later[i]!, `${first[i]} before ${later[i]}`);
  }
});

test('random base62 characters: the length asked for, every character equally likely', () => {
  for (const length of [0, 1, 20, 5000]) assert.match(randomBase62(length), new RegExp(`^[0-9A-Za-z]{${length}}$`));
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
