// Which webhook targets are refused, and how refusals and failed attempts read: every range of
// the IANA special-purpose registries that is not globally reachable, at creation (a 400 naming
// the field and the setting that allows it) and at each attempt; URL text the parser would
// change; and a receiver's odd answers worded for people in the deliveries log.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, type Socket, createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { forbiddenAddress } from '../src/webhooks/addresses.ts';
import { createOutbound } from '../src/webhooks/outbound.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

const FAST = { retryDelaysMs: [60_000], jitter: 0, pollMs: 50 };

/** Address → the range that refuses it. */
const REFUSED: readonly [string, string][] = [
  ['0.1.2.3', '0.0.0.0/8'], ['10.0.0.1', '10.0.0.0/8'], ['100.64.0.1', '100.64.0.0/10'], ['127.0.0.1', '127.0.0.0/8'],
  ['169.254.169.254', '169.254.0.0/16'], ['172.16.5.4', '172.16.0.0/12'], ['192.0.0.8', '192.0.0.0/24'], ['192.0.2.1', '192.0.2.0/24'],
  ['192.88.99.1', '192.88.99.0/24'], ['192.168.0.1', '192.168.0.0/16'], ['198.18.0.1', '198.18.0.0/15'], ['198.51.100.7', '198.51.100.0/24'],
  ['203.0.113.9', '203.0.113.0/24'], ['224.0.0.1', '224.0.0.0/4'], ['255.255.255.255', '240.0.0.0/4'],
  ['::', '::/128'], ['::1', '::1/128'],
  ['::ffff:127.0.0.1', '::ffff:0:0/96'], ['::ffff:7f00:1', '::ffff:0:0/96'], ['::ffff:8.8.8.8', '::ffff:0:0/96'],
  ['::ffff:0:7f00:1', '::ffff:0:0:0/96'], ['::ffff:0:a00:1', '::ffff:0:0:0/96'], ['::ffff:0:808:808', '::ffff:0:0:0/96'],
  ['64:ff9b:1::7f00:1', '64:ff9b:1::/48'], ['64:ff9b:1:ffff::808:808', '64:ff9b:1::/48'],
  ['100::1', '100::/64'], ['100:0:0:1::1', '100:0:0:1::/64'],
  ['2001::1', '2001::/23'], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::/23'], ['2001:2::1', '2001::/23'], ['2001:10::1', '2001::/23'],
  ['2001:1ff::1', '2001::/23'], ['2001:db8::1', '2001:db8::/32'], ['3fff::1', '3fff::/20'], ['5f00::1', '5f00::/16'],
  ['fc00::1', 'fc00::/7'], ['fd12::1', 'fc00::/7'], ['fe80::1', 'fe80::/10'], ['fe80::1%eth0', 'fe80::/10'], ['fec0::1', 'fec0::/10'],
  ['ff02::1', 'ff00::/8'],
  // IPv4 inside routable IPv6: judged by the IPv4 address.
  ['64:ff9b::a00:1', '10.0.0.0/8'], ['64:ff9b::127.0.0.1', '127.0.0.0/8'], ['2002:7f00:1::1', '127.0.0.0/8'],
  ['2002:c0a8:101::1', '192.168.0.0/16'], ['::127.0.0.1', '127.0.0.0/8'],
];

const REACHABLE = [
  '8.8.8.8', '93.184.216.34', '1.1.1.1', '192.0.3.1', '198.20.0.1', '2606:2800:220:1:248:1893:25c8:1946', '2001:200::1',
  '2001:4860:4860::8888', '64:ff9b::808:808', '2002:808:808::1', '2a00:1450:4001:80b::200e',
];

describe('address checks', () => {
  for (const [address, range] of REFUSED) {
    test(`${address} is refused, naming ${range}`, () => {
      const why = forbiddenAddress(address);
      assert.ok(why?.includes(range), `${address}: ${why}`);
    });
  }
  test('globally reachable addresses pass', () => {
    for (const address of REACHABLE) assert.equal(forbiddenAddress(address), undefined, address);
  });
});

