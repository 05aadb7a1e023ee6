// An attempt's HTTP exchange against real receivers: a success is a 2xx whose body was read (at
// most 64 KiB of it, past which the connection is closed rather than read on), and an attempt
// never takes longer than its timeout, whether the receiver stalls before its headers or in the
// middle of its body; one stopped by its caller or by the outbound's close ends at once, its
// request cut. The same on this thread and on a thread of its own (the service's).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, test } from 'node:test';
import { type Outbound, type OutboundOptions, RESPONSE_READ_LIMIT, createOutbound, createThreadedOutbound } from '../src/webhooks/outbound.ts';
import { waitUntil } from './helpers/wait.ts';

async function receiver(t: { after(fn: () => unknown): void }, handle: (res: ServerResponse) => void) {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handle(res));
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    connections: () => connections,
  };
}

const makers: Array<[string, (options: OutboundOptions) => Outbound]> = [['in process', createOutbound], ['on its own thread', createThreadedOutbound]];
for (const [name, make] of makers) describe(`outbound ${name}`, () => {
  test('a 2xx with a body far over 64 KiB: a success, the body read no further than needed, the connection closed', async (t) => {
    const chunk = Buffer.alloc(16 * 1024, 'x');
    let stopped = false;
    let unsent = -1;
    const r = await receiver(t, (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // 64 MiB offered, written as the client reads: a reader that read it all would take it all.
      let left = 4096;
      const pump = () => {
        while (left > 0 && !stopped) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (left === 0) res.end();
      };
      res.on('close', () => {
        stopped = true;
        unsent = left;
      });
      pump();
    });
    const outbound = make({ allowPrivate: true, timeoutMs: 5000 });
    t.after(() => outbound.close());
    const result = await outbound.post(r.url, { 'content-type': 'application/json' }, '{}');
    assert.deepEqual([result.ok, result.status, result.error], [true, 200, null]);
    const deadline = Date.now() + 5000;
    while (!stopped && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(stopped && unsent > 0, `the connection was closed instead of reading on (${unsent} of 4096 pieces unsent)`);
    assert.ok(RESPONSE_READ_LIMIT === 64 * 1024);
  });

  test('a small 2xx body is read and the connection kept for the next attempts', async (t) => {
    const r = await receiver(t, (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks'));
    const outbound = make({ allowPrivate: true, timeoutMs: 5000 });
    t.after(() => outbound.close());
    for (let i = 0; i < 10; i++) assert.equal((await outbound.post(r.url, {}, '{}')).ok, true);
    // undici may open a second one while it settles the first after the body's end.
    assert.ok(r.connections() <= 2, `10 attempts one after the other over ${r.connections()} connections`);
  });

  test('a receiver that trickles its body, each piece within the read timeout, is timed out as a whole', async (t) => {
    const timers: NodeJS.Timeout[] = [];
    const trickle = await receiver(t, (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      timers.push(setInterval(() => res.write('.'), 50));
    });
    t.after(() => timers.forEach(clearInterval));
    const outbound = make({ allowPrivate: true, timeoutMs: 300 });
    t.after(() => outbound.close());
    const started = Date.now();
    const result = await outbound.post(trickle.url, {}, '{}');
    assert.equal(result.ok, false);
    assert.equal(result.error, 'timed out');
    assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
  });

  test('a receiver that stalls before its headers, or in the middle of its body, is timed out', async (t) => {
    const stalled: ServerResponse[] = [];
    const before = await receiver(t, (res) => stalled.push(res));
    const during = await receiver(t, (res) => {
      stalled.push(res);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    const outbound = make({ allowPrivate: true, timeoutMs: 300 });
    t.after(() => outbound.close());
    for (const url of [before.url, during.url]) {
      const started = Date.now();
      const result = await outbound.post(url, {}, '{}');
      assert.equal(result.ok, false, url);
      assert.equal(result.error, 'timed out', url);
      assert.ok(Date.now() - started < 5000);
    }
    for (const res of stalled) res.destroy();
  });

  test('an attempt stopped by its signal, or by closing the outbound, ends at once as aborted and its request is cut; an answered one keeps its answer', async (t) => {
    // This receiver never answers: its requests end only when the outbound cuts them.
    const held: ServerResponse[] = [];
    let cut = 0;
    const silent = await receiver(t, (res) => {
      held.push(res);
      res.on('close', () => cut++);
    });
    const answering = await receiver(t, (res) => res.writeHead(204).end());
    const outbound = make({ allowPrivate: true, timeoutMs: 60_000 });
    t.after(() => outbound.close());
    const stop = new AbortController();
    const answered = await outbound.post(answering.url, {}, '{}', stop.signal);
    assert.deepEqual([answered.ok, answered.status, answered.aborted], [true, 204, undefined]);

    const stopped = outbound.post(silent.url, {}, '{}', stop.signal);
    await waitUntil(() => held.length === 1, 'the attempt to reach the receiver', 10_000);
    stop.abort();
    const result = await stopped;
    assert.deepEqual([result.ok, result.status, result.local, result.aborted], [false, null, true, true]);
    await waitUntil(() => cut === 1, 'its request to be cut', 10_000);
    const late = await outbound.post(silent.url, {}, '{}', stop.signal);
    assert.equal(late.aborted, true, 'a signal aborted before the attempt: none made');

    const closing = outbound.post(silent.url, {}, '{}');
    await waitUntil(() => held.length === 2, 'another attempt to reach the receiver', 10_000);
    await outbound.close();
    const closed = await closing;
    assert.deepEqual([closed.ok, closed.local, closed.aborted], [false, true, true]);
    await waitUntil(() => cut === 2, 'its request to be cut', 10_000);
    assert.equal(held.length, 2, 'the attempt after the abort was never sent');
  });
});

test('a thread that fails fails the attempts it had in hand, as its own failure; the next attempt starts another', async (t) => {
  // A thread whose module throws once it has a message: it fails with the posts in hand.
  const outbound = createThreadedOutbound({ allowPrivate: true, timeoutMs: 1000 }, new URL('./fixtures/failing-outbound-thread.ts', import.meta.url));
  t.after(() => outbound.close());
  for (let i = 0; i < 2; i++) {
    const results = await Promise.all([outbound.post('http://127.0.0.1:9/hook', {}, '{}'), outbound.post('http://127.0.0.1:9/hook', {}, '{}')]);
    for (const result of results) {
      assert.equal(result.ok, false);
      assert.match(String(result.error), /outbound thread/);
      assert.equal(result.local, true, 'a failure of this process, not of the endpoint');
    }
  }
});
