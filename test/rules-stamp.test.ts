// The service stamps each change of a geofence or rule with its clock's time, so the store's
// definitions stamp moves with changes made through the API; the stamp itself is held to the
// rules store's contract on both stores (test/contract/rules-store.ts).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type TestApp, createTestApp, manualClock } from './helpers/app.ts';

const clock = manualClock();
let ctx: TestApp;
before(async () => {
  ctx = await createTestApp({ clock });
});
after(() => ctx?.close());

test('a replace through the API is stamped with the clock and changes the definitions stamp', async () => {
  const stamp = () => ctx.stores.rules.definitionsStamp(ctx.organizationId);
  const circle = (radius: number) => ({ name: 'Depot', geometry: { type: 'Circle', coordinates: [13.405, 52.52], radius } });
  const created = await ctx.request('POST', '/v2/geofences', { body: circle(250) });
  assert.equal(created.statusCode, 201, created.body);
  const { id: geofence, createdAt } = created.json<{ id: string; createdAt: string }>();
  const rule = await ctx.request('POST', '/v2/alert-rules', { body: { name: 'fast', condition: { kind: 'threshold', field: 'speed', op: '>', value: 90, forSeconds: 0 } } });
  assert.equal(rule.statusCode, 201, rule.body);
  const stamps = [await stamp()];

  clock.advance(1000);
  const replaced = await ctx.request('PUT', `/v2/geofences/${geofence}`, { body: circle(300) });
  assert.equal(replaced.statusCode, 200, replaced.body);
  assert.deepEqual([replaced.json<{ createdAt: string }>().createdAt, replaced.json<{ updatedAt: string }>().updatedAt], [createdAt, new Date(clock.now()).toISOString()]);
  stamps.push(await stamp());

  clock.advance(1000);
  const body = { name: 'faster', condition: { kind: 'threshold', field: 'speed', op: '>', value: 120, forSeconds: 0 } };
  const changed = await ctx.request('PUT', `/v2/alert-rules/${rule.json<{ id: string }>().id}`, { body });
  assert.equal(changed.statusCode, 200, changed.body);
  assert.equal(changed.json<{ updatedAt: string }>().updatedAt, new Date(clock.now()).toISOString());
  stamps.push(await stamp());
  assert.equal(new Set(stamps).size, 3, `each replace changed the stamp: ${stamps.join(', ')}`);
});
