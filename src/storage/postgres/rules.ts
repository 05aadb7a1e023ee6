// Geofences, alert rules, alerts and rule states on PostgreSQL. Records of one vehicle committed
// by two nodes at once are judged one commit after the other: each commit holds an advisory lock
// per judged vehicle (taken in one sorted order) until it ends, and reads the state the previous
// commit left, so each transition makes one event and each alert opens once.
import type { EventRecord } from '../../events/types.ts';
import type { AlertRecord, RuleState } from '../../rules/model.ts';
import { limitBatchEvents } from '../../telemetry/store.ts';
import type { GeofenceVersion } from '../../geofences/store.ts';
import { type AlertChanges, type Applied, type CommitRules, type DriverContext, type Judged, type RulesStore, happenedEvents, identifiersOf } from '../../rules/store.ts';
import { ALERT_COLUMNS, GEOFENCE_COLUMNS, RULE_COLUMNS, definitionsStampSql, pageWithin, postgresRuleRows as rows, storedTs } from '../rule-rows.ts';
import { tripEventsOf } from '../../rules/engine.ts';
import { deviceAssignment } from '../../drivers/events.ts';
import { driverAt, startAssignment } from './drivers.ts';
import type { MeterStore } from '../../meters/store.ts';
import { positionCount } from '../../geofences/schema.ts';
import { type Database, type Queryable, advisoryLock } from './database.ts';
import { appendEvents } from './events.ts';
import { markStaleIn, rulesLock, rulesLockOf, writeRollups } from './rollups.ts';
import { vehicleKey } from '../../vehicles/key.ts';

/** Alert changes inside the caller's transaction: the ids opened and changed (their events are the caller's to write). */
async function writeAlerts(client: Queryable, changes: AlertChanges): Promise<{ opened: string[]; changed: string[] }> {
  const opened: string[] = [];
  const changed: string[] = [];
  for (const a of changes.opened) {
    if (a.organizationId !== changes.organizationId) continue;
    const { rowCount } = await client.query(
      `INSERT INTO alerts (id, organization_id, rule_id, rule_name, vehicle_id, status, opened_at, trigger_ts, trigger_value)
       VALUES ($1, $2, $3, $4, $5, 'open', $6, $7, $8::json) ON CONFLICT DO NOTHING`,
      [a.id, a.organizationId, a.ruleId, a.ruleName, a.vehicleId, a.openedAt, a.triggerTimestamp, JSON.stringify(a.triggerValue ?? null)],
    );
    if ((rowCount ?? 0) > 0) opened.push(a.id);
  }
  for (const c of changes.changed) {
    const { rowCount } = await client.query(
      c.status === 'resolved'
        ? `UPDATE alerts SET status = 'resolved', resolved_at = $2, resolved_by = $3 WHERE id = $1 AND organization_id = $5 AND status = ANY($4::text[])`
        : `UPDATE alerts SET status = 'acknowledged', acknowledged_at = $2, acknowledged_by = $3 WHERE id = $1 AND organization_id = $5 AND status = ANY($4::text[])`,
      [c.id, c.at, c.by, c.from, changes.organizationId],
    );
    if ((rowCount ?? 0) > 0) changed.push(c.id);
  }
  return { opened, changed };
}

async function applyAlerts(client: Queryable, changes: AlertChanges, at: number): Promise<Applied> {
  const { opened, changed } = await writeAlerts(client, changes);
  const events = happenedEvents(changes.events, new Set([...opened, ...changed]));
  await appendEvents(client, events, at);
  return { opened, changed, events };
}

