// `npm run bench -- overload`: a real service process offered three times its capacity. The
// benchmark measures what the service serves (a short closed-loop burst), then offers three times
// that, open loop (requests arrive on a schedule, whatever the answers do), each with a deadline.
// Every answer must be 2xx, 429 or 503 (problem+json, `service-unavailable`, Retry-After): no request
// times out, no connection is reset, and the health probes are served throughout. Everything is
// relative to the measured capacity, so a slow machine changes the numbers, not the verdict; a
// machine busy with other work can starve this process's own timers, which then count answers that
// came in time as late (run it on a quiet machine). The decision itself is tested, deterministically,
// in test/overload-decision.test.ts.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { generateApiKey } from '../src/auth/keys.ts';
import { freePort } from '../test/helpers/mqtt.ts';

/**
 * Records per request: enough that serving one costs the server far more than sending it costs
 * this process, which shares the machine's cores with it.
 */
const RECORDS = 500;
const VEHICLES = 20;
/**
 * How long the overload lasts, and each request's deadline, in units of the burst's length. Without
 * the overload check, a request's wait grows by twice the time the overload has lasted (three
 * times the capacity offered, one served): past the deadline before the overload ends.
 */
const BURST_MS = 1_500;
const OVERLOAD_MS = 4 * BURST_MS;
const DEADLINE_MS = 5 * BURST_MS + 500;
const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

type Outcome = { status: number; headers: Record<string, string | string[] | undefined>; body: string } | { error: string };

