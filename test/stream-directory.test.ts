// The stream directory's contract, against memory and Redis: entries that expire, tickets that
// are taken once, and the recorded messages replayed only when none is missing.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { createRedisStreamDirectory } from '../src/cluster/streams-directory.ts';
import { type StreamDirectory, type StreamEntry, createMemoryStreamDirectory } from '../src/streams/directory.ts';
import { connectTestRedis, keysUnder, skipUnlessRedis, testPrefix } from './helpers/redis.ts';

const skip = await skipUnlessRedis();

const entry = (id: string): StreamEntry => ({
  id, organizationId: 'org_1', credentialId: 'key_1', vehicleId: undefined, vehicleIds: ['v-1'], interval: 0, mask: 1,
  createdAt: 1, node: 'node-a', attached: true, expiresAt: null, closedAt: null,
});
const frame = (seq: number) => Buffer.from(`{"type":"location","seq":${seq},"vehicleId":"v-1"}`);
const texts = (frames: Buffer[] | undefined) => frames?.map((f) => f.toString());

function directoryContract(name: string, open: () => Promise<StreamDirectory>, options: { skip?: string | false } = {}) {
  describe(`stream directory: ${name}`, { skip: options.skip ?? false }, () => {
    test('an entry is read back as written, and forgotten after its time', async () => {
      const directory = await open();
      await directory.put(entry('str_a'), 60_000);
      await directory.put(entry('str_short'), 30);
      assert.deepEqual(await directory.get('str_a'), JSON.parse(JSON.stringify(entry('str_a'))));
      assert.equal(await directory.get('str_none'), undefined);
      await new Promise((resolve) => setTimeout(resolve, 80));
      assert.equal(await directory.get('str_short'), undefined);
    });

    test('a ticket is taken once; an expired one never', async () => {
      const directory = await open();
      await directory.putTicket('h1', 'str_a', Date.now() + 60_000);
      await directory.putTicket('h2', 'str_a', Date.now() + 30);
      const [one, two] = await Promise.all([directory.takeTicket('h1'), directory.takeTicket('h1')]);
      assert.deepEqual([one, two].sort(), ['str_a', undefined].sort(), 'exactly one of two concurrent takers wins');
      await new Promise((resolve) => setTimeout(resolve, 80));
      assert.equal(await directory.takeTicket('h2'), undefined);
    });

    test('recorded messages come back after a seq, in order; a gap or a seq from the future gives none', async () => {
      const directory = await open();
      for (let seq = 1; seq <= 5; seq++) directory.record('str_r', seq, frame(seq));
      assert.deepEqual(texts((await directory.recorded('str_r', 2)).frames), [3, 4, 5].map((s) => frame(s).toString()));
      assert.deepEqual(await directory.recorded('str_r', 5), { frames: [], last: 5 });
      assert.deepEqual(await directory.recorded('str_r', 9), { frames: undefined, last: 5 });
      assert.deepEqual(await directory.recorded('str_unknown', 0), { frames: [], last: 0 });
      assert.deepEqual(await directory.recorded('str_unknown', 3), { frames: undefined, last: 0 });
      assert.equal(await directory.lastSeq('str_r'), 5);
      assert.equal(await directory.lastSeq('str_unknown'), 0);
    });

    test('open streams: counted up to the quota, a counted one again freely; released or not renewed, its place is free', async () => {
      const directory = await open();
      const org = `org_q_${process.pid}_${Math.random()}`;
      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      assert.equal(await directory.claimOpen(org, 's1', 2, 60_000), true);
      assert.equal(await directory.claimOpen(org, 's2', 2, 150), true);
      assert.equal(await directory.claimOpen(org, 's3', 2, 60_000), false, 'the quota is full');
      assert.equal(await directory.claimOpen(org, 's1', 2, 60_000), true, 'a stream already counted is counted again, not twice');
      assert.equal(await directory.claimOpen(`${org}-other`, 's3', 2, 60_000), true, 'each organization has its own count');
      await sleep(250);
      assert.equal(await directory.claimOpen(org, 's3', 2, 150), true, 's2 was not renewed: its place is free');
      await directory.renewOpen([{ organizationId: org, id: 's3' }], 60_000);
      await sleep(250);
      assert.equal(await directory.claimOpen(org, 's4', 2, 60_000), false, 's3 was renewed: still counted');
      await directory.releaseOpen(org, 's1');
      assert.equal(await directory.claimOpen(org, 's4', 2, 60_000), true, 's1 was released');
    });

    test('only the newest messages are kept: asking from before them gives none', async () => {
      const directory = await open();
      for (let seq = 1; seq <= 10; seq++) directory.record('str_cap', seq, frame(seq));
      await directory.flush();
      const kept = await directory.recorded('str_cap', 6);
      assert.deepEqual(texts(kept.frames), [7, 8, 9, 10].map((s) => frame(s).toString()));
      assert.equal((await directory.recorded('str_cap', 1)).frames, undefined, 'seq 2 is gone');
    });
  });
}

directoryContract('memory', async () => createMemoryStreamDirectory({ maxMessages: 8 }));

const clients: Redis[] = [];
const { prefix, cleanup } = testPrefix('directory');
after(async () => {
  for (const client of clients) client.disconnect();
  if (!skip) await cleanup();
});
directoryContract('redis', async () => {
  const redis = await connectTestRedis();
  clients.push(redis);
  return createRedisStreamDirectory({ redis, prefix, maxMessages: 8, replayWindowMs: 60_000 });
}, { skip });

describe('Redis directory keys', { skip }, () => {
  test('every key is under the prefix and expires', async () => {
    const redis = await connectTestRedis();
    clients.push(redis);
    const directory = createRedisStreamDirectory({ redis, prefix, maxMessages: 8, replayWindowMs: 60_000 });
    await directory.put(entry('str_k'), 60_000);
    await directory.putTicket('hk', 'str_k', Date.now() + 60_000);
    directory.record('str_k', 1, frame(1));
    await directory.claimOpen('org_k', 'str_k', 5, 60_000);
    await directory.flush();
    const keys = await keysUnder(redis, prefix);
    assert.ok(keys.length >= 4);
    for (const key of keys) assert.ok((await redis.pttl(key)) > 0, `${key} expires`);
  });
});
