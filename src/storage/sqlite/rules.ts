// Geofences, alert rules, alerts and rule states in the embedded store.
import { MEMBERS_OF_GROUPS } from './events.ts';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { type AlertRecord, type RuleState, emptyRuleState } from '../../rules/model.ts';
import type { EventRecord } from '../../events/types.ts';
import { type Applied, type AlertChanges, type Judged, type RulesStore, happenedEvents } from '../../rules/store.ts';
import { ALERT_COLUMNS, GEOFENCE_COLUMNS, RULE_COLUMNS, definitionsStampSql, pageWithin, sqliteRuleRows as rows, storedTs } from '../rule-rows.ts';
import type { DriverContext } from '../../rules/store.ts';
import { tripEventsOf } from '../../rules/engine.ts';
import { deviceAssignment } from '../../drivers/events.ts';
import type { SqliteAssignments } from './drivers.ts';
import type { MeterChange, MeterStore } from '../../meters/store.ts';
import type { MeterState } from '../../meters/state.ts';
import { positionCount } from '../../geofences/schema.ts';
import { transaction, write } from './database.ts';
import type { WalSync } from './wal-sync.ts';
import type { AppendEvents } from './events.ts';
import type { SqliteRollupWrites } from './rollups.ts';
import type { Mark } from '../../reports/rollup.ts';
import { encodeMeters, encodeRoll } from '../state-blobs.ts';
import { vehicleKey } from '../../vehicles/key.ts';

const json = (value: unknown) => (value === null ? null : JSON.stringify(value));

/** What a telemetry commit needs of the rule tables, inside its transaction. */
export interface SqliteRuleWrites {
  /**
   * The vehicle's state, its unresolved alerts when `alerts` (else none are read), and what its
   * records' driver `identifiers` name (none read when there are none).
   */
  load(organizationId: string, vehicleId: string, alerts: boolean, identifiers: readonly string[], rollups: boolean): {
    state: RuleState | undefined; unresolved: AlertRecord[]; drivers: DriverContext | undefined;
  };
  /**
   * Writes the state (one row), the assignments the records started, and alert changes with
   * their events; the events written (the trip events with their drivers).
   */
  write(judged: Judged, at: number): EventRecord[];
  /** The vehicle was deleted (its state row with it). */
  forget(organizationId: string, vehicleId: string): void;
  /** A transaction that wrote states failed: what was kept of them may not have been stored. */
  forgetAll(): void;
}

