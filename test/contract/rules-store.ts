// The behaviour every RulesStore must have (SQLite, PostgreSQL): test/store-contracts.test.ts runs
// it against each backend. Geofences and rules are kept per organization, under a quota, and
// stamped; alerts are opened at most once per rule and vehicle, with their events only when they
// happen; the rule state read here is what a telemetry commit with rules wrote.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRuleEngine } from '../../src/rules/engine.ts';
import { mergeLatest } from '../../src/telemetry/latest.ts';
import { type MakeStores, T0, addOrganization, addVehicle, freshStores } from './fixtures.ts';
import { rulesAlertsContract } from './rules-alerts.ts';
import { ALL, type RulesContractOptions, allGeofences, geofence, quota, rule } from './rules-fixtures.ts';

export function rulesStoreContract(name: string, makeStores: MakeStores, options: RulesContractOptions = {}): void {
  describe(`RulesStore contract: ${name}`, () => {
    const fresh = freshStores(makeStores);

    test('geofences: stored as given, refused at the quota, counted per organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const polygon = geofence(a, 'gf_poly', {
        geometry: { type: 'Polygon', coordinates: [[[13.4, 52.5], [13.41, 52.5], [13.41, 52.51], [13.4, 52.5]]] }, vehicleIds: ['v-1', 'v-2'],
      });
      const multi = geofence(a, 'gf_multi', {
        geometry: { type: 'MultiPolygon', coordinates: [[[[0, 0], [1, 0], [1, 1], [0, 0]]], [[[2, 2], [3, 2], [3, 3], [2, 2]]]] }, vehicleIds: [],
      });
      assert.equal(await stores.rules.insertGeofence(polygon, quota(2)), 'created');
      assert.equal(await stores.rules.insertGeofence(multi, quota(2)), 'created');
      assert.equal(await stores.rules.insertGeofence(geofence(a, 'gf_3'), quota(2)), 'quota');
      assert.equal(await stores.rules.getGeofence(a, 'gf_3'), undefined, 'a refused one is not stored');
      assert.deepEqual(await stores.rules.getGeofence(a, 'gf_poly'), polygon);
      assert.deepEqual(await stores.rules.getGeofence(a, 'gf_multi'), multi);
      assert.equal(await stores.rules.getGeofence(b, 'gf_poly'), undefined, 'not from another organization');
      assert.equal(await stores.rules.insertGeofence(geofence(b, 'gf_b'), quota(2)), 'created', 'another organization counts apart');
      assert.equal(await stores.rules.insertGeofence(geofence(b, 'gf_b2'), quota(0)), 'quota');
      assert.equal(await stores.rules.deleteGeofence(a, 'gf_poly'), true);
      assert.equal(await stores.rules.insertGeofence(geofence(a, 'gf_3'), quota(2)), 'created', 'deleting freed a place');
    });

    test('concurrent geofence inserts never pass the quota', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => stores.rules.insertGeofence(geofence(a, `gf_c${i}`), quota(5))));
      assert.deepEqual([outcomes.filter((o) => o === 'created').length, outcomes.filter((o) => o === 'quota').length], [5, 7]);
      assert.equal((await stores.rules.listGeofences(a, { limit: 100, offset: 0 }, ALL)).total, 5);
    });

    test('lists: in creation order (then id, in byte order), paged, with the total; all of them for the evaluator', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      // Inserted out of order; '_' sorts between upper and lower case in byte order.
      const order = [['g_b', T0 + 2], ['g_a', T0 + 2], ['g_Z', T0 + 2], ['g__', T0 + 2], ['g_z', T0 + 1], ['g_y', T0 + 3]] as const;
      for (const [id, at] of order) {
        await stores.rules.insertGeofence(geofence(a, id, { createdAt: at, updatedAt: at }), quota(100));
        await stores.rules.insertRule(rule(a, id.replace('g_', 'r_'), { createdAt: at, updatedAt: at }));
      }
      await stores.rules.insertGeofence(geofence(b, 'g_other'), quota(100));
      await stores.rules.insertRule(rule(b, 'r_other'));
      const expected = ['z', 'Z', '_', 'a', 'b', 'y'];
      const geofences = async (limit: number, offset: number) => {
        const { geofences: page, total } = await stores.rules.listGeofences(a, { limit, offset }, ALL);
        return { ids: page.map((g) => g.id), total };
      };
      const rules = async (limit: number, offset: number) => {
        const { rules: page, total } = await stores.rules.listRules(a, { limit, offset });
        return { ids: page.map((r) => r.id), total };
      };
      assert.deepEqual(await geofences(10, 0), { ids: expected.map((s) => `g_${s}`), total: 6 });
      assert.deepEqual(await geofences(2, 2), { ids: ['g__', 'g_a'], total: 6 });
      assert.deepEqual(await geofences(2, 10), { ids: [], total: 6 });
      assert.deepEqual(await rules(10, 0), { ids: expected.map((s) => `r_${s}`), total: 6 });
      assert.deepEqual(await rules(3, 3), { ids: ['r_a', 'r_b', 'r_y'], total: 6 });
      assert.deepEqual(await rules(1, 6), { ids: [], total: 6 });
      const [emptyGeofences, emptyRules] = [await stores.rules.listGeofences('org_nobody', { limit: 10, offset: 0 }, ALL), await stores.rules.listRules('org_nobody', { limit: 10, offset: 0 })];
      assert.deepEqual([emptyGeofences, emptyRules], [{ geofences: [], total: 0 }, { rules: [], total: 0 }]);

      const byId = <T extends { id: string }>(list: T[]) => [...list].sort((x, y) => (x.id < y.id ? -1 : 1));
      assert.deepEqual(byId(await allGeofences(stores, a)), byId((await stores.rules.listGeofences(a, { limit: 10, offset: 0 }, ALL)).geofences));
      assert.deepEqual(byId(await stores.rules.allRules(a)), byId((await stores.rules.listRules(a, { limit: 10, offset: 0 })).rules));
      assert.deepEqual((await allGeofences(stores, b)).map((g) => g.id), ['g_other']);
      assert.deepEqual((await stores.rules.allRules(b)).map((r) => r.id), ['r_other']);
    });

    test('rules: stored as given, each kind of condition; replace and delete answer whether they found the id in the organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const rules = [
        rule(a, 'r_speed', { vehicleIds: ['v-1'] }),
        rule(a, 'r_door', { condition: { kind: 'threshold', field: 'diagnostics.door', op: '==', value: 'open', forSeconds: 30 }, vehicleIds: [] }),
        rule(a, 'r_ign', { condition: { kind: 'threshold', field: 'diagnostics.ignition', op: '!=', value: true, forSeconds: 0 }, enabled: false }),
        rule(a, 'r_off', { condition: { kind: 'offline', afterSeconds: 600 } }),
        rule(a, 'r_fence', { condition: { kind: 'geofence', geofenceId: 'gf_1', when: 'outside', forSeconds: 5 } }),
      ];
      for (const r of rules) await stores.rules.insertRule(r);
      for (const r of rules) assert.deepEqual(await stores.rules.getRule(a, r.id), r);
      assert.equal(await stores.rules.getRule(b, 'r_speed'), undefined, 'not from another organization');
      await assert.rejects(stores.rules.insertRule(rule(a, 'r_speed', { name: 'again' })), 'an id is taken once');

      const changed = rule(a, 'r_speed', { name: 'renamed', condition: { kind: 'offline', afterSeconds: 60 }, vehicleIds: null, enabled: false, updatedAt: T0 + 5 });
      assert.equal(await stores.rules.replaceRule({ ...changed, organizationId: b }), false, 'not in another organization');
      assert.equal(await stores.rules.replaceRule(rule(a, 'r_nobody')), false);
      assert.equal(await stores.rules.replaceRule(changed), true);
      assert.deepEqual(await stores.rules.getRule(a, 'r_speed'), changed);
      assert.equal(await stores.rules.deleteRule(b, 'r_door'), false, 'not from another organization');
      assert.deepEqual(await stores.rules.getRule(a, 'r_door'), rules[1]);
      assert.equal(await stores.rules.deleteRule(a, 'r_door'), true);
      assert.equal(await stores.rules.deleteRule(a, 'r_door'), false);
      assert.equal(await stores.rules.getRule(a, 'r_door'), undefined);
    });

    test('geofences: replace and delete answer whether they found the id in the organization, and change nothing elsewhere', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const original = geofence(a, 'gf_1');
      await stores.rules.insertGeofence(original, quota(10));
      const moved = geofence(a, 'gf_1', { name: 'moved', geometry: { type: 'Circle', coordinates: [2.35, 48.85], radius: 90.5 }, vehicleIds: ['v-9'], updatedAt: T0 + 7 });
      assert.equal(await stores.rules.replaceGeofence({ ...moved, organizationId: b }, ALL), 'missing', 'not in another organization');
      assert.deepEqual(await stores.rules.getGeofence(a, 'gf_1'), original);
      assert.equal(await stores.rules.replaceGeofence(geofence(a, 'gf_nobody'), ALL), 'missing');
      assert.equal(await stores.rules.replaceGeofence(moved, ALL), 'replaced');
      assert.deepEqual(await stores.rules.getGeofence(a, 'gf_1'), moved, 'createdAt is kept; the rest is replaced');
      assert.equal(await stores.rules.deleteGeofence(b, 'gf_1'), false, 'not from another organization');
      assert.equal(await stores.rules.deleteGeofence(a, 'gf_1'), true);
      assert.equal(await stores.rules.deleteGeofence(a, 'gf_1'), false);
      assert.deepEqual(await stores.rules.listGeofences(a, { limit: 10, offset: 0 }, ALL), { geofences: [], total: 0 });
    });

    test('the definitions stamp changes with each change to the organization\'s geofences and rules, and not with another organization\'s', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      const stamps = [await stores.rules.definitionsStamp(a)];
      const changed = async (what: string) => {
        const now = await stores.rules.definitionsStamp(a);
        assert.ok(!stamps.includes(now), `${what}: ${now} seen before (${stamps.join(', ')})`);
        stamps.push(now);
      };
      // Each change at its own millisecond: two changes in one may look alike (see the interface).
      await stores.rules.insertGeofence(geofence(a, 'gf_1', { createdAt: T0 + 1, updatedAt: T0 + 1 }), quota(10));
      await changed('a geofence created');
      await stores.rules.replaceGeofence(geofence(a, 'gf_1', { createdAt: T0 + 1, updatedAt: T0 + 2, name: 'renamed' }), ALL);
      await changed('a geofence replaced');
      await stores.rules.insertRule(rule(a, 'r_1', { createdAt: T0 + 3, updatedAt: T0 + 3 }));
      await changed('a rule created');
      await stores.rules.replaceRule(rule(a, 'r_1', { createdAt: T0 + 3, updatedAt: T0 + 4, enabled: false }));
      await changed('a rule disabled');
      await stores.rules.insertGeofence(geofence(a, 'gf_2', { createdAt: T0 + 5, updatedAt: T0 + 5 }), quota(10));
      await changed('another geofence created');
      await stores.rules.deleteGeofence(a, 'gf_1');
      await changed('a geofence deleted');
      await stores.rules.deleteRule(a, 'r_1');
      await changed('a rule deleted');

      const before = await stores.rules.definitionsStamp(a);
      const theirs = await stores.rules.definitionsStamp(b);
      await stores.rules.insertGeofence(geofence(b, 'gf_b', { updatedAt: T0 + 9 }), quota(10));
      await stores.rules.insertRule(rule(b, 'r_b', { updatedAt: T0 + 9 }));
      assert.equal(await stores.rules.definitionsStamp(a), before, 'another organization\'s changes leave this stamp as it was');
      assert.notEqual(await stores.rules.definitionsStamp(b), theirs);
      assert.equal(await stores.rules.replaceGeofence(geofence(b, 'gf_2', { updatedAt: T0 + 10 }), ALL), 'missing');
      assert.equal(await stores.rules.definitionsStamp(a), before, 'nor a replace aimed at this organization\'s id from another');
    });

    test('insideOf and vehiclesInside read what a telemetry commit with rules wrote, per organization', async () => {
      const stores = await fresh();
      const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
      for (const v of ['v-1', 'v-2', 'v-3']) await addVehicle(stores, a, v);
      await addVehicle(stores, b, 'v-1');
      await stores.rules.insertGeofence(geofence(a, 'gf_depot'), quota(10));
      await stores.rules.insertGeofence(geofence(a, 'gf_wide', { geometry: { type: 'Circle', coordinates: [13.405, 52.52], radius: 20_000 } }), quota(10));
      await stores.rules.insertGeofence(geofence(b, 'gf_theirs'), quota(10));
      const engine = createRuleEngine({ store: stores.rules, trips: false });
      const at = (lat: number) => ({ location: { lat, lng: 13.405 } });
      const commit = async (organizationId: string, records: { vehicleId: string; timestamp: number; data: Record<string, unknown> }[]) => {
        await engine.prepare(organizationId);
        const [outcome] = await stores.telemetry.commit([{ organizationId, at: T0, records }], mergeLatest, engine.commitRules);
        assert.equal(outcome?.ok, true);
      };
      assert.deepEqual(await stores.rules.insideOf(a, 'v-1'), [], 'nothing before the first record');
      await commit(a, [
        { vehicleId: 'v-1', timestamp: T0 + 1, data: at(52.52) },
        { vehicleId: 'v-2', timestamp: T0 + 1, data: at(52.6) },
        { vehicleId: 'v-3', timestamp: T0 + 1, data: at(52.52) },
      ]);
      await commit(b, [{ vehicleId: 'v-1', timestamp: T0 + 1, data: at(52.52) }]);
      assert.deepEqual(await stores.rules.insideOf(a, 'v-1'), ['gf_depot', 'gf_wide']);
      assert.deepEqual(await stores.rules.insideOf(a, 'v-2'), ['gf_wide']);
      assert.deepEqual(await stores.rules.insideOf(b, 'v-1'), ['gf_theirs']);
      assert.deepEqual(await stores.rules.vehiclesInside(a, 'gf_depot'), ['v-1', 'v-3']);
      assert.deepEqual(await stores.rules.vehiclesInside(a, 'gf_wide'), ['v-1', 'v-2', 'v-3']);
      assert.deepEqual(await stores.rules.vehiclesInside(a, 'gf_theirs'), [], 'not another organization\'s geofence');
      assert.deepEqual(await stores.rules.vehiclesInside(b, 'gf_depot'), []);

      // v-1 leaves the depot; v-3 leaves everything.
      await commit(a, [{ vehicleId: 'v-1', timestamp: T0 + 2, data: at(52.6) }, { vehicleId: 'v-3', timestamp: T0 + 2, data: at(53.5) }]);
      assert.deepEqual(await stores.rules.insideOf(a, 'v-1'), ['gf_wide']);
      assert.deepEqual(await stores.rules.insideOf(a, 'v-3'), []);
      assert.deepEqual(await stores.rules.vehiclesInside(a, 'gf_depot'), []);
      assert.deepEqual(await stores.rules.vehiclesInside(a, 'gf_wide'), ['v-1', 'v-2']);
    });

    test('alerts a telemetry commit with rules opened and resolved are the ones the store reads', async () => {
      const stores = await fresh();
      const a = await addOrganization(stores);
      await addVehicle(stores, a, 'v-1');
      await stores.rules.insertRule(rule(a, 'r_fast'));
      const engine = createRuleEngine({ store: stores.rules, trips: false });
      const commit = async (timestamp: number, speed: number) => {
        await engine.prepare(a);
        const [outcome] = await stores.telemetry.commit([{ organizationId: a, at: T0, records: [{ vehicleId: 'v-1', timestamp, data: { speed } }] }],
          mergeLatest, engine.commitRules);
        assert.ok(outcome?.ok);
        return outcome.events.map((e) => e.type);
      };
      assert.deepEqual(await commit(T0 + 1, 95), ['alert.opened']);
      const [opened] = (await stores.rules.listAlerts(a, { limit: 10 })).alerts;
      assert.deepEqual([opened?.ruleId, opened?.vehicleId, opened?.status, opened?.triggerTimestamp, opened?.triggerValue], ['r_fast', 'v-1', 'open', T0 + 1, 95]);
      assert.deepEqual((await stores.rules.unresolvedAlerts(a, ['r_fast'])).map((x) => x.id), [opened!.id]);
      assert.deepEqual(await commit(T0 + 2, 99), [], 'still over: nothing new opens');
      assert.deepEqual(await commit(T0 + 3, 10), ['alert.resolved']);
      const resolved = await stores.rules.getAlert(a, opened!.id);
      assert.deepEqual([resolved?.status, resolved?.resolvedAt, resolved?.resolvedBy], ['resolved', T0 + 3, 'system']);
      assert.deepEqual(await stores.rules.unresolvedAlerts(a, ['r_fast']), []);
    });

    rulesAlertsContract(fresh, options);
  });
}
