// The thread of a threaded outbound (outbound.ts, `createThreadedOutbound`): makes the POSTs it is
// sent with an outbound of its own, and sends back their results, many to a message.
import { parentPort, workerData } from 'node:worker_threads';
import { type OutboundOptions, type PostResult, createOutbound, perTurn } from './outbound.ts';

export type ThreadPost = [id: number, url: string, headers: Record<string, string>, body: string];
export type ThreadRequest = { posts: ThreadPost[] } | { stop: number[] } | 'close';
export type ThreadReply = { results: Array<[id: number, result: PostResult]> } | 'closed';

const outbound = createOutbound(workerData as OutboundOptions);
const done = perTurn<[number, PostResult]>((results) => parentPort!.postMessage({ results } satisfies ThreadReply));
/** The attempts under way, each stoppable by its id. */
const underWay = new Map<number, AbortController>();

parentPort!.on('message', (message: ThreadRequest) => {
  if (message === 'close') {
    // The attempts under way are stopped (they end `aborted`), and their results go back before
    // the thread says it is done.
    void outbound.close().finally(() => setImmediate(() => {
      done.flush();
      parentPort!.postMessage('closed' satisfies ThreadReply);
      parentPort!.close();
    }));
    return;
  }
  if ('stop' in message) {
    for (const id of message.stop) underWay.get(id)?.abort();
    return;
  }
  for (const [id, url, headers, body] of message.posts) {
    const stop = new AbortController();
    underWay.set(id, stop);
    // The results of one turn of the event loop go back together.
    void outbound.post(url, headers, body, stop.signal).then((result) => {
      underWay.delete(id);
      done.push([id, result]);
    });
  }
});
