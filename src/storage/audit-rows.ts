// The audit_log table's columns and rows, the same on both stores.
import type { ActorType, AuditEntry, AuditFilter, Outcome } from '../audit/entry.ts';
import type { Row } from './rows.ts';

export const AUDIT_COLUMNS = 'id, organization_id, at, actor_type, actor_id, actor_name, action, method, path, status, outcome, resource_type, resource_id, ip, user_agent, request_id';

/** The values of AUDIT_COLUMNS, in order. */
export function auditValues(e: AuditEntry): (string | number | null)[] {
  return [
    e.id, e.organizationId, e.at, e.actor.type, e.actor.id, e.actor.name, e.action, e.method, e.path, e.status, e.outcome,
    e.resource.type, e.resource.id, e.ip, e.userAgent, e.requestId,
  ];
}

export function toAuditEntry(row: Row): AuditEntry {
  return {
    id: row.id as string,
    organizationId: row.organization_id as string | null,
    at: Number(row.at),
    actor: { type: row.actor_type as ActorType, id: row.actor_id as string | null, name: row.actor_name as string | null },
    action: row.action as string,
    method: row.method as string,
    path: row.path as string,
    status: Number(row.status),
    outcome: row.outcome as Outcome,
    resource: { type: row.resource_type as string | null, id: row.resource_id as string | null },
    ip: row.ip as string | null,
    userAgent: row.user_agent as string | null,
    requestId: row.request_id as string | null,
  };
}

/**
 * The WHERE clause of a listing and its values, with `param(n)` naming the n-th placeholder
 * (`?` or `$n`): the organization (and those of none), the filters, the cursor.
 */
export function auditWhere(
  query: { organizationId: string; withUnowned: boolean; filter: AuditFilter; before?: string },
  param: (n: number) => string,
): { where: string; values: (string | number)[] } {
  const values: (string | number)[] = [query.organizationId];
  const clauses = [query.withUnowned ? `(organization_id = ${param(1)} OR organization_id IS NULL)` : `organization_id = ${param(1)}`];
  const add = (sql: (p: string) => string, value: string | number | undefined) => {
    if (value === undefined) return;
    values.push(value);
    clauses.push(sql(param(values.length)));
  };
  const { filter } = query;
  add((p) => `at >= ${p}`, filter.from);
  add((p) => `at < ${p}`, filter.to);
  add((p) => `actor_id = ${p}`, filter.actorId);
  add((p) => `action = ${p}`, filter.action);
  add((p) => `outcome = ${p}`, filter.outcome);
  add((p) => `resource_type = ${p}`, filter.resourceType);
  add((p) => `resource_id = ${p}`, filter.resourceId);
  add((p) => `id < ${p}`, query.before);
  return { where: clauses.join(' AND '), values };
}
