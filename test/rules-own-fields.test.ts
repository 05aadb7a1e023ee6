// Diagnostics keys that are also names of Object.prototype's members (`constructor`, `toString`,
// `valueOf`, `hasOwnProperty`) are plain data: a rule on one reads the record's own value only, and
// such a record is stored and read back exactly, on both stores. `__proto__` is no valid key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

const INHERITED = ['constructor', 'toString', 'valueOf', 'hasOwnProperty'] as const;
const T = Date.now() - 3_600_000;
const at = (seconds: number) => new Date(T + seconds * 1000).toISOString();

for (const backend of ['sqlite', 'postgres'] as const) {
  const skip = backend === 'postgres' ? await skipUnlessPostgres() : false;
  describe(`diagnostics keys named like Object's members (${backend})`, { skip }, () => {
    let ctx: TestApp;
    before(async () => {
      ctx = await createTestApp({ backend });
    });
    after(() => ctx.close());

    test('a rule on such a key ignores records without it, and opens on a record that has it', async () => {
      const rules: Record<string, string> = {};
      for (const key of INHERITED) {
        const res = await ctx.request('POST', '/v2/alert-rules', {
          body: { name: `on ${key}`, condition: { kind: 'threshold', field: `diagnostics.${key}`, op: '!=', value: 'x' } },
        });
        assert.equal(res.statusCode, 201, res.body);
        rules[key] = res.json().id as string;
      }
      await ctx.registerVehicle('own-1');
      const plain = await ctx.request('POST', '/v2/telemetry/own-1', { body: { timestamp: at(0), data: { diagnostics: { dtc: 'P0420' } } } });
      assert.equal(plain.statusCode, 202, plain.body);
      const none = await ctx.request('GET', '/v2/alerts', { query: { vehicleId: 'own-1' } });
      assert.deepEqual(none.json().alerts, []);

      const own = await ctx.request('POST', '/v2/telemetry/own-1', { body: { timestamp: at(10), data: { diagnostics: { constructor: 'y' } } } });
      assert.equal(own.statusCode, 202, own.body);
      const alerts = (await ctx.request('GET', '/v2/alerts', { query: { vehicleId: 'own-1' } })).json().alerts as { ruleId: string; trigger: { value: unknown } }[];
      assert.deepEqual(alerts.map((a) => [a.ruleId, a.trigger.value]), [[rules.constructor, 'y']]);
    });

    test('a record with such keys round-trips exactly through the latest state and history; nothing is polluted', async () => {
      await ctx.registerVehicle('own-2');
      const diagnostics = { constructor: 'x', toString: 1, valueOf: true, hasOwnProperty: 'h' };
      const res = await ctx.request('POST', '/v2/telemetry/own-2', { body: { timestamp: at(0), data: { speed: 3, diagnostics } } });
      assert.equal(res.statusCode, 202, res.body);
      const latest = await ctx.request('GET', '/v2/telemetry/own-2');
      assert.equal(latest.statusCode, 200, latest.body);
      assert.deepEqual(latest.json().data, { speed: 3, diagnostics });
      const history = await ctx.request('GET', '/v2/telemetry/own-2/history');
      assert.deepEqual(history.json().records.map((r: { data: unknown }) => r.data), [{ speed: 3, diagnostics }]);
      assert.equal(({} as Record<string, unknown>).constructor, Object);
      assert.equal(typeof ({} as Record<string, unknown>).toString, 'function');
    });

    test('`__proto__` is refused as a key, and nothing is stored', async () => {
      await ctx.registerVehicle('own-3');
      const res = await ctx.request('POST', '/v2/telemetry/own-3', { body: '{"data":{"diagnostics":{"__proto__":1,"constructor":"x"}}}' });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.headers['content-type'], 'application/problem+json');
      assert.equal((await ctx.request('GET', '/v2/telemetry/own-3')).statusCode, 404);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });
  });
}
