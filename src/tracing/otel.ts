// OpenTelemetry, loaded only when traces are on (tracing.ts). Spans are made by hand where Fleet's
// own code knows what a step means (a request, the commit it waited for, a bus publication)
// rather than by the auto-instrumentations, which patch modules at load time (ESM needs a loader
// hook) and would add a span per SQL statement of every group commit.
import { ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type TextMapGetter, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, type Sampler, TraceIdRatioBasedSampler, TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import pkg from '../../package.json' with { type: 'json' };
import type { TracingConfig } from '../config.ts';
import type { SpanAttributes, Tracing } from './tracing.ts';

const SPAN = Symbol('fleet.span');
type Traced = FastifyRequest & { [SPAN]?: Span };
type Headers = FastifyRequest['headers'];

/** How a caller's `traceparent`/`tracestate` are read from the request's headers. */
const HEADERS: TextMapGetter<Headers> = {
  get: (headers, key) => headers[key],
  keys: (headers) => Object.keys(headers),
};

/** The request's span, taken off it (so that it is ended once), or undefined when it has none. */
function take(request: Traced): Span | undefined {
  const span = request[SPAN];
  request[SPAN] = undefined;
  return span;
}

function samplerOf(config: TracingConfig['sampler']): Sampler {
  switch (config.kind) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return new TraceIdRatioBasedSampler(config.ratio);
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.ratio) });
    default: throw new Error(`unknown sampler ${String(config.kind satisfies never)}`);
  }
}

export function createTracing(config: TracingConfig): Tracing {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  const propagator = new W3CTraceContextPropagator();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': pkg.version }),
    sampler: samplerOf(config.sampler),
    // The exporter reads OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and _COMPRESSION itself.
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.url }) })],
  });
  const tracer = provider.getTracer('fleet', pkg.version);

  return {
    child(name: string, attributes?: SpanAttributes) {
      const active = context.active();
      if (trace.getSpan(active) === undefined) return undefined;
      return tracer.startSpan(name, { attributes }, active);
    },

    instrument(app: FastifyInstance) {
      // Callback-style hooks, as every hook of the app: an async hook costs a promise per request.
      app.addHook('onRequest', (request: Traced, _reply, done) => {
        // A WebSocket lives on past its upgrade, and its stream is not one request.
        if (request.headers.upgrade !== undefined) return done();
        const parent = propagator.extract(ROOT_CONTEXT, request.headers, HEADERS);
        const span = tracer.startSpan(request.method, { kind: SpanKind.SERVER }, parent);
        request[SPAN] = span;
        // Attributes for a sampled request only (no standard sampler reads them): the others are
        // spared reading the client's address and the scheme.
        if (span.isRecording()) {
          // The path only: a query string may carry a stream ticket or a token.
          const path = request.url.split('?', 1)[0]!;
          span.setAttributes({ 'http.request.method': request.method, 'url.path': path, 'url.scheme': request.protocol, 'client.address': request.ip });
        }
        done();
      });
      // The handler runs inside the request's span, so what it awaits is traced under it. (Only from
      // here on: the body is read in the socket's own async context, before this hook.)
      // A request the sampler left out has no span to be under: its steps make none either (`child`
      // finds no active span), and it is spared the context switch.
      app.addHook('preHandler', (request: Traced, _reply, done) => {
        const span = request[SPAN];
        if (span === undefined || !span.isRecording()) return done();
        context.with(trace.setSpan(context.active(), span), done);
      });
      app.addHook('onResponse', (request: Traced, reply, done) => {
        const span = take(request);
        // A span the sampler left out records nothing: nothing to name or end.
        if (span?.isRecording() === true) {
          const route = request.routeOptions.url;
          if (route !== undefined) {
            span.updateName(`${request.method} ${route}`);
            span.setAttribute('http.route', route);
          }
          span.setAttribute('http.response.status_code', reply.statusCode);
          if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
        done();
      });
      app.addHook('onRequestAbort', (request: Traced, done) => {
        const span = take(request);
        span?.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection' });
        span?.end();
        done();
      });
    },

    async shutdown() {
      await provider.shutdown();
      contextManager.disable();
    },
  };
}
