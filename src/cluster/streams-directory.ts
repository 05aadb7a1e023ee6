// The stream directory on Redis. Keys, under the deployment's prefix:
//   stream:{id}       the entry (JSON), expiring as the stream would
//   ticket:{hash}     a ticket's stream id until it expires; GETDEL redeems it once, cluster-wide
//   stream:{id}:log   the messages sent, as "seq frame", capped at the replay size, expiring
//                     a replay window after the last one
//   open:{org}        the organization's open streams (the quota), a sorted set of stream ids
//                     scored by when each one's lease ends, by Redis's clock; expiring with the
//                     newest lease
// Messages are recorded in batches: every record() of one turn of the event loop goes out in one
// pipeline. A message lost because Redis was away only costs a replay: the client gets a snapshot.
import type { Redis } from 'ioredis';
import { type StreamDirectory, type StreamEntry, framesAfter } from '../streams/directory.ts';

// Redis's own clock, so that the nodes' clocks need not agree. Leases all have one length, so the
// key's expiry set at each write is never before a member's end.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)`;

/** KEYS[1] the set; ARGV stream id, max, lease (ms). 1: counted; 0: the quota is full. */
const CLAIM_LUA = `${NOW}
local lease = tonumber(ARGV[3])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
return 1`;

/** KEYS[1] the set; ARGV lease (ms), then the stream ids. */
const RENEW_LUA = `${NOW}
local lease = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + lease, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], lease)
return 1`;

export function createRedisStreamDirectory(options: { redis: Redis; prefix: string; maxMessages: number; replayWindowMs: number }): StreamDirectory {
  const { redis, prefix, maxMessages, replayWindowMs } = options;
  const entryKey = (id: string) => `${prefix}stream:${id}`;
  const logKey = (id: string) => `${prefix}stream:${id}:log`;
  const openKey = (organizationId: string) => `${prefix}open:${organizationId}`;
  let pending = new Map<string, Buffer[]>();
  let scheduled: Promise<void> | undefined;

  async function write(): Promise<void> {
    const batch = pending;
    pending = new Map();
    scheduled = undefined;
    const pipeline = redis.pipeline();
    for (const [id, frames] of batch) {
      pipeline.rpush(logKey(id), ...frames);
      pipeline.ltrim(logKey(id), -maxMessages, -1);
      pipeline.pexpire(logKey(id), replayWindowMs * 2);
    }
    await pipeline.exec().catch(() => undefined);
  }

  return {
    async put(entry, ttlMs) {
      await redis.set(entryKey(entry.id), JSON.stringify(entry), 'PX', Math.max(1, Math.ceil(ttlMs)));
    },
    async get(streamId) {
      const json = await redis.get(entryKey(streamId));
      return json === null ? undefined : (JSON.parse(json) as StreamEntry);
    },
    async putTicket(hash, streamId, expiresAt) {
      await redis.set(`${prefix}ticket:${hash}`, streamId, 'PXAT', Math.ceil(expiresAt));
    },
    async takeTicket(hash) {
      return (await redis.getdel(`${prefix}ticket:${hash}`)) ?? undefined;
    },
    record(streamId, seq, frame) {
      let frames = pending.get(streamId);
      if (frames === undefined) pending.set(streamId, (frames = []));
      frames.push(Buffer.concat([Buffer.from(`${seq} `), frame]));
      scheduled ??= new Promise<void>((resolve) => setImmediate(resolve)).then(write);
    },
    async recorded(streamId, afterSeq) {
      await scheduled;
      return framesAfter((await redis.lrangeBuffer(logKey(streamId), 0, -1)).map(parseLine), afterSeq);
    },
    async lastSeq(streamId) {
      await scheduled;
      const newest = await redis.lindexBuffer(logKey(streamId), -1);
      return newest === null ? 0 : parseLine(newest).seq;
    },
    async flush() {
      await scheduled;
    },
    async claimOpen(organizationId, streamId, max, leaseMs) {
      return (await redis.eval(CLAIM_LUA, 1, openKey(organizationId), streamId, max, Math.ceil(leaseMs))) === 1;
    },
    async renewOpen(held, leaseMs) {
      const pipeline = redis.pipeline();
      for (const [organizationId, streams] of Map.groupBy(held, (s) => s.organizationId)) {
        pipeline.eval(RENEW_LUA, 1, openKey(organizationId), Math.ceil(leaseMs), ...streams.map((s) => s.id));
      }
      await pipeline.exec();
    },
    async releaseOpen(organizationId, streamId) {
      await redis.zrem(openKey(organizationId), streamId);
    },
  };
}

/** A recorded line, `<seq> <frame>`. */
function parseLine(line: Buffer): { seq: number; frame: Buffer } {
  const space = line.indexOf(0x20);
  return { seq: Number(line.subarray(0, space).toString()), frame: line.subarray(space + 1) };
}
