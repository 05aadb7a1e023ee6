// Overload: when the process is too busy to answer in time, new requests are refused at once with
// 503 and Retry-After (problem+json, `service-unavailable`) instead of queueing until their
// clients time out. A refusal costs a few microseconds in the first request hooks, before
// authentication, the rate limit or the body; the requests already admitted finish.
//
// "Too busy" is judged as each request arrives, against one limit (FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS):
// - the event loop runs late: a 10 ms timer fired that much late (the previous turn, a large group
//   commit say, kept everything waiting), or the current turn has run that long (the request is
//   read late in a turn that reads a backlog);
// - or work of the same kind already admitted waits: STUCK reads (GET, HEAD), or STUCK writes
//   (every other method), admitted earlier have been in flight longer than the limit. That is the
//   backlog the loop's delay does not show, when writes wait for a commit that waits on the disk
//   while the loop idles, or when a burst was admitted in one turn. Several rather than one, so
//   that one slow request does not refuse everybody else's; and of the same kind, so that writes
//   held up by a slow disk do not refuse the reads the idle loop answers at once. Writes are
//   given WRITE_PATIENCE times the limit: they all wait for the same sync of the WAL, and on a
//   shared disk one sync now and then takes most of a second without the disk being overloaded;
// - or more requests are in flight than the process has ever answered within the limit (the most
//   it answered per second, times the limit; at least FLOOR): a burst read in one turn of the
//   loop is admitted only up to what can be answered in time, since none of it is old yet.
// A measure averaged over a sampling period (@fastify/under-pressure's) was tried first: it
// decides on a past period, so under three times the capacity it went on admitting bursts between
// samples and requests timed out (`npm run bench -- overload`); so did the loop's delay alone.
// Optionally, the share of time the loop was busy over each sample (FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION).
//
// Health probes and /metrics (`config.overloadExempt`) are always served: a load balancer must not
// take a node out of rotation, nor the monitoring lose sight of it, for being busy.
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { OverloadConfig } from '../config.ts';
import { AppError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served even while the process refuses requests for being overloaded. */
    overloadExempt?: boolean;
  }
}

const TICK_MS = 10;
/** How many admitted requests must be waiting past the limit for it to count as overload. */
const STUCK = 8;
/** How many times the limit admitted writes may wait for the disk before they count as stuck. */
const WRITE_PATIENCE = 2;
/** Requests in flight always admitted, before the process has shown what it answers per second. */
const FLOOR = 64;
/** An admitted request this old is no longer tracked, whatever became of it (a safety net). */
const FORGOTTEN_MS = 120_000;

export const overloadPlugin = fp(async function overload(app: FastifyInstance, opts: { config: OverloadConfig }) {
  const { config } = opts;
  if (config.maxEventLoopDelayMs === 0 && config.maxEventLoopUtilization === 0) return;

  let lastTick = performance.now();
  /** How late the timer last fired, ms. */
  let lateness = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    lateness = Math.max(0, now - lastTick - TICK_MS);
    lastTick = now;
  }, TICK_MS);
  ticker.unref();
  const delay = (now: number) => Math.max(lateness, now - lastTick - TICK_MS);

  /** Reads and writes admitted and not yet answered, with when: a Map iterates in admission order. */
  const reads = new Map<FastifyRequest, number>();
  const writes = new Map<FastifyRequest, number>();
  const kindOf = (request: FastifyRequest) => (request.method === 'GET' || request.method === 'HEAD' ? reads : writes);
  /** Whether STUCK of the oldest admitted requests of one kind have waited past `limit`. */
  function stuck(admitted: Map<FastifyRequest, number>, now: number, limit: number): boolean {
    let count = 0;
    for (const [request, at] of admitted) {
      const waited = now - at;
      if (waited <= limit) return false;
      if (waited > FORGOTTEN_MS) {
        admitted.delete(request);
        continue;
      }
      if (++count >= STUCK) return true;
    }
    return false;
  }
  /** Answers per second: the most seen over a sample (capacity does not shrink when idle), and those of the sample running. */
  let peakRate = 0;
  let answered = 0;
  const crowded = () => reads.size + writes.size >= Math.max(FLOOR, (peakRate * config.maxEventLoopDelayMs) / 1000);
  /** Whether a request of `kind` arriving `now` is refused for lateness: the loop's, the crowd's, or its kind's. */
  const tooLate = (now: number, kind: Map<FastifyRequest, number>) => config.maxEventLoopDelayMs > 0
    && (delay(now) > config.maxEventLoopDelayMs || crowded() || stuck(kind, now, config.maxEventLoopDelayMs * (kind === writes ? WRITE_PATIENCE : 1)));

  let utilization = 0;
  let previous = performance.eventLoopUtilization();
  const sampler = setInterval(() => {
    const current = performance.eventLoopUtilization();
    utilization = performance.eventLoopUtilization(current, previous).utilization;
    previous = current;
    peakRate = Math.max(peakRate, (answered * 1000) / config.sampleIntervalMs);
    answered = 0;
    // One line when refusals stop, after the warning when they started: not one per request.
    const now = performance.now();
    if (refused > 0 && !tooLate(now, reads) && !tooLate(now, writes) && !tooBusy()) {
      app.log.info({ refused, ms: Math.round(now - since) }, 'overload over: serving every request again');
      refused = 0;
    }
  }, config.sampleIntervalMs);
  sampler.unref();
  app.addHook('onClose', (_instance, done) => {
    clearInterval(ticker);
    clearInterval(sampler);
    done();
  });
  const tooBusy = () => config.maxEventLoopUtilization > 0 && utilization > config.maxEventLoopUtilization;

  // The first measures are of the start itself (modules loaded, migrations run, the app built),
  // not of load: refusals begin once the app is ready and a fresh sample has been taken.
  let armedAt = Infinity;
  app.addHook('onReady', (done) => {
    armedAt = performance.now() + 2 * Math.max(TICK_MS, config.sampleIntervalMs);
    done();
  });

  // One error for every refusal: no stack captured per request while the process is short of time.
  const refusal = new AppError('service-unavailable', 'The service is overloaded; retry after the delay in Retry-After.', {
    headers: { 'retry-after': String(config.retryAfterSeconds) }, quiet: true,
  });
  let refused = 0;
  let since = 0;

  // Callback-style, as every per-request hook here: no promise per request.
  app.addHook('onRequest', (request, _reply, done) => {
    // A WebSocket upgrade is answered by its socket, which lives for hours: neither refused late
    // nor counted as waiting.
    if (request.routeOptions.config.overloadExempt === true || (request.raw as { upgrade?: boolean }).upgrade === true) return done();
    const now = performance.now();
    const kind = kindOf(request);
    if (now >= armedAt && (tooLate(now, kind) || tooBusy())) return refuse(now, done);
    kind.set(request, now);
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    if (kindOf(request).delete(request)) answered++;
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    kindOf(request).delete(request);
    done();
  });

  function refuse(now: number, done: (error: Error) => void): void {
    if (refused++ === 0) {
      since = now;
      app.log.warn({ delayMs: Math.round(delay(now)), eventLoopUtilization: Number(utilization.toFixed(3)), limits: config },
        'overloaded: refusing new requests with 503 until the event loop catches up');
    }
    done(refusal);
  }
}, { name: 'overload', dependencies: ['problems'] });
