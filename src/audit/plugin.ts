// Which requests the audit log records, and their entries (docs/API.md "Audit log"): every POST,
// PUT, PATCH and DELETE under /v2, /api/v1 and /auth but telemetry ingestion, every sign-in, every
// 401 of a presented credential and every 403. A change's entry commits with it (context.ts);
// the others are written once the response is sent, a few at a time.
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, preHandlerHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Clock } from '../clock.ts';
import { SESSION_COOKIE } from '../http/auth.ts';
import { newTimeOrderedId } from '../ids.ts';
import { type AuditAction, NOT_AUDITED, auditActionOf } from './actions.ts';
import { type AuditScope, outsideAudit, runInAuditScope } from './context.ts';
import { type AuditActor, type AuditEntry, actorTypeOf, outcomeOf } from './entry.ts';
import type { AuditStore } from './store.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the audit plugin as each route is added. */
    audit?: RouteAudit;
  }
  interface FastifyRequest {
    /** The audit scope of a change being handled (context.ts); null for other requests. */
    auditScope: AuditScope | null;
  }
}

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const AUDITED_PATHS = /^\/(v2|api\/v1|auth)(\/|$)/;
const ANONYMOUS: AuditActor = { type: 'anonymous', id: null, name: null };
/** What an entry keeps of a value taken from the request (a path parameter, a header). */
const MAX_TEXT = 255;

const pathOf = (request: FastifyRequest) => {
  const at = request.url.indexOf('?');
  return (at === -1 ? request.url : request.url.slice(0, at)).slice(0, 1024);
};
const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value.slice(0, MAX_TEXT) : null);

/** What the log does with a route's requests. */
interface RouteAudit {
  spec: AuditAction | undefined;
  /** Each request is recorded (a change, or a sign-in); otherwise only refusals are. */
  recorded: boolean;
  /** The route's lowest 2xx status (or 3xx: a redirecting sign-in): what its committed change answers. */
  successStatus: number;
}

/** Entries written after the response: batched, one transaction per batch, never in a request's scope. */
function createWriter(store: AuditStore, log: FastifyBaseLogger) {
  let queue: AuditEntry[] = [];
  let scheduled = false;
  let chain = Promise.resolve();
  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        await outsideAudit(() => store.insert(batch));
      } catch (error) {
        log.error({ err: error, entries: batch.length }, 'audit: could not write entries');
      }
    }
  }
  return {
    add(entry: AuditEntry): void {
      queue.push(entry);
      if (scheduled) return;
      scheduled = true;
      outsideAudit(() => setImmediate(() => {
        scheduled = false;
        chain = chain.then(drain);
      }));
    },
    flush(): Promise<void> {
      chain = chain.then(drain);
      return chain;
    },
  };
}

export const auditPlugin = fp(async function audit(app: FastifyInstance, opts: { store: AuditStore; clock: Clock }) {
  const writer = createWriter(opts.store, app.log);
  app.decorateRequest('auditScope', null);
  app.decorate('auditFlush', () => writer.flush());
  app.addHook('onClose', () => writer.flush());

  // Settled once per route, read from its config by the hooks.
  app.addHook('onRoute', (route) => {
    const operationId = route.schema?.operationId;
    const spec = auditActionOf(operationId);
    const changes = [route.method].flat().some((method) => CHANGES.has(method));
    const recorded = spec !== undefined
      ? changes || spec.atResponse === true
      : changes && AUDITED_PATHS.test(route.url) && (operationId === undefined || !NOT_AUDITED.has(operationId));
    const codes = Object.keys(route.schema?.response ?? {}).map(Number).filter((code) => code >= 200 && code < 400);
    const successStatus = codes.length === 0 ? 200 : Math.min(...codes);
    route.config = { ...route.config, audit: { spec, recorded, successStatus } };
    if (!recorded) return;
    const newIdPrefix = spec?.id?.startsWith('new:') === true ? spec.id.slice(4) : undefined;
    const inTransaction = spec?.atResponse !== true;
    // The route's last hook before its handler, so the change's transactions run in the scope.
    // On the recorded routes only: the others (reads, telemetry) pay nothing for it.
    const enter: preHandlerHookHandler = (request, _reply, done) => {
      const scope: AuditScope = {
        build: (s, status) => entryOf(request, spec, s, status),
        successStatus,
        newIdPrefix,
        inTransaction,
        written: false,
        closed: false,
        note: {},
      };
      request.auditScope = scope;
      runInAuditScope(scope, () => done());
    };
    route.preHandler = [...[route.preHandler ?? []].flat(), enter];
  });

  /** The route's audit settings; for a request no route matched, those of a change under the audited paths. */
  function routeAudit(request: FastifyRequest): RouteAudit {
    return request.routeOptions.config.audit ?? { spec: undefined, recorded: CHANGES.has(request.method) && AUDITED_PATHS.test(pathOf(request)), successStatus: 200 };
  }

  function resourceIdOf(request: FastifyRequest, spec: AuditAction | undefined): string | null {
    const where = spec?.id;
    if (where === undefined || where.startsWith('new:')) return null;
    if (where === 'self') {
      const who = request.principal as FastifyRequest['principal'] | null;
      return who?.session?.userId ?? null;
    }
    const [from, name] = where.split(':') as ['param' | 'body', string];
    const source = (from === 'param' ? request.params : request.body) as Record<string, unknown> | null | undefined;
    return typeof source === 'object' && source !== null ? text(source[name]) : null;
  }

  function entryOf(request: FastifyRequest, spec: AuditAction | undefined, scope: AuditScope | null, status: number): AuditEntry {
    const who = request.principal as FastifyRequest['principal'] | null;
    const note = scope?.note ?? {};
    const outcome = outcomeOf(status);
    const at = opts.clock.now();
    const action = note.action ?? (spec !== undefined
      ? (spec.atResponse === true && outcome !== 'succeeded' ? `${spec.action}_failed` : spec.action)
      : status === 401 ? 'credential.rejected' : status === 403 ? 'access.denied' : request.is404 ? 'request.not_found' : 'request.failed');
    return {
      id: newTimeOrderedId('aud', at),
      organizationId: who?.organizationId ?? note.organizationId ?? null,
      at,
      actor: note.actor ?? (who === null ? ANONYMOUS : { type: actorTypeOf(who.credentialId), id: who.credentialId, name: who.name ?? null }),
      action,
      method: request.method,
      path: pathOf(request),
      status,
      outcome,
      resource: { type: spec?.resource ?? null, id: note.resourceId ?? resourceIdOf(request, spec) },
      ip: text(request.ip),
      userAgent: text(request.headers['user-agent']),
      requestId: request.id,
    };
  }

  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode;
    const scope = request.auditScope;
    if (scope !== null) {
      scope.closed = true;
      if (!scope.written) writer.add(scope.build(scope, status));
      return done();
    }
    // The common case (a read, or a change not recorded: telemetry) answered below 400 asks
    // nothing more: a recorded route that reached its handler has its scope, above.
    if (status < 400) return done();
    const { spec, recorded } = routeAudit(request);
    const presented = request.headers.authorization !== undefined || request.cookies?.[SESSION_COOKIE] !== undefined;
    if (recorded || status === 403 || (status === 401 && presented)) writer.add(entryOf(request, spec, null, status));
    done();
  });
}, { name: 'audit', dependencies: ['auth'] });

declare module 'fastify' {
  interface FastifyInstance {
    /** Writes the entries waiting to be written (those of responses already sent). */
    auditFlush(): Promise<void>;
  }
}
