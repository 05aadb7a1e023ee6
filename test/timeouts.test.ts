// HTTP timeouts (docs/OPERATIONS.md "Timeouts"), with real sockets that trickle their bytes in:
// headers too slow, a body too slow, a connection left silent, and a slow body at shutdown. The
// configured timeouts are short (whole seconds), the clock is the real one.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateApiKey } from '../src/auth/keys.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { startFleet, withTimeout } from './helpers/process.ts';
import { listeningPort, parseResponse, type RawResponse } from './helpers/raw-http.ts';

let ctx: TestApp;
let port: number;
before(async () => {
  ctx = await createTestApp({
    env: { FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: '1', FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: '2', FLEET_HTTP_IDLE_TIMEOUT_SECONDS: '3' },
  });
  port = await listeningPort(ctx.app);
});
after(async () => {
  await ctx.close();
});

interface Trickle {
  /** What the server wrote before closing, and when it closed (ms after connecting). */
  result: Promise<{ response: RawResponse; closedAfterMs: number }>;
}

/**
 * Writes `first`, then `drip` every `everyMs` until the server closes the connection; gives up
 * (destroying the socket) after `limitMs`.
 */
function trickle(targetPort: number, first: string, drip: string | undefined, everyMs: number, limitMs: number): Trickle {
  const started = Date.now();
  const socket = net.connect(targetPort, '127.0.0.1');
  const chunks: Buffer[] = [];
  let dripper: NodeJS.Timeout | undefined;
  const limit = setTimeout(() => socket.destroy(), limitMs);
  socket.on('data', (chunk) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const result = new Promise<{ response: RawResponse; closedAfterMs: number }>((resolve) => {
    socket.on('close', () => {
      clearInterval(dripper);
      clearTimeout(limit);
      resolve({ response: parseResponse(Buffer.concat(chunks).toString('latin1')), closedAfterMs: Date.now() - started });
    });
  });
  socket.write(first);
  if (drip !== undefined) {
    dripper = setInterval(() => {
      if (!socket.destroyed) socket.write(drip);
    }, everyMs);
  }
  return { result };
}

function assertTimeoutProblem(response: RawResponse) {
  assert.equal(response.status, 408, response.text.slice(0, 400));
  assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/);
  assert.equal(JSON.parse(response.body).code, 'request-timeout');
}

describe('a client that sends too slowly', () => {
  test('headers a byte at a time: 408 after the headers timeout, and the connection closed', async () => {
    const { response, closedAfterMs } = await trickle(port, 'GET /healthz HTTP/1.1\r\nHost: fleet\r\nX-Slow: ', 'a', 200, 8_000).result;
    assertTimeoutProblem(response);
    assert.ok(closedAfterMs >= 900 && closedAfterMs < 4_000, `closed after ${closedAfterMs} ms (headers timeout 1 s, checked every second)`);
  });

  test('a body a byte at a time: 408 after the request timeout, though bytes keep coming', async () => {
    const head = [
      'POST /v2/fleet/vehicles HTTP/1.1', 'Host: fleet', `Authorization: Bearer ${ctx.adminKey}`,
      'Content-Type: application/json', 'Content-Length: 1000', '', '',
    ].join('\r\n');
    const { response, closedAfterMs } = await trickle(port, head, ' ', 200, 8_000).result;
    assertTimeoutProblem(response);
    assert.ok(closedAfterMs >= 1_900 && closedAfterMs < 5_000, `closed after ${closedAfterMs} ms (request timeout 2 s)`);
  });

  test('a client that stops reading a large answer: its connection is closed after the idle timeout', async () => {
    // Twenty pipelined copies of the 1.7 MB bundle are more than the socket buffers on both sides
    // hold, so the server's writes stall once they are full.
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.pause();
    socket.write('GET /docs/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: fleet\r\n\r\n'.repeat(20));
    const connections = () => new Promise<number>((resolve, reject) => ctx.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    try {
      await sleep(1_000);
      assert.equal(await connections(), 1, 'the stalled answer holds its connection for now');
      const deadline = Date.now() + 8_000;
      while ((await connections()) > 0 && Date.now() < deadline) await sleep(100);
      assert.equal(await connections(), 0, 'closed by the server after 3 s without progress');
    } finally {
      socket.destroy();
    }
  });

  test('a prompt client is not affected', async () => {
    const res = await ctx.request('GET', '/healthz');
    assert.equal(res.statusCode, 200);
  });
});

describe('shutdown', () => {
  test('SIGTERM with a body still trickling in: the client gets 408, the process exits 0 within its 10 s', { timeout: 30_000 }, async (t) => {
    const key = generateApiKey();
    // The default timeouts: the request timeout (30 s) alone would outlast the shutdown deadline.
    const fleet = await startFleet(t, { env: { FLEET_ADMIN_KEY: key } });
    const head = [
      'POST /v2/fleet/vehicles HTTP/1.1', 'Host: fleet', `Authorization: Bearer ${key}`, 'X-Request-Id: trickling',
      'Content-Type: application/json', 'Content-Length: 1000', '', '',
    ].join('\r\n');
    const slow = trickle(fleet.port, head, ' ', 500, 20_000);
    await fleet.waitFor(() => fleet.logs().some((l) => l.reqId === 'trickling' && l.msg === 'incoming request'), 'the slow request to arrive', 5_000);
    const signalled = Date.now();
    fleet.child.kill('SIGTERM');
    const exit = await withTimeout(fleet.closed, 15_000, 'fleet to exit after SIGTERM');
    const tookMs = Date.now() - signalled;
    assert.deepEqual(exit, { code: 0, signal: null }, `exit after SIGTERM\n--- stdout:\n${fleet.stdout().slice(-3000)}`);
    assert.ok(tookMs < 9_000, `shut down in ${tookMs} ms`);
    assertTimeoutProblem((await slow.result).response);
  });
});

/**
 * Asks `port` for a WebSocket upgrade on a connection of its own; resolves with what came back and
 * whether the server closed the connection (false: it was still open after `limitMs`, destroyed).
 */
function upgradeAttempt(targetPort: number, path: string, limitMs = 10_000): Promise<{ response: RawResponse; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(targetPort, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closedByServer = true;
    const limit = setTimeout(() => {
      closedByServer = false;
      socket.destroy();
    }, limitMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(limit);
      resolve({ response: parseResponse(Buffer.concat(chunks).toString('latin1')), closedByServer });
    });
    socket.write([
      `GET ${path} HTTP/1.1`, 'Host: fleet', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', '', '',
    ].join('\r\n'));
  });
}

