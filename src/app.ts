// buildApp wires the service together. This is the one place that knows every part; each part
// knows only the few interfaces it is given. By concern, in src/app/: services.ts makes the parts,
// events.ts subscribes what reacts to what they say (and joins the cluster), http.ts is the
// Fastify instance with its plugins and routes, lifecycle.ts starts and stops what outlives a request.
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './app/deps.ts';
import { eventPort, followCluster, wireEvents } from './app/events.ts';
import { createServer, registerHttp } from './app/http.ts';
import { addLifecycle } from './app/lifecycle.ts';
import { createServices } from './app/services.ts';
import { systemClock } from './clock.ts';
import { createDispatcher } from './events/dispatcher.ts';
import { createMetricsRegistry } from './http/metrics.ts';

export type { AppDeps } from './app/deps.ts';
export type { RouteEntry } from './app/http.ts';

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const clock = deps.clock ?? systemClock;
  const app = createServer(deps);
  const metrics = deps.metrics ?? createMetricsRegistry();
  // Every part says what happened through the dispatcher; whatever reacts subscribes in wireEvents.
  const dispatcher = deps.dispatcher ?? createDispatcher(app.log);
  const bus = deps.cluster?.bus;
  const parts = await createServices(deps, { clock, events: eventPort(dispatcher, bus, deps.tracing), log: app.log, metrics });
  wireEvents(dispatcher, parts);
  if (bus !== undefined) followCluster(bus, dispatcher, parts, { metrics, log: app.log });
  await registerHttp(app, parts, deps, { clock, metrics });
  addLifecycle(app, parts);
  return app;
}