/** What the records of `identifying` vehicles name by their driver identifiers, and who drives each vehicle now (one statement for all). */
async function driverContexts(client: Queryable, identifying: readonly { organizationId: string; vehicleId: string; identifiers: string[] }[]) {
  const wanted = identifying.flatMap((f) => f.identifiers.map((value) => [f.organizationId, value] as const));
  // The drivers the identifiers name (`i`) and the vehicles' ongoing assignments (`a`): one round trip.
  const { rows } = await client.query<{ kind: 'i' | 'a'; organization_id: string; key: string; driver_id: string }>({
    name: 'rules.drivers',
    text: `SELECT 'i' AS kind, organization_id, value AS key, driver_id FROM driver_identifiers
           WHERE (organization_id, value) IN (SELECT * FROM unnest($1::text[], $2::text[]))
           UNION ALL
           SELECT 'a', organization_id, vehicle_id, driver_id FROM driver_assignments
           WHERE (organization_id, vehicle_id) IN (SELECT * FROM unnest($3::text[], $4::text[])) AND ended_at IS NULL`,
    values: [wanted.map((w) => w[0]), wanted.map((w) => w[1]), identifying.map((f) => f.organizationId), identifying.map((f) => f.vehicleId)],
  });
  const byOrganization = Map.groupBy(rows.filter((r) => r.kind === 'i'), (r) => r.organization_id);
  const current = new Map(rows.filter((r) => r.kind === 'a').map((r) => [vehicleKey(r.organization_id, r.key), r.driver_id]));
  const contexts = new Map<string, DriverContext>();
  for (const f of identifying) {
    const key = vehicleKey(f.organizationId, f.vehicleId);
    contexts.set(key, { current: current.get(key) ?? null, byIdentifier: new Map((byOrganization.get(f.organizationId) ?? []).map((r) => [r.key, r.driver_id])) });
  }
  return contexts;
}

/**
 * The assignments the records started (one whose driver or vehicle another transaction holds, or
 * that a later assignment would end, is skipped), then the drivers of the trip events; the
 * assignments' events.
 */
async function writeDrivers(client: Queryable, judged: Judged): Promise<EventRecord[]> {
  const events: EventRecord[] = [];
  for (const { driverId, at } of judged.assignments) {
    // The driver's and the vehicle's rows, as the API's assignment locks them, but never waited
    // for: a commit waiting here while an assignment waits for the vehicle row this commit holds
    // (its first record activated it) would deadlock. Taken by another transaction, the record
    // starts nothing; the next one that carries the identifier tries again.
    const { rowCount } = await client.query({
      name: 'rules.lock-assignment',
      text: `SELECT 1 FROM drivers d, vehicles v WHERE d.organization_id = $1 AND d.id = $2 AND v.organization_id = $1 AND v.id = $3
             FOR UPDATE OF d SKIP LOCKED FOR NO KEY UPDATE OF v SKIP LOCKED`,
      values: [judged.organizationId, driverId, judged.vehicleId],
    });
    const started = rowCount === 1 ? await startAssignment(client, deviceAssignment(judged, driverId, at)) : undefined;
    if (started !== undefined && 'assignment' in started) for (const e of started.events) events.push(e);
    // The rollups counted the records with that driver: without the assignment, they are replayed.
    else await markStaleIn(client, judged.organizationId, judged.vehicleId, at);
  }
  for (const { event, startedAt } of tripEventsOf(judged.events)) event.data.driverId = await driverAt(client, judged.organizationId, judged.vehicleId, startedAt);
  return events;
}

/**
 * Inside a telemetry commit: judges the newly stored records of each vehicle, writes the states
 * (one statement for all of them) and alert changes, and appends the events (one statement); the
 * events written for each entry of `fresh`.
 */
