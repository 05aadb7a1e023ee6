// Each request's logger, made only when the request logs something. Fastify gives every request
// a child logger carrying its id; pino builds that child eagerly (its bindings serialized to
// JSON), which is a measurable part of a cheap request's cost when the level (say `warn`) logs
// nothing for most requests. This stand-in holds the bindings and asks the parent for the child
// on the first line at an enabled level, so what is logged, and how, does not change.
import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Its request lines ("incoming request", "request completed") are logged at debug, not info. */
    quietRequestLog?: boolean;
  }
}

type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogArgs = Parameters<FastifyBaseLogger['info']>;

class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
  readonly #bindings: Bindings;
  readonly #options: ChildOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #logger(): FastifyBaseLogger {
    return (this.#child ??= this.#parent.child(this.#bindings, this.#options));
  }

  #log(level: Level, args: LogArgs): void {
    // A logger that cannot tell (not pino) gets every line, as it would from Fastify; so does a
    // route with a log level of its own (Fastify's `logLevel`), which its child decides by.
    if (this.#child === undefined && this.#options?.level === undefined && this.#parent.isLevelEnabled?.(level) === false) return;
    this.#logger()[level](...args);
  }

  get level(): string {
    return this.#child?.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.#logger().level = level;
  }

  fatal(...args: LogArgs): void {
    this.#log('fatal', args);
  }

  error(...args: LogArgs): void {
    this.#log('error', args);
  }

  warn(...args: LogArgs): void {
    this.#log('warn', args);
  }

  info(...args: LogArgs): void {
    this.#log('info', args);
  }

  debug(...args: LogArgs): void {
    this.#log('debug', args);
  }

  trace(...args: LogArgs): void {
    this.#log('trace', args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the lazy child, whose request lines never show a credential from the URL. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildOptions): FastifyBaseLogger {
  return new RequestLogger(logger, bindings, { ...options, serializers: { ...options?.serializers, req: serializeRequest } });
}

/**
 * Query parameters that carry a credential: a live stream's single-use ticket, and the bearer
 * token of RFC 6750 §2.3 (never accepted by Fleet, but a client may send one all the same).
 */
const CREDENTIAL_PARAMETERS = new Set(['ticket', 'access_token']);

/** `url` with the value of every credential parameter replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const query = url.indexOf('?');
  if (query === -1) return url;
  const parameters = url.slice(query + 1).split('&').map((parameter) => {
    const equals = parameter.indexOf('=');
    const raw = equals === -1 ? parameter : parameter.slice(0, equals);
    let name = raw;
    try {
      // As the query parser reads it: `%74icket` is `ticket`.
      name = decodeURIComponent(raw.replaceAll('+', ' '));
    } catch {
      // Not valid percent-encoding: compared as sent.
    }
    return CREDENTIAL_PARAMETERS.has(name.toLowerCase()) ? `${raw}=[redacted]` : parameter;
  });
  return `${url.slice(0, query + 1)}${parameters.join('&')}`;
}

/**
 * The `req` of Fastify's request log lines: its own fields, with credentials redacted from the
 * URL. Given to the root logger and to every request's child (a logger passed in by a test or an
 * embedder keeps its own serializers otherwise).
 */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/**
 * Fastify's request lines, except for routes flagged `quietRequestLog` (the health probes, asked
 * every few seconds by every load balancer and orchestrator), whose lines are logged at debug:
 * at the default level they would be most of the log. An error on such a route is logged as any other.
 */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (request.routeOptions.config.quietRequestLog !== true) return super.incomingRequest(request, reply, metadata);
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (error || request.routeOptions.config.quietRequestLog !== true) return super.requestCompleted(error, request, reply, metadata);
    reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
