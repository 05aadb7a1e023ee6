// The only reader of process.env. Every variable is parsed here, every problem is collected, and
// the caller decides what to do with the list (main.ts prints it and exits non-zero).
import os from 'node:os';
import path from 'node:path';
import { isWellFormedApiKey } from './auth/keys.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type DatabaseConfig =
  | { kind: 'sqlite'; path: string }
  /** Cluster mode. `url` may hold a password: never log it (redactUrl). */
  | { kind: 'postgres'; url: string; poolSize: number; read?: ReadReplicaConfig };

/** A streaming replica for the reads that may be a little behind (FLEET_DATABASE_READ_URL). */
export interface ReadReplicaConfig {
  /** May hold a password: never log it. */
  url: string;
  /** Reads go to the replica only while it is at most this far behind the primary. */
  maxLagMs: number;
}

export interface RateLimitConfig {
  /** Requests per credential per window; 0 turns per-credential limits off. */
  requests: number;
  windowSeconds: number;
  /** Requests per client IP per window on the token endpoint, against secret guessing. */
  tokenRequests: number;
}

export interface QuotaConfig {
  vehicles: number;
  apiKeys: number;
  oauthClients: number;
  streams: number;
  webhooks: number;
  geofences: number;
  alertRules: number;
  devices: number;
  /** Vehicle groups. */
  groups: number;
  drivers: number;
  /** Positions over all of an organization's geofences (a circle counts one). */
  geofenceVertices: number;
  maintenanceSchedules: number;
  reportSchedules: number;
}

/** An external identity provider whose access tokens are accepted beside Fleet's own. */
export interface ExternalIssuerConfig {
  issuer: string;
  audience: string;
  jwksUrl: string;
  /** The claim that carries the Fleet organization id. */
  organizationClaim: string;
}

/**
 * MQTT ingestion: off, the service's own listener (devices log in with API keys), or a client of
 * an existing broker that takes a shared subscription for one configured organization.
 */
export type MqttConfig =
  | { mode: 'off' }
  | { mode: 'listener'; host: string; port: number }
  | {
      mode: 'broker';
      url: string;
      username: string | undefined;
      password: string | undefined;
      shareGroup: string;
      organizationId: string;
      /** Stable across restarts, so the broker keeps this node's session (and what it holds) for it. */
      clientId: string;
      /**
       * At shutdown: `keep` the session for the node's return under the same id, or `leave` the
       * share group (unsubscribe, store what is still sent, end the session) for a node that does not return.
       */
      session: 'keep' | 'leave';
    };

/** How long a client may take to send a request, and to stay silent on a connection. */
export interface HttpTimeoutConfig {
  /** From the connection (or the previous request) to the end of the request headers. */
  headersMs: number;
  /** From the start of a request to the end of its body. */
  requestMs: number;
  /** A connection with a request in progress on which nothing moves either way for this long is closed. */
  idleMs: number;
}

/** When the process is too busy to answer in time, it refuses new requests (http/overload.ts). */
export interface OverloadConfig {
  /** How late the event loop may run as a request arrives, ms, before requests are refused; 0: not checked. */
  maxEventLoopDelayMs: number;
  /** Share of time the event loop was busy over a sample (0 to 1), past which requests are refused; 0: not checked. */
  maxEventLoopUtilization: number;
  /** The period of that share, ms. */
  sampleIntervalMs: number;
  /** The Retry-After of a refusal, seconds. */
  retryAfterSeconds: number;
}

/** The device protocols' own listeners (a port of 0 turns one off). */
export interface ProtocolsConfig {
  host: string;
  /** OsmAnd over HTTP on the root path of its own port (it is also served at /osmand of the main port). */
  osmandPort: number;
  /** Teltonika Codec 8 / 8E over TCP. */
  teltonikaPort: number;
  /** A Teltonika connection that sends nothing for this long is closed, ms. */
  teltonikaIdleMs: number;
}

/** What the unauthenticated device ports allow one address, and everyone (docs/SECURITY.md "Device ports"). */
export interface DevicePortsConfig {
  /** A Teltonika connection must send its IMEI this soon after connecting, ms. */
  loginTimeoutMs: number;
  /** A Teltonika packet (or IMEI) once begun must arrive whole this soon, however its bytes trickle, ms. */
  packetTimeoutMs: number;
  /** Open Teltonika connections, in all and from one address (an IPv6 /64 counted as one). */
  connections: number;
  connectionsPerAddress: number;
  /** Distinct unknown identifiers an address may present before it is held back (protocols/guard.ts). */
  unknownIdentifiers: number;
  /** The longest an address is held back at a time, ms. */
  backoffMaxMs: number;
}

