// What every Bus must do, run against the memory network and Redis (test/bus.test.ts).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Bus, ClusterEvent } from '../../src/bus/bus.ts';
import { waitUntil } from '../helpers/wait.ts';

export interface BusWorld {
  /** A new node on the world's bus. */
  join(): Promise<Bus>;
  close(): Promise<void>;
}

function recorder(bus: Bus) {
  const got: { event: ClusterEvent; from: string }[] = [];
  bus.subscribe((event, from) => got.push({ event, from }));
  return got;
}

const keyRevoked = (n: number): ClusterEvent => ({ type: 'keyRevoked', keyId: `key_${n}`, lookupId: `l${n}` });

export function busContract(name: string, open: () => Promise<BusWorld>, options: { skip?: string | false } = {}) {
  describe(`bus contract: ${name}`, { skip: options.skip ?? false }, () => {
    const worlds: BusWorld[] = [];
    const world = async () => {
      const w = await open();
      worlds.push(w);
      return w;
    };
    after(async () => {
      for (const w of worlds) await w.close();
    });

    test('every other node receives an event, the sender does not, and each node has its own name', async () => {
      const w = await world();
      const [a, b, c] = [await w.join(), await w.join(), await w.join()];
      assert.equal(new Set([a.node, b.node, c.node]).size, 3);
      const [gotA, gotB, gotC] = [recorder(a), recorder(b), recorder(c)];
      a.publish(keyRevoked(1));
      await waitUntil(() => gotB.length === 1 && gotC.length === 1, 'delivery to b and c');
      assert.deepEqual(gotB[0], { event: keyRevoked(1), from: a.node });
      assert.deepEqual(gotC[0], { event: keyRevoked(1), from: a.node });
      b.publish(keyRevoked(2));
      await waitUntil(() => gotA.length === 1, 'delivery to a');
      assert.deepEqual(gotA.map((g) => g.event), [keyRevoked(2)], 'a never hears itself');
    });

    test('events arrive in the order one node sent them, as copies', async () => {
      const w = await world();
      const [a, b] = [await w.join(), await w.join()];
      const got = recorder(b);
      const sent = Array.from({ length: 200 }, (_, i) => keyRevoked(i));
      for (const event of sent) a.publish(event);
      await waitUntil(() => got.length === sent.length, '200 events');
      assert.deepEqual(got.map((g) => g.event), sent);
      const state: ClusterEvent = {
        type: 'telemetry', organizationId: 'org_1', touched: [3],
        states: [{ organizationId: 'org_1', vehicleId: 'v', timestamp: 5, fields: { speed: { value: 1, at: 5 } } }],
      };
      a.publish(state);
      await waitUntil(() => got.length === sent.length + 1, 'the state');
      assert.deepEqual(got.at(-1)!.event, state);
      assert.notEqual(got.at(-1)!.event, state, 'a copy, not the sender\'s object');
    });

    test('state() is up while connected; a closed node stops receiving and the others go on', async () => {
      const w = await world();
      const [a, b, c] = [await w.join(), await w.join(), await w.join()];
      assert.equal(a.state(), 'up');
      const [gotB, gotC] = [recorder(b), recorder(c)];
      await c.close();
      a.publish(keyRevoked(7));
      await waitUntil(() => gotB.length === 1, 'b still receives');
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(gotC.length, 0);
    });
  });
}
