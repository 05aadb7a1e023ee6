// What buildApp is given: the configuration and stores, and what tests and cluster mode replace.
import type { FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import type { Bus } from '../bus/bus.ts';
import type { Clock } from '../clock.ts';
import type { DevicePresence } from '../commands/presence.ts';
import type { Config } from '../config.ts';
import type { Dispatcher } from '../events/dispatcher.ts';
import type { RateLimitStore } from '../ratelimit/store.ts';
import type { CheckState } from '../readiness.ts';
import type { Stores } from '../storage/stores.ts';
import type { StreamDirectory } from '../streams/directory.ts';
import type { StreamSettings } from '../streams/settings.ts';
import type { Tracing } from '../tracing/tracing.ts';
import type { DeliverySettings } from '../webhooks/worker.ts';

export interface AppDeps {
  config: Config;
  stores: Stores;
  clock?: Clock;
  /** Overrides the logger built from config (tests pass a silent or capturing one). */
  logger?: FastifyServerOptions['loggerInstance'];
  metrics?: Registry;
  /** The dispatcher the parts say what happened through; default a new one (a test may say what a part would). */
  dispatcher?: Dispatcher;
  /** Rate-limit counters shared by several nodes (cluster mode) or a test; default: this process. */
  rateLimitStore?: RateLimitStore;
  /** Live-stream time limits and sizes (docs/API.md "Live streams"); tests shorten them. */
  streams?: Partial<StreamSettings>;
  /** How often the offline alert check runs, ms; tests shorten it below the configured whole seconds. */
  offlineCheckMs?: number;
  /** Webhook delivery timing (retry delays, leases, polling); tests shorten them. */
  webhooks?: Partial<DeliverySettings>;
  /** Traces (src/tracing/): undefined when off. */
  tracing?: Tracing;
  /** Cluster mode: the bus to the other nodes, the directory of streams, and the state /readyz reports. */
  cluster?: { bus: Bus; directory: StreamDirectory; state(): CheckState; presence?: DevicePresence };
}
