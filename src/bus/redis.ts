// The bus on Redis pub/sub: one channel, one connection to publish and one to listen (a
// subscribed connection can do nothing else). Each message is `{"n":node,"t":sent at,"e":event}`,
// the send time (ms since the epoch) for the receivers' measure of the bus's lag.
//
// Redis pub/sub delivers at most once. Two kinds of loss are noticed and answered with a resync:
// this node's listening connection dropped (it resyncs itself when it is back), and this node's
// publishing connection dropped (when it is back it asks every node to resync, since they cannot
// know what they missed from it).
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { connectRedis, redactedRedisUrl } from '../cluster/redis-options.ts';
import type { Bus, BusState, ClusterEvent } from './bus.ts';

type Wire = { n: string; t: number; e: ClusterEvent | { type: 'resync' } };

export interface RedisBusOptions {
  url: string;
  /** Prefix of the channel name, so that several clusters can share one Redis. */
  prefix: string;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** Counts events that could not be sent. */
  onPublishFailed?: () => void;
}

/** Connects both connections; rejects when Redis cannot be reached at start. */
export async function createRedisBus(options: RedisBusOptions): Promise<Bus> {
  const node = `node-${randomBytes(6).toString('hex')}`;
  const channel = `${options.prefix}events`;
  const where = redactedRedisUrl(options.url);
  const connected = await Promise.allSettled([connectRedis(options.url, `fleet-bus-pub-${node}`), connectRedis(options.url, `fleet-bus-sub-${node}`)]);
  const failed = connected.find((c) => c.status === 'rejected');
  if (failed !== undefined) {
    for (const c of connected) if (c.status === 'fulfilled') c.value.disconnect();
    throw failed.reason;
  }
  const [publisher, subscriber] = connected.map((c) => (c as PromiseFulfilledResult<Redis>).value) as [Redis, Redis];
  const listeners: ((event: ClusterEvent, from: string, sentAt: number) => void)[] = [];
  const resyncs: (() => void)[] = [];
  let closed = false;

  const resync = () => {
    for (const listener of resyncs) listener();
  };

  // Errors are reported through state() and the warnings below; ioredis reconnects by itself.
  try {
    await subscriber.subscribe(channel);
  } catch (error) {
    publisher.disconnect();
    subscriber.disconnect();
    throw new Error(`cannot reach Redis at ${where}`, { cause: error });
  }

  // Redis delivers this node's own messages back to it: they are told by their first bytes (the
  // node id comes first in every message) and dropped unparsed, which halves the parsing with two nodes.
  const own = `{"n":${JSON.stringify(node)},`;
  subscriber.on('message', (_channel: string, message: string) => {
    if (message.startsWith(own)) return;
    let wire: Wire;
    try {
      wire = JSON.parse(message) as Wire;
    } catch {
      return; // not ours
    }
    if (wire.n === node) return;
    if (wire.e.type === 'resync') {
      resync();
      return;
    }
    // A message from a node without the field (an older version, during a rolling upgrade) counts as sent now.
    const sentAt = typeof wire.t === 'number' ? wire.t : Date.now();
    for (const listener of listeners) listener(wire.e, wire.n, sentAt);
  });

  // After the first connection, every `ready` follows an outage: whatever was sent meanwhile is lost.
  let subscriberDown = false;
  let publisherDown = false;
  subscriber.on('close', () => {
    if (closed || subscriberDown) return;
    subscriberDown = true;
    options.log.warn({ redis: where }, 'bus: lost the Redis connection; live streams see only this node until it is back');
  });
  subscriber.on('ready', () => {
    if (!subscriberDown) return;
    // ioredis subscribes again by itself, but does not wait for Redis to confirm it: a message
    // another node publishes before then is lost. So the node is back (up, resynchronized) only
    // once a subscription sent after that one is confirmed; a failure waits for the next `ready`.
    subscriber.subscribe(channel).then(() => {
      if (closed || !subscriberDown || subscriber.status !== 'ready') return;
      subscriberDown = false;
      options.log.info({ redis: where }, 'bus: Redis is back; resynchronizing from the database');
      resync();
    }, () => undefined);
  });
  publisher.on('close', () => {
    if (!closed) publisherDown = true;
  });
  publisher.on('ready', () => {
    if (!publisherDown) return;
    publisherDown = false;
    send({ n: node, t: Date.now(), e: { type: 'resync' } });
  });

  function send(wire: Wire): void {
    if (closed) return;
    // Without an offline queue, a command while disconnected fails at once instead of piling up.
    publisher.publish(channel, JSON.stringify(wire)).catch(() => options.onPublishFailed?.());
  }

  return {
    node,
    publish: (event) => send({ n: node, t: Date.now(), e: event }),
    subscribe: (listener) => void listeners.push(listener),
    onResync: (listener) => void resyncs.push(listener),
    state(): BusState {
      if (subscriber.status === 'ready' && publisher.status === 'ready' && !subscriberDown) return 'up';
      return { degraded: `Redis at ${where} is unreachable; live streams carry only this node's events` };
    },
    async close() {
      closed = true;
      await Promise.allSettled([publisher.quit(), subscriber.quit()]);
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}
