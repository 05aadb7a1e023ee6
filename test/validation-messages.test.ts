// What a refused body says (docs/API.md "Errors"): a union's errors are those of the branch the
// value meant (its `kind` or `type` decides), and every message is words, never a regular
// expression or the validator's jargon ("must NOT have fewer than", "must match a schema in anyOf").
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp({});
  await ctx.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-1', type: 'van' } });
});
after(async () => {
  await ctx.close();
});

async function errorsOf(method: string, url: string, body: unknown, query?: Record<string, string>) {
  const res = await ctx.request(method, url, { body, ...(query === undefined ? {} : { query }) });
  assert.equal(res.statusCode, 400, res.body);
  const problem = res.json();
  assert.equal(problem.code, 'validation-failed');
  for (const e of problem.errors) {
    assert.doesNotMatch(e.message, /anyOf|oneOf|NOT have|equal to constant|\^|\$"/, `jargon in "${e.message}"`);
  }
  return (problem.errors as { path: string; message: string }[]).map((e) => `${e.path} ${e.message}`);
}

describe('a refused union answers for the branch meant', () => {
  test('an alert rule with one mistake gets one error, for its own kind of condition', async () => {
    assert.deepEqual(await errorsOf('POST', '/v2/alert-rules', { name: 'fast', condition: { kind: 'threshold', field: 'speed', op: '>' } }),
      ['/condition/value is required']);
    assert.deepEqual(await errorsOf('POST', '/v2/alert-rules', { name: 'x', condition: { kind: 'offline', afterSeconds: 5 } }),
      ['/condition/afterSeconds must be at least 60']);
    assert.deepEqual(await errorsOf('POST', '/v2/alert-rules', { name: 'x', condition: { kind: 'geofence', geofenceId: 'gf_a', when: 'near' } }),
      ['/condition/when must be one of: inside, outside']);
  });

  test('the issue case: an empty name and a wrong value answer those two, worded for people', async () => {
    assert.deepEqual(await errorsOf('POST', '/v2/alert-rules', { name: '', condition: { kind: 'threshold', field: 'speed', op: '>', value: [] } }),
      ['/name must not be empty', '/condition/value must be a number, a string or a boolean']);
  });

  test('a discriminator naming no branch is one error listing the allowed values; a missing one is required', async () => {
    assert.deepEqual(await errorsOf('POST', '/v2/alert-rules', { name: 'x', condition: { kind: 'offlin' } }),
      ['/condition/kind must be one of: threshold, offline, geofence']);
    assert.deepEqual(await errorsOf('POST', '/v2/alert-rules', { name: 'x', condition: { field: 'speed' } }), ['/condition/kind is required']);
    assert.deepEqual(await errorsOf('POST', '/v2/geofences', { name: 'g', geometry: { type: 'Circl' } }),
      ['/geometry/type must be one of: Polygon, MultiPolygon, Circle']);
  });

  test('a named branch (a $ref) is resolved too: a circle answers for circles only', async () => {
    assert.deepEqual(await errorsOf('POST', '/v2/geofences', { name: 'g', geometry: { type: 'Circle', coordinates: [13.4, 52.5] } }),
      ['/geometry/radius is required']);
  });

  test('a union without a discriminator names every form the value could have had', async () => {
    assert.deepEqual(await errorsOf('POST', '/v2/alert-rules', { name: 'x', condition: { kind: 'threshold', field: 'sped', op: '>', value: 1 } }),
      ['/condition/field must be one of: speed, battery, temperature, odometer, heading, or must have the form diagnostics.<key>']);
  });
});

describe('messages in words', () => {
  test('lengths, types, numbers, dates and patterns', async () => {
    assert.deepEqual(await errorsOf('POST', '/v2/fleet/vehicles', { vehicleId: 'a b', type: 'van' }),
      ['/vehicleId must be 1 to 64 characters of A-Z a-z 0-9 . _ : -']);
    assert.deepEqual(await errorsOf('POST', '/v2/fleet/vehicles', { vehicleId: 'x'.repeat(65), type: 'van' }),
      ['/vehicleId must be 1 to 64 characters of A-Z a-z 0-9 . _ : -']);
    assert.deepEqual(await errorsOf('POST', '/v2/telemetry/van-1', { timestamp: '2026-01-01T00:00:00', data: { speed: 'x'.repeat(300) } }),
      ['/timestamp must be a date and time with a time zone (RFC 3339), e.g. 2026-01-01T08:00:00Z', '/data/speed must be a number']);
    assert.deepEqual(await errorsOf('GET', '/v2/fleet/vehicles', undefined, { status: 'active,parked' }),
      ['/status must be one or more of registered, active, inactive, maintenance or retired, separated by commas']);
    assert.deepEqual(await errorsOf('GET', '/v2/fleet/vehicles', undefined, { limit: 'ten' }), ['/limit must be an integer']);
  });
});