export interface Config {
  host: string;
  port: number;
  http: { timeouts: HttpTimeoutConfig };
  /** Where clients reach this service; the issuer of its own OAuth tokens. */
  publicUrl: string;
  database: DatabaseConfig;
  logLevel: LogLevel;
  /** Used only on the first start of an empty store, as the first admin key. */
  adminKey: string | undefined;
  rateLimit: RateLimitConfig;
  quotas: QuotaConfig;
  oauth: { tokenTtlSeconds: number; external: ExternalIssuerConfig | undefined };
  telemetry: { retentionDays: number };
  /** Events are kept this many days; webhooks may reach private addresses only when allowed. */
  events: { retentionDays: number };
  /** The audit log: entries older than this many days are deleted. */
  audit: { retentionDays: number };
  /** Device commands: how long a sent command waits for the device's answer before it is `timed_out`. */
  commands: { timeoutSeconds: number };
  /** How often each node runs the offline alert check, seconds; whether trips are detected live. */
  rules: { offlineCheckSeconds: number; tripEvents: boolean };
  /** How often the maintenance check runs, seconds (one node at a time). */
  maintenance: { checkSeconds: number };
  /** How often the report check runs, seconds (one node at a time). */
  reports: { checkSeconds: number };
  webhooks: { allowPrivate: boolean; endpointConcurrency: number };
  /** People's sessions: how long one may go without a request, minutes. */
  sessions: { idleMinutes: number };
  /** Single sign-on: whether an organization's OpenID provider may be on a private address (and plain http). */
  sso: { allowPrivate: boolean };
  mqtt: MqttConfig;
  protocols: ProtocolsConfig;
  devicePorts: DevicePortsConfig;
  /**
   * Browser origins allowed to open live-stream WebSockets (`*`: any); clients without Origin, and
   * pages of the origin the request itself was sent to, always may. The CORS origins may too (app/http.ts).
   */
  streams: { allowedOrigins: string[] };
  /** Browser origins that may call the API from their pages (`*`: any; empty: CORS off). */
  cors: { origins: string[] };
  /** Past these measures the service answers 503 instead of queueing (0 turns a check off). */
  overload: OverloadConfig;
  /** Cluster mode's Redis (the bus between nodes, shared rate limits); undefined: one node. `url` may hold a password. */
  redis: { url: string; prefix: string } | undefined;
  /** The browser dashboard at `/`: its map tiles (`{z}`, `{x}`, `{y}` template; '' for none). */
  dashboard: { tileUrl: string };
  /** Traces over OTLP; undefined: off. */
  tracing: TracingConfig | undefined;
}

/** The OpenTelemetry samplers one may name in `OTEL_TRACES_SAMPLER` (the specification's names). */
export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/** Traces over OTLP/HTTP (src/tracing/). */
export interface TracingConfig {
  /** Where spans are posted. */
  url: string;
  serviceName: string;
  sampler: { kind: (typeof SAMPLERS)[number]; ratio: number };
}

