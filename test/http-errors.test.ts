// Errors that do not come from our own code (docs/API.md "Errors"): what Fastify, its plugins
// (the static files behind /docs) and Node's HTTP parser refuse is answered with its own status as
// application/problem+json, never as a 500 with a stack trace in the error log, nor as another
// library's JSON. Real sockets: the cases are requests no HTTP client library would send.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { problemsPlugin } from '../src/schema/problems.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { captureLogs } from './helpers/logs.ts';
import { listeningPort, type RawResponse, rawRequest } from './helpers/raw-http.ts';

const logs = captureLogs('debug');
let ctx: TestApp;
let port: number;
before(async () => {
  ctx = await createTestApp({ logger: logs.logger });
  port = await listeningPort(ctx.app);
});
after(async () => {
  await ctx.close();
});

const get = (path: string, headers = '') => rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: fleet\r\n${headers}Connection: close\r\n\r\n`);

function assertProblem(res: RawResponse, status: number, code: string) {
  assert.equal(res.status, status, res.text.slice(0, 500));
  assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/, res.text.slice(0, 500));
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.equal(body.type, `urn:fleet:problem:${code}`);
  assert.equal(typeof body.requestId, 'string');
  assert.equal(res.headers['x-request-id'], body.requestId, 'the problem\'s request id is the response header\'s');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.doesNotMatch(res.body, /at .*\.(js|ts):\d+/, 'no stack trace');
  return body;
}

/** Error-level lines logged while `fn` ran. */
async function errorLinesDuring(fn: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const before = logs.lines().length;
  await fn();
  return logs.lines().slice(before).filter((line) => Number(line.level) >= 50);
}

describe('the static files behind /docs', () => {
  test('an encoded ../ is 403 forbidden, and no error is logged', async () => {
    let res: RawResponse | undefined;
    const errors = await errorLinesDuring(async () => {
      res = await get('/docs/static/%2e%2e/package.json');
    });
    assertProblem(res!, 403, 'forbidden');
    assert.deepEqual(errors, [], 'a refused path is not an internal error');
  });

  test('a range past the end is 416 with Content-Range', async () => {
    const res = await get('/docs/static/swagger-ui.css', 'Range: bytes=999999999-\r\n');
    assertProblem(res, 416, 'range-not-satisfiable');
    assert.match(res.headers['content-range'] ?? '', /^bytes \*\/\d+$/);
  });

  test('a file that exists is served as before', async () => {
    const res = await get('/docs/static/swagger-ui.css');
    assert.equal(res.status, 200);
  });
});

describe('URLs Fastify cannot route', () => {
  test('a malformed percent-encoding is 400 bad-request', async () => {
    assertProblem(await get('/v2/fleet/vehicles/%zz'), 400, 'bad-request');
  });

  test('a path parameter over the router\'s length limit is 414 uri-too-long', async () => {
    assertProblem(await get(`/v2/fleet/vehicles/${'a'.repeat(200)}`), 414, 'uri-too-long');
  });
});

describe('requests Node\'s HTTP parser refuses, before Fastify sees them', () => {
  test('a request line longer than the header limit is 414 uri-too-long', async () => {
    assertProblem(await get(`/v2/fleet/vehicles?x=${'a'.repeat(20_000)}`), 414, 'uri-too-long');
  });

  test('headers over the limit are 431 headers-too-large', async () => {
    assertProblem(await get('/healthz', `X-Big: ${'a'.repeat(20_000)}\r\n`), 431, 'headers-too-large');
  });

  test('bytes that are not HTTP are 400 bad-request', async () => {
    assertProblem(await rawRequest(port, 'HELLO\r\n\r\n'), 400, 'bad-request');
  });

  test('two different Content-Length headers are 400 bad-request', async () => {
    const res = await rawRequest(port, 'POST /v2/fleet/vehicles HTTP/1.1\r\nHost: fleet\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}');
    assertProblem(res, 400, 'bad-request');
  });
});

describe('every status a library error carries maps to a problem of that status', () => {
  const cases: Array<[number, string]> = [
    [400, 'bad-request'], [401, 'unauthorized'], [403, 'forbidden'], [404, 'route-not-found'], [405, 'method-not-allowed'],
    [408, 'request-timeout'], [412, 'precondition-failed'], [413, 'payload-too-large'], [414, 'uri-too-long'],
    [415, 'unsupported-media-type'], [416, 'range-not-satisfiable'], [429, 'rate-limited'], [431, 'headers-too-large'],
    [503, 'service-unavailable'],
  ];

  test('each status, and anything else: 4xx as 400, 5xx as 500 with the error logged', async (t) => {
    const captured = captureLogs('debug');
    const app = Fastify({ loggerInstance: captured.logger });
    t.after(() => app.close());
    await app.register(problemsPlugin);
    app.get('/throw/:status', async (request) => {
      const status = Number((request.params as { status: string }).status);
      throw Object.assign(new Error(`refused with ${status}`), { statusCode: status });
    });
    for (const [status, code] of [...cases, [418, 'bad-request'] as [number, string], [502, 'internal-error'] as [number, string]]) {
      const res = await app.inject({ method: 'GET', url: `/throw/${status}` });
      const expected = status === 418 ? 400 : status === 502 ? 500 : status;
      assert.equal(res.statusCode, expected, `${status}: ${res.body}`);
      assert.equal(res.json().code, code, `${status}`);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
    }
    const errors = captured.lines().filter((line) => Number(line.level) >= 50);
    assert.deepEqual(errors.map((line) => (line.err as { message: string }).message), ['refused with 502'], 'only the 5xx is an error');
  });
});
