// Traces: with an OTLP endpoint configured, a telemetry request's spans (the request, the commit it
// waited for, the bus publication it caused) reach a real OTLP/HTTP receiver, continuing the
// caller's traceparent; without one, nothing of OpenTelemetry is started.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { type IncomingMessage, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { generateApiKey } from '../src/auth/keys.ts';
import { createMemoryBusNetwork } from '../src/bus/memory.ts';
import { loadConfig } from '../src/config.ts';
import { createMemoryStreamDirectory } from '../src/streams/directory.ts';
import { createTracing } from '../src/tracing/otel.ts';
import { startTracing } from '../src/tracing/tracing.ts';
import { createTestApp, testConfig } from './helpers/app.ts';
import { request, startFleet } from './helpers/process.ts';

interface OtlpValue { stringValue?: string; intValue?: string | number; boolValue?: boolean }
interface OtlpSpan {
  traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number;
  attributes: { key: string; value: OtlpValue }[];
  status?: { code?: number };
}
interface Received { service: string | undefined; span: OtlpSpan }

/** A local OTLP/HTTP receiver (JSON, as the exporter sends): every span posted to /v1/traces. */
async function otlpReceiver(t: { after(fn: () => unknown): void }) {
  const spans: Received[] = [];
  const paths: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      paths.push(req.url ?? '');
      const parsed = JSON.parse(body) as {
        resourceSpans: { resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const rs of parsed.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const ss of rs.scopeSpans) for (const span of ss.spans) spans.push({ service, span });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, paths };
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? value?.boolValue : Number(value.intValue));
};

const traceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { traceId, parentId, header: `00-${traceId}-${parentId}-01` };
};

