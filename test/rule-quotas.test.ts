// Quotas on alert rules and devices per organization (docs/OPERATIONS.md "Quotas"), through the
// HTTP stack on both stores: past the quota 403 quota-exceeded and nothing stored; another
// organization counts apart; deleting frees a place.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type TestApp, createTestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

function suite(backend: 'sqlite' | 'postgres') {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ backend, env: { FLEET_QUOTA_ALERT_RULES: '3', FLEET_QUOTA_DEVICES: '2' } });
  });
  after(() => ctx.close());

  const rule = (name: string) => ({ name, condition: { kind: 'offline', afterSeconds: 60 } });

  test('alert rules: past the quota 403 quota-exceeded and nothing created; deleting frees a place', async () => {
    const made = [];
    for (const name of ['r1', 'r2', 'r3']) {
      const res = await ctx.request('POST', '/v2/alert-rules', { body: rule(name) });
      assert.equal(res.statusCode, 201, res.body);
      made.push(res.json<{ id: string }>().id);
    }
    const over = await ctx.request('POST', '/v2/alert-rules', { body: rule('r4') });
    assert.equal(over.statusCode, 403);
    assert.equal(over.json().code, 'quota-exceeded');
    assert.match(over.headers['content-type'] as string, /^application\/problem\+json/);
    const listed = (await ctx.request('GET', '/v2/alert-rules')).json<{ alertRules: { name: string }[]; total: number }>();
    assert.equal(listed.total, 3);
    assert.ok(!listed.alertRules.some((r) => r.name === 'r4'), 'nothing stored past the quota');

    const other = await ctx.otherOrganization('Rules neighbour');
    assert.equal((await ctx.request('POST', '/v2/alert-rules', { key: other.key, body: rule('theirs') })).statusCode, 201, 'another organization counts apart');

    assert.equal((await ctx.request('DELETE', `/v2/alert-rules/${made[0]}`)).statusCode, 204);
    assert.equal((await ctx.request('POST', '/v2/alert-rules', { body: rule('r4') })).statusCode, 201);
  });

  test('devices: past the quota 403 quota-exceeded and nothing stored; a taken identifier is still 409', async () => {
    await ctx.registerVehicle('dq-1');
    const register = (identifier: string, key?: string) =>
      ctx.request('POST', '/v2/devices', { key, body: { protocol: 'osmand', identifier, vehicleId: 'dq-1' } });
    const first = await register('quota-dev-1');
    assert.equal(first.statusCode, 201, first.body);
    assert.equal((await register('quota-dev-2')).statusCode, 201);
    const over = await register('quota-dev-3');
    assert.equal(over.statusCode, 403);
    assert.equal(over.json().code, 'quota-exceeded');
    assert.equal((await ctx.request('GET', '/v2/devices')).json().total, 2);
    assert.equal((await register('quota-dev-1')).statusCode, 409);

    const other = await ctx.otherOrganization('Devices neighbour');
    await ctx.registerVehicle('dq-9', {}, other.key);
    const theirs = await ctx.request('POST', '/v2/devices', { key: other.key, body: { protocol: 'osmand', identifier: 'quota-dev-9', vehicleId: 'dq-9' } });
    assert.equal(theirs.statusCode, 201, 'another organization counts apart');

    assert.equal((await ctx.request('DELETE', `/v2/devices/${first.json().id}`)).statusCode, 204);
    assert.equal((await register('quota-dev-3')).statusCode, 201);
  });
}

// Asked before the SQLite suite starts: its set-up holds the event loop longer than the question may wait.
const skip = await skipUnlessPostgres();
describe('quotas on SQLite', () => suite('sqlite'));
describe('quotas on PostgreSQL', { skip }, () => suite('postgres'));
