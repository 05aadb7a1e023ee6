// The definitions stamp (RulesStore's `definitionsStamp`), on both stores: it changes when an
// organization's geofences or alert rules are added, replaced or removed, and not for another
// organization's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

function suite(backend: 'sqlite' | 'postgres') {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ backend });
  });
  after(async () => {
    await ctx?.close();
  });

  test('each change to the definitions changes the stamp; another organization\'s does not', async () => {
    const other = await ctx.otherOrganization();
    const stamp = () => ctx.stores.rules.definitionsStamp(ctx.organizationId);
    const stamps = [await stamp()];
    const changed = async (what: string) => {
      // The stamp sums update times in milliseconds: two changes in one millisecond may look alike.
      await new Promise((resolve) => setTimeout(resolve, 2));
      const now = await stamp();
      assert.ok(!stamps.includes(now), `${what}: ${now} seen before (${stamps.join(', ')})`);
      stamps.push(now);
    };
    const circle = (radius: number) => ({ name: 'Depot', geometry: { type: 'Circle', coordinates: [13.405, 52.52], radius } });
    const created = await ctx.request('POST', '/v2/geofences', { body: circle(250) });
    assert.equal(created.statusCode, 201, created.body);
    const geofence = created.json<{ id: string }>().id;
    await changed('a geofence created');
    await new Promise((resolve) => setTimeout(resolve, 2));
    assert.equal((await ctx.request('PUT', `/v2/geofences/${geofence}`, { body: circle(300) })).statusCode, 200);
    await changed('a geofence replaced');
    const rule = await ctx.request('POST', '/v2/alert-rules', { body: { name: 'fast', condition: { kind: 'threshold', field: 'speed', op: '>', value: 90, forSeconds: 0 } } });
    assert.equal(rule.statusCode, 201, rule.body);
    await changed('a rule created');
    assert.equal((await ctx.request('DELETE', `/v2/geofences/${geofence}`)).statusCode, 204);
    await changed('a geofence deleted');

    const before = await stamp();
    const theirs = await ctx.request('POST', '/v2/geofences', { body: circle(100), key: other.key });
    assert.equal(theirs.statusCode, 201, theirs.body);
    assert.equal(await stamp(), before, 'another organization\'s geofence leaves this stamp as it was');
  });
}

describe('definitions stamp on SQLite', () => suite('sqlite'));
describe('definitions stamp on PostgreSQL', { skip: await skipUnlessPostgres() }, () => suite('postgres'));