/** What each variable means, its default, and how it is parsed; docs/OPERATIONS.md's table mirrors this (test/config-docs.test.ts). */
export const VARIABLES = {
  FLEET_HOST: { default: '0.0.0.0', doc: 'Address to listen on.' },
  FLEET_PORT: { default: '8080', doc: 'HTTP port (0 picks a free one).' },
  FLEET_DATABASE_URL: {
    default: 'sqlite:./data/fleet.db',
    doc: 'Store location: `sqlite:<file>` (embedded), `sqlite::memory:`, or `postgres://user:password@host:5432/database` (cluster mode).',
  },
  FLEET_REDIS_URL: {
    default: '',
    doc: 'Cluster mode: `redis://[user:password@]host:6379[/db]` or `rediss://…`. Nodes share rate limits and pass live-stream events, latest state and revocations through it. Needs a PostgreSQL `FLEET_DATABASE_URL`.',
  },
  FLEET_REDIS_PREFIX: { default: 'fleet:', doc: 'Cluster mode: prefix of every Redis key and channel, so that several deployments can share one Redis.' },
  FLEET_DATABASE_POOL_SIZE: { default: '10', doc: 'PostgreSQL only: connections each node opens at most (1 to 1000).' },
  FLEET_DATABASE_READ_URL: {
    default: '',
    doc: 'PostgreSQL only: a streaming replica of `FLEET_DATABASE_URL` (`postgres://…`) that takes history, trips, exports, aggregates and reports while it is at most `FLEET_DATABASE_READ_MAX_LAG_SECONDS` behind; the primary takes them otherwise. Each node opens up to `FLEET_DATABASE_POOL_SIZE` connections to it too.',
  },
  FLEET_DATABASE_READ_MAX_LAG_SECONDS: { default: '5', doc: 'How far behind the primary (1 to 3600 s) the replica of `FLEET_DATABASE_READ_URL` may be and still take reads; measured every second.' },
  FLEET_LOG_LEVEL: { default: 'info', doc: `One of ${LOG_LEVELS.join(', ')}.` },
  FLEET_ADMIN_KEY: {
    default: '',
    doc: 'First admin key, used on the first start of an empty store instead of a generated one: a key in Fleet\'s format (`fleet_` + 32 random base62 characters + checksum), made with `npm run --silent key`.',
  },
  FLEET_HTTP_HEADERS_TIMEOUT_SECONDS: {
    default: '10',
    doc: 'A client must send a request\'s headers within this many seconds (1 to 3600), or is answered 408 and disconnected.',
  },
  FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: {
    default: '30',
    doc: 'A client must send a whole request, headers and body, within this many seconds (1 to 3600; at least the headers timeout), or is answered 408 and disconnected.',
  },
  FLEET_HTTP_IDLE_TIMEOUT_SECONDS: {
    default: '120',
    doc: 'A request on whose connection nothing moves either way for this many seconds (a client that stops reading its answer) has its connection closed (1 to 86400). Idle keep-alive connections close after 72 s; live-stream WebSockets are not affected.',
  },
  FLEET_PUBLIC_URL: {
    default: '',
    doc: 'Base URL clients use to reach the service (default `http://localhost:<port>`); the `iss` of its OAuth tokens.',
  },
  FLEET_RATE_LIMIT_REQUESTS: { default: '1200', doc: 'Requests per credential per window (0 turns the limit off).' },
  FLEET_RATE_LIMIT_WINDOW_SECONDS: { default: '60', doc: 'Length of the rate-limit window, seconds.' },
  FLEET_TOKEN_RATE_LIMIT_REQUESTS: { default: '30', doc: 'Requests per client IP per window to `/oauth/token` (and revocation, introspection), `/auth/login` and `/auth/invitations/accept`.' },
  FLEET_QUOTA_VEHICLES: { default: '10000', doc: 'Vehicles per organization.' },
  FLEET_QUOTA_API_KEYS: { default: '100', doc: 'Active API keys per organization.' },
  FLEET_QUOTA_OAUTH_CLIENTS: { default: '20', doc: 'OAuth clients per organization.' },
  FLEET_QUOTA_STREAMS: { default: '100', doc: 'Open streams per organization.' },
  FLEET_QUOTA_WEBHOOKS: { default: '20', doc: 'Webhook endpoints per organization.' },
  FLEET_QUOTA_GEOFENCES: { default: '10000', doc: 'Geofences per organization.' },
  FLEET_QUOTA_ALERT_RULES: { default: '1000', doc: 'Alert rules per organization.' },
  FLEET_QUOTA_DEVICES: { default: '10000', doc: 'Registered devices per organization.' },
  FLEET_QUOTA_GROUPS: { default: '1000', doc: 'Vehicle groups per organization.' },
  FLEET_QUOTA_DRIVERS: { default: '10000', doc: 'Drivers per organization.' },
  FLEET_QUOTA_GEOFENCE_VERTICES: { default: '1000000', doc: 'Positions over all geofences of an organization (a circle counts one).' },
  FLEET_QUOTA_MAINTENANCE_SCHEDULES: { default: '1000', doc: 'Maintenance schedules per organization.' },
  FLEET_QUOTA_REPORT_SCHEDULES: { default: '100', doc: 'Report schedules per organization.' },
  FLEET_EVENT_RETENTION_DAYS: { default: '30', doc: 'Events (the feed) and webhook deliveries older than this many days are deleted in the background.' },
  FLEET_AUDIT_RETENTION_DAYS: { default: '365', doc: 'Audit log entries older than this many days (1 to 36500) are deleted in the background.' },
  FLEET_COMMAND_TIMEOUT_SECONDS: { default: '60', doc: 'A command sent to a device and not answered within this many seconds (1 to 3600) is `timed_out`.' },
  FLEET_SESSION_IDLE_MINUTES: {
    default: '720',
    doc: 'A person\'s session ends after this many minutes without a request (5 to 10080); whatever its use, it ends 7 days after sign-in.',
  },
  FLEET_OFFLINE_CHECK_SECONDS: {
    default: '15',
    doc: 'How often the check for `offline` alert rules runs, seconds (1 to 3600). An offline alert opens at most this long after its rule\'s `afterSeconds` have passed; in cluster mode one node at a time runs it.',
  },
  FLEET_MAINTENANCE_CHECK_SECONDS: {
    default: '60',
    doc: 'How often the maintenance check runs, seconds (1 to 3600): a service item that crossed into due soon or overdue is announced at most this long after; in cluster mode one node at a time runs it.',
  },
  FLEET_REPORT_CHECK_SECONDS: {
    default: '60',
    doc: 'How often the report check runs, seconds (1 to 3600): a report schedule\'s report of a period is made at most this long after the period ended and its hour for late records passed, and reports older than 90 days are deleted; in cluster mode one node at a time runs it.',
  },
  FLEET_TRIP_EVENTS: {
    default: 'true',
    doc: '`false` turns off live trip detection: no `trip.started` or `trip.ended` events, and a telemetry commit writes no trip state (the trips report is not affected).',
  },
  FLEET_WEBHOOK_ALLOW_PRIVATE: {
    default: 'false',
    doc: '`true` lets webhooks reach loopback, private and link-local addresses (refused by default, at creation and at each delivery).',
  },
  FLEET_SSO_ALLOW_PRIVATE: {
    default: 'false',
    doc: '`true` lets an organization\'s OpenID provider (single sign-on) be on loopback, private and link-local addresses, and be reached over plain http (a provider on the operator\'s own network; refused by default).',
  },
  FLEET_WEBHOOK_ENDPOINT_CONCURRENCY: {
    default: '32',
    doc: 'Deliveries to one webhook endpoint under way or claimed at once (1 to 64; in cluster mode across the nodes). Endpoints and organizations take turns, so one slow endpoint or long backlog does not hold up the others.',
  },
  FLEET_STREAM_ALLOWED_ORIGINS: {
    default: '',
    doc: 'Comma-separated browser origins (`https://app.example.com`) that may open live-stream WebSockets, or `*` for any (default: the origin of `FLEET_PUBLIC_URL`). Clients that send no `Origin` are not affected.',
  },
  FLEET_CORS_ORIGINS: {
    default: '',
    doc: 'Comma-separated origins (`https://app.example.com`) whose browser pages may call the API (CORS), or `*` for any; they may also open live-stream WebSockets. Default: none (CORS off).',
  },
  FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS: {
    default: '500',
    doc: 'How late the event loop may run, ms, before new requests are answered 503 with Retry-After (1 to 60000; 0 turns the check off). Measured as the request arrives: how late a 10 ms timer last fired, or how long the current turn of the loop has run. Health probes and `/metrics` are never refused.',
  },
  FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION: {
    default: '0',
    doc: 'Share of time the event loop was busy over each sample (a decimal above 0 and below 1, e.g. `0.98`) past which new requests are answered 503; 0 (default) turns the check off.',
  },
  FLEET_OVERLOAD_SAMPLE_MS: { default: '250', doc: 'The period over which the event loop\'s utilization is measured for `FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION`, ms (10 to 10000).' },
  FLEET_OVERLOAD_RETRY_AFTER_SECONDS: { default: '2', doc: 'Retry-After of the 503 answered under overload, seconds (1 to 3600).' },
  FLEET_MAP_TILE_URL: {
    default: 'https://tile.openstreetmap.org/{z}/{x}/{y}.png',
    doc: 'Map tiles of the dashboard at `/`: an http(s) URL template with `{z}`, `{x}` and `{y}`; empty for none (vehicles are drawn on a plain coordinate grid). Its origin is added to the dashboard\'s Content-Security-Policy `img-src`.',
  },
  FLEET_TELEMETRY_RETENTION_DAYS: { default: '30', doc: 'Telemetry history older than this many days is deleted in the background.' },
  FLEET_OAUTH_TOKEN_TTL_SECONDS: { default: '900', doc: 'Lifetime of access tokens Fleet issues, seconds (60 to 86400).' },
  FLEET_OAUTH_ISSUER: { default: '', doc: 'External identity provider: its issuer (`iss`). Needs the two below.' },
  FLEET_OAUTH_AUDIENCE: { default: '', doc: 'External identity provider: the audience (`aud`) its tokens must name.' },
  FLEET_OAUTH_JWKS_URL: { default: '', doc: 'External identity provider: the URL of its signing keys (JWKS).' },
  FLEET_OAUTH_ORG_CLAIM: { default: 'fleet_org', doc: 'External identity provider: the claim holding the Fleet organization id.' },
  FLEET_MQTT_PORT: { default: '1883', doc: 'Port of the embedded MQTT listener (0 turns it off). Ignored with `FLEET_MQTT_URL`.' },
  FLEET_MQTT_HOST: { default: '', doc: 'Address of the embedded MQTT listener (default: `FLEET_HOST`).' },
  FLEET_MQTT_URL: {
    default: '',
    doc: 'An existing broker, `mqtt://host:port` or `mqtts://host:port`: Fleet subscribes to it instead of opening its own listener.',
  },
  FLEET_MQTT_USERNAME: { default: '', doc: 'Existing broker: the user name Fleet logs in with.' },
  FLEET_MQTT_PASSWORD: { default: '', doc: 'Existing broker: the password Fleet logs in with.' },
  FLEET_MQTT_ORGANIZATION: { default: '', doc: 'Existing broker: the organization id that owns the vehicles of its topics (required with `FLEET_MQTT_URL`).' },
  FLEET_MQTT_SHARE_GROUP: { default: 'fleet', doc: 'Existing broker: the shared-subscription group; the nodes of one deployment share its messages.' },
  FLEET_MQTT_CLIENT_ID: {
    default: '',
    doc: 'Existing broker: this node\'s MQTT client id (default `fleet-<hostname>`); unique per node and stable across restarts.',
  },
  FLEET_MQTT_SESSION: {
    default: 'keep',
    doc: 'Existing broker: at shutdown, `keep` the node\'s session for its return under the same client id, or `leave` the share group (unsubscribe, store what is still sent, end the session) for a node that will not return.',
  },
  FLEET_OSMAND_PORT: {
    default: '5055',
    doc: 'Port of the OsmAnd listener (HTTP, the protocol on the root path; 0 turns it off). `/osmand` on `FLEET_PORT` serves it too.',
  },
  FLEET_TELTONIKA_PORT: { default: '5027', doc: 'Port of the Teltonika listener (TCP, Codec 8 and 8 Extended; 0 turns it off).' },
  FLEET_PROTOCOLS_HOST: { default: '', doc: 'Address of the OsmAnd and Teltonika listeners (default: `FLEET_HOST`).' },
  FLEET_TELTONIKA_IDLE_SECONDS: {
    default: '600',
    doc: 'A Teltonika connection that sends nothing for this many seconds is closed (1 to 86400); trackers reconnect when they next send.',
  },
  FLEET_TELTONIKA_LOGIN_TIMEOUT_SECONDS: { default: '30', doc: 'A Teltonika connection that has not sent its IMEI this many seconds after connecting is closed (1 to 3600).' },
  FLEET_TELTONIKA_PACKET_TIMEOUT_SECONDS: {
    default: '60',
    doc: 'A Teltonika packet once begun must arrive whole within this many seconds, however its bytes trickle in, or the connection is closed (1 to 3600).',
  },
  FLEET_TELTONIKA_CONNECTIONS: { default: '10000', doc: 'Open Teltonika connections this node accepts in all; further ones are closed at once (1 to 1000000). Keep it below the open-file limit.' },
  FLEET_TELTONIKA_CONNECTIONS_PER_ADDRESS: {
    default: '1000',
    doc: 'Open Teltonika connections this node accepts from one address (an IPv6 /64 counts as one); further ones are closed at once (1 to 1000000).',
  },
  FLEET_DEVICE_UNKNOWN_IDENTIFIERS: {
    default: '10',
    doc: 'Distinct unknown device identifiers one address may present on the device ports (OsmAnd, Teltonika) before its logins are refused for a time that doubles with each further one (1 to 1000000).',
  },
  FLEET_DEVICE_BACKOFF_MAX_SECONDS: { default: '600', doc: 'The longest an address is refused at a time after too many unknown device identifiers (1 to 86400).' },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    default: '',
    doc: 'Traces: an OTLP/HTTP collector (`http://collector:4318`); spans go to its `/v1/traces`. Unset (default): no traces, and nothing of OpenTelemetry is loaded.',
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { default: '', doc: 'Traces: the full URL spans are posted to (`http://collector:4318/v1/traces`), instead of the one above.' },
  OTEL_SERVICE_NAME: { default: 'fleet', doc: 'Traces: the `service.name` of this node\'s spans.' },
  OTEL_TRACES_SAMPLER: {
    default: 'parentbased_always_on',
    doc: `Traces: which requests are traced: ${SAMPLERS.join(', ')}; the \`parentbased_\` ones follow a caller's \`traceparent\` decision.`,
  },
  OTEL_TRACES_SAMPLER_ARG: { default: '1', doc: 'Traces: the share of traces kept by the `traceidratio` samplers (0 to 1).' },
  OTEL_SDK_DISABLED: { default: 'false', doc: '`true` turns traces off whatever the endpoint.' },
} as const;

