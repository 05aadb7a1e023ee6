// Alert rules and alerts: create, read, change, delete; acknowledge and resolve (geofences:
// geofences/service.ts). Knows nothing of HTTP. Every change of a rule tells the rule engine (and,
// through the event port, the other nodes) to read the organization's definitions again.
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { AppError, type FieldError } from '../errors.ts';
import type { VehicleScope } from '../groups/scope.ts';
import type { EventPort } from '../events/port.ts';
import { newId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import { alertEvent } from './engine.ts';
import type { AlertRecord, AlertRuleRecord, AlertStatus, Condition } from './model.ts';
import type { AlertListQuery, RuleBody } from './schema.ts';
import type { RulesStore } from './store.ts';

export type RulesService = ReturnType<typeof createRulesService>;

const invalid = (message: string, errors: FieldError[]) => new AppError('validation-failed', message, { errors });

export function createRulesService(deps: {
  store: RulesStore;
  clock: Clock;
  maxRules: number;
  /** Told when the organization's rules changed (`rulesChanged`), and of the events a manual alert change recorded (`recorded`). */
  events: EventPort;
  /** Which vehicles a credential limited to groups sees (its alerts are those of its vehicles). */
  scope?: VehicleScope;
}) {
  const { store, clock } = deps;

  async function checkCondition(who: Principal, condition: Condition): Promise<Condition> {
    if (condition.kind === 'geofence') {
      if ((await store.getGeofence(who.organizationId, condition.geofenceId)) === undefined) {
        throw invalid(`condition.geofenceId: no geofence "${condition.geofenceId}" in this organization.`, [
          { in: 'body', path: '/condition/geofenceId', message: 'names no geofence of this organization' },
        ]);
      }
      return { ...condition, forSeconds: condition.forSeconds ?? 0 };
    }
    if (condition.kind === 'threshold') {
      const numeric = typeof condition.value === 'number';
      if (!condition.field.startsWith('diagnostics.') && !numeric) {
        throw invalid('condition.value: must be a number for this field.', [{ in: 'body', path: '/condition/value', message: 'must be a number' }]);
      }
      if (!numeric && condition.op !== '==' && condition.op !== '!=') {
        throw invalid('condition.op: a string or boolean value takes == or != only.', [{ in: 'body', path: '/condition/op', message: 'must be == or != for a string or boolean value' }]);
      }
      return { ...condition, forSeconds: condition.forSeconds ?? 0 };
    }
    return condition;
  }

  /** A rule as `who` is shown it: a credential limited to groups sees only its own vehicles in `vehicleIds`. */
  async function shown(who: Principal, r: AlertRuleRecord): Promise<AlertRuleRecord> {
    if (who.groupIds === undefined || r.vehicleIds === null) return r;
    const visible = await deps.scope?.visibleOf(who, r.vehicleIds);
    return visible === undefined ? r : { ...r, vehicleIds: r.vehicleIds.filter((id) => visible.has(id)) };
  }

  async function rule(who: Principal, id: string): Promise<AlertRuleRecord> {
    const found = await store.getRule(who.organizationId, id);
    if (found === undefined) throw new AppError('alert-rule-not-found', `No alert rule "${id}" in this organization.`);
    return shown(who, found);
  }

  async function createRule(who: Principal, body: RuleBody): Promise<AlertRuleRecord> {
    const now = clock.now();
    const record: AlertRuleRecord = {
      id: newId('rule'), organizationId: who.organizationId, name: body.name, condition: await checkCondition(who, body.condition as Condition),
      vehicleIds: body.vehicleIds ?? null, enabled: body.enabled ?? true, createdAt: now, updatedAt: now,
    };
    if ((await store.insertRule(record, deps.maxRules)) === 'quota') throw quotaExceeded(deps.maxRules, 'alert rules');
    deps.events.emit('rulesChanged', { organizationId: who.organizationId });
    return record;
  }

  async function replaceRule(who: Principal, id: string, body: RuleBody): Promise<AlertRuleRecord> {
    const current = await rule(who, id);
    const record: AlertRuleRecord = {
      ...current, name: body.name, condition: await checkCondition(who, body.condition as Condition), vehicleIds: body.vehicleIds ?? null,
      enabled: body.enabled ?? true, updatedAt: clock.now(),
    };
    if (!(await store.replaceRule(record))) await rule(who, id);
    deps.events.emit('rulesChanged', { organizationId: who.organizationId });
    return record;
  }

  async function deleteRule(who: Principal, id: string): Promise<void> {
    if (!(await store.deleteRule(who.organizationId, id))) await rule(who, id);
    deps.events.emit('rulesChanged', { organizationId: who.organizationId });
  }

  async function alert(who: Principal, id: string): Promise<AlertRecord> {
    const found = await store.getAlert(who.organizationId, id);
    // An alert of a vehicle outside a scoped credential's groups is not there for it.
    const hidden = found !== undefined && !((await deps.scope?.sees(who, found.vehicleId)) ?? who.groupIds === undefined);
    if (found === undefined || hidden) throw new AppError('alert-not-found', `No alert "${id}" in this organization.`);
    return found;
  }

  async function listAlerts(who: Principal, query: AlertListQuery) {
    const limit = query.limit ?? 50;
    const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const { alerts } = await store.listAlerts(who.organizationId, {
      statuses: query.status === undefined ? undefined : ([...new Set(query.status.split(','))] as AlertStatus[]),
      vehicleId: query.vehicleId, ruleId: query.ruleId, before, limit: limit + 1,
      ...(who.groupIds === undefined ? {} : { anyOfGroups: who.groupIds }),
    });
    const more = alerts.length > limit;
    const page = more ? alerts.slice(0, limit) : alerts;
    return { alerts: page, nextCursor: more ? encodeCursor(page.at(-1)!.seq) : null };
  }

  /** Acknowledges an open alert, or resolves an unresolved one; the same status again is a no-op. */
  async function act(who: Principal, id: string, to: 'acknowledged' | 'resolved', note: string | undefined): Promise<AlertRecord> {
    const current = await alert(who, id);
    if (current.status === to || current.status === 'resolved') {
      if (current.status === to) return current;
      throw new AppError('alert-resolved', `Alert "${id}" is resolved already.`);
    }
    const at = clock.now();
    const next: AlertRecord = to === 'resolved'
      ? { ...current, status: 'resolved', resolvedAt: at, resolvedBy: who.credentialId }
      : { ...current, status: 'acknowledged', acknowledgedAt: at, acknowledgedBy: who.credentialId };
    const event = alertEvent(to === 'resolved' ? 'alert.resolved' : 'alert.acknowledged', next, at);
    if (note !== undefined) event.data.note = note;
    const applied = await store.applyAlerts({
      organizationId: who.organizationId, opened: [], events: [event],
      changed: [{ id, from: to === 'resolved' ? ['open', 'acknowledged'] : ['open'], status: to, at, by: who.credentialId }],
    });
    if (applied.changed.length === 0) return act(who, id, to, note); // changed meanwhile: judge again
    deps.events.emit('recorded', { events: applied.events });
    return next;
  }

  /** The ids of the organization's rules whose condition names the geofence. */
  async function rulesUsingGeofence(organizationId: string, geofenceId: string): Promise<string[]> {
    const rules = await store.allRules(organizationId);
    return rules.filter((r) => r.condition.kind === 'geofence' && r.condition.geofenceId === geofenceId).map((r) => r.id);
  }

  return {
    createRule, rule,
    async listRules(who: Principal, page: { limit: number; offset: number }) {
      const found = await store.listRules(who.organizationId, page);
      return { ...found, rules: await Promise.all(found.rules.map((r) => shown(who, r))) };
    },
    replaceRule, deleteRule,
    alert, listAlerts, act, rulesUsingGeofence,
  };
}

function encodeCursor(seq: number): string {
  return Buffer.from(`a:${seq}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^a:(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) throw invalid('The cursor is not one this service issued.', [{ in: 'query', path: '/cursor', message: 'is not a valid cursor' }]);
  return Number(match[1]);
}