describe('traces', () => {
  test('off unless an endpoint is set: no tracing configured or started', async () => {
    const loaded = loadConfig({});
    assert.ok(loaded.ok);
    assert.equal(loaded.config.tracing, undefined);
    assert.equal(await startTracing(loaded.config.tracing), undefined);
    const disabled = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' });
    assert.ok(disabled.ok);
    assert.equal(disabled.config.tracing, undefined);
  });

  test('the endpoint variables, the sampler and the service name are read as the specification says; bad values are refused', () => {
    const base = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' });
    assert.ok(base.ok);
    assert.deepEqual(base.config.tracing, { url: 'http://collector:4318/v1/traces', serviceName: 'fleet', sampler: { kind: 'parentbased_always_on', ratio: 1 } });
    const own = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp/spans',
      OTEL_SERVICE_NAME: 'fleet-eu', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    assert.ok(own.ok);
    assert.deepEqual(own.config.tracing, { url: 'https://traces.example/otlp/spans', serviceName: 'fleet-eu', sampler: { kind: 'parentbased_traceidratio', ratio: 0.25 } });
    const bad = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318', OTEL_TRACES_SAMPLER: 'sometimes', OTEL_TRACES_SAMPLER_ARG: '2', OTEL_SDK_DISABLED: 'yes' });
    assert.equal(bad.ok, false);
    assert.deepEqual(bad.ok ? [] : bad.errors.map((e) => e.split(':')[0]), ['OTEL_SDK_DISABLED', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG', 'OTEL_EXPORTER_OTLP_ENDPOINT']);
  });

  test('a service process sends a telemetry request\'s spans, under the caller\'s traceparent, by its shutdown', async (t) => {
    const receiver = await otlpReceiver(t);
    const key = generateApiKey();
    const fleet = await startFleet(t, {
      env: { FLEET_DATABASE_URL: 'sqlite:fleet.db', FLEET_ADMIN_KEY: key, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'fleet-test' },
    });
    assert.equal((await request(fleet, 'POST', '/v2/fleet/vehicles', { key, body: { vehicleId: 'van-1', type: 'van' } })).status, 201);
    const caller = traceparent();
    const sent = await request(fleet, 'POST', '/v2/telemetry/van-1?note=secret-in-query', {
      key, headers: { traceparent: caller.header }, body: { timestamp: new Date().toISOString(), data: { speed: 12 } },
    });
    assert.equal(sent.status, 202, await sent.text());
    // Not sent yet (batched); the shutdown sends what is buffered before the process exits.
    assert.equal((await fleet.stop('SIGTERM', 15_000)).code, 0);

    const server = receiver.spans.find((s) => s.span.traceId === caller.traceId && s.span.kind === 2);
    assert.ok(server, `no server span of the caller's trace among ${receiver.spans.map((s) => s.span.name).join(', ')}`);
    assert.deepEqual(receiver.paths.every((p) => p === '/v1/traces'), true);
    assert.equal(server.service, 'fleet-test');
    assert.equal(server.span.name, 'POST /v2/telemetry/:vehicleId');
    assert.equal(server.span.parentSpanId, caller.parentId);
    assert.equal(attribute(server.span, 'http.route'), '/v2/telemetry/:vehicleId');
    assert.equal(attribute(server.span, 'http.response.status_code'), 202);
    // The path only: a query string may hold a ticket or a token.
    assert.equal(attribute(server.span, 'url.path'), '/v2/telemetry/van-1');
    const commit = receiver.spans.find((s) => s.span.name === 'telemetry commit' && s.span.parentSpanId === server.span.spanId);
    assert.ok(commit, 'the commit span under the request');
    assert.equal(commit.span.traceId, caller.traceId);
    assert.equal(attribute(commit.span, 'fleet.records'), 1);
    assert.ok(Number(attribute(commit.span, 'fleet.commit.batches')) >= 1);
    // The registration had no traceparent: a trace of its own, a root span.
    const registration = receiver.spans.find((s) => s.span.name === 'POST /v2/fleet/vehicles');
    assert.ok(registration);
    assert.notEqual(registration.span.traceId, caller.traceId);
    assert.equal(registration.span.parentSpanId ?? '', '');
  });

  test('in cluster mode the bus publication a request causes is a span under it; a refused request is marked failed only from 500', async (t) => {
    const receiver = await otlpReceiver(t);
    const config = testConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_on' });
    assert.ok(config.tracing);
    const tracing = createTracing(config.tracing);
    const network = createMemoryBusNetwork();
    network.join();
    const bus = network.join();
    const app = await createTestApp({ tracing, cluster: { bus, directory: createMemoryStreamDirectory({ maxMessages: 1000 }), state: () => bus.state() } });
    t.after(() => app.close());
    await app.registerVehicle('van-1');
    const caller = traceparent();
    const sent = await app.request('POST', '/v2/telemetry/van-1', {
      headers: { traceparent: caller.header }, body: { timestamp: new Date().toISOString(), data: { speed: 12 } },
    });
    assert.equal(sent.statusCode, 202, sent.body);
    const missing = await app.request('POST', '/v2/telemetry/no-such-van', { body: { timestamp: new Date().toISOString(), data: { speed: 1 } } });
    assert.equal(missing.statusCode, 404);
    await tracing.shutdown();

    const server = receiver.spans.find((s) => s.span.traceId === caller.traceId && s.span.kind === 2);
    assert.ok(server);
    const children = receiver.spans.filter((s) => s.span.parentSpanId === server.span.spanId).map((s) => s.span);
    assert.ok(children.some((s) => s.name === 'telemetry commit'), children.map((s) => s.name).join(', '));
    const published = children.filter((s) => s.name === 'bus publish');
    assert.ok(published.some((s) => attribute(s, 'fleet.event') === 'telemetry'), published.map((s) => attribute(s, 'fleet.event')).join(', '));
    assert.ok(published.every((s) => s.traceId === caller.traceId && attribute(s, 'messaging.system') === 'redis'));
    const refused = receiver.spans.find((s) => attribute(s.span, 'url.path') === '/v2/telemetry/no-such-van');
    assert.ok(refused);
    assert.equal(attribute(refused.span, 'http.response.status_code'), 404);
    assert.notEqual(refused.span.status?.code, 2);
    // Spans of work no request started (the devices' ports, timers) are not made: none without a server span above.
    const servers = new Set(receiver.spans.filter((s) => s.span.kind === 2).map((s) => s.span.spanId));
    assert.ok(receiver.spans.every((s) => s.span.kind === 2 || servers.has(s.span.parentSpanId ?? '')));
  });

  test('a request the sampler leaves out makes no span, nor do its steps; a caller\'s sampled trace is still followed', async (t) => {
    const receiver = await otlpReceiver(t);
    const config = testConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'parentbased_always_off' });
    assert.ok(config.tracing);
    const tracing = createTracing(config.tracing);
    const app = await createTestApp({ tracing });
    t.after(() => app.close());
    await app.registerVehicle('van-1');
    const unsampled = await app.request('POST', '/v2/telemetry/van-1', { body: { timestamp: new Date().toISOString(), data: { speed: 12 } } });
    assert.equal(unsampled.statusCode, 202, unsampled.body);
    const caller = traceparent();
    const sampled = await app.request('POST', '/v2/telemetry/van-1', {
      headers: { traceparent: caller.header }, body: { timestamp: new Date().toISOString(), data: { speed: 13 } },
    });
    assert.equal(sampled.statusCode, 202, sampled.body);
    await tracing.shutdown();

    // Only the caller's trace: its server span (with its attributes) and the commit under it.
    assert.deepEqual([...new Set(receiver.spans.map((s) => s.span.traceId))], [caller.traceId]);
    const server = receiver.spans.find((s) => s.span.kind === 2);
    assert.ok(server);
    assert.equal(server.span.name, 'POST /v2/telemetry/:vehicleId');
    assert.equal(attribute(server.span, 'url.path'), '/v2/telemetry/van-1');
    assert.equal(attribute(server.span, 'http.response.status_code'), 202);
    assert.deepEqual(receiver.spans.filter((s) => s.span.kind !== 2).map((s) => [s.span.name, s.span.parentSpanId]), [['telemetry commit', server.span.spanId]]);
  });
});
