import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { lazyChildLogger, redactUrl } from '../src/http/request-logger.ts';
import { createTestApp } from './helpers/app.ts';
import { captureLogs } from './helpers/logs.ts';
import { freePort } from './helpers/oauth.ts';
import { type StreamClient, attach, closeAll, createStream } from './helpers/streams.ts';

/** The parent logger, counting the children made from it. */
function counted(level: 'warn' | 'debug') {
  const logs = captureLogs(level);
  let children = 0;
  // Children inherit this property (pino makes them with Object.create): count only the root's.
  const root = logs.logger;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called below with its own `this`
  const child = root.child;
  root.child = function (this: typeof root, ...args: Parameters<typeof child>) {
    if (this === root) children++;
    return child.apply(this, args);
  } as typeof child;
  return { ...logs, children: () => children };
}

describe('request logger', () => {
  it('makes no child for lines below the level, and logs enabled lines with the bindings', () => {
    const logs = counted('warn');
    const log = lazyChildLogger(logs.logger, { reqId: 'r-1' }, {});
    log.info('not logged');
    log.debug({ a: 1 }, 'not logged either');
    assert.equal(logs.children(), 0);
    assert.equal(log.level, 'warn');
    log.warn({ vehicleId: 'v-1' }, 'something odd');
    log.error('and worse');
    assert.equal(logs.children(), 1, 'one child, made once');
    const lines = logs.lines();
    assert.deepEqual(lines.map((l) => [l.msg, l.reqId, l.level]), [['something odd', 'r-1', 40], ['and worse', 'r-1', 50]]);
    assert.equal(lines[0]!.vehicleId, 'v-1');
  });

  it('passes its bindings on to a child of its own and changes its own level only', () => {
    const logs = counted('debug');
    const log = lazyChildLogger(logs.logger, { reqId: 'r-2' }, {});
    log.child({ part: 'x' }).debug('from the child');
    log.level = 'error';
    log.warn('dropped');
    assert.equal(logs.logger.level, 'debug');
    assert.deepEqual(logs.lines().map((l) => [l.msg, l.reqId, l.part]), [['from the child', 'r-2', 'x']]);
  });

  it('logs by the level of a route that has one, below the parent\'s; other routes make no child', async () => {
    const logs = counted('warn');
    const app = Fastify({ loggerInstance: logs.logger, childLoggerFactory: lazyChildLogger, genReqId: () => 'req-8' });
    app.get('/chatty', { logLevel: 'debug' }, async (request) => {
      request.log.debug('a debug line');
      return { ok: true };
    });
    app.get('/quiet', async (request) => {
      request.log.debug('not logged');
      return { ok: true };
    });
    assert.equal((await app.inject({ url: '/chatty' })).statusCode, 200);
    assert.equal((await app.inject({ url: '/quiet' })).statusCode, 200);
    await app.close();
    assert.deepEqual(logs.lines().filter((l) => l.reqId === 'req-8').map((l) => l.msg), ['incoming request', 'a debug line', 'request completed']);
    assert.equal(logs.children(), 1, 'the quiet route logged nothing, so made no child');
  });

  it('gives every request line of a Fastify app its request id', async () => {
    const logs = captureLogs('info');
    const app = Fastify({ loggerInstance: logs.logger, childLoggerFactory: lazyChildLogger, genReqId: () => 'req-7' });
    app.get('/', async (request) => {
      request.log.warn('inside the handler');
      return { ok: true };
    });
    const res = await app.inject({ url: '/' });
    assert.equal(res.statusCode, 200);
    await app.close();
    const lines = logs.lines().filter((l) => l.reqId === 'req-7').map((l) => l.msg);
    assert.deepEqual(lines, ['incoming request', 'inside the handler', 'request completed']);
  });
});

