// GET /v2/audit-log: the organization's entries, newest first (docs/API.md "Audit log"). There is
// no route that changes or deletes one.
import type { FastifyInstance } from 'fastify';
import { responses } from '../schema/common.ts';
import type { AuditEntry } from './entry.ts';
import { AuditPage, AuditQuery } from './schema.ts';
import type { AuditStore } from './store.ts';

const view = (e: AuditEntry) => ({
  id: e.id, at: new Date(e.at).toISOString(), actor: e.actor, action: e.action, method: e.method, path: e.path, status: e.status,
  outcome: e.outcome, resource: e.resource, ip: e.ip, userAgent: e.userAgent, requestId: e.requestId,
});

export async function auditRoutes(app: FastifyInstance, opts: { store: AuditStore }) {
  app.get<{ Querystring: AuditQuery }>('/v2/audit-log', {
    config: { scope: 'audit:read' },
    schema: {
      tags: ['audit'], operationId: 'listAuditLog', summary: 'The audit log, newest first',
      description: 'Every change through the API and every sign-in, refusal (401 of a presented credential, 403) and failure, with who made it. '
        + 'Entries are never changed; they are kept `FLEET_AUDIT_RETENTION_DAYS` days. The platform organization also sees the entries of no '
        + 'organization (sign-ins naming no known account, unknown credentials). Follow `nextCursor` for older entries.',
      querystring: AuditQuery,
      response: responses({ 200: AuditPage }),
    },
  }, async (request) => {
    const { from, to, limit = 50, cursor, ...rest } = request.query;
    const who = request.principal;
    const entries = await opts.store.list({
      organizationId: who.organizationId,
      withUnowned: who.platform,
      filter: { ...rest, ...(from === undefined ? {} : { from: Date.parse(from) }), ...(to === undefined ? {} : { to: Date.parse(to) }) },
      ...(cursor === undefined ? {} : { before: cursor }),
      limit: limit + 1,
    });
    const more = entries.length > limit;
    const page = more ? entries.slice(0, limit) : entries;
    return { entries: page.map(view), nextCursor: more ? page.at(-1)!.id : null };
  });
}