const dir = mkdtempSync(path.join(tmpdir(), 'fleet-bench-overload-'));
let child: ChildProcess | undefined;
let logs = '';
try {
  await run();
  console.log('\nPASSED: every answer 2xx, 429 or 503 with Retry-After; no timeout, no reset; probes served');
} catch (error) {
  console.error(`\nFAILED: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  child?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}

async function run(): Promise<void> {
  const key = generateApiKey();
  const port = await freePort();
  child = spawn(process.execPath, [MAIN], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir,
      FLEET_HOST: '127.0.0.1', FLEET_PORT: String(port), FLEET_ADMIN_KEY: key, FLEET_LOG_LEVEL: 'warn',
      FLEET_MQTT_PORT: '0', FLEET_OSMAND_PORT: '0', FLEET_TELTONIKA_PORT: '0', FLEET_RATE_LIMIT_REQUESTS: '0',
      FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: '100', FLEET_OVERLOAD_SAMPLE_MS: '100', FLEET_OVERLOAD_RETRY_AFTER_SECONDS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (logs += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (logs += chunk));
  const running = () => child!.exitCode === null && child!.signalCode === null;
  const base = `http://127.0.0.1:${port}`;
  // Each request in flight has its own connection, as many separate clients would.
  const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 30_000 });
  async function call(method: 'GET' | 'POST', path: string, body?: unknown, deadlineMs = DEADLINE_MS): Promise<Outcome> {
    try {
      const res = await request(`${base}${path}`, {
        method, dispatcher: agent, signal: AbortSignal.timeout(deadlineMs),
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
    } catch (error) {
      const e = error as Error & { code?: string };
      return { error: `${e.name}${e.code === undefined ? '' : ` ${e.code}`}: ${e.message}` };
    }
  }

  const started = Date.now();
  while (!('status' in (await call('GET', '/healthz', undefined, 1_000)))) {
    assert.ok(running(), `the process exited: ${logs}`);
    assert.ok(Date.now() - started < 20_000, 'the service did not start within 20 s');
    await sleep(50);
  }
  for (let i = 0; i < VEHICLES; i++) {
    const res = await call('POST', '/v2/fleet/vehicles', { vehicleId: `van-${i}`, type: 'van' });
    assert.ok('status' in res && res.status === 201, JSON.stringify(res));
  }

  let sent = 0;
  const nextTelemetry = () => {
    const n = sent++;
    const at = Date.parse('2026-01-01T00:00:00Z') + n * RECORDS * 1000;
    // Written as text: this process must offer three times what the server serves, on the same machine.
    let body = '{"records":[';
    for (let i = 0; i < RECORDS; i++) {
      body += `${i === 0 ? '' : ','}{"timestamp":"${new Date(at + i * 1000).toISOString()}","data":{"speed":${i % 120},"battery":80,"location":{"lat":52.5,"lng":13.4}}}`;
    }
    return call('POST', `/v2/telemetry/van-${n % VEHICLES}`, `${body}]}`);
  };

  // Capacity: a closed-loop burst, enough clients at once that group commits fill as under load
  // (with that many waiting, some may be refused already: only what was served counts).
  let served = 0;
  const burstEnd = Date.now() + BURST_MS;
  const burstStart = Date.now();
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (Date.now() < burstEnd) {
      const res = await nextTelemetry();
      assert.ok('status' in res && (res.status === 202 || res.status === 503), `the burst is answered: ${JSON.stringify(res).slice(0, 300)}`);
      if (res.status === 202) served++;
    }
  }));
  const capacity = served / ((Date.now() - burstStart) / 1000);
  console.log(`measured capacity: ${capacity.toFixed(0)} requests/s of ${RECORDS} records`);

  // Three times that, open loop: every 10 ms, the requests due by then, answered or not.
  async function overload() {
    const rate = 3 * capacity;
    const answers: Promise<Outcome>[] = [];
    const probes: Promise<Outcome>[] = [];
    const overloadStart = Date.now();
    let lastProbe = 0;

    while (Date.now() - overloadStart < OVERLOAD_MS) {
      const due = Math.floor(((Date.now() - overloadStart) / 1000) * rate);
      while (answers.length < due) answers.push(nextTelemetry());
      if (Date.now() - lastProbe >= 100) {
        lastProbe = Date.now();
        probes.push(call('GET', '/healthz'), call('GET', '/readyz'));
      }
      await sleep(10);
    }
    const offered = answers.length / ((Date.now() - overloadStart) / 1000);
    console.log(`offered ${offered.toFixed(0)} requests/s`);
    // On a busy machine this process may fall short of three times; twice is still overload.
    assert.ok(offered >= 2 * capacity, `the test could offer only ${offered.toFixed(0)}/s against a capacity of ${capacity.toFixed(0)}/s`);
    const outcomes = await Promise.all(answers);
    const failures = outcomes.filter((o) => 'error' in o);
    const counts = new Map<number, number>();
    for (const o of outcomes) if ('status' in o) counts.set(o.status, (counts.get(o.status) ?? 0) + 1);
    console.log(`answers: ${JSON.stringify(Object.fromEntries(counts))}, failures: ${failures.length}`);
    return { outcomes, failures, counts, probes };
  }
  const { outcomes, failures, counts, probes } = await overload();
  await agent.close();
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} of ${outcomes.length} requests failed (timeouts or resets)`);
  for (const status of counts.keys()) assert.ok((status >= 200 && status < 300) || status === 429 || status === 503, `unexpected status ${status}`);
  assert.ok((counts.get(202) ?? 0) > 0, 'some requests were served under overload');
  assert.ok((counts.get(503) ?? 0) > 0, 'the overload was answered with 503s');
  for (const o of outcomes) {
    if (!('status' in o) || o.status !== 503) continue;
    assert.match(String(o.headers['content-type']), /^application\/problem\+json/);
    assert.equal(o.headers['retry-after'], '1');
    assert.equal((JSON.parse(o.body) as { code: string }).code, 'service-unavailable');
  }
  for (const probe of await Promise.all(probes)) {
    assert.ok('status' in probe && probe.status === 200, `a health probe under overload: ${JSON.stringify(probe).slice(0, 300)}`);
  }
  assert.ok(logs.includes('overloaded: refusing new requests'), 'the overload was logged');
}
