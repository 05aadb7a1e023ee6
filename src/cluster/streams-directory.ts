// The stream directory on Redis. Keys, under the deployment's prefix:
//   stream:{id}       the entry (JSON), expiring as the stream would
//   ticket:{hash}     a ticket's stream id until it expires; GETDEL redeems it once, cluster-wide
//   stream:{id}:log   the messages sent, as "seq frame", capped at the replay size, expiring
//                     a replay window after the last one
// Messages are recorded in batches: every record() of one turn of the event loop goes out in one
// pipeline. A message lost because Redis was away only costs a replay: the client gets a snapshot.
import type { Redis } from 'ioredis';
import { type StreamDirectory, type StreamEntry, framesAfter } from '../streams/directory.ts';

export function createRedisStreamDirectory(options: { redis: Redis; prefix: string; maxMessages: number; replayWindowMs: number }): StreamDirectory {
  const { redis, prefix, maxMessages, replayWindowMs } = options;
  const entryKey = (id: string) => `${prefix}stream:${id}`;
  const logKey = (id: string) => `${prefix}stream:${id}:log`;
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
  };
}

/** A recorded line, `<seq> <frame>`. */
function parseLine(line: Buffer): { seq: number; frame: Buffer } {
  const space = line.indexOf(0x20);
  return { seq: Number(line.subarray(0, space).toString()), frame: line.subarray(space + 1) };
}
