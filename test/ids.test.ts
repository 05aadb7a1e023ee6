// Ids of events, alerts and deliveries begin with the time they were made, so they sort by it (and
// the store's index of them grows at its end); the rest is random.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeOrderedId } from '../src/auth/keys.ts';
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