type VariableName = keyof typeof VARIABLES;
export type Env = Readonly<Record<string, string | undefined>>;

export type ConfigResult = { ok: true; config: Config } | { ok: false; errors: string[] };

export function loadConfig(env: Env = process.env, cwd = process.cwd()): ConfigResult {
  const errors: string[] = [];
  const read = (name: VariableName): string => {
    const value = env[name];
    return value === undefined || value === '' ? VARIABLES[name].default : value;
  };

  const host = read('FLEET_HOST');
  if (!/^[A-Za-z0-9.:[\]-]+$/.test(host)) errors.push(`FLEET_HOST: "${host}" is not a host name or address`);

  const portText = read('FLEET_PORT');
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port > 65535) {
    errors.push(`FLEET_PORT: "${portText}" is not a port number (0 to 65535)`);
  }

  const database = parseDatabaseUrl(read('FLEET_DATABASE_URL'), cwd, errors);

  const logLevel = read('FLEET_LOG_LEVEL') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    errors.push(`FLEET_LOG_LEVEL: "${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }

  // Only a key in Fleet's format: 32 random base62 characters (about 190 bits) when made by the
  // generator, which makes a fast hash the right way to store it, as for every other key. A
  // phrase an operator chose could be guessed offline from its hash; the checksum makes one typed
  // by hand fail here instead. The value is never echoed: it is a secret.
  const adminKey = read('FLEET_ADMIN_KEY') || undefined;
  if (adminKey !== undefined && !isWellFormedApiKey(adminKey)) {
    errors.push(
      'FLEET_ADMIN_KEY: must be a key in Fleet\'s format (fleet_ + 32 random base62 characters + checksum); ' +
        'make one with `npm run --silent key`. It is read only on the first start of an empty store, so it may be unset afterwards',
    );
  }

  const int = (name: VariableName, min: number, max: number): number => {
    const text = read(name);
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < min || value > max) {
      errors.push(`${name}: "${text}" is not a whole number from ${min} to ${max}`);
    }
    return value;
  };

  const knownProblems = errors.length;
  const headersSeconds = int('FLEET_HTTP_HEADERS_TIMEOUT_SECONDS', 1, 3600);
  const requestSeconds = int('FLEET_HTTP_REQUEST_TIMEOUT_SECONDS', 1, 3600);
  // Node refuses a headers timeout longer than the whole request's: the headers are part of it.
  if (errors.length === knownProblems && requestSeconds < headersSeconds) {
    errors.push(`FLEET_HTTP_REQUEST_TIMEOUT_SECONDS: ${requestSeconds} is shorter than FLEET_HTTP_HEADERS_TIMEOUT_SECONDS (${headersSeconds}); the headers are part of the request`);
  }
  const timeouts: HttpTimeoutConfig = {
    headersMs: headersSeconds * 1000,
    requestMs: requestSeconds * 1000,
    idleMs: int('FLEET_HTTP_IDLE_TIMEOUT_SECONDS', 1, 86_400) * 1000,
  };

  const givenUrl = read('FLEET_PUBLIC_URL');
  const publicUrl = givenUrl === '' ? `http://localhost:${port}` : parseHttpUrl('FLEET_PUBLIC_URL', givenUrl, errors);
  const rateLimit: RateLimitConfig = {
    requests: int('FLEET_RATE_LIMIT_REQUESTS', 0, 1_000_000_000),
    windowSeconds: int('FLEET_RATE_LIMIT_WINDOW_SECONDS', 1, 86_400),
    tokenRequests: int('FLEET_TOKEN_RATE_LIMIT_REQUESTS', 1, 1_000_000),
  };
  const quotas: QuotaConfig = {
    vehicles: int('FLEET_QUOTA_VEHICLES', 0, 100_000_000),
    apiKeys: int('FLEET_QUOTA_API_KEYS', 1, 1_000_000),
    oauthClients: int('FLEET_QUOTA_OAUTH_CLIENTS', 0, 1_000_000),
    streams: int('FLEET_QUOTA_STREAMS', 0, 1_000_000),
    webhooks: int('FLEET_QUOTA_WEBHOOKS', 0, 10_000),
    geofences: int('FLEET_QUOTA_GEOFENCES', 0, 1_000_000),
    alertRules: int('FLEET_QUOTA_ALERT_RULES', 0, 1_000_000),
    devices: int('FLEET_QUOTA_DEVICES', 0, 100_000_000),
    groups: int('FLEET_QUOTA_GROUPS', 0, 1_000_000),
    drivers: int('FLEET_QUOTA_DRIVERS', 0, 100_000_000),
    geofenceVertices: int('FLEET_QUOTA_GEOFENCE_VERTICES', 0, 100_000_000),
    maintenanceSchedules: int('FLEET_QUOTA_MAINTENANCE_SCHEDULES', 0, 1_000_000),
    reportSchedules: int('FLEET_QUOTA_REPORT_SCHEDULES', 0, 1_000_000),
  };
  const eventRetentionDays = int('FLEET_EVENT_RETENTION_DAYS', 1, 36_500);
  const auditRetentionDays = int('FLEET_AUDIT_RETENTION_DAYS', 1, 36_500);
  const commandTimeoutSeconds = int('FLEET_COMMAND_TIMEOUT_SECONDS', 1, 3600);
  const offlineCheckSeconds = int('FLEET_OFFLINE_CHECK_SECONDS', 1, 3600);
  const maintenanceCheckSeconds = int('FLEET_MAINTENANCE_CHECK_SECONDS', 1, 3600);
  const reportCheckSeconds = int('FLEET_REPORT_CHECK_SECONDS', 1, 3600);
  const idleMinutes = int('FLEET_SESSION_IDLE_MINUTES', 5, 10_080);
  const tripEvents = read('FLEET_TRIP_EVENTS');
  if (tripEvents !== 'true' && tripEvents !== 'false') errors.push(`FLEET_TRIP_EVENTS: "${tripEvents}" is neither true nor false`);
  const allowPrivate = read('FLEET_WEBHOOK_ALLOW_PRIVATE');
  const endpointConcurrency = int('FLEET_WEBHOOK_ENDPOINT_CONCURRENCY', 1, 64);
  if (allowPrivate !== 'true' && allowPrivate !== 'false') errors.push(`FLEET_WEBHOOK_ALLOW_PRIVATE: "${allowPrivate}" is neither true nor false`);
  const ssoAllowPrivate = read('FLEET_SSO_ALLOW_PRIVATE');
  if (ssoAllowPrivate !== 'true' && ssoAllowPrivate !== 'false') errors.push(`FLEET_SSO_ALLOW_PRIVATE: "${ssoAllowPrivate}" is neither true nor false`);
  const poolSize = int('FLEET_DATABASE_POOL_SIZE', 1, 1000);
  const readMaxLagSeconds = int('FLEET_DATABASE_READ_MAX_LAG_SECONDS', 1, 3600);
  const readReplica = parseReadUrl(read('FLEET_DATABASE_READ_URL'), database, errors);
  const tokenTtlSeconds = int('FLEET_OAUTH_TOKEN_TTL_SECONDS', 60, 86_400);
  const retentionDays = int('FLEET_TELEMETRY_RETENTION_DAYS', 1, 36_500);
  const external = parseExternalIssuer(read, errors);
  const mqtt = parseMqtt(read, host, errors);
  const protocols = parseProtocols(read, host, int, errors);
  const devicePorts: DevicePortsConfig = {
    loginTimeoutMs: int('FLEET_TELTONIKA_LOGIN_TIMEOUT_SECONDS', 1, 3600) * 1000,
    packetTimeoutMs: int('FLEET_TELTONIKA_PACKET_TIMEOUT_SECONDS', 1, 3600) * 1000,
    connections: int('FLEET_TELTONIKA_CONNECTIONS', 1, 1_000_000),
    connectionsPerAddress: int('FLEET_TELTONIKA_CONNECTIONS_PER_ADDRESS', 1, 1_000_000),
    unknownIdentifiers: int('FLEET_DEVICE_UNKNOWN_IDENTIFIERS', 1, 1_000_000),
    backoffMaxMs: int('FLEET_DEVICE_BACKOFF_MAX_SECONDS', 1, 86_400) * 1000,
  };
  const streamOrigins = read('FLEET_STREAM_ALLOWED_ORIGINS');
  const allowedOrigins = streamOrigins === '' ? originOf(publicUrl) : parseOrigins('FLEET_STREAM_ALLOWED_ORIGINS', streamOrigins, errors);
  const corsOrigins = read('FLEET_CORS_ORIGINS');
  const cors = { origins: corsOrigins === '' ? [] : parseOrigins('FLEET_CORS_ORIGINS', corsOrigins, errors) };
  const overload = parseOverload(read, int, errors);
  const redis = parseRedis(read, database, errors);
  const tileUrl = parseTileUrl(env.FLEET_MAP_TILE_URL ?? VARIABLES.FLEET_MAP_TILE_URL.default, errors);
  const tracing = parseTracing(read, errors);

  if (errors.length > 0 || database === undefined) return { ok: false, errors };
  return {
    ok: true,
    config: {
      host, port, publicUrl, logLevel, adminKey, rateLimit, quotas,
      http: { timeouts },
      database: database.kind === 'postgres'
        ? { ...database, poolSize, ...(readReplica === undefined ? {} : { read: { url: readReplica, maxLagMs: readMaxLagSeconds * 1000 } }) }
        : database,
      oauth: { tokenTtlSeconds, external },
      telemetry: { retentionDays },
      events: { retentionDays: eventRetentionDays },
      audit: { retentionDays: auditRetentionDays },
      commands: { timeoutSeconds: commandTimeoutSeconds },
      rules: { offlineCheckSeconds, tripEvents: tripEvents === 'true' },
      maintenance: { checkSeconds: maintenanceCheckSeconds },
      reports: { checkSeconds: reportCheckSeconds },
      webhooks: { allowPrivate: allowPrivate === 'true', endpointConcurrency },
      sessions: { idleMinutes },
      sso: { allowPrivate: ssoAllowPrivate === 'true' },
      mqtt,
      protocols,
      devicePorts,
      streams: { allowedOrigins },
      cors,
      overload,
      redis,
      dashboard: { tileUrl },
      tracing,
    },
  };
}

