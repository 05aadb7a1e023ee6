// Geofences, alert rules, alerts and rule states in the embedded store.
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { AlertRecord, RuleState } from '../../rules/model.ts';
import type { EventRecord } from '../../events/types.ts';
import { type Applied, type AlertChanges, type Judged, type RulesStore, happenedEvents } from '../../rules/store.ts';
import { ALERT_COLUMNS, GEOFENCE_COLUMNS, RULE_COLUMNS, definitionsStampSql, sqliteRuleRows as rows } from '../rule-rows.ts';
import { transaction, write } from './database.ts';
import type { AppendEvents } from './events.ts';

const json = (value: unknown) => (value === null ? null : JSON.stringify(value));
const keyOf = (organizationId: string, vehicleId: string) => `${organizationId}\n${vehicleId}`;

/** What a telemetry commit needs of the rule tables, inside its transaction. */
export interface SqliteRuleWrites {
  /** The vehicle's state, and its unresolved alerts when `alerts` (else none are read). */
  load(organizationId: string, vehicleId: string, alerts: boolean): { state: RuleState | undefined; unresolved: AlertRecord[] };
  /** Writes the state (one row) and alert changes with their events; the events written. */
  write(judged: Judged, at: number): EventRecord[];
  /** The vehicle was deleted (its state row with it). */
  forget(organizationId: string, vehicleId: string): void;
  /** A transaction that wrote states failed: what was kept of them may not have been stored. */
  forgetAll(): void;
}

