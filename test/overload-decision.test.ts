// The overload decision (src/http/overload.ts), made certain: requests that arrive while the event
// loop is held longer than the limit are refused with 503, Retry-After and a problem, health probes
// are served all the same, and once the loop keeps time again every request is served. The test
// holds the loop itself (the app runs in this process), so a busy machine only makes the hold
// longer: the verdict is the same. How the service fares offered three times its capacity is
// measured by `npm run bench -- overload`.
import assert from 'node:assert/strict';
import { fdatasync } from 'node:fs';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { captureLogs } from './helpers/logs.ts';
import { parseResponse, listeningPort } from './helpers/raw-http.ts';
import { withTimeout } from './helpers/process.ts';
import { waitUntil } from './helpers/wait.ts';

const LIMIT_MS = 100;
const logs = captureLogs('info');
let ctx: TestApp;
let port: number;

before(async () => {
  ctx = await createTestApp({
    logger: logs.logger,
    env: { FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: String(LIMIT_MS), FLEET_OVERLOAD_SAMPLE_MS: '50', FLEET_OVERLOAD_RETRY_AFTER_SECONDS: '3', FLEET_RATE_LIMIT_REQUESTS: '0' },
  });
  port = await listeningPort(ctx.app);
});
after(() => ctx.close());

/** Keeps the event loop busy for `ms`: nothing else in this process runs meanwhile. */
function hold(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* the loop is held */ }
}

/**
 * Sockets the server has accepted and read from already (one health probe answered on each, kept
 * alive), so that requests written on them are all read in the server's next turn.
 */
async function connect(count: number): Promise<net.Socket[]> {
  return Promise.all(Array.from({ length: count }, () => new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    let text = '';
    const answered = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const length = Number(/content-length: *(\d+)/i.exec(text)?.[1] ?? Number.NaN);
      if (end === -1 || text.length < end + 4 + length) return;
      socket.off('data', answered);
      resolve(socket);
    };
    socket.on('data', answered);
    socket.once('error', reject);
  })));
}

/** Writes each request on its socket, holds the loop for `holdMs`, and reads every answer. */
async function sendDuring(requests: string[], holdMs: number) {
  const sockets = await connect(requests.length);
  const answers = sockets.map((socket) => new Promise<ReturnType<typeof parseResponse>>((resolve) => {
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(parseResponse(Buffer.concat(chunks).toString('latin1'))));
  }));
  sockets.forEach((socket, i) => socket.write(requests[i]!));
  hold(holdMs);
  return withTimeout(Promise.all(answers), 10_000, 'the answers');
}

const get = (path: string, key?: string) =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${key === undefined ? '' : `Authorization: Bearer ${key}\r\n`}\r\n`;

test('requests read after the loop was held past the limit: 503 with Retry-After and a problem; probes served; then served again', async () => {
  // The hold is three times the limit, and longer than the time refusals take to be armed after start.
  const vehicles = Array.from({ length: 6 }, () => get('/v2/fleet/vehicles', ctx.adminKey));
  const probes = [get('/healthz'), get('/readyz')];
  const answers = await sendDuring([...vehicles, ...probes], 3 * LIMIT_MS);
  for (const answer of answers.slice(0, vehicles.length)) {
    assert.equal(answer.status, 503, answer.text);
    assert.match(answer.headers['content-type'] ?? '', /^application\/problem\+json/);
    assert.equal(answer.headers['retry-after'], '3');
    const problem = JSON.parse(answer.body) as { code: string; status: number };
    assert.equal(problem.code, 'service-unavailable');
    assert.equal(problem.status, 503);
  }
  for (const answer of answers.slice(vehicles.length)) assert.equal(answer.status, 200, answer.text);
  assert.ok(logs.lines().some((line) => String(line.msg).startsWith('overloaded: refusing new requests')), 'the overload was logged');

  // The loop keeps time again: the next requests are served (the first sample after the hold may
  // still see its lateness, so each is asked until it is served, within a bound).
  const served = await withTimeout((async () => {
    for (;;) {
      const [answer] = await sendDuring([get('/v2/fleet/vehicles', ctx.adminKey)], 0);
      if (answer!.status === 200) return answer!;
      assert.equal(answer!.status, 503, answer!.text);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })(), 10_000, 'a request served after the hold');
  assert.equal(served.status, 200);
});

test('writes held up by the disk refuse further writes, not the reads the idle loop answers', async () => {
  // Every WAL sync after the set-up is held until the test lets it go: the telemetry posts wait,
  // admitted, while the loop itself idles.
  const held: Array<() => void> = [];
  let holding = false;
  const disk = await createTestApp({
    env: { FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: String(LIMIT_MS), FLEET_OVERLOAD_SAMPLE_MS: '50', FLEET_RATE_LIMIT_REQUESTS: '0' },
    syncFile: (fd, done) => (holding ? held.push(() => fdatasync(fd, done)) : fdatasync(fd, done)),
  });
  try {
    assert.equal((await disk.request('POST', '/v2/fleet/vehicles', { body: { vehicleId: 'van-1', type: 'van' } })).statusCode, 201);
    holding = true;
    const post = (speed: number) => disk.request('POST', '/v2/telemetry/van-1', { body: { data: { speed } } });
    // Eight writes (the overload's STUCK), each its own request, all waiting on the held sync. On a
    // busy machine the loop itself may run past the limit and a write be refused (503, nothing
    // stored) before it waits: it is sent again, until eight wait at once.
    const waiting: Array<{ answer: ReturnType<typeof post>; refused: boolean }> = [];
    let sent = 0;
    const send = () => {
      const entry = { answer: post(sent++), refused: false };
      void entry.answer.then((res) => (entry.refused = res.statusCode === 503), () => undefined);
      waiting.push(entry);
    };
    await waitUntil(async () => {
      for (let i = waiting.filter((w) => !w.refused).length; i < 8; i++) send();
      await waitUntil(() => held.length > 0 || waiting.every((w) => w.refused), 'the first write to wait for its sync, or all refused', 10_000);
      // However busy the machine, they have then waited longer than writes may (twice the limit;
      // refusals are armed two samples after start, long since).
      await new Promise((resolve) => setTimeout(resolve, 3 * LIMIT_MS));
      return held.length > 0 && waiting.filter((w) => !w.refused).length >= 8;
    }, 'eight writes waiting on the held sync', 30_000, { every: 1 });
    const refused = await post(100);
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.json().code, 'service-unavailable');
    const read = await disk.request('GET', '/v2/fleet/vehicles/van-1');
    assert.equal(read.statusCode, 200, read.body);

    holding = false;
    for (const release of held.splice(0)) release();
    for (const { answer, refused } of waiting) if (!refused) assert.equal((await answer).statusCode, 202, (await answer).body);
    const again = await withTimeout((async () => {
      for (;;) {
        const answer = await post(200);
        if (answer.statusCode !== 503) return answer;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })(), 10_000, 'a write served once the disk caught up');
    assert.equal(again.statusCode, 202, again.body);
  } finally {
    holding = false;
    for (const release of held.splice(0)) release();
    await disk.close();
  }
});