function parseTracing(read: (name: VariableName) => string, errors: string[]): TracingConfig | undefined {
  const disabled = read('OTEL_SDK_DISABLED');
  if (disabled !== 'true' && disabled !== 'false') errors.push(`OTEL_SDK_DISABLED: "${disabled}" is neither true nor false`);
  const kind = read('OTEL_TRACES_SAMPLER') as TracingConfig['sampler']['kind'];
  if (!SAMPLERS.includes(kind)) errors.push(`OTEL_TRACES_SAMPLER: "${kind}" is not one of ${SAMPLERS.join(', ')}`);
  const ratioText = read('OTEL_TRACES_SAMPLER_ARG');
  const ratio = Number(ratioText);
  if (!/^\d+(\.\d+)?$/.test(ratioText) || ratio > 1) errors.push(`OTEL_TRACES_SAMPLER_ARG: "${ratioText}" is not a number from 0 to 1`);
  const traces = read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = read('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (traces === '' && base === '') return undefined;
  // The specification's rule: the per-signal URL is used as it is, the general one gets the signal's path.
  const url = traces !== ''
    ? parseHttpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces, errors)
    : `${parseHttpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base, errors)}/v1/traces`;
  if (disabled === 'true') return undefined;
  return { url, serviceName: read('OTEL_SERVICE_NAME'), sampler: { kind, ratio } };
}