export async function judgeInCommit(
  client: Queryable, rules: CommitRules,
  fresh: { organizationId: string; vehicleId: string; records: { timestamp: number; data: Record<string, unknown> }[]; at: number; batch: { records: readonly unknown[] } }[],
): Promise<EventRecord[][]> {
  const written: EventRecord[][] = fresh.map(() => []);
  const wanted = fresh.filter((f) => f.records.length > 0 && rules.judges(f.organizationId));
  if (wanted.length === 0) return written;
  const keys = [...new Set(wanted.map((f) => vehicleKey(f.organizationId, f.vehicleId)))].sort();
  await client.query({
    name: 'rules.lock',
    text: 'SELECT pg_advisory_xact_lock(hashtextextended(k, 1)) FROM unnest($1::text[]) AS k ORDER BY k',
    values: [keys.map(rulesLockOf)],
  });
  const orgs = keys.map((k) => k.split('\n')[0]!);
  const vehicles = keys.map((k) => k.split('\n')[1]!);
  const alerting = keys.filter((_, i) => rules.alerts(orgs[i]!));
  const [stateRows, alertRows] = await Promise.all([
    client.query({
      name: 'rules.states',
      text: `SELECT organization_id, vehicle_id, ts, inside, held, trip, meters, rollup FROM vehicle_rule_state
             WHERE (organization_id, vehicle_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      values: [orgs, vehicles],
    }),
    alerting.length === 0 ? { rows: [] } : client.query({
      name: 'rules.unresolved',
      text: `SELECT ${ALERT_COLUMNS} FROM alerts
             WHERE (organization_id, vehicle_id) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND status <> 'resolved'`,
      values: [alerting.map((k) => k.split('\n')[0]!), alerting.map((k) => k.split('\n')[1]!)],
    }),
  ]);
  const states = new Map<string, RuleState>(stateRows.rows.map((row) => [vehicleKey(row.organization_id as string, row.vehicle_id as string), rows.state(row)]));
  // Records naming drivers, and a vehicle's first records for the rollups, need who drives it.
  const identifying = wanted.map((f) => ({ ...f, identifiers: identifiersOf(f.records) }))
    .filter((f) => f.identifiers.length > 0 || (rules.rollups && (states.get(vehicleKey(f.organizationId, f.vehicleId))?.roll ?? null) === null));
  const drivers = identifying.length === 0 ? new Map<string, DriverContext>() : await driverContexts(client, identifying);
  const unresolved = Map.groupBy(alertRows.rows.map(rows.alert), (a: AlertRecord) => vehicleKey(a.organizationId, a.vehicleId));
  const changedStates = new Map<string, Judged>();
  const allJudged: Judged[] = [];
  const events: EventRecord[] = [];
  /** Events judged so far for each request's batch, which has a limit (limitBatchEvents). */
  const perBatch = new Map<object, number>();
  let at = -Infinity;
  for (const [i, f] of fresh.entries()) {
    if (f.records.length === 0 || !rules.judges(f.organizationId)) continue;
    const key = vehicleKey(f.organizationId, f.vehicleId);
    const judged: Judged | undefined = rules.judge(f.organizationId, f.vehicleId, f.records, states.get(key), unresolved.get(key) ?? [], f.at, drivers.get(key));
    if (judged === undefined) continue;
    const assigned = await writeDrivers(client, judged);
    // A later batch of the vehicle in this commit starts from the driver these records left.
    if (judged.assignments.length > 0) drivers.get(key)!.current = judged.assignments.at(-1)!.driverId;
    const judgedEvents = (perBatch.get(f.batch) ?? 0) + judged.events.length;
    perBatch.set(f.batch, judgedEvents);
    limitBatchEvents(f.batch.records.length, judgedEvents);
    states.set(key, judged.state);
    changedStates.set(key, judged);
    allJudged.push(judged);
    let happened = judged.events;
    if (judged.opened.length > 0 || judged.changed.length > 0) {
      const applied = await writeAlerts(client, judged);
      happened = happenedEvents(judged.events, new Set([...applied.opened, ...applied.changed]));
      // Later batches of the same vehicle in this commit see what this one opened and resolved.
      const resolved = new Set(judged.changed.filter((c) => c.status === 'resolved' && applied.changed.includes(c.id)).map((c) => c.id));
      const opened = judged.opened.filter((a) => applied.opened.includes(a.id));
      unresolved.set(key, [...(unresolved.get(key) ?? []).filter((a) => !resolved.has(a.id)), ...opened]);
    }
    if (assigned.length > 0) happened = [...assigned, ...happened];
    written[i] = happened;
    // Pushed one by one: a spread of this many arguments overflows the stack.
    for (const event of happened) events.push(event);
    if (f.at > at) at = f.at;
  }
  if (changedStates.size === 0) return written;
  // Each vehicle's newest state, one row per vehicle (a vehicle in several batches of the group is written once).
  const latest = [...changedStates.values()];
  await client.query({
    name: 'rules.upsert-states',
    text: `INSERT INTO vehicle_rule_state (organization_id, vehicle_id, ts, inside, held, trip, meters, rollup)
           SELECT o, v, t, ARRAY(SELECT json_array_elements_text(i)), h, p, m, r
           FROM unnest($1::text[], $2::text[], $3::bigint[], $4::json[], $5::json[], $6::json[], $7::json[], $8::json[]) AS s (o, v, t, i, h, p, m, r)
           ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET ts = excluded.ts, inside = excluded.inside, held = excluded.held, trip = excluded.trip,
             meters = excluded.meters, rollup = excluded.rollup`,
    values: [
      latest.map((j) => j.organizationId), latest.map((j) => j.vehicleId), latest.map((j) => storedTs(j.state.ts)),
      latest.map((j) => JSON.stringify(j.state.inside)), latest.map((j) => JSON.stringify(j.state.held)),
      latest.map((j) => (j.state.trip === null ? null : JSON.stringify(j.state.trip))),
      latest.map((j) => (j.state.meters === null ? null : JSON.stringify(j.state.meters))),
      latest.map((j) => (j.state.roll === null ? null : JSON.stringify(j.state.roll))),
    ],
  });
  await writeRollups(client, allJudged);
  await appendEvents(client, events, at);
  return written;
}

/** Meters in the rule state; a setting takes the vehicle's lock a telemetry commit takes to judge it (`judgeInCommit`). */
export function createPostgresMeterStore(db: Database): MeterStore {
  const read = `SELECT ts, inside, held, trip, meters, rollup FROM vehicle_rule_state WHERE organization_id = $1 AND vehicle_id = $2`;
  return {
    async meters(organizationId, vehicleId) {
      const { rows: found } = await db.query({ name: 'meters.get', text: read, values: [organizationId, vehicleId] });
      return found[0] === undefined ? null : rows.state(found[0]).meters;
    },
    async setMeters(organizationId, vehicleId, change) {
      return db.transaction(async (client) => {
        await client.query({
          name: 'meters.lock', text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 1))', values: [rulesLock(organizationId, vehicleId)],
        });
        const { rows: found } = await client.query({ name: 'meters.get', text: read, values: [organizationId, vehicleId] });
        const meters = change(found[0] === undefined ? null : rows.state(found[0]).meters);
        await client.query({
          name: 'meters.set',
          text: `INSERT INTO vehicle_rule_state (organization_id, vehicle_id, ts, inside, held, meters) VALUES ($1, $2, -1, '{}', '{}', $3::json)
                 ON CONFLICT (organization_id, vehicle_id) DO UPDATE SET meters = excluded.meters`,
          values: [organizationId, vehicleId, JSON.stringify(meters)],
        });
        return meters;
      });
    },
  };
}

export function createPostgresRulesStore(db: Database): RulesStore {
  async function byIds(organizationId: string, ids: readonly string[]) {
    if (ids.length === 0) return [];
    const { rows: found } = await db.query(
      `SELECT ${GEOFENCE_COLUMNS} FROM geofences WHERE organization_id = $1 AND id = ANY($2::text[]) ORDER BY created_at, id`, [organizationId, ids]);
    return found.map(rows.geofence);
  }

  return {
    async insertGeofence(g, quota) {
      const vertices = positionCount(g.geometry);
      return db.transaction(async (client) => {
        await advisoryLock(client, `fleet:geofences:${g.organizationId}`);
        const { rows: held } = await client.query<{ n: number; vertices: string }>(
          'SELECT count(*)::int AS n, coalesce(sum(vertices), 0) AS vertices FROM geofences WHERE organization_id = $1', [g.organizationId]);
        if (held[0]!.n >= quota.geofences) return 'quota';
        if (Number(held[0]!.vertices) + vertices > quota.vertices) return 'vertices';
        await client.query(`INSERT INTO geofences (${GEOFENCE_COLUMNS}, vertices) VALUES ($1, $2, $3, $4::json, $5, $6, $7, $8)`,
          [g.id, g.organizationId, g.name, JSON.stringify(g.geometry), g.vehicleIds, g.createdAt, g.updatedAt, vertices]);
        return 'created';
      });
    },
    async getGeofence(organizationId, id) {
      const { rows: found } = await db.query(`SELECT ${GEOFENCE_COLUMNS} FROM geofences WHERE organization_id = $1 AND id = $2`, [organizationId, id]);
      return found[0] === undefined ? undefined : rows.geofence(found[0]);
    },
    async listGeofences(organizationId, { limit, offset }, maxVertices) {
      // The sizes first, so that no geometry past the budget is read.
      const [sizes, count] = await Promise.all([
        db.query('SELECT id, vertices FROM geofences WHERE organization_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3', [organizationId, limit, offset]),
        db.query<{ n: number }>('SELECT count(*) AS n FROM geofences WHERE organization_id = $1', [organizationId]),
      ]);
      const ids = pageWithin(sizes.rows, maxVertices);
      return { geofences: await byIds(organizationId, ids), total: count.rows[0]!.n };
    },
    async geofenceVersions(organizationId) {
      const { rows: found } = await db.query<GeofenceVersion>('SELECT id, revision, vertices FROM geofences WHERE organization_id = $1 ORDER BY id', [organizationId]);
      return found;
    },
    geofencesById: byIds,
    async replaceGeofence(g, maxVertices) {
      const vertices = positionCount(g.geometry);
      return db.transaction(async (client) => {
        // The insert's lock: two changes of one organization cannot both pass its quota.
        await advisoryLock(client, `fleet:geofences:${g.organizationId}`);
        const { rows: held } = await client.query<{ mine: number | null; vertices: string }>(
          `SELECT (SELECT vertices FROM geofences WHERE organization_id = $1 AND id = $2) AS mine,
                  coalesce(sum(vertices), 0) AS vertices FROM geofences WHERE organization_id = $1`, [g.organizationId, g.id]);
        const { mine, vertices: total } = held[0]!;
        if (mine === null) return 'missing';
        // A change that does not grow the geofence is allowed even over the quota (lowered since): it can only help.
        if (vertices > mine && Number(total) - mine + vertices > maxVertices) return 'vertices';
        await client.query('UPDATE geofences SET name = $3, geometry = $4::json, vehicle_ids = $5, updated_at = $6, vertices = $7, revision = revision + 1 WHERE organization_id = $1 AND id = $2',
          [g.organizationId, g.id, g.name, JSON.stringify(g.geometry), g.vehicleIds, g.updatedAt, vertices]);
        return 'replaced';
      });
    },
    async deleteGeofence(organizationId, id) {
      return ((await db.query('DELETE FROM geofences WHERE organization_id = $1 AND id = $2', [organizationId, id])).rowCount ?? 0) > 0;
    },
    async insertRule(r, max = Infinity) {
      return db.transaction(async (client) => {
        // Counted under a lock per organization: two nodes cannot both take the last place.
        await client.query({ name: 'advisory-lock', text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', values: [`fleet:alert-rules:${r.organizationId}`] });
        const { rows: count } = await client.query<{ n: number }>('SELECT count(*) AS n FROM alert_rules WHERE organization_id = $1', [r.organizationId]);
        if (count[0]!.n >= max) return 'quota';
        await client.query(`INSERT INTO alert_rules (${RULE_COLUMNS}, kind) VALUES ($1, $2, $3, $4::json, $5, $6, $7, $8, $9)`,
          [r.id, r.organizationId, r.name, JSON.stringify(r.condition), r.vehicleIds, r.enabled, r.createdAt, r.updatedAt, r.condition.kind]);
        return 'created';
      });
    },
    async getRule(organizationId, id) {
      const { rows: found } = await db.query(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE organization_id = $1 AND id = $2`, [organizationId, id]);
      return found[0] === undefined ? undefined : rows.rule(found[0]);
    },
    async listRules(organizationId, { limit, offset }) {
      const [page, count] = await Promise.all([
        db.query(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE organization_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3`, [organizationId, limit, offset]),
        db.query<{ n: number }>('SELECT count(*) AS n FROM alert_rules WHERE organization_id = $1', [organizationId]),
      ]);
      return { rules: page.rows.map(rows.rule), total: count.rows[0]!.n };
    },
    async allRules(organizationId) {
      return (await db.query(`SELECT ${RULE_COLUMNS} FROM alert_rules WHERE organization_id = $1`, [organizationId])).rows.map(rows.rule);
    },
    async definitionsStamp(organizationId) {
      const { rows: [row] } = await db.query<{ stamp: string }>({ name: 'rules.definitions-stamp', text: definitionsStampSql('$1'), values: [organizationId] });
      return row!.stamp;
    },
    async replaceRule(r) {
      const { rowCount } = await db.query(
        'UPDATE alert_rules SET name = $3, kind = $4, condition = $5::json, vehicle_ids = $6, enabled = $7, updated_at = $8 WHERE organization_id = $1 AND id = $2',
        [r.organizationId, r.id, r.name, r.condition.kind, JSON.stringify(r.condition), r.vehicleIds, r.enabled, r.updatedAt]);
      return (rowCount ?? 0) > 0;
    },
    async deleteRule(organizationId, id) {
      return ((await db.query('DELETE FROM alert_rules WHERE organization_id = $1 AND id = $2', [organizationId, id])).rowCount ?? 0) > 0;
    },
    async getAlert(organizationId, id) {
      const { rows: found } = await db.query(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE organization_id = $1 AND id = $2`, [organizationId, id]);
      return found[0] === undefined ? undefined : rows.alert(found[0]);
    },
    async listAlerts(organizationId, filter) {
      const params: unknown[] = [organizationId, filter.before ?? Number.MAX_SAFE_INTEGER, filter.limit];
      let where = 'organization_id = $1 AND seq < $2';
      if (filter.statuses !== undefined && filter.statuses.length > 0) where += ` AND status = ANY($${params.push(filter.statuses)}::text[])`;
      if (filter.vehicleId !== undefined) where += ` AND vehicle_id = $${params.push(filter.vehicleId)}`;
      if (filter.ruleId !== undefined) where += ` AND rule_id = $${params.push(filter.ruleId)}`;
      if (filter.anyOfGroups !== undefined) {
        where += ` AND vehicle_id IN (SELECT vehicle_id FROM vehicle_group_members WHERE organization_id = $1 AND group_id = ANY($${params.push(filter.anyOfGroups)}::text[]))`;
      }
      const { rows: found } = await db.query(`SELECT ${ALERT_COLUMNS} FROM alerts WHERE ${where} ORDER BY seq DESC LIMIT $3`, params);
      return { alerts: found.map(rows.alert) };
    },
    async applyAlerts(changes) {
      return db.transaction((client) => applyAlerts(client, changes, changes.changed[0]?.at ?? changes.opened[0]?.openedAt ?? Date.now()));
    },
    async unresolvedAlerts(organizationId, ruleIds) {
      if (ruleIds.length === 0) return [];
      const { rows: found } = await db.query(
        `SELECT ${ALERT_COLUMNS} FROM alerts WHERE organization_id = $1 AND status <> 'resolved' AND rule_id = ANY($2::text[])`, [organizationId, ruleIds]);
      return found.map(rows.alert);
    },
    async insideOf(organizationId, vehicleId) {
      const { rows: found } = await db.query('SELECT inside FROM vehicle_rule_state WHERE organization_id = $1 AND vehicle_id = $2', [organizationId, vehicleId]);
      return found[0] === undefined ? [] : (found[0].inside as string[]);
    },
    async vehiclesInside(organizationId, geofenceId) {
      const { rows: found } = await db.query(
        'SELECT vehicle_id FROM vehicle_rule_state WHERE organization_id = $1 AND inside @> ARRAY[$2::text] ORDER BY vehicle_id', [organizationId, geofenceId]);
      return found.map((row) => row.vehicle_id as string);
    },
    async organizationsWithOfflineRules() {
      const { rows: found } = await db.query(`SELECT DISTINCT organization_id FROM alert_rules WHERE kind = 'offline' AND enabled`);
      return found.map((row) => row.organization_id as string);
    },
    async asOfflineChecker(fn) {
      // One node at a time runs the check: the lock lives as long as this transaction.
      return db.transaction(async (client) => {
        const { rows: got } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtextextended('fleet:offline-check', 0)) AS ok");
        if (got[0]?.ok !== true) return false;
        await fn();
        return true;
      });
    },
  };
}