describe('webhook URLs at creation and at each attempt', () => {
  let ctx: TestApp;
  let open: TestApp;
  before(async () => {
    ctx = await createTestApp({ webhooks: FAST });
    open = await createTestApp({ env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' }, webhooks: FAST });
  });
  after(async () => {
    await ctx.close();
    await open.close();
  });

  const FINDING = ['::ffff:0:7f00:1', '::ffff:0:a00:1', '64:ff9b:1::7f00:1', '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:10::1'];

  test('special-purpose IPv6 targets: 400 on /url naming the setting, on creation and change; nothing stored', async () => {
    const kept = (await ctx.request('POST', '/v2/webhooks', { body: { url: 'https://example.com/hook', eventTypes: ['*'] } })).json();
    for (const address of FINDING) {
      const url = `http://[${address}]:8080/hook`;
      for (const [method, path] of [['POST', '/v2/webhooks'], ['PATCH', `/v2/webhooks/${kept.id}`]] as const) {
        const res = await ctx.request(method, path, { body: method === 'POST' ? { url, eventTypes: ['*'] } : { url } });
        assert.equal(res.statusCode, 400, `${method} ${url}: ${res.body}`);
        const [error] = res.json().errors;
        assert.equal(error.path, '/url');
        assert.match(error.message, /not globally reachable/);
        assert.match(error.message, /FLEET_WEBHOOK_ALLOW_PRIVATE=true/);
      }
    }
    const listed = (await ctx.request('GET', '/v2/webhooks')).json();
    assert.deepEqual(listed.webhooks.map((w: { url: string }) => w.url), ['https://example.com/hook']);
  });

  test('the loopback refusal says how to allow it; with FLEET_WEBHOOK_ALLOW_PRIVATE=true the same targets are taken', async () => {
    const res = await ctx.request('POST', '/v2/webhooks', { body: { url: 'http://127.0.0.1:9000/hook', eventTypes: ['*'] } });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().errors[0].message, /127\.0\.0\.0\/8 \(loopback\).*FLEET_WEBHOOK_ALLOW_PRIVATE=true/);
    for (const address of ['127.0.0.1', `[${FINDING[0]}]`, `[${FINDING[3]}]`]) {
      const created = await open.request('POST', '/v2/webhooks', { body: { url: `http://${address}:9000/hook`, eventTypes: ['*'] } });
      assert.equal(created.statusCode, 201, created.body);
    }
  });

  test('at an attempt, before any connection', async () => {
    const outbound = createOutbound({ allowPrivate: false, timeoutMs: 2000 });
    try {
      for (const address of FINDING) {
        const result = await outbound.post(`http://[${address}]:8080/hook`, { 'content-type': 'application/json' }, '{}');
        assert.equal(result.ok, false, address);
        assert.match(String(result.error), /^refused: .*not globally reachable/, `${address}: ${result.error}`);
      }
    } finally {
      await outbound.close();
    }
  });

  test('raw CR, LF, tab, space or NUL in the URL: 400 on /url, on creation and change; nothing stored', async () => {
    const kept = (await open.request('POST', '/v2/webhooks', { body: { url: 'https://example.com/kept', eventTypes: ['*'] } })).json();
    for (const url of ['https://example.com/a\r\nX-Injected: 1', 'https://example.com/a b', 'https://example.com/a\u0000b', 'https://example.com/\tx',
      ' https://example.com/x', 'https://example.com/x\n', 'https://exa\u007fmple.com/x']) {
      for (const [method, path] of [['POST', '/v2/webhooks'], ['PATCH', `/v2/webhooks/${kept.id}`]] as const) {
        const res = await open.request(method, path, { body: method === 'POST' ? { url, eventTypes: ['*'] } : { url } });
        assert.equal(res.statusCode, 400, `${method} ${JSON.stringify(url)}: ${res.body}`);
        assert.equal(res.json().errors[0].path, '/url');
        assert.match(res.json().errors[0].message, /spaces or control characters/);
      }
    }
    const urls = (await open.request('GET', '/v2/webhooks', { query: { limit: '100' } })).json().webhooks.map((w: { url: string }) => w.url);
    assert.ok(urls.every((u: string) => ![...u].some((c) => c <= ' ')), JSON.stringify(urls));
    assert.equal((await open.request('GET', `/v2/webhooks/${kept.id}`)).json().url, 'https://example.com/kept');
  });
});

/** A TCP server that answers every request with `reply` as it stands. */
async function rawReceiver(reply: string) {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.once('data', () => socket.write(reply));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

describe('failed attempts are worded for people in the deliveries log', () => {
  let ctx: TestApp;
  before(async () => {
    ctx = await createTestApp({ env: { FLEET_WEBHOOK_ALLOW_PRIVATE: 'true' }, webhooks: FAST });
  });
  after(() => ctx.close());

  for (const [reply, expected] of [
    ['HTTP/1.1 101 Switching Protocols\r\n\r\n', 'The receiver answered 101 Switching Protocols; a 2xx was expected'],
    ['HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n', 'The receiver answered 101 Switching Protocols; a 2xx was expected'],
    ['HTTP/1.1 100 Continue\r\n\r\n', 'The receiver sent an answer to no request (an unasked 100 Continue, or bytes before the request); a 2xx was expected'],
    ['HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n', 'The receiver answered 503 Service Unavailable; a 2xx was expected'],
    ['HTTP/1.1 302 Found\r\nlocation: /x\r\ncontent-length: 0\r\n\r\n', 'The receiver answered 302 Found, a redirect, which is not followed; a 2xx was expected'],
  ] as const) {
    test(JSON.stringify(reply.split('\r\n\r\n')[0]), async () => {
      const receiver = await rawReceiver(reply);
      try {
        const webhook = (await ctx.request('POST', '/v2/webhooks', { body: { url: receiver.url, eventTypes: ['*'] } })).json();
        await ctx.request('POST', `/v2/webhooks/${webhook.id}/test`);
        const until = Date.now() + 10_000;
        let delivery: { attempt: number; error: string | null } | undefined;
        while ((delivery?.attempt ?? 0) < 1) {
          assert.ok(Date.now() < until, 'the attempt is recorded');
          await new Promise((resolve) => setTimeout(resolve, 30));
          delivery = (await ctx.request('GET', `/v2/webhooks/${webhook.id}/deliveries`)).json().deliveries[0];
        }
        assert.equal(delivery!.error, expected);
      } finally {
        receiver.close();
      }
    });
  }
});