function parseHttpUrl(name: string, text: string, errors: string[]): string {
  try {
    const url = new URL(text);
    if (url.protocol === 'http:' || url.protocol === 'https:') return text.replace(/\/+$/, '');
  } catch {
    // reported below
  }
  errors.push(`${name}: "${text}" is not an http(s) URL`);
  return text;
}

/**
 * A map tile URL template. Unlike other variables, the empty string is a value here (no tiles),
 * so only an unset variable takes the default.
 */
function parseTileUrl(text: string, errors: string[]): string {
  if (text === '') return '';
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    // reported below
  }
  const placeholders = ['{z}', '{x}', '{y}'].every((p) => text.includes(p));
  if (url === undefined || !['http:', 'https:'].includes(url.protocol) || url.username !== '' || !placeholders) {
    errors.push(`FLEET_MAP_TILE_URL: "${text}" is not an http(s) URL template with {z}, {x} and {y} (or empty for no tiles)`);
  }
  return text;
}

function originOf(publicUrl: string): string[] {
  try {
    return [new URL(publicUrl).origin];
  } catch {
    return []; // FLEET_PUBLIC_URL is reported already
  }
}

/** Origins as browsers send them (`scheme://host[:port]`, lower case, default port left out). */
function parseOrigins(name: VariableName, text: string, errors: string[]): string[] {
  if (text.trim() === '*') return ['*'];
  const origins: string[] = [];
  for (const item of text.split(',').map((part) => part.trim())) {
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      // reported below
    }
    const bare = url !== undefined && url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && !item.endsWith('?');
    if (url === undefined || !['http:', 'https:'].includes(url.protocol) || !bare) {
      errors.push(`${name}: "${item}" is not an origin (http(s)://host[:port], no path), nor "*" alone`);
      continue;
    }
    origins.push(url.origin);
  }
  return origins;
}

