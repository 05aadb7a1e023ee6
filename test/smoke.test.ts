import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestApp } from './helpers/app.ts';

test('register then read', async (t) => {
  const ctx = await createTestApp();
  t.after(() => ctx.close());
  await ctx.registerVehicle('van-1');
  const res = await ctx.request('GET', '/v2/fleet/vehicles/van-1');
  assert.equal(res.statusCode, 200);
  assert.equal(res.json().status, 'registered');
});