export function createSqliteRuleWrites(db: DatabaseSync, appendEvents: AppendEvents): SqliteRuleWrites & { apply(changes: AlertChanges, at: number): Applied } {
  const state = db.prepare('SELECT ts, inside, held, trip FROM vehicle_rule_state WHERE organization_id = ? AND vehicle_id = ?');
  /**
   * Each vehicle's state as last read or written: one process owns the file and only telemetry
   * commits write states, so a commit reads and parses a vehicle's row only the first time (or
   * after a deletion, or a failed commit). The engine never changes a state it is given.
   */
  const states = new Map<string, RuleState>();
  const unresolved = db.prepare(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE organization_id = ? AND vehicle_id = ? AND status <> 'resolved'`);
  const upsert = db.prepare(
    `INSERT INTO vehicle_rule_state (organization_id, vehicle_id, ts, inside, held, trip) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET ts = excluded.ts, inside = excluded.inside, held = excluded.held, trip = excluded.trip`,
  );
  const open = db.prepare(
    `INSERT INTO alerts (id, organization_id, rule_id, rule_name, vehicle_id, status, opened_at, trigger_ts, trigger_value)
     VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  // A change's `from` arrives as a JSON list: one statement for any number of statuses.
  const acknowledge = db.prepare(
    `UPDATE alerts SET status = 'acknowledged', acknowledged_at = ?, acknowledged_by = ? WHERE id = ? AND organization_id = ? AND status IN (SELECT value FROM json_each(?))`,
  );
  const resolve = db.prepare(
    `UPDATE alerts SET status = 'resolved', resolved_at = ?, resolved_by = ? WHERE id = ? AND organization_id = ? AND status IN (SELECT value FROM json_each(?))`,
  );

  /** Alert changes and the events of those that happened; inside the caller's transaction. */
  function apply(changes: AlertChanges, at: number): Applied {
    const opened: string[] = [];
    const changed: string[] = [];
    for (const a of changes.opened) {
      if (a.organizationId !== changes.organizationId) continue;
      // A trigger without a value is stored as null (JSON.stringify(undefined) is no text to bind), as on PostgreSQL.
      if (open.run(a.id, a.organizationId, a.ruleId, a.ruleName, a.vehicleId, a.openedAt, a.triggerTimestamp, json(a.triggerValue ?? null)).changes > 0) opened.push(a.id);
    }
    for (const c of changes.changed) {
      const statement = c.status === 'resolved' ? resolve : acknowledge;
      if (statement.run(c.at, c.by, c.id, changes.organizationId, JSON.stringify(c.from)).changes > 0) changed.push(c.id);
    }
    const events = happenedEvents(changes.events, new Set([...opened, ...changed]));
    appendEvents(events, at);
    return { opened, changed, events };
  }

  return {
    load(organizationId, vehicleId, alerts) {
      const key = keyOf(organizationId, vehicleId);
      let known = states.get(key);
      if (known === undefined) {
        const row = state.get(organizationId, vehicleId);
        if (row !== undefined) states.set(key, (known = rows.state(row)));
      }
      return {
        state: known,
        unresolved: alerts ? unresolved.all(organizationId, vehicleId).map(rows.alert) : [],
      };
    },
    write(judged, at) {
      const s = judged.state;
      upsert.run(judged.organizationId, judged.vehicleId, s.ts, JSON.stringify(s.inside), JSON.stringify(s.held), json(s.trip));
      states.set(keyOf(judged.organizationId, judged.vehicleId), s);
      if (judged.opened.length === 0 && judged.changed.length === 0) {
        appendEvents(judged.events, at);
        return judged.events;
      }
      return apply(judged, at).events;
    },
    forget(organizationId, vehicleId) {
      states.delete(keyOf(organizationId, vehicleId));
    },
    forgetAll() {
      states.clear();
    },
    apply,
  };
}

export function createSqliteRulesStore(db: DatabaseSync, writes: ReturnType<typeof createSqliteRuleWrites>): RulesStore {
  const countGeofences = db.prepare('SELECT count(*) AS n FROM geofences WHERE organization_id = ?');
  const insertGeofence = db.prepare(`INSERT INTO geofences (${GEOFENCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const getGeofence = db.prepare(`SELECT ${GEOFENCE_COLUMNS} FROM geofences WHERE organization_id = ? AND id = ?`);
  const pageGeofences = db.prepare(`SELECT ${GEOFENCE_COLUMNS} FROM geofences WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const allGeofences = db.prepare(`SELECT ${GEOFENCE_COLUMNS} FROM geofences WHERE organization_id = ?`);
  const replaceGeofence = db.prepare('UPDATE geofences SET name = ?, geometry = ?, vehicle_ids = ?, updated_at = ? WHERE organization_id = ? AND id = ?');
  const deleteGeofence = db.prepare('DELETE FROM geofences WHERE organization_id = ? AND id = ?');
  const insertRule = db.prepare(`INSERT INTO alert_rules (${RULE_COLUMNS}, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const getRule = db.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE organization_id = ? AND id = ?`);
  const countRules = db.prepare('SELECT count(*) AS n FROM alert_rules WHERE organization_id = ?');
  const pageRules = db.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?`);
  const allRules = db.prepare(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE organization_id = ?`);
  const stamp = db.prepare(definitionsStampSql('?1'));
  const replaceRule = db.prepare('UPDATE alert_rules SET name = ?, kind = ?, condition = ?, vehicle_ids = ?, enabled = ?, updated_at = ? WHERE organization_id = ? AND id = ?');
  const deleteRule = db.prepare('DELETE FROM alert_rules WHERE organization_id = ? AND id = ?');
  const getAlert = db.prepare(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE organization_id = ? AND id = ?`);
  const insideOf = db.prepare('SELECT inside FROM vehicle_rule_state WHERE organization_id = ? AND vehicle_id = ?');
  const vehiclesInside = db.prepare(
    `SELECT vehicle_id FROM vehicle_rule_state, json_each(vehicle_rule_state.inside) AS g
     WHERE organization_id = ? AND g.value = ? ORDER BY vehicle_id`,
  );
  const offlineOrganizations = db.prepare(`SELECT DISTINCT organization_id FROM alert_rules WHERE kind = 'offline' AND enabled = 1`);
  const alertLists = new Map<string, StatementSync>();

  function alertList(statuses: number, vehicle: boolean, rule: boolean): StatementSync {
    const shape = `${statuses}:${vehicle}:${rule}`;
    let statement = alertLists.get(shape);
    if (statement === undefined) {
      let where = 'organization_id = ? AND seq < ?';
      if (statuses > 0) where += ` AND status IN (${Array(statuses).fill('?').join(',')})`;
      if (vehicle) where += ' AND vehicle_id = ?';
      if (rule) where += ' AND rule_id = ?';
      statement = db.prepare(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE ${where} ORDER BY seq DESC LIMIT ?`);
      alertLists.set(shape, statement);
    }
    return statement;
  }

  return {
    async insertGeofence(g, max) {
      return transaction(db, () => {
        if (Number(countGeofences.get(g.organizationId)!.n) >= max) return 'quota';
        insertGeofence.run(g.id, g.organizationId, g.name, JSON.stringify(g.geometry), json(g.vehicleIds), g.createdAt, g.updatedAt);
        return 'created';
      });
    },
    async getGeofence(organizationId, id) {
      const row = getGeofence.get(organizationId, id);
      return row === undefined ? undefined : rows.geofence(row);
    },
    async listGeofences(organizationId, { limit, offset }) {
      return { geofences: pageGeofences.all(organizationId, limit, offset).map(rows.geofence), total: Number(countGeofences.get(organizationId)!.n) };
    },
    async allGeofences(organizationId) {
      return allGeofences.all(organizationId).map(rows.geofence);
    },
    async replaceGeofence(g) {
      return write(db, () => replaceGeofence.run(g.name, JSON.stringify(g.geometry), json(g.vehicleIds), g.updatedAt, g.organizationId, g.id).changes > 0);
    },
    async deleteGeofence(organizationId, id) {
      return write(db, () => deleteGeofence.run(organizationId, id).changes > 0);
    },
    async insertRule(r) {
      write(db, () => insertRule.run(r.id, r.organizationId, r.name, JSON.stringify(r.condition), json(r.vehicleIds), r.enabled ? 1 : 0, r.createdAt, r.updatedAt, r.condition.kind));
    },
    async getRule(organizationId, id) {
      const row = getRule.get(organizationId, id);
      return row === undefined ? undefined : rows.rule(row);
    },
    async listRules(organizationId, { limit, offset }) {
      return { rules: pageRules.all(organizationId, limit, offset).map(rows.rule), total: Number(countRules.get(organizationId)!.n) };
    },
    async allRules(organizationId) {
      return allRules.all(organizationId).map(rows.rule);
    },
    async definitionsStamp(organizationId) {
      return stamp.get(organizationId)!.stamp as string;
    },
    async replaceRule(r) {
      return write(db, () => replaceRule.run(r.name, r.condition.kind, JSON.stringify(r.condition), json(r.vehicleIds), r.enabled ? 1 : 0, r.updatedAt, r.organizationId, r.id).changes > 0);
    },
    async deleteRule(organizationId, id) {
      return write(db, () => deleteRule.run(organizationId, id).changes > 0);
    },
    async getAlert(organizationId, id) {
      const row = getAlert.get(organizationId, id);
      return row === undefined ? undefined : rows.alert(row);
    },
    async listAlerts(organizationId, filter) {
      const statuses = filter.statuses ?? [];
      const params = [organizationId, filter.before ?? Number.MAX_SAFE_INTEGER, ...statuses,
        ...(filter.vehicleId === undefined ? [] : [filter.vehicleId]), ...(filter.ruleId === undefined ? [] : [filter.ruleId]), filter.limit];
      return { alerts: alertList(statuses.length, filter.vehicleId !== undefined, filter.ruleId !== undefined).all(...params).map(rows.alert) };
    },
    async applyAlerts(changes) {
      return transaction(db, () => writes.apply(changes, changes.changed[0]?.at ?? changes.opened[0]?.openedAt ?? Date.now()));
    },
    async unresolvedAlerts(organizationId, ruleIds) {
      if (ruleIds.length === 0) return [];
      return db.prepare(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE organization_id = ? AND status <> 'resolved' AND rule_id IN (${ruleIds.map(() => '?').join(',')})`)
        .all(organizationId, ...ruleIds).map(rows.alert);
    },
    async insideOf(organizationId, vehicleId) {
      const row = insideOf.get(organizationId, vehicleId);
      return row === undefined ? [] : rows.state({ ts: 0, inside: row.inside, held: '{}', trip: null }).inside;
    },
    async vehiclesInside(organizationId, geofenceId) {
      return vehiclesInside.all(organizationId, geofenceId).map((row) => row.vehicle_id as string);
    },
    async organizationsWithOfflineRules() {
      return offlineOrganizations.all().map((row) => row.organization_id as string);
    },
    async asOfflineChecker(fn) {
      await fn();
      return true;
    },
  };
}