function parseOverload(
  read: (name: VariableName) => string, int: (name: VariableName, min: number, max: number) => number, errors: string[],
): OverloadConfig {
  const delay = read('FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS');
  // 0 turns the check off; otherwise at least 1 ms (the sampling's own resolution is 10 ms).
  const maxEventLoopDelayMs = delay === '0' ? 0 : int('FLEET_OVERLOAD_EVENT_LOOP_DELAY_MS', 1, 60_000);
  const utilization = read('FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION');
  const maxEventLoopUtilization = Number(utilization);
  // A loop busy 100 % of the time is what a fully used process looks like: 1 would never trip.
  if (!/^(0|0?\.\d+)$/.test(utilization) || !(maxEventLoopUtilization >= 0 && maxEventLoopUtilization < 1)) {
    errors.push(`FLEET_OVERLOAD_EVENT_LOOP_UTILIZATION: "${utilization}" is not 0 (off) or a decimal between 0 and 1, such as 0.98`);
  }
  return {
    maxEventLoopDelayMs,
    maxEventLoopUtilization,
    sampleIntervalMs: int('FLEET_OVERLOAD_SAMPLE_MS', 10, 10_000),
    retryAfterSeconds: int('FLEET_OVERLOAD_RETRY_AFTER_SECONDS', 1, 3600),
  };
}

function parseExternalIssuer(read: (name: VariableName) => string, errors: string[]): ExternalIssuerConfig | undefined {
  const issuer = read('FLEET_OAUTH_ISSUER');
  const audience = read('FLEET_OAUTH_AUDIENCE');
  const jwksUrl = read('FLEET_OAUTH_JWKS_URL');
  const given = [issuer, audience, jwksUrl].filter((v) => v !== '').length;
  if (given === 0) return undefined;
  if (given < 3) {
    errors.push('FLEET_OAUTH_ISSUER, FLEET_OAUTH_AUDIENCE and FLEET_OAUTH_JWKS_URL: set all three, or none');
    return undefined;
  }
  const organizationClaim = read('FLEET_OAUTH_ORG_CLAIM');
  if (!/^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$/.test(organizationClaim)) {
    errors.push(`FLEET_OAUTH_ORG_CLAIM: "${organizationClaim}" is not a claim name`);
  }
  return { issuer, audience, jwksUrl: parseHttpUrl('FLEET_OAUTH_JWKS_URL', jwksUrl, errors), organizationClaim };
}

function parseMqtt(read: (name: VariableName) => string, httpHost: string, errors: string[]): MqttConfig {
  const portText = read('FLEET_MQTT_PORT');
  const port = Number(portText);
  if (!/^\d{1,5}$/.test(portText) || port > 65535) {
    errors.push(`FLEET_MQTT_PORT: "${portText}" is not a port number (0 to 65535)`);
  }
  const host = read('FLEET_MQTT_HOST') || httpHost;
  // Checked only when given: an inherited FLEET_HOST has been checked (and reported) already.
  if (read('FLEET_MQTT_HOST') !== '' && !/^[A-Za-z0-9.:[\]-]+$/.test(host)) {
    errors.push(`FLEET_MQTT_HOST: "${host}" is not a host name or address`);
  }

  const urlText = read('FLEET_MQTT_URL');
  const username = read('FLEET_MQTT_USERNAME') || undefined;
  const password = read('FLEET_MQTT_PASSWORD') || undefined;
  const organizationId = read('FLEET_MQTT_ORGANIZATION');
  if (urlText === '') {
    // Broker settings without a broker are a mistake worth stopping for, not something to ignore.
    const stray = (['FLEET_MQTT_USERNAME', 'FLEET_MQTT_PASSWORD', 'FLEET_MQTT_ORGANIZATION'] as const).filter((name) => read(name) !== '');
    if (stray.length > 0) errors.push(`${stray.join(', ')}: only used with FLEET_MQTT_URL, which is not set`);
    return port === 0 ? { mode: 'off' } : { mode: 'listener', host, port };
  }

  let url = urlText;
  try {
    const parsed = new URL(urlText);
    if (parsed.protocol !== 'mqtt:' && parsed.protocol !== 'mqtts:') {
      errors.push(`FLEET_MQTT_URL: "${redactUrl(urlText)}" is not an mqtt:// or mqtts:// URL`);
    } else if (parsed.username !== '' || parsed.password !== '') {
      errors.push('FLEET_MQTT_URL: put credentials in FLEET_MQTT_USERNAME and FLEET_MQTT_PASSWORD, not in the URL');
    } else if (parsed.hostname === '' || !['', '/'].includes(parsed.pathname) || parsed.search !== '' || parsed.hash !== '') {
      errors.push(`FLEET_MQTT_URL: "${urlText}" must be mqtt://host:port, without a path or query`);
    } else {
      url = `${parsed.protocol}//${parsed.host}`;
    }
  } catch {
    errors.push(`FLEET_MQTT_URL: "${redactUrl(urlText)}" is not a URL (mqtt://host:port)`);
  }
  if (organizationId === '') {
    errors.push('FLEET_MQTT_ORGANIZATION: required with FLEET_MQTT_URL (the organization id that owns the broker\'s vehicles)');
  } else if (!/^org_[A-Za-z0-9_-]{1,64}$/.test(organizationId)) {
    errors.push(`FLEET_MQTT_ORGANIZATION: "${organizationId}" is not an organization id (org_...)`);
  }
  const shareGroup = read('FLEET_MQTT_SHARE_GROUP');
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(shareGroup)) {
    errors.push(`FLEET_MQTT_SHARE_GROUP: "${shareGroup}" is not 1 to 64 characters of A-Z a-z 0-9 _ . -`);
  }
  const clientId = read('FLEET_MQTT_CLIENT_ID') || `fleet-${os.hostname().replaceAll(/[^A-Za-z0-9_.-]/g, '-')}`.slice(0, 128);
  if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(clientId)) {
    errors.push(`FLEET_MQTT_CLIENT_ID: "${clientId}" is not 1 to 128 characters of A-Z a-z 0-9 _ . : -`);
  }
  const session = read('FLEET_MQTT_SESSION');
  if (session !== 'keep' && session !== 'leave') {
    errors.push(`FLEET_MQTT_SESSION: "${session}" is neither keep nor leave`);
  }
  return { mode: 'broker', url, username, password, shareGroup, organizationId, clientId, session: session === 'leave' ? 'leave' : 'keep' };
}

