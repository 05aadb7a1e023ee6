// Traces (OpenTelemetry), off unless an OTLP endpoint is configured. When off, nothing of
// OpenTelemetry is loaded and the parts that make spans hold `undefined`: the cost on the hot path
// is one comparison. When on, otel.ts is imported and exports spans over OTLP/HTTP (JSON).
//
// The spans Fleet makes (docs/OPERATIONS.md "Traces"): a server span for every HTTP request (a
// caller's W3C `traceparent` continued), and under it the telemetry commit the request waited for
// and each cluster bus publication it caused.
import type { Span } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import type { TracingConfig } from '../config.ts';

export type SpanAttributes = Record<string, string | number | boolean>;

export interface Tracing {
  /**
   * A span under the one active in this async context (the request being handled), started now;
   * undefined when none is active, so that background work (devices' own ports, timers) makes no
   * parentless spans of its own.
   */
  child(name: string, attributes?: SpanAttributes): Span | undefined;
  /** Adds a server span to every HTTP request of `app` (a WebSocket upgrade excepted). */
  instrument(app: FastifyInstance): void;
  /** Sends what is buffered, then stops (at shutdown). */
  shutdown(): Promise<void>;
}

/** The tracing `config` asks for, or undefined when it is off. */
export async function startTracing(config: TracingConfig | undefined): Promise<Tracing | undefined> {
  if (config === undefined) return undefined;
  const { createTracing } = await import('./otel.ts');
  return createTracing(config);
}

/** Ends `span` as failed by `error` (a no-op without a span). */
export function endFailed(span: Span | undefined, error: unknown): void {
  if (span === undefined) return;
  span.recordException(error instanceof Error ? error : String(error));
  // SpanStatusCode.ERROR, spelled as its value so that this module loads nothing when tracing is off.
  span.setStatus({ code: 2, message: error instanceof Error ? error.message : String(error) });
  span.end();
}