describe('credentials in URLs never reach the logs', () => {
  const TICKET = 'tkt_SecretTicketValue0123456789';
  const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.c2VjcmV0.c2lnbmF0dXJl';

  it('stream tickets and access_token query parameters are redacted in the request line of the whole app', async () => {
    const logs = captureLogs('trace');
    const ctx = await createTestApp({ logger: logs.logger });
    try {
      await ctx.request('GET', `/v2/streams/str_unknown?ticket=${TICKET}&lastSeq=3`, { key: null });
      await ctx.request('GET', `/healthz?access_token=${TOKEN}`, { key: null });
      // The same names, encoded or in another case, are the same parameters to a reader.
      await ctx.request('GET', `/v2/streams/str_unknown?%74icket=${TICKET}x`, { key: null });
      await ctx.request('GET', `/v2/fleet/vehicles?Access_Token=${TOKEN}y`, { key: null });
    } finally {
      await ctx.close();
    }
    const text = logs.text();
    assert.ok(!text.includes('SecretTicketValue'), 'no ticket in the logs');
    assert.ok(!text.includes(TOKEN), 'no access token in the logs');
    const urls = logs.lines().filter((l) => l.msg === 'incoming request').map((l) => (l.req as { url: string }).url);
    assert.deepEqual(urls, [
      '/v2/streams/str_unknown?ticket=[redacted]&lastSeq=3',
      '/healthz?access_token=[redacted]',
      '/v2/streams/str_unknown?%74icket=[redacted]',
      '/v2/fleet/vehicles?Access_Token=[redacted]',
    ]);
  });

  it('redactUrl leaves other parameters, and URLs without a query, as they are', () => {
    assert.equal(redactUrl('/v2/fleet/vehicles'), '/v2/fleet/vehicles');
    assert.equal(redactUrl('/v2/fleet/vehicles?limit=5&status=active'), '/v2/fleet/vehicles?limit=5&status=active');
    assert.equal(redactUrl('/x?ticket'), '/x?ticket=[redacted]');
    assert.equal(redactUrl('/x?tickets=1&ticket=2&ticket=3'), '/x?tickets=1&ticket=[redacted]&ticket=[redacted]');
    assert.equal(redactUrl('/x?%E0=1&ticket=2'), '/x?%E0=1&ticket=[redacted]');
  });
});

describe('health probes log at debug', () => {
  it('at info, /healthz and /readyz log no line; other requests log theirs', async () => {
    const logs = captureLogs('info');
    const ctx = await createTestApp({ logger: logs.logger });
    try {
      assert.equal((await ctx.request('GET', '/healthz', { key: null })).statusCode, 200);
      assert.equal((await ctx.request('GET', '/readyz', { key: null })).statusCode, 200);
      assert.equal((await ctx.request('GET', '/v2/fleet/vehicles')).statusCode, 200);
    } finally {
      await ctx.close();
    }
    const urls = logs.lines().filter((l) => l.req !== undefined).map((l) => (l.req as { url: string }).url);
    assert.deepEqual(urls, ['/v2/fleet/vehicles'], 'only the API request has an "incoming request" line');
    assert.equal(logs.lines().filter((l) => l.msg === 'request completed').length, 1);
  });

  it('at debug, each probe logs its two lines at debug (20)', async () => {
    const logs = captureLogs('debug');
    const ctx = await createTestApp({ logger: logs.logger });
    try {
      await ctx.request('GET', '/healthz', { key: null });
    } finally {
      await ctx.close();
    }
    const probe = logs.lines().filter((l) => l.msg === 'incoming request' || l.msg === 'request completed');
    assert.deepEqual(probe.map((l) => [l.msg, l.level]), [['incoming request', 20], ['request completed', 20]]);
  });
});

describe('a real WebSocket attach with its ticket', () => {
  it('logs the attach without the ticket, at every level', async () => {
    const logs = captureLogs('trace');
    const port = await freePort();
    const ctx = await createTestApp({ logger: logs.logger, env: { FLEET_PORT: String(port), FLEET_PUBLIC_URL: `http://127.0.0.1:${port}` } });
    const clients: StreamClient[] = [];
    try {
      await ctx.app.listen({ host: '127.0.0.1', port });
      await ctx.registerVehicle('van-1');
      const stream = await createStream(ctx, { events: ['location'] }, 'van-1');
      const ticket = new URL(stream.url as string).searchParams.get('ticket')!;
      const client = await attach(stream.url as string, {}, clients);
      assert.equal((await client.next()).type, 'connected');
      await closeAll(clients);
      assert.ok(ticket.length > 10);
      assert.ok(!logs.text().includes(ticket), 'the ticket is nowhere in the logs');
      assert.ok(logs.lines().some((l) => (l.req as { url?: string } | undefined)?.url === `/v2/streams/${stream.streamId}?ticket=[redacted]`));
    } finally {
      await closeAll(clients);
      await ctx.close();
    }
  });
});