function parseProtocols(
  read: (name: VariableName) => string, httpHost: string, int: (name: VariableName, min: number, max: number) => number, errors: string[],
): ProtocolsConfig {
  const port = (name: 'FLEET_OSMAND_PORT' | 'FLEET_TELTONIKA_PORT'): number => {
    const text = read(name);
    if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) errors.push(`${name}: "${text}" is not a port number (0 to 65535; 0 turns it off)`);
    return Number(text);
  };
  const given = read('FLEET_PROTOCOLS_HOST');
  if (given !== '' && !/^[A-Za-z0-9.:[\]-]+$/.test(given)) errors.push(`FLEET_PROTOCOLS_HOST: "${given}" is not a host name or address`);
  return {
    host: given || httpHost,
    osmandPort: port('FLEET_OSMAND_PORT'),
    teltonikaPort: port('FLEET_TELTONIKA_PORT'),
    teltonikaIdleMs: int('FLEET_TELTONIKA_IDLE_SECONDS', 1, 86_400) * 1000,
  };
}

function parseRedis(
  read: (name: VariableName) => string, database: { kind: string } | undefined, errors: string[],
): Config['redis'] {
  const url = read('FLEET_REDIS_URL');
  const prefix = read('FLEET_REDIS_PREFIX');
  if (!/^[A-Za-z0-9:._-]{1,64}$/.test(prefix)) errors.push(`FLEET_REDIS_PREFIX: "${prefix}" must be 1 to 64 of A-Z a-z 0-9 : . _ -`);
  if (url === '') return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || !['redis:', 'rediss:'].includes(parsed.protocol) || parsed.hostname === '') {
    errors.push(`FLEET_REDIS_URL: "${redactUrl(url)}" is not a Redis URL (redis://host:6379 or rediss://host:6380)`);
    return undefined;
  }
  if (database !== undefined && database.kind !== 'postgres') {
    errors.push('FLEET_REDIS_URL: cluster mode needs a PostgreSQL FLEET_DATABASE_URL (the nodes share one database)');
  }
  return { url, prefix };
}

/** A postgres:// or postgresql:// URL with a host, in the URL or as ?host= (a Unix socket directory). */
function isPostgresUrl(url: string): boolean {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  return parsed !== undefined && ['postgres:', 'postgresql:'].includes(parsed.protocol) && (parsed.hostname !== '' || parsed.searchParams.has('host'));
}

function parseReadUrl(url: string, database: ReturnType<typeof parseDatabaseUrl>, errors: string[]): string | undefined {
  if (url === '') return undefined;
  if (!isPostgresUrl(url)) {
    errors.push(`FLEET_DATABASE_READ_URL: "${redactUrl(url)}" is not a PostgreSQL URL (postgres://user:password@host:5432/database)`);
    return undefined;
  }
  if (database !== undefined && database.kind !== 'postgres') {
    errors.push('FLEET_DATABASE_READ_URL: a read replica needs a PostgreSQL FLEET_DATABASE_URL (the primary it follows)');
    return undefined;
  }
  return url;
}

function parseDatabaseUrl(
  url: string, cwd: string, errors: string[],
): { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string } | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme ?? '') {
    case 'sqlite': {
      const rest = url.slice('sqlite:'.length).replace(/^\/\//, '');
      if (rest === '') {
        errors.push('FLEET_DATABASE_URL: "sqlite:" needs a file path, e.g. sqlite:./data/fleet.db');
        return undefined;
      }
      return { kind: 'sqlite', path: rest === ':memory:' ? rest : path.resolve(cwd, rest) };
    }
    case 'postgres':
    case 'postgresql': {
      if (!isPostgresUrl(url)) {
        errors.push(`FLEET_DATABASE_URL: "${redactUrl(url)}" is not a PostgreSQL URL (postgres://user:password@host:5432/database)`);
        return undefined;
      }
      return { kind: 'postgres', url };
    }
    default:
      errors.push(
        `FLEET_DATABASE_URL: unsupported scheme in "${redactUrl(url)}"; use sqlite:<file> (e.g. sqlite:./data/fleet.db) or postgres://…`,
      );
      return undefined;
  }
}

/** Never echo a password from a connection string back into logs. */
function redactUrl(url: string): string {
  // Up to the last `@`: a password may itself hold `@` or `/`.
  return url.replace(/\/\/([^:/@]*):.*@/, '//$1:***@');
}
