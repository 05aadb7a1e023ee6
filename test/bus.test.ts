// The bus contract against the memory network and Redis; then what only Redis can show: losing
// the connection, state() degraded, and a resync once it is back.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Bus } from '../src/bus/bus.ts';
import { createMemoryBusNetwork } from '../src/bus/memory.ts';
import { createRedisBus } from '../src/bus/redis.ts';
import { busContract } from './contract/bus.ts';
import { waitUntil } from './helpers/wait.ts';
import { TEST_REDIS_URL, redisProxy, skipUnlessRedis, testPrefix } from './helpers/redis.ts';

const skip = await skipUnlessRedis();
const quiet = { warn() {}, info() {} };

busContract('memory', async () => {
  const network = createMemoryBusNetwork();
  const nodes: Bus[] = [];
  return {
    join: async () => {
      const bus = network.join();
      nodes.push(bus);
      return bus;
    },
    close: async () => void (await Promise.all(nodes.map((n) => n.close()))),
  };
});

busContract('redis', async () => {
  // Each world has its own channel, so parallel test files never hear each other.
  const { prefix } = testPrefix('bus');
  const nodes: Bus[] = [];
  return {
    join: async () => {
      const bus = await createRedisBus({ url: TEST_REDIS_URL, prefix, log: quiet });
      nodes.push(bus);
      return bus;
    },
    close: async () => void (await Promise.all(nodes.map((n) => n.close()))),
  };
}, { skip });

describe('memory network outage', () => {
  test('events sent while down are lost; nodes that missed some resync when it is back', async () => {
    const network = createMemoryBusNetwork();
    const [a, b] = [network.join(), network.join()];
    let resyncs = 0;
    b.onResync(() => resyncs++);
    const got: unknown[] = [];
    b.subscribe((event) => got.push(event));
    network.setDown(true);
    assert.notEqual(a.state(), 'up');
    a.publish({ type: 'streamEnded', streamId: 's' });
    network.setDown(false);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(got, []);
    assert.equal(resyncs, 1);
  });
});

describe('Redis bus: connection lost and back', { skip }, () => {
  const opened: Bus[] = [];
  const proxies: Awaited<ReturnType<typeof redisProxy>>[] = [];
  after(async () => {
    for (const bus of opened) await bus.close();
    for (const proxy of proxies) await proxy.close();
  });

  test('start fails clearly when Redis cannot be reached', async () => {
    const proxy = await redisProxy();
    proxies.push(proxy);
    proxy.cut();
    await assert.rejects(createRedisBus({ url: proxy.url, prefix: testPrefix('bus').prefix, log: quiet }), /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/);
  });

  test('a node cut from Redis reports degraded, publishing does not throw, and when back it resyncs and receives again', async () => {
    const { prefix } = testPrefix('bus');
    const proxy = await redisProxy();
    proxies.push(proxy);
    const warnings: string[] = [];
    const log = { warn: (_: object, msg: string) => void warnings.push(msg), info() {} };
    const cutNode = await createRedisBus({ url: proxy.url, prefix, log });
    const other = await createRedisBus({ url: TEST_REDIS_URL, prefix, log: quiet });
    opened.push(cutNode, other);
    let resyncs = 0;
    cutNode.onResync(() => resyncs++);
    let otherResyncs = 0;
    other.onResync(() => otherResyncs++);
    const got: unknown[] = [];
    cutNode.subscribe((event) => got.push(event));

    proxy.cut();
    await waitUntil(() => cutNode.state() !== 'up', 'degraded');
    assert.match((cutNode.state() as { degraded: string }).degraded, /Redis at redis:\/\/127\.0\.0\.1:\d+\/? is unreachable/);
    cutNode.publish({ type: 'streamEnded', streamId: 'str_lost' }); // must not throw
    other.publish({ type: 'streamEnded', streamId: 'str_missed' });
    assert.equal(warnings.length, 1, 'one warning per outage');

    proxy.restore();
    await waitUntil(() => cutNode.state() === 'up', 'reconnected', 10_000);
    await waitUntil(() => resyncs === 1, 'its own resync');
    // Its publishing connection dropped too: it asks the others to resync, since they may have missed its events.
    await waitUntil(() => otherResyncs === 1, 'the other node resyncs');
    other.publish({ type: 'streamEnded', streamId: 'str_after' });
    await waitUntil(() => got.length === 1, 'receives again after the outage');
    assert.deepEqual(got, [{ type: 'streamEnded', streamId: 'str_after' }]);
  });
});
