// The dashboard's requests (web/retry.ts, under web/api.ts) against a real service on a real port
// whose rate limit is one request in 3 s (GCRA: a request within 3 s of the last one let through
// is refused): a read or a write answered 429 is sent again once its Retry-After has passed (a
// refused request did nothing), a wait longer than the client's limit is not waited out, and a
// request waiting to be sent again can be aborted.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { fetchPatiently } from '../web/retry.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

let ctx: TestApp;
let slow: TestApp;
const realFetch = globalThis.fetch;
/** The service the requests go to. */
let origin = '';
/** Every status the service answered, in order. */
const answered: number[] = [];

async function listening(app: TestApp): Promise<string> {
  await app.app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port}`;
}

before(async () => {
  ctx = await createTestApp({ env: { FLEET_RATE_LIMIT_REQUESTS: '1', FLEET_RATE_LIMIT_WINDOW_SECONDS: '3' } });
  slow = await createTestApp({ env: { FLEET_RATE_LIMIT_REQUESTS: '1', FLEET_RATE_LIMIT_WINDOW_SECONDS: '120' } });
  globalThis.fetch = async (input, init) => {
    const res = await realFetch(input, init);
    answered.push(res.status);
    return res;
  };
});
after(async () => {
  globalThis.fetch = realFetch;
  await ctx.close();
  await slow.close();
});

/** A request of the dashboard's to the service under test, with the key. */
function send(method: string, path: string, key: string, more: { body?: unknown; signal?: AbortSignal } = {}): Promise<Response> {
  return fetchPatiently(`${origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(more.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(more.body === undefined ? {} : { body: JSON.stringify(more.body) }),
    ...(more.signal === undefined ? {} : { signal: more.signal }),
  });
}

test('a read or a write pushed back by the rate limit is sent again after its Retry-After', async () => {
  origin = await listening(ctx);
  const key = ctx.adminKey;
  answered.length = 0;
  assert.equal((await send('GET', '/v2/fleet/vehicles', key)).status, 200);
  const list = await send('GET', '/v2/fleet/vehicles', key);
  assert.equal(list.status, 200);
  assert.equal(((await list.json()) as { total: number }).total, 0);
  assert.deepEqual(answered.slice(0, 2), [200, 429], 'the second read was refused first');

  answered.length = 0;
  const write = await send('POST', '/v2/fleet/vehicles', key, { body: { vehicleId: 'w-1', type: 'van' } });
  assert.equal(write.status, 201);
  assert.deepEqual(answered, [429, 201], 'a write refused by the rate limit is sent again, once');
});

test('a Retry-After past the client\'s limit is answered at once; a read waiting to be sent again can be aborted', async () => {
  origin = await listening(slow);
  await send('GET', '/v2/fleet/vehicles', slow.adminKey);
  answered.length = 0;
  const refused = await send('GET', '/v2/fleet/vehicles', slow.adminKey);
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get('retry-after')) > 30);
  assert.deepEqual(answered, [429]);

  origin = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  await send('GET', '/v2/fleet/vehicles', ctx.adminKey);
  const controller = new AbortController();
  answered.length = 0;
  const read = send('GET', '/v2/fleet/vehicles', ctx.adminKey, { signal: controller.signal });
  while (answered.length === 0) await new Promise((resolve) => setImmediate(resolve));
  controller.abort();
  await assert.rejects(read, (error: unknown) => error instanceof DOMException && error.name === 'AbortError');
  assert.deepEqual(answered, [429], 'aborted while it waited');
});