describe('an upgrade request while the service is closing', () => {
  // The service's order of plugins: this one, then (between it and the WebSocket plugin) hooks that
  // stop other parts at close, which take their time; the WebSocket plugin; hooks after it.
  test('is answered 503 and its connection closed, before and after the WebSocket plugin stops listening', { timeout: 60_000 }, async (t) => {
    const { default: Fastify } = await import('fastify');
    const { default: websocket } = await import('@fastify/websocket');
    const { shutdownArrivalsPlugin } = await import('../src/http/timeouts.ts');
    const gate = () => {
      let open!: () => void;
      let entered!: () => void;
      const opened = new Promise<void>((resolve) => { open = resolve; });
      const reached = new Promise<void>((resolve) => { entered = resolve; });
      return { open, reached, hook: async () => { entered(); await opened; } };
    };
    const [before, after] = [gate(), gate()];
    const app = Fastify();
    await app.register(shutdownArrivalsPlugin, { requestMs: 2_000, webSockets: true });
    app.addHook('preClose', before.hook);
    await app.register(websocket);
    await app.register(async (scope) => {
      scope.get('/live', { websocket: true }, (socket) => socket.send('hello'));
      scope.addHook('preClose', after.hook);
    });
    const appPort = await listeningPort(app);
    let closing: Promise<undefined> | undefined = undefined;
    t.after(() => {
      before.open();
      after.open();
      return closing ?? app.close();
    });
    const open = await upgradeAttempt(appPort, '/live', 2_000);
    assert.equal(open.response.status, 101, 'an upgrade before the close is taken up');

    closing = app.close();
    await withTimeout(before.reached, 5_000, 'the close to reach the first preClose hook');
    const routed = await upgradeAttempt(appPort, '/live');
    assert.equal(routed.response.status, 503, routed.response.text);
    assert.ok(routed.closedByServer, 'the connection answered 503 by Fastify is closed by the service');

    before.open();
    await withTimeout(after.reached, 5_000, 'the close to pass the WebSocket plugin\'s preClose hook');
    const unheard = await upgradeAttempt(appPort, '/live');
    assert.equal(unheard.response.status, 503, unheard.response.text);
    assert.equal(JSON.parse(unheard.response.body).code, 'service-unavailable');
    assert.ok(unheard.closedByServer, 'a connection no plugin takes up any more is answered and closed');

    after.open();
    await withTimeout(closing, 10_000, 'the close to end');
  });
});
