// The rule engine's copy of an organization's definitions, against the embedded store: a commit
// after a change waits for the new definitions, even when the change lands while an older read
// is under way; a commit already prepared when the change lands is judged by the old copy, never
// by none.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createRuleEngine } from '../src/rules/engine.ts';
import type { RulesStore } from '../src/rules/store.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
before(async () => {
  ctx = await createTestApp();
  await ctx.registerVehicle('cache-1');
});
after(() => ctx.close());

/** The store, whose reads of the rules can be held after they read: answered later, as they were. */
function heldStore() {
  const real = ctx.stores.rules;
  let gate: Promise<void> | undefined;
  let open = () => {};
  let reads = 0;
  const store: RulesStore = {
    ...real,
    async allRules(organizationId) {
      const rules = await real.allRules(organizationId);
      reads++;
      if (gate !== undefined) await gate;
      return rules;
    },
  };
  return {
    store,
    reads: () => reads,
    hold() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release() {
      gate = undefined;
      open();
    },
  };
}

const threshold = (value: number) => ({ kind: 'threshold', field: 'speed', op: '>', value, forSeconds: 0 });

async function createRule(name: string, value: number): Promise<string> {
  const res = await ctx.request('POST', '/v2/alert-rules', { body: { name, condition: threshold(value) } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ id: string }>().id;
}

/** The names of the rules a record at this speed opens alerts of. */
function opens(engine: ReturnType<typeof createRuleEngine>, speed: number): string[] {
  const judged = engine.commitRules.judge(ctx.organizationId, 'cache-1', [{ timestamp: Date.now(), data: { speed } }], undefined, [], Date.now());
  return (judged?.opened ?? []).map((a) => a.ruleName).sort();
}

test('a change heard while the rules are being read: the commit waits for a second read, which has it', async () => {
  const held = heldStore();
  const engine = createRuleEngine({ store: held.store, trips: false });
  await createRule('over 100', 100);
  held.hold();
  const preparing = engine.prepare(ctx.organizationId);
  assert.ok(preparing !== undefined, 'nothing in memory yet: the commit waits');
  // The read has happened (without the rule about to be made) and is held.
  while (held.reads() === 0) await new Promise((resolve) => setImmediate(resolve));
  await createRule('over 50', 50);
  engine.forget(ctx.organizationId);
  held.release();
  await preparing;
  assert.equal(held.reads(), 2, 'read again: the first read began before the change');
  assert.deepEqual(opens(engine, 120), ['over 100', 'over 50']);
  assert.equal(engine.prepare(ctx.organizationId), undefined, 'fresh: nothing to wait for');
});

test('a commit prepared before a change is judged by the old copy, and the next one waits for the new', async () => {
  const held = heldStore();
  const engine = createRuleEngine({ store: held.store, trips: false });
  await engine.prepare(ctx.organizationId);
  const before = opens(engine, 120);
  assert.ok(before.length > 0);
  const id = await createRule('over 10', 10);
  engine.forget(ctx.organizationId);
  assert.deepEqual(opens(engine, 120), before, 'the prepared commit still has the rules it was prepared with');
  const preparing = engine.prepare(ctx.organizationId);
  assert.ok(preparing !== undefined, 'after the change, the next commit waits');
  await preparing;
  assert.deepEqual(opens(engine, 120), [...before, 'over 10'].sort());

  // Everyone's definitions changed (a cluster resync): read again too.
  assert.equal((await ctx.request('DELETE', `/v2/alert-rules/${id}`)).statusCode, 204);
  engine.forget();
  await engine.prepare(ctx.organizationId);
  assert.deepEqual(opens(engine, 120), before);
});

test('definitions merely old are checked against the store: read again only when they changed unheard of', async () => {
  const held = heldStore();
  let clock = Date.now();
  const engine = createRuleEngine({ store: held.store, trips: false, now: () => clock });
  await engine.prepare(ctx.organizationId);
  const before = opens(engine, 120);
  const reads = held.reads();
  clock += 31_000;
  assert.equal(engine.prepare(ctx.organizationId), undefined, 'an old copy serves while the store is asked');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(held.reads(), reads, 'unchanged: not read again');
  assert.equal(engine.prepare(ctx.organizationId), undefined, 'and fresh for another while');

  // A change whose news never came (no `forget`): the next check finds it.
  await createRule('over 20', 20);
  clock += 31_000;
  assert.equal(engine.prepare(ctx.organizationId), undefined, 'the old copy serves meanwhile');
  // The new copy replaces it once read (a few turns of the event loop).
  for (let turn = 0; turn < 1000 && !opens(engine, 120).includes('over 20'); turn++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(held.reads() > reads, 'read again');
  assert.deepEqual(opens(engine, 120), [...before, 'over 20'].sort());
});
