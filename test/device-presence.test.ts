// Device presence on Redis (cluster/device-presence.ts), which `queue: false` asks in cluster mode:
// one node's hold is seen by the other and not by itself, a release ends it, and the hold of a
// node that stops renewing ends with its lease.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { createRedisDevicePresence } from '../src/cluster/device-presence.ts';
import { presenceKey } from '../src/commands/presence.ts';
import { connectTestRedis, skipUnlessRedis, testPrefix } from './helpers/redis.ts';
import { waitUntil } from './helpers/wait.ts';

const skip = await skipUnlessRedis();

describe('device presence on Redis', { skip }, () => {
  let redis: Redis;
  const { prefix, cleanup } = testPrefix('presence');
  before(async () => {
    redis = await connectTestRedis();
  });
  after(async () => {
    await cleanup();
    redis.disconnect();
  });

  test('held on one node: seen from the other, not from itself; released: seen nowhere', async () => {
    const one = createRedisDevicePresence({ redis, prefix, node: 'one' });
    const two = createRedisDevicePresence({ redis, prefix, node: 'two' });
    const key = presenceKey('org_1', 'van-1', 'teltonika');
    assert.equal(await two.elsewhere(key), false);
    one.set(key, true);
    await waitUntil(() => two.elsewhere(key), 'the hold seen from the other node');
    assert.equal(await one.elsewhere(key), false, 'a node is not elsewhere to itself');
    one.set(key, false);
    await waitUntil(async () => !(await two.elsewhere(key)), 'the release');
  });

  test('a node that stops renewing drops out when its lease ends; renewing keeps it', async () => {
    const dying = createRedisDevicePresence({ redis, prefix, node: 'dying', leaseMs: 300 });
    const living = createRedisDevicePresence({ redis, prefix, node: 'living', leaseMs: 300 });
    const other = createRedisDevicePresence({ redis, prefix, node: 'other' });
    const gone = presenceKey('org_1', 'van-2', 'mqtt');
    const kept = presenceKey('org_1', 'van-3', 'mqtt');
    await dying.renew([gone]);
    await living.renew([kept]);
    assert.equal(await other.elsewhere(gone), true);
    const renewals = setInterval(() => void living.renew([kept]), 50);
    try {
      await waitUntil(async () => !(await other.elsewhere(gone)), 'the lease of the node that stopped renewing to end');
      assert.equal(await other.elsewhere(kept), true, 'the renewed hold stands');
    } finally {
      clearInterval(renewals);
    }
  });
});