export function createSqliteRuleWrites(db: DatabaseSync, appendEvents: AppendEvents, assignments: SqliteAssignments, rollups: SqliteRollupWrites):
  SqliteRuleWrites & {
    setRoll(organizationId: string, vehicleId: string, state: Mark): void;
    apply(changes: AlertChanges, at: number): Applied;
    stateOf(organizationId: string, vehicleId: string): RuleState | undefined;
    setMeters(organizationId: string, vehicleId: string, change: MeterChange): MeterState;
  } {
  const state = db.prepare('SELECT ts, inside, held, trip, meters, rollup FROM vehicle_rule_state WHERE organization_id = ? AND vehicle_id = ?');
  /**
   * Each vehicle's state as last read or written: one process owns the file and only telemetry
   * commits write states, so a commit reads and parses a vehicle's row only the first time (or
   * after a deletion, or a failed commit). The engine never changes a state it is given.
   */
  const states = new Map<string, RuleState>();
  const unresolved = db.prepare(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE organization_id = ? AND vehicle_id = ? AND status <> 'resolved'`);
  const upsert = db.prepare(
    `INSERT INTO vehicle_rule_state (organization_id, vehicle_id, ts, inside, held, trip, meters, rollup) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET ts = excluded.ts, inside = excluded.inside, held = excluded.held, trip = excluded.trip,
       meters = excluded.meters, rollup = excluded.rollup`,
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

  function stateOf(organizationId: string, vehicleId: string): RuleState | undefined {
    const key = vehicleKey(organizationId, vehicleId);
    let known = states.get(key);
    if (known === undefined) {
      const row = state.get(organizationId, vehicleId);
      if (row !== undefined) states.set(key, (known = rows.state(row)));
    }
    return known;
  }
  function put(organizationId: string, vehicleId: string, s: RuleState): void {
    upsert.run(
      organizationId, vehicleId, storedTs(s.ts), JSON.stringify(s.inside), JSON.stringify(s.held), json(s.trip),
      s.meters === null ? null : encodeMeters(s.meters), s.roll === null ? null : encodeRoll(s.roll),
    );
    states.set(vehicleKey(organizationId, vehicleId), s);
  }

  /** The assignments the records started (one a later one would end is skipped), then the drivers of the trips. */
  function driverEvents(judged: Judged): EventRecord[] {
    const events: EventRecord[] = [];
    for (const { driverId, at } of judged.assignments) {
      const started = assignments.start(deviceAssignment(judged, driverId, at));
      if ('assignment' in started) for (const e of started.events) events.push(e);
      // The rollups counted the records with that driver: without the assignment, they are replayed.
      else rollups.markStale(judged.organizationId, judged.vehicleId, at);
    }
    for (const { event, startedAt } of tripEventsOf(judged.events)) event.data.driverId = assignments.driverAt(judged.organizationId, judged.vehicleId, startedAt);
    return events;
  }

  return {
    load(organizationId, vehicleId, alerts, identifiers, rollups) {
      const state = stateOf(organizationId, vehicleId);
      return {
        state,
        unresolved: alerts ? unresolved.all(organizationId, vehicleId).map(rows.alert) : [],
        // The rollups' first record needs the driver assigned then, identifier or not.
        drivers: identifiers.length === 0 && (!rollups || (state?.roll ?? null) !== null) ? undefined : {
          current: assignments.driverNow(organizationId, vehicleId),
          byIdentifier: identifiers.length === 0 ? new Map() : assignments.driversOf(organizationId, identifiers),
        },
      };
    },
    write(judged, at) {
      put(judged.organizationId, judged.vehicleId, judged.state);
      rollups.write(judged);
      const assigned = driverEvents(judged);
      appendEvents(assigned, at);
      if (judged.opened.length === 0 && judged.changed.length === 0) {
        appendEvents(judged.events, at);
        return assigned.length === 0 ? judged.events : [...assigned, ...judged.events];
      }
      return [...assigned, ...apply(judged, at).events];
    },
    stateOf,
    setRoll(organizationId, vehicleId, { roll, trip }) {
      const known = stateOf(organizationId, vehicleId);
      // A vehicle without records has nothing to keep.
      if (known !== undefined) put(organizationId, vehicleId, { ...known, roll, trip });
    },
    setMeters(organizationId, vehicleId, change) {
      const known = stateOf(organizationId, vehicleId);
      const meters = change(known?.meters ?? null);
      put(organizationId, vehicleId, { ...(known ?? emptyRuleState()), meters });
      return meters;
    },
    forget(organizationId, vehicleId) {
      states.delete(vehicleKey(organizationId, vehicleId));
      assignments.forget(organizationId, vehicleId);
    },
    forgetAll() {
      states.clear();
      assignments.forget();
    },
    apply,
  };
}

/** Meters in the rule state; set through `wal` (wal-sync.ts), as the telemetry commit writes it. */
export function createSqliteMeterStore(writes: ReturnType<typeof createSqliteRuleWrites>, wal: WalSync): MeterStore {
  return {
    async meters(organizationId, vehicleId) {
      return writes.stateOf(organizationId, vehicleId)?.meters ?? null;
    },
    async setMeters(organizationId, vehicleId, change) {
      return wal.transaction(() => writes.setMeters(organizationId, vehicleId, change));
    },
  };
}

export function createSqliteRulesStore(db: DatabaseSync, writes: ReturnType<typeof createSqliteRuleWrites>, wal: WalSync): RulesStore {
  const countGeofences = db.prepare('SELECT count(*) AS n FROM geofences WHERE organization_id = ?');
  const totals = db.prepare('SELECT count(*) AS n, coalesce(sum(vertices), 0) AS vertices FROM geofences WHERE organization_id = ?');
  const verticesOf = db.prepare('SELECT vertices FROM geofences WHERE organization_id = ? AND id = ?');
  const insertGeofence = db.prepare(`INSERT INTO geofences (${GEOFENCE_COLUMNS}, vertices) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
  const getGeofence = db.prepare(`SELECT ${GEOFENCE_COLUMNS} FROM geofences WHERE organization_id = ? AND id = ?`);
  const pageSizes = db.prepare('SELECT id, vertices FROM geofences WHERE organization_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?');
  const someGeofences = db.prepare(
    `SELECT ${GEOFENCE_COLUMNS} FROM geofences WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY created_at, id`,
  );
  const versions = db.prepare('SELECT id, revision, vertices FROM geofences WHERE organization_id = ? ORDER BY id');
  const replaceGeofence = db.prepare('UPDATE geofences SET name = ?, geometry = ?, vehicle_ids = ?, updated_at = ?, vertices = ?, revision = revision + 1 WHERE organization_id = ? AND id = ?');
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
  // The rules as one JSON array: a parameter per rule would pass SQLite's limit on variables.
  const unresolvedOf = db.prepare(
    `SELECT ${ALERT_COLUMNS} FROM alerts WHERE organization_id = ? AND status <> 'resolved' AND rule_id IN (SELECT value FROM json_each(?))`,
  );
  const insideOf = db.prepare('SELECT inside FROM vehicle_rule_state WHERE organization_id = ? AND vehicle_id = ?');
  const vehiclesInside = db.prepare(
    `SELECT vehicle_id FROM vehicle_rule_state, json_each(vehicle_rule_state.inside) AS g
     WHERE organization_id = ? AND g.value = ? ORDER BY vehicle_id`,
  );
  const offlineOrganizations = db.prepare(`SELECT DISTINCT organization_id FROM alert_rules WHERE kind = 'offline' AND enabled = 1`);
  const alertLists = new Map<string, StatementSync>();

  function alertList(statuses: number, vehicle: boolean, rule: boolean, groups: boolean): StatementSync {
    const shape = `${statuses}:${vehicle}:${rule}:${groups}`;
    let statement = alertLists.get(shape);
    if (statement === undefined) {
      let where = 'organization_id = ? AND seq < ?';
      if (statuses > 0) where += ` AND status IN (${Array(statuses).fill('?').join(',')})`;
      if (vehicle) where += ' AND vehicle_id = ?';
      if (rule) where += ' AND rule_id = ?';
      if (groups) where += ` AND vehicle_id IN (${MEMBERS_OF_GROUPS})`;
      statement = db.prepare(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE ${where} ORDER BY seq DESC LIMIT ?`);
      alertLists.set(shape, statement);
    }
    return statement;
  }

  return {
    async insertGeofence(g, quota) {
      const vertices = positionCount(g.geometry);
      return transaction(db, () => {
        const held = totals.get(g.organizationId)!;
        if (Number(held.n) >= quota.geofences) return 'quota';
        if (Number(held.vertices) + vertices > quota.vertices) return 'vertices';
        insertGeofence.run(g.id, g.organizationId, g.name, JSON.stringify(g.geometry), json(g.vehicleIds), g.createdAt, g.updatedAt, vertices);
        return 'created';
      });
    },
    async getGeofence(organizationId, id) {
      const row = getGeofence.get(organizationId, id);
      return row === undefined ? undefined : rows.geofence(row);
    },
    async listGeofences(organizationId, { limit, offset }, maxVertices) {
      // The sizes first, so that no geometry past the budget is read.
      const ids = pageWithin(pageSizes.all(organizationId, limit, offset), maxVertices);
      const geofences = ids.length === 0 ? [] : someGeofences.all(organizationId, JSON.stringify(ids)).map(rows.geofence);
      return { geofences, total: Number(countGeofences.get(organizationId)!.n) };
    },
    async geofenceVersions(organizationId) {
      return versions.all(organizationId).map((row) => ({ id: row.id as string, revision: Number(row.revision), vertices: Number(row.vertices) }));
    },
    async geofencesById(organizationId, ids) {
      return ids.length === 0 ? [] : someGeofences.all(organizationId, JSON.stringify(ids)).map(rows.geofence);
    },
    async replaceGeofence(g, maxVertices) {
      const vertices = positionCount(g.geometry);
      return transaction(db, () => {
        const current = verticesOf.get(g.organizationId, g.id);
        if (current === undefined) return 'missing';
        const mine = Number(current.vertices);
        // A change that does not grow the geofence is allowed even over the quota (lowered since): it can only help.
        if (vertices > mine && Number(totals.get(g.organizationId)!.vertices) - mine + vertices > maxVertices) return 'vertices';
        replaceGeofence.run(g.name, JSON.stringify(g.geometry), json(g.vehicleIds), g.updatedAt, vertices, g.organizationId, g.id);
        return 'replaced';
      });
    },
    async deleteGeofence(organizationId, id) {
      return write(db, () => deleteGeofence.run(organizationId, id).changes > 0);
    },
    async insertRule(r, max = Infinity) {
      return transaction(db, () => {
        if (Number(countRules.get(r.organizationId)!.n) >= max) return 'quota';
        insertRule.run(r.id, r.organizationId, r.name, JSON.stringify(r.condition), json(r.vehicleIds), r.enabled ? 1 : 0, r.createdAt, r.updatedAt, r.condition.kind);
        return 'created';
      });
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
        ...(filter.vehicleId === undefined ? [] : [filter.vehicleId]), ...(filter.ruleId === undefined ? [] : [filter.ruleId]),
        ...(filter.anyOfGroups === undefined ? [] : [organizationId, JSON.stringify(filter.anyOfGroups)]), filter.limit];
      const statement = alertList(statuses.length, filter.vehicleId !== undefined, filter.ruleId !== undefined, filter.anyOfGroups !== undefined);
      return { alerts: statement.all(...params).map(rows.alert) };
    },
    async applyAlerts(changes) {
      // Synced off the event loop (wal-sync.ts), as the alerts opened by telemetry's own commits.
      return wal.transaction(() => writes.apply(changes, changes.changed[0]?.at ?? changes.opened[0]?.openedAt ?? Date.now()));
    },
    async unresolvedAlerts(organizationId, ruleIds) {
      if (ruleIds.length === 0) return [];
      return unresolvedOf.all(organizationId, JSON.stringify(ruleIds)).map(rows.alert);
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
