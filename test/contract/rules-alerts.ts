// The alerts half of the RulesStore contract (test/contract/rules-store.ts): opened at most once
// per rule and vehicle while unresolved, acknowledged and resolved only from the statuses that
// allow it, each with its event only when it happened; listed newest first; and the offline
// check's reads and its cluster-wide right.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { START } from '../../src/events/store.ts';
import { type EventEnvelope } from '../../src/events/types.ts';
import { alertEvent } from '../../src/rules/engine.ts';
import type { AlertRecord, AlertStatus } from '../../src/rules/model.ts';
import type { AlertChanges } from '../../src/rules/store.ts';
import type { Stores } from '../../src/storage/stores.ts';
import { eventually } from './event-store.ts';
import { T0, addOrganization } from './fixtures.ts';
import { type RulesContractOptions, rule } from './rules-fixtures.ts';

let n = 0;

const alert = (organizationId: string, ruleId: string, vehicleId: string, overrides: Partial<AlertRecord> = {}): AlertRecord => ({
  id: `al_${process.pid}_${++n}`, organizationId, ruleId, ruleName: `rule ${ruleId}`, vehicleId, status: 'open', openedAt: T0,
  acknowledgedAt: null, acknowledgedBy: null, resolvedAt: null, resolvedBy: null, triggerTimestamp: T0, triggerValue: 95, ...overrides,
});

/** What the store gives back, without its list cursor. */
const record = (found: (AlertRecord & { seq?: number }) | undefined): AlertRecord | undefined => {
  if (found === undefined) return undefined;
  const rest = { ...found };
  delete rest.seq;
  return rest;
};

const opening = (...alerts: AlertRecord[]): AlertChanges => ({
  organizationId: alerts[0]!.organizationId, opened: alerts, changed: [], events: alerts.map((a) => alertEvent('alert.opened', a, a.openedAt)),
});

/** The service's own changes: acknowledging an open alert, resolving an unresolved one. */
function changing(a: AlertRecord, status: 'acknowledged' | 'resolved', at: number, by = 'key_1'): AlertChanges {
  const next: AlertRecord = status === 'resolved' ? { ...a, status, resolvedAt: at, resolvedBy: by } : { ...a, status, acknowledgedAt: at, acknowledgedBy: by };
  const from: AlertStatus[] = status === 'resolved' ? ['open', 'acknowledged'] : ['open'];
  return { organizationId: a.organizationId, opened: [], changed: [{ id: a.id, from, status, at, by }], events: [alertEvent(status === 'resolved' ? 'alert.resolved' : 'alert.acknowledged', next, at)] };
}

/**
 * Alerts of two organizations: in `a`, in this order, #1 (r_1, v-1) resolved, #2 (r_1, v-2),
 * #3 (r_2, v-1) acknowledged, #4 (r_1, v-1) and #5 (r_2, v-2); in `b`, one of a rule also named
 * r_1 (ids are the store's to keep apart per organization, whatever they look like).
 */
async function someAlerts(stores: Stores) {
  const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
  const ids: string[] = [];
  const open = async (organizationId: string, ruleId: string, vehicleId: string) => {
    const made = alert(organizationId, ruleId, vehicleId, { openedAt: T0 + ids.length, triggerTimestamp: T0 + ids.length });
    assert.deepEqual((await stores.rules.applyAlerts(opening(made))).opened, [made.id]);
    ids.push(made.id);
    return made;
  };
  await stores.rules.applyAlerts(changing(await open(a, 'r_1', 'v-1'), 'resolved', T0 + 10));
  await open(a, 'r_1', 'v-2');
  await stores.rules.applyAlerts(changing(await open(a, 'r_2', 'v-1'), 'acknowledged', T0 + 11));
  await open(a, 'r_1', 'v-1');
  await open(a, 'r_2', 'v-2');
  const theirs = await open(b, 'r_1', 'v-9');
  return { a, b, ids: ids.slice(0, 5), theirs: theirs.id };
}

