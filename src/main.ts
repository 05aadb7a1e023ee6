// Process entry: read the configuration, open the store, serve, and shut down cleanly on
// SIGTERM/SIGINT (stop accepting, finish in-flight requests, close the store, exit 0).
import { pino } from 'pino';
import { buildApp } from './app.ts';
import { createAuthService } from './auth/service.ts';
import { systemClock } from './clock.ts';
import { type Cluster, openCluster } from './cluster/open.ts';
import { loadConfig } from './config.ts';
import { SchemaTooNewError } from './storage/migrations.ts';
import { openStores } from './storage/stores.ts';
import { startTracing } from './tracing/tracing.ts';

const loaded = loadConfig();
if (!loaded.ok) {
  process.stderr.write(`fleet: invalid configuration:\n${loaded.errors.map((e) => `  - ${e}`).join('\n')}\n`);
  process.exit(2);
}
const { config } = loaded;

const log = pino({ level: config.logLevel });
let stores: Awaited<ReturnType<typeof openStores>>;
try {
  stores = await openStores(config, log);
} catch (error) {
  // PostgreSQL unreachable or refusing the login, or a migration failed: nothing to serve with.
  const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message || error.cause.name})` : '';
  process.stderr.write(`fleet: cannot open the store: ${error instanceof Error ? error.message : String(error)}${cause}\n`);
  process.exit(error instanceof SchemaTooNewError ? 2 : 1);
}
// Cluster mode: Redis must answer at start (a wrong URL is found now, not at the first outage).
let cluster: Cluster | undefined;
if (config.redis !== undefined) {
  try {
    cluster = await openCluster({ ...config.redis, log });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message || error.cause.name})` : '';
    process.stderr.write(`fleet: ${error instanceof Error ? error.message : String(error)}${cause}\n`);
    await stores.close();
    process.exit(1);
  }
}
// Traces only when an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT).
const tracing = await startTracing(config.tracing);
const app = await buildApp({
  config, stores, ...(tracing === undefined ? {} : { tracing }),
  ...(cluster === undefined ? {} : { cluster, rateLimitStore: cluster.rateLimitStore }),
});

let closing = false;
async function shutdown(signal: string) {
  if (closing) return;
  closing = true;
  app.log.info({ signal }, 'shutting down: finishing in-flight requests');
  const timer = setTimeout(() => {
    app.log.error('shutdown took longer than 10 s; exiting');
    process.exit(1);
  }, 10_000);
  timer.unref();
  try {
    await app.close();
    await cluster?.close();
    await stores.close();
    // The last spans (this shutdown's requests) are sent before exiting.
    await tracing?.shutdown().catch((error: unknown) => app.log.warn({ err: error }, 'could not send the last traces'));
    app.log.info('shut down cleanly');
    process.exit(0);
  } catch (error) {
    app.log.error({ err: error }, 'error while shutting down');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await app.listen({ host: config.host, port: config.port });
} catch (error) {
  // Listening starts the parts that start with the app too (the MQTT listener or broker client,
  // the device ports). A port in use is one line saying which and how to choose another.
  const taken = portInUse(error);
  if (taken === undefined) app.log.fatal({ err: error }, 'could not start');
  else process.stderr.write(`fleet: cannot start: ${taken}\n`);
  await app.close().catch(() => undefined);
  await cluster?.close();
  await stores.close();
  process.exit(1);
}
const address = app.server.address();
const port = typeof address === 'object' && address !== null ? address.port : config.port;
// Only now, serving: a first start that fails makes nothing, so the next one is a first start again.
const first = await createAuthService({ store: stores.auth, clock: systemClock }).bootstrap(config.adminKey);

if (first !== undefined) {
  app.log.info({ organizationId: first.organization.id, keyId: first.key.id }, 'empty store: created the first organization and its admin key');
  if (config.adminKey === undefined) {
    // The only time a secret is ever printed: it is not stored anywhere in clear.
    process.stderr.write(
      `\n  First admin API key (shown once, store it now):\n\n    ${first.secret}\n\n` +
        `  Try: curl -H "Authorization: Bearer ${first.secret}" http://localhost:${port}/v2/fleet/vehicles\n\n` +
        `  Sign in to the dashboard as its first admin: invite yourself, then open the invitation's url:\n\n` +
        `    curl -H "Authorization: Bearer ${first.secret}" -H 'content-type: application/json' \\\n` +
        `      -d '{"email":"you@example.com","name":"You","role":"admin"}' http://localhost:${port}/v2/users\n\n`,
    );
  }
} else if (config.adminKey !== undefined) {
  app.log.info('FLEET_ADMIN_KEY is only used on the first start of an empty store; the store already has organizations');
}
// Requests are served from "Server listening" on; from this line on, the first start's organization
// and admin key (whichever node of a cluster made them) are in the store too.
app.log.info('started');

/** What a port already in use means, with the variable that moves it; undefined for another error. */
function portInUse(error: unknown): string | undefined {
  const e = error as { code?: unknown; port?: unknown; address?: unknown } | null;
  if (e?.code !== 'EADDRINUSE') return undefined;
  const port = typeof e.port === 'number' ? e.port : undefined;
  const variable = port === config.port ? 'FLEET_PORT'
    : config.mqtt.mode === 'listener' && port === config.mqtt.port ? 'FLEET_MQTT_PORT'
      : port === config.protocols.osmandPort ? 'FLEET_OSMAND_PORT'
        : port === config.protocols.teltonikaPort ? 'FLEET_TELTONIKA_PORT' : undefined;
  const where = `${typeof e.address === 'string' ? e.address : config.host}:${port ?? '?'}`;
  return `${where} is already in use by another process${variable === undefined ? '' : ` (${variable} sets another port; 0 picks a free one)`}`;
}
