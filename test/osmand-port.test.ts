// The OsmAnd port under the main port's HTTP timeouts (docs/OPERATIONS.md "Timeouts"): headers or
// a body trickled in are cut at their deadline with a 408 problem, over real sockets. Timeouts at
// their shortest (whole seconds); every wait is bounded and only the answer is asserted.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort } from './helpers/mqtt.ts';
import { parseResponse, type RawResponse } from './helpers/raw-http.ts';

let ctx: TestApp;
let port: number;
before(async () => {
  port = await freePort();
  ctx = await createTestApp({
    env: {
      FLEET_OSMAND_PORT: String(port), FLEET_PROTOCOLS_HOST: '127.0.0.1',
      FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: '1', FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: '2', FLEET_HTTP_IDLE_TIMEOUT_SECONDS: '3',
    },
  });
});
after(() => ctx.close());

/** Writes `first`, then `drip` every 200 ms until the server closes; what it answered (the socket is destroyed after `limitMs`). */
function trickle(first: string, drip: string, limitMs = 8_000): Promise<RawResponse> {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  const dripper = setInterval(() => {
    if (!socket.destroyed) socket.write(drip);
  }, 200);
  const limit = setTimeout(() => socket.destroy(), limitMs);
  socket.on('data', (chunk) => chunks.push(chunk));
  socket.on('error', () => undefined);
  socket.write(first);
  return new Promise((resolve) => {
    socket.on('close', () => {
      clearInterval(dripper);
      clearTimeout(limit);
      resolve(parseResponse(Buffer.concat(chunks).toString('latin1')));
    });
  });
}

function assertTimeoutProblem(response: RawResponse) {
  assert.equal(response.status, 408, response.text.slice(0, 400));
  assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/);
  assert.equal(JSON.parse(response.body).code, 'request-timeout');
}

describe('the OsmAnd port keeps the main port\'s timeouts', () => {
  test('headers a byte at a time: a 408 problem, the connection closed', async () => {
    assertTimeoutProblem(await trickle('GET /?id=phone HTTP/1.1\r\nHost: fleet\r\nX-Slow: ', 'a'));
  });

  test('a form body a byte at a time: a 408 problem though bytes keep coming, nothing stored', async () => {
    await ctx.registerVehicle('p-1');
    await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'phone-p1', vehicleId: 'p-1' } });
    const head = ['POST / HTTP/1.1', 'Host: fleet', 'Content-Type: application/x-www-form-urlencoded', 'Content-Length: 1000', '', 'id=phone-p1&lat=1&lon=1&x='].join('\r\n');
    assertTimeoutProblem(await trickle(head, 'a'));
    assert.equal((await ctx.request('GET', '/v2/telemetry/p-1/history')).json().records.length, 0);
  });

  test('a request not well-formed HTTP: a 400 problem', async () => {
    const response = await new Promise<RawResponse>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(parseResponse(Buffer.concat(chunks).toString('latin1'))));
      setTimeout(() => socket.destroy(), 5_000).unref();
      socket.write('GET / HTTP/1.1\r\nHost fleet\r\n\r\n');
    });
    assert.equal(response.status, 400, response.text.slice(0, 400));
    assert.equal(JSON.parse(response.body).code, 'bad-request');
  });

  test('a request asking for a WebSocket upgrade: answered as any request (the port has none), not left open', async () => {
    await ctx.registerVehicle('p-2');
    await ctx.request('POST', '/v2/devices', { body: { protocol: 'osmand', identifier: 'phone-p2', vehicleId: 'p-2' } });
    const response = await trickle([
      'GET /?id=phone-p2&lat=52.5&lon=13.4 HTTP/1.1', 'Host: fleet', 'Connection: Upgrade, close', 'Upgrade: websocket',
      'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', '', '',
    ].join('\r\n'), '', 5_000);
    assert.equal(response.status, 200, response.text.slice(0, 400));
    assert.equal((await ctx.request('GET', '/v2/telemetry/p-2/history')).json().records.length, 1);
  });
});
