// Group commit isolation (docs/ARCHITECTURE.md "Group commit"): one request's batch that fails
// inside the shared transaction fails alone; every other batch of the group commits exactly once,
// with its events, on both stores; and what the failed transaction read (a vehicle's driver) is
// not taken for stored when the others commit again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRuleEngine } from '../src/rules/engine.ts';
import type { CommitRules } from '../src/rules/store.ts';
import { mergeLatest } from '../src/telemetry/latest.ts';
import type { BatchOutcome, CommitBatch } from '../src/telemetry/store.ts';
import { createGroupCommitter } from '../src/telemetry/writer.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { skipUnlessPostgres } from './helpers/postgres.ts';

/** Rules that judge only `poisoned`'s records, and fail inside the commit doing so. */
function failingFor(poisoned: string): CommitRules {
  return {
    judges: (organizationId) => organizationId === poisoned,
    alerts: () => false,
    rollups: false,
    judge() {
      throw new Error('judging failed');
    },
  };
}

for (const backend of ['sqlite', 'postgres'] as const) {
  const skip = backend === 'postgres' ? await skipUnlessPostgres() : false;
  describe(`a failing batch in a group commit (${backend})`, { skip }, () => {
    let ctx: TestApp;
    before(async () => {
      ctx = await createTestApp({ backend });
    });
    after(() => ctx.close());

    test('fails alone: the other batches of its group commit once each, with their activations', async () => {
      const other = await ctx.otherOrganization();
      const healthy = ['iso-1', 'iso-2', 'iso-3', 'iso-4', 'iso-5'];
      for (const v of healthy) await ctx.registerVehicle(v);
      await ctx.registerVehicle('iso-bad', {}, other.key);
      await ctx.registerVehicle('iso-bad-2', {}, other.key);
      const t0 = Date.now() - 60_000;
      const batchOf = (organizationId: string, vehicleId: string): CommitBatch => ({
        organizationId, at: Date.now(),
        records: [0, 1, 2].map((i) => ({ vehicleId, timestamp: t0 + i * 1000, data: { speed: i } })),
      });
      let attempts = 0;
      const writer = createGroupCommitter(ctx.stores.telemetry, mergeLatest, failingFor(other.organizationId), () => attempts++);
      // Submitted in one turn of the event loop: one group, the failing batches among the healthy.
      const batches = [
        batchOf(ctx.organizationId, 'iso-1'), batchOf(other.organizationId, 'iso-bad'), batchOf(ctx.organizationId, 'iso-2'),
        batchOf(ctx.organizationId, 'iso-3'), batchOf(ctx.organizationId, 'iso-4'), batchOf(other.organizationId, 'iso-bad-2'),
        batchOf(ctx.organizationId, 'iso-5'),
      ];
      const settled = await Promise.allSettled(batches.map((b) => writer.submit(b)));
      assert.ok(attempts > 1, 'the group was tried together first');

      settled.forEach((result, i) => {
        if (batches[i]!.organizationId === other.organizationId) {
          assert.ok(result.status === 'rejected');
          assert.equal((result.reason as Error).message, 'judging failed');
        } else {
          assert.ok(result.status === 'fulfilled');
          const outcome: BatchOutcome = result.value;
          assert.ok(outcome.ok);
          assert.deepEqual([outcome.accepted, outcome.duplicates, outcome.activated], [3, 0, [batches[i]!.records[0]!.vehicleId]]);
          assert.deepEqual(outcome.events.map((e) => e.type), ['vehicle.status_changed']);
        }
      });
      for (const v of healthy) {
        const history = await ctx.request('GET', `/v2/telemetry/${v}/history`);
        assert.equal(history.json().records.length, 3, v);
        // On PostgreSQL an event is readable once every older transaction on the server has ended
        // (another test's, say): read until it is, then a moment more, so a second would show.
        const activations = async () => (await ctx.request('GET', '/v2/events', { query: { vehicleId: v, types: 'vehicle.status_changed' } })).json().events.length as number;
        for (const deadline = Date.now() + 15_000; (await activations()) === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 100));
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(await activations(), 1, `${v}: one activation`);
      }
      for (const v of ['iso-bad', 'iso-bad-2']) {
        const history = await ctx.request('GET', `/v2/telemetry/${v}/history`, { key: other.key });
        assert.deepEqual(history.json().records, [], `${v}: nothing stored`);
        assert.equal((await ctx.request('GET', `/v2/fleet/vehicles/${v}`, { key: other.key })).json().status, 'registered');
      }
    });

    test('what a failed group read is not trusted: the driver its records named is assigned when they commit again', async () => {
      const other = await ctx.otherOrganization('Poisoned too');
      await ctx.registerVehicle('iso-driven');
      await ctx.registerVehicle('iso-bad-3', {}, other.key);
      const made = await ctx.request('POST', '/v2/drivers', { body: { name: 'Ada', identifiers: [{ kind: 'rfid', value: 'adacard7' }] } });
      assert.equal(made.statusCode, 201, made.body);
      const ada = made.json<{ id: string }>().id;
      const engine = createRuleEngine({ store: ctx.stores.rules, trips: true });
      await engine.prepare(ctx.organizationId);
      const real = engine.commitRules;
      const rules: CommitRules = {
        rollups: real.rollups,
        alerts: (organizationId) => real.alerts(organizationId),
        judges: (organizationId) => organizationId === other.organizationId || real.judges(organizationId),
        judge(organizationId, ...rest) {
          if (organizationId === other.organizationId) throw new Error('judging failed');
          return real.judge(organizationId, ...rest);
        },
      };
      const t0 = Date.now() - 60_000;
      const record = (vehicleId: string, i: number) => ({ vehicleId, timestamp: t0 + i * 1000, data: { speed: 0, driverIdentifier: 'adacard7' } });
      const writer = createGroupCommitter(ctx.stores.telemetry, mergeLatest, rules, () => {});
      // One group: the first batch assigns Ada, the second reads her as the vehicle's driver, the third fails them all.
      const settled = await Promise.allSettled([
        writer.submit({ organizationId: ctx.organizationId, at: Date.now(), records: [record('iso-driven', 0)] }),
        writer.submit({ organizationId: ctx.organizationId, at: Date.now(), records: [record('iso-driven', 1)] }),
        writer.submit({ organizationId: other.organizationId, at: Date.now(), records: [record('iso-bad-3', 0)] }),
      ]);
      assert.deepEqual(settled.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected']);
      assert.equal((await ctx.request('GET', '/v2/fleet/vehicles/iso-driven')).json<{ driverId: string | null }>().driverId, ada);
    });
  });
}