export function rulesAlertsContract(fresh: () => Promise<Stores>, options: RulesContractOptions): void {
  test('applyAlerts: one unresolved alert per rule and vehicle; each change once, from the status it needs, with its event only then', async () => {
    const stores = await fresh();
    const a = await addOrganization(stores);
    const first = alert(a, 'r_1', 'v-1', { triggerValue: { lat: 52.52, lng: 13.405 } });
    const applied = await stores.rules.applyAlerts(opening(first));
    assert.deepEqual([applied.opened, applied.changed, applied.events.map((e) => e.type)], [[first.id], [], ['alert.opened']]);
    assert.deepEqual(record(await stores.rules.getAlert(a, first.id)), first);

    const second = alert(a, 'r_1', 'v-1');
    assert.deepEqual(await stores.rules.applyAlerts(opening(second)), { opened: [], changed: [], events: [] }, 'a second unresolved one is not opened');
    assert.equal(await stores.rules.getAlert(a, second.id), undefined);
    const [twin1, twin2, otherVehicle, otherRule] = [alert(a, 'r_2', 'v-1'), alert(a, 'r_2', 'v-1'), alert(a, 'r_1', 'v-2'), alert(a, 'r_3', 'v-1')];
    const batch = await stores.rules.applyAlerts(opening(twin1, twin2, otherVehicle, otherRule));
    assert.deepEqual(batch.opened, [twin1.id, otherVehicle.id, otherRule.id], 'nor within one call');
    assert.deepEqual(batch.events.map((e) => (e.data as { id: string }).id), batch.opened);

    const acknowledged = await stores.rules.applyAlerts(changing(first, 'acknowledged', T0 + 5));
    assert.deepEqual([acknowledged.changed, acknowledged.events.map((e) => e.type)], [[first.id], ['alert.acknowledged']]);
    assert.deepEqual(record(await stores.rules.getAlert(a, first.id)), { ...first, status: 'acknowledged', acknowledgedAt: T0 + 5, acknowledgedBy: 'key_1' });
    assert.deepEqual(await stores.rules.applyAlerts(changing(first, 'acknowledged', T0 + 6, 'key_2')), { opened: [], changed: [], events: [] }, 'only an open one');
    assert.deepEqual((await stores.rules.applyAlerts(opening(alert(a, 'r_1', 'v-1')))).opened, [], 'an acknowledged alert is still unresolved');

    const resolved = await stores.rules.applyAlerts(changing(first, 'resolved', T0 + 7, 'system'));
    assert.deepEqual([resolved.changed, resolved.events.map((e) => e.type)], [[first.id], ['alert.resolved']]);
    assert.deepEqual(record(await stores.rules.getAlert(a, first.id)),
      { ...first, status: 'resolved', acknowledgedAt: T0 + 5, acknowledgedBy: 'key_1', resolvedAt: T0 + 7, resolvedBy: 'system' });
    for (const again of [changing(first, 'resolved', T0 + 8), changing(first, 'acknowledged', T0 + 8)]) {
      assert.deepEqual(await stores.rules.applyAlerts(again), { opened: [], changed: [], events: [] }, 'a resolved alert stays as it was');
    }
    const reopened = alert(a, 'r_1', 'v-1', { openedAt: T0 + 9, triggerTimestamp: T0 + 9, triggerValue: 'text' });
    assert.deepEqual((await stores.rules.applyAlerts(opening(reopened))).opened, [reopened.id], 'once resolved, the rule and vehicle may open again');
    assert.deepEqual(record(await stores.rules.getAlert(a, reopened.id)), reopened);
    // Resolved straight from open, with its opening in the same call.
    const quick = alert(a, 'r_4', 'v-1');
    const both = await stores.rules.applyAlerts({ ...changing(quick, 'resolved', T0 + 12), opened: [quick], events: [...opening(quick).events, ...changing(quick, 'resolved', T0 + 12).events] });
    assert.deepEqual([both.opened, both.changed], [[quick.id], [quick.id]]);

    const written = [first.id, twin1.id, otherVehicle.id, otherRule.id, first.id, first.id, reopened.id, quick.id, quick.id];
    await eventually(async () => {
      const page = await stores.events.feed(a, { after: START, limit: 100 });
      assert.ok(!page.gone);
      if (page.gone) return;
      const events = JSON.parse(`[${page.envelopes}]`) as EventEnvelope[];
      assert.deepEqual(events.map((e) => (e.data as { id: string }).id), written, 'the events of what happened, and no others');
    });
  });

  test('applyAlerts changes an alert only while its status is one of the change\'s `from`', async () => {
    const stores = await fresh();
    const a = await addOrganization(stores);
    const x = alert(a, 'r_1', 'v-1');
    await stores.rules.applyAlerts(opening(x));
    const only = (change: AlertChanges, from: AlertStatus[]): AlertChanges => ({ ...change, changed: change.changed.map((c) => ({ ...c, from })) });
    const nothing = { opened: [], changed: [], events: [] };
    assert.deepEqual(await stores.rules.applyAlerts(only(changing(x, 'resolved', T0 + 1), ['acknowledged'])), nothing, 'open is not acknowledged');
    assert.equal((await stores.rules.getAlert(a, x.id))?.status, 'open');
    assert.deepEqual((await stores.rules.applyAlerts(changing(x, 'acknowledged', T0 + 2))).changed, [x.id]);
    assert.deepEqual(await stores.rules.applyAlerts(only(changing(x, 'resolved', T0 + 3), ['open'])), nothing, 'acknowledged is not open');
    assert.deepEqual(await stores.rules.applyAlerts(only(changing(x, 'acknowledged', T0 + 3, 'key_2'), ['resolved'])), nothing);
    assert.deepEqual((await stores.rules.applyAlerts(only(changing(x, 'acknowledged', T0 + 4, 'key_2'), ['open', 'acknowledged']))).changed, [x.id],
      'acknowledged again when the caller allows it');
    assert.deepEqual((await stores.rules.applyAlerts(only(changing(x, 'resolved', T0 + 5), ['acknowledged']))).changed, [x.id]);
    assert.deepEqual(record(await stores.rules.getAlert(a, x.id)),
      { ...x, status: 'resolved', acknowledgedAt: T0 + 4, acknowledgedBy: 'key_2', resolvedAt: T0 + 5, resolvedBy: 'key_1' });
  });

  test('applyAlerts neither opens nor changes an alert of another organization than the one it names', async () => {
    const stores = await fresh();
    const [a, b] = [await addOrganization(stores), await addOrganization(stores)];
    const ours = alert(a, 'r_1', 'v-1');
    await stores.rules.applyAlerts(opening(ours));
    const nothing = { opened: [], changed: [], events: [] };
    for (const status of ['acknowledged', 'resolved'] as const) {
      assert.deepEqual(await stores.rules.applyAlerts({ ...changing(ours, status, T0 + 1), organizationId: b }), nothing, status);
    }
    assert.deepEqual(record(await stores.rules.getAlert(a, ours.id)), ours);
    const smuggled = alert(a, 'r_2', 'v-1');
    assert.deepEqual(await stores.rules.applyAlerts({ ...opening(smuggled), organizationId: b }), nothing);
    assert.equal(await stores.rules.getAlert(a, smuggled.id), undefined);
  });

  test('an alert whose trigger has no value is stored with null', async () => {
    const stores = await fresh();
    const a = await addOrganization(stores);
    const bare = alert(a, 'r_1', 'v-1', { triggerValue: undefined });
    assert.deepEqual((await stores.rules.applyAlerts(opening(bare))).opened, [bare.id]);
    assert.deepEqual(record(await stores.rules.getAlert(a, bare.id)), { ...bare, triggerValue: null });
  });

  test('getAlert and listAlerts: newest first, filtered, paged by the cursor, in the organization only', async () => {
    const stores = await fresh();
    const { a, b, ids, theirs } = await someAlerts(stores);
    const [one, two, three, four, five] = ids as [string, string, string, string, string];
    const list = async (filter: Omit<Parameters<Stores['rules']['listAlerts']>[1], 'limit'> & { limit?: number }, organizationId = a) =>
      (await stores.rules.listAlerts(organizationId, { limit: 10, ...filter })).alerts.map((x) => x.id);
    assert.deepEqual(await list({}), [five, four, three, two, one]);
    assert.deepEqual(await list({ statuses: [] }), [five, four, three, two, one], 'no statuses: any');
    assert.deepEqual(await list({ statuses: ['open'] }), [five, four, two]);
    assert.deepEqual(await list({ statuses: ['acknowledged', 'resolved'] }), [three, one]);
    assert.deepEqual(await list({ vehicleId: 'v-1' }), [four, three, one]);
    assert.deepEqual(await list({ ruleId: 'r_2' }), [five, three]);
    assert.deepEqual(await list({ ruleId: 'r_1', vehicleId: 'v-1', statuses: ['open'] }), [four]);
    assert.deepEqual(await list({ ruleId: 'r_1' }, b), [theirs]);
    assert.deepEqual(await list({ vehicleId: 'v-9' }), [], 'not another organization\'s');

    const all = (await stores.rules.listAlerts(a, { limit: 10 })).alerts;
    assert.ok(all.every((x, i) => i === 0 || x.seq < all[i - 1]!.seq), 'seq falls along the list');
    assert.deepEqual(await list({ before: all[2]!.seq }), [two, one]);
    assert.deepEqual(await list({ before: all[2]!.seq, statuses: ['open'] }), [two]);
    const paged: string[] = [];
    let before: number | undefined;
    for (let page = 0; page < 10; page++) {
      const { alerts } = await stores.rules.listAlerts(a, { limit: 2, before });
      if (alerts.length === 0) break;
      paged.push(...alerts.map((x) => x.id));
      before = alerts.at(-1)!.seq;
    }
    assert.deepEqual(paged, [five, four, three, two, one], 'pages of two: each alert once');

    assert.equal((await stores.rules.getAlert(a, three))?.status, 'acknowledged');
    assert.equal(await stores.rules.getAlert(b, three), undefined, 'not from another organization');
    assert.equal(await stores.rules.getAlert(a, theirs), undefined);
  });

  test('unresolvedAlerts: the open and acknowledged alerts of the rules asked for, in the organization', async () => {
    const stores = await fresh();
    const { a, b, ids, theirs } = await someAlerts(stores);
    const [, two, three, four, five] = ids as [string, string, string, string, string];
    const unresolved = async (organizationId: string, ruleIds: string[]) =>
      (await stores.rules.unresolvedAlerts(organizationId, ruleIds)).map((x) => x.id).sort();
    assert.deepEqual(await unresolved(a, ['r_1']), [two, four].sort());
    assert.deepEqual(await unresolved(a, ['r_1', 'r_2']), [two, three, four, five].sort());
    assert.deepEqual(await unresolved(a, []), []);
    assert.deepEqual(await unresolved(a, ['r_nobody']), []);
    assert.deepEqual(await unresolved(b, ['r_1', 'r_2']), [theirs]);
    const [found] = await stores.rules.unresolvedAlerts(a, ['r_2']).then((list) => list.filter((x) => x.id === three));
    assert.deepEqual([found?.status, found?.acknowledgedBy, found?.organizationId], ['acknowledged', 'key_1', a]);
  });

  test('organizationsWithOfflineRules: each organization with an enabled offline rule, once', async () => {
    const stores = await fresh();
    const [a, b, c, d] = [await addOrganization(stores), await addOrganization(stores), await addOrganization(stores), await addOrganization(stores)];
    const offline = { kind: 'offline', afterSeconds: 600 } as const;
    await stores.rules.insertRule(rule(a, 'r_a1', { condition: offline }));
    await stores.rules.insertRule(rule(a, 'r_a2', { condition: offline }));
    await stores.rules.insertRule(rule(a, 'r_a3'));
    await stores.rules.insertRule(rule(b, 'r_b', { condition: offline, enabled: false }));
    await stores.rules.insertRule(rule(c, 'r_c'));
    await stores.rules.insertRule(rule(d, 'r_d', { condition: offline }));
    const organizations = async () => (await stores.rules.organizationsWithOfflineRules()).sort();
    assert.deepEqual(await organizations(), [a, d].sort());
    await stores.rules.replaceRule(rule(a, 'r_a1', { condition: offline, enabled: false }));
    await stores.rules.replaceRule(rule(a, 'r_a2', { condition: offline, enabled: false }));
    await stores.rules.replaceRule(rule(b, 'r_b', { condition: offline }));
    assert.deepEqual(await organizations(), [b, d].sort());
    await stores.rules.replaceRule(rule(d, 'r_d'));
    await stores.rules.deleteRule(b, 'r_b');
    assert.deepEqual(await organizations(), []);
  });

  test('asOfflineChecker runs the check and answers true; a failing check fails the call and leaves the right free', async () => {
    const stores = await fresh();
    let runs = 0;
    assert.equal(await stores.rules.asOfflineChecker(async () => {
      runs++;
    }), true);
    await assert.rejects(stores.rules.asOfflineChecker(async () => {
      runs++;
      throw new Error('the check failed');
    }), /the check failed/);
    assert.equal(await stores.rules.asOfflineChecker(async () => {
      runs++;
    }), true);
    assert.equal(runs, 3);
  });

  test('another node gets false, without running its check, while the first holds the right', { skip: options.anotherNode === undefined }, async () => {
    const stores = await fresh();
    const other = await options.anotherNode!(stores);
    try {
      let entered!: () => void;
      let release!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const held = new Promise<void>((resolve) => (release = resolve));
      const first = stores.rules.asOfflineChecker(async () => {
        entered();
        await held;
      });
      await inside;
      let ran = false;
      assert.equal(await other.rules.asOfflineChecker(async () => {
        ran = true;
      }), false);
      assert.equal(ran, false);
      release();
      assert.equal(await first, true);
      assert.equal(await other.rules.asOfflineChecker(async () => {
        ran = true;
      }), true, 'once the first let go, the other node takes it');
      assert.equal(ran, true);
    } finally {
      await other.close();
    }
  });
}
