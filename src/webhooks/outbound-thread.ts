// The thread of a threaded outbound (outbound.ts, `createThreadedOutbound`): makes the POSTs it is
// sent with an outbound of its own, and sends back their results, many to a message.
import { parentPort, workerData } from 'node:worker_threads';
import { type OutboundOptions, type PostResult, createOutbound } from './outbound.ts';

export type ThreadRequest = { posts: Array<[id: number, url: string, headers: Record<string, string>, body: string]> } | 'close';
export type ThreadReply = { results: Array<[id: number, result: PostResult]> } | 'closed';

const outbound = createOutbound(workerData as OutboundOptions);
let done: Array<[number, PostResult]> = [];
let scheduled = false;

function send(): void {
  scheduled = false;
  const results = done;
  done = [];
  parentPort!.postMessage({ results } satisfies ThreadReply);
}

parentPort!.on('message', (message: ThreadRequest) => {
  if (message === 'close') {
    // The attempts under way end first (undici's close waits for them), and their results go back
    // before the thread says it is done.
    void outbound.close().finally(() => setImmediate(() => {
      if (done.length > 0) send();
      parentPort!.postMessage('closed' satisfies ThreadReply);
      parentPort!.close();
    }));
    return;
  }
  for (const [id, url, headers, body] of message.posts) {
    void outbound.post(url, headers, body).then((result) => {
      done.push([id, result]);
      // The results of one turn of the event loop go back together.
      if (!scheduled) {
        scheduled = true;
        setImmediate(send);
      }
    });
  }
});
