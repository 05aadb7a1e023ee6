// The request metrics are counted without prom-client's Histogram (see src/http/metrics.ts); their
// exposition must be exactly what prom-client's own Counter and Histogram write for the same
// observations. Then /metrics as a node serves it: who may read it, what it counts, and that
// `promtool check metrics` accepts it (skipped loudly without promtool, failing under CI=true).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Counter, Histogram, Registry } from 'prom-client';
import { createMemoryBusNetwork } from '../src/bus/memory.ts';
import { createMetricsRegistry, requestMetrics } from '../src/http/metrics.ts';
import { createMemoryStreamDirectory } from '../src/streams/directory.ts';
import { DEFAULT_STREAM_SETTINGS } from '../src/streams/settings.ts';
import { skipUnless } from './helpers/skip.ts';
import { type StreamApp, type StreamClient, attach, closeAll, createStream, createStreamApp } from './helpers/streams.ts';

test('the request counter and latency histogram read as prom-client writes them', async () => {
  const ours = new Registry();
  const observe = requestMetrics(ours);
  const reference = new Registry();
  const labelNames = ['method', 'route', 'status_code'] as const;
  const requests = new Counter({ name: 'fleet_http_requests_total', help: 'HTTP requests answered.', labelNames, registers: [reference] });
  const duration = new Histogram({
    name: 'fleet_http_request_duration_seconds', help: 'Time from request received to response sent.', labelNames,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: [reference],
  });
  const cases: [string, string, number][] = [['GET', '/v2/telemetry/:vehicleId', 200], ['POST', '/v2/telemetry/:vehicleId', 202], ['GET', 'unmatched', 404]];
  // Bounds themselves (a value equal to a bound is in its bucket), values between, beyond the last.
  const seconds = [0, 0.0005, 0.0007, 0.001, 0.003, 0.01, 0.2, 0.5, 1, 2.5, 2.6, 30];
  for (const [method, route, status] of cases) {
    for (const s of seconds) {
      observe(method, route, status, s);
      const labels = { method, route, status_code: String(status) };
      requests.inc(labels);
      duration.observe(labels, s);
    }
  }
  assert.equal(await ours.metrics(), await reference.metrics());
});

test('fleet_nodejs_heap_live_bytes is the heap used right after the latest full collection', async () => {
  const registry = createMetricsRegistry();
  // A full collection on demand: the flag exposes gc() to contexts made after it is set.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options?: { type: 'major' }) => void;
  gc({ type: 'major' });
  const after = getHeapStatistics().used_heap_size;
  await sleep(50); // the GC observer's entries are delivered asynchronously
  const live = Number(/^fleet_nodejs_heap_live_bytes (\S+)$/m.exec(await registry.metrics())?.[1]);
  assert.ok(live > 0, `live heap ${live}`);
  // Read in the observer's callback, just after the collection: close to what it left.
  assert.ok(Math.abs(live - after) < after * 0.5, `live heap ${live}, heap used after gc ${after}`);
});

// ---- /metrics as served: who may read it, what it counts, and that Prometheus's linter accepts it ----

/** The sample value of `name{labels}` in an exposition, or undefined when absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const series = line.slice(0, space);
    if (series === (labels === '' ? name : `${name}{${labels}}`)) return Number(line.slice(space + 1));
  }
  return undefined;
}

const promtool = spawnSync('promtool', ['--version']).error === undefined ? undefined : 'not installed';

describe('/metrics of a running node', () => {
  const network = createMemoryBusNetwork();
  const otherNode = network.join();
  const bus = network.join();
  let ctx: StreamApp;
  const clients: StreamClient[] = [];
  before(async () => {
    ctx = await createStreamApp({
      cluster: { bus, directory: createMemoryStreamDirectory({ maxMessages: DEFAULT_STREAM_SETTINGS.replayMaxMessages }), state: () => bus.state() },
    });
  });
  after(async () => {
    await closeAll(clients);
    await ctx.close();
  });

  test('a credential of the platform organization with metrics:read reads it; another organization\'s is refused', async () => {
    const res = await ctx.request('GET', '/metrics', { key: await ctx.keyWith(['metrics:read']) });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.headers['content-type'] as string, /^text\/plain/);
    const other = await ctx.otherOrganization('Not the platform');
    const theirs = await ctx.keyWith(['metrics:read'], other.organizationId);
    assert.equal((await ctx.request('GET', '/metrics', { key: theirs })).statusCode, 403);
    assert.equal((await ctx.request('GET', '/metrics', { key: await ctx.keyWith(['fleet:read']) })).statusCode, 403);
  });

  test('commits, alert evaluations, streams, messages, events and the bus lag are counted', async () => {
    const read = async () => (await ctx.request('GET', '/metrics')).body;
    await ctx.registerVehicle('van-1');
    const rule = await ctx.request('POST', '/v2/alert-rules', { body: { name: 'Fast', condition: { kind: 'threshold', field: 'speed', op: '>', value: 90 } } });
    assert.equal(rule.statusCode, 201, rule.body);
    const before = await read();
    const stream = await createStream(ctx, { events: ['location'], interval: 0 }, 'van-1');
    const client = await attach(stream.url as string, {}, clients);
    await client.next((m) => m.type === 'connected');
    const records = [1, 2, 3].map((i) => ({ timestamp: new Date(Date.now() - 10_000 + i).toISOString(), data: { speed: 50 + i, location: { lat: 52.5, lng: 13.4 + i / 100 } } }));
    const ingest = await ctx.request('POST', '/v2/telemetry/van-1', { body: { records } });
    assert.equal(ingest.statusCode, 202, ingest.body);
    await client.next((m) => m.type === 'location');
    otherNode.publish({ type: 'rulesChanged', organizationId: ctx.organizationId });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const after = await read();

    const grew = (name: string, labels = '', by = 1) => {
      const was = sample(before, name, labels) ?? 0;
      const now = sample(after, name, labels);
      assert.ok(now !== undefined && now - was >= by, `${name}{${labels}} grew by ${by} or more (${was} → ${now})`);
    };
    grew('fleet_telemetry_commit_duration_seconds_count');
    grew('fleet_telemetry_records_total', 'source="http",outcome="accepted"', 3);
    grew('fleet_alert_evaluations_total', '', 3);
    grew('fleet_stream_messages_sent_total', '', 2); // connected, then the location
    assert.equal(sample(after, 'fleet_streams_open'), 1);
    assert.equal(sample(after, 'fleet_stream_sockets'), 1);
    grew('fleet_events_total', 'type="vehicle.status_changed"'); // the first telemetry activated the van
    grew('fleet_bus_lag_seconds_count');
    for (const name of ['fleet_webhook_deliveries_total', 'fleet_webhook_delivery_duration_seconds', 'fleet_http_requests_total', 'fleet_mqtt_messages_total']) {
      assert.match(after, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exported`);
    }
  });

  test('promtool check metrics accepts the exposition', {
    skip: skipUnless(promtool, 'promtool', 'the promtool check of /metrics', 'Install Debian\'s prometheus package (apt-get install prometheus)'),
  }, async () => {
    const body = (await ctx.request('GET', '/metrics')).body;
    const checked = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
    assert.equal(checked.status, 0, `promtool: ${checked.stdout}${checked.stderr}`);
    assert.doesNotMatch(body, /^# TYPE \S+_total gauge/m);
  });
});
