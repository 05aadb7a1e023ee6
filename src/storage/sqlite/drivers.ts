// Drivers and their assignments in the embedded store (drivers/store.ts).
import type { DatabaseSync } from 'node:sqlite';
import type { DriverIdentifier } from '../../drivers/schema.ts';
import type { AssignmentRecord, DriverStore } from '../../drivers/store.ts';
import { assignedEvent, unassignedEvent } from '../../drivers/events.ts';
import type { EventRecord } from '../../events/types.ts';
import { ASSIGNMENT_COLUMNS, DRIVER_READ, assignmentOf, containsPattern, driverOf } from '../driver-rows.ts';
import type { AppendEvents } from './events.ts';
import type { WalSync } from './wal-sync.ts';
import type { SqliteRollupWrites } from './rollups.ts';
import { vehicleKey } from '../../vehicles/key.ts';

/** Writes commit through `wal` (wal-sync.ts): durable when they answer, their sync off the event loop. */
/**
 * `assignments`: the statements it shares with the telemetry commit's rule writes. An assignment
 * that starts or ends here makes the vehicle's report rollups stale from then on (`rollups`).
 */
export function createSqliteDriverStore(db: DatabaseSync, wal: WalSync, appendEvents: AppendEvents, assignments: SqliteAssignments, rollups: SqliteRollupWrites): DriverStore {
  const count = db.prepare('SELECT count(*) AS n FROM drivers WHERE organization_id = ?');
  const insert = db.prepare(
    'INSERT INTO drivers (organization_id, id, name, external_id, phone, notes, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const update = db.prepare('UPDATE drivers SET name = ?, external_id = ?, phone = ?, notes = ?, updated_at = ? WHERE organization_id = ? AND id = ?');
  const remove = db.prepare('DELETE FROM drivers WHERE organization_id = ? AND id = ?');
  const selectOne = db.prepare(`SELECT ${DRIVER_READ.sqlite} FROM drivers d WHERE d.organization_id = ? AND d.id = ?`);
  const exists = db.prepare('SELECT 1 FROM drivers WHERE organization_id = ? AND id = ?');
  const filtered = `d.organization_id = ? AND (? IS NULL OR lower(d.name) LIKE ? ESCAPE '\\' OR lower(coalesce(d.external_id, '')) LIKE ? ESCAPE '\\')`;
  const page = db.prepare(`SELECT ${DRIVER_READ.sqlite} FROM drivers d WHERE ${filtered} ORDER BY d.created_at, d.id LIMIT ? OFFSET ?`);
  const total = db.prepare(`SELECT count(*) AS n FROM drivers d WHERE ${filtered}`);
  const takenBy = db.prepare('SELECT value FROM driver_identifiers WHERE organization_id = ? AND value = ? AND driver_id <> ?');
  const clearIdentifiers = db.prepare('DELETE FROM driver_identifiers WHERE organization_id = ? AND driver_id = ?');
  const addIdentifier = db.prepare('INSERT INTO driver_identifiers (organization_id, value, kind, driver_id, position) VALUES (?, ?, ?, ?, ?)');

  const vehicleExists = db.prepare('SELECT 1 FROM vehicles WHERE organization_id = ? AND id = ?');
  const assignmentOne = db.prepare(`SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = ? AND id = ?`);
  const assignmentPage = db.prepare(
    `SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = ?
     AND (? IS NULL OR vehicle_id = ?) AND (? IS NULL OR driver_id = ?)
     AND (? IS NULL OR ended_at IS NULL OR ended_at >= ?) AND (? IS NULL OR started_at < ?)
     AND (started_at, id) < (?, ?) ORDER BY started_at DESC, id DESC LIMIT ?`,
  );

  /** The first of `identifiers` another driver has, or undefined. */
  function taken(organizationId: string, driverId: string, identifiers: readonly DriverIdentifier[]): string | undefined {
    return identifiers.find((i) => takenBy.get(organizationId, i.value, driverId) !== undefined)?.value;
  }
  function writeIdentifiers(organizationId: string, driverId: string, identifiers: readonly DriverIdentifier[]): void {
    clearIdentifiers.run(organizationId, driverId);
    identifiers.forEach((i, position) => addIdentifier.run(organizationId, i.value, i.kind, driverId, position));
  }
  const { endNow } = assignments;

  return {
    async insert(d, max = Infinity) {
      return wal.transaction(() => {
        if (Number(count.get(d.organizationId)!.n) >= max) return 'quota';
        const conflict = taken(d.organizationId, d.id, d.identifiers);
        if (conflict !== undefined) return { taken: conflict };
        insert.run(d.organizationId, d.id, d.name, d.externalId, d.phone, d.notes, d.createdAt, d.updatedAt);
        writeIdentifiers(d.organizationId, d.id, d.identifiers);
        return 'created' as const;
      });
    },

    async get(organizationId, id) {
      const row = selectOne.get(organizationId, id);
      return row === undefined ? undefined : driverOf(row);
    },

    async list(organizationId, { q, limit, offset }) {
      const pattern = q === undefined ? null : containsPattern(q);
      const params = [organizationId, pattern, pattern, pattern] as const;
      return { drivers: page.all(...params, limit, offset).map(driverOf), total: Number(total.get(...params)!.n) };
    },

    async update(organizationId, id, change) {
      return wal.transaction(() => {
        if (exists.get(organizationId, id) === undefined) return undefined;
        const conflict = taken(organizationId, id, change.identifiers);
        if (conflict !== undefined) return { taken: conflict };
        update.run(change.name, change.externalId, change.phone, change.notes, change.updatedAt, organizationId, id);
        writeIdentifiers(organizationId, id, change.identifiers);
        return driverOf(selectOne.get(organizationId, id)!);
      });
    },

    async delete(organizationId, id, at) {
      return wal.transaction(() => {
        if (exists.get(organizationId, id) === undefined) return undefined;
        const ongoing = assignments.ongoing('driver_id', organizationId, id);
        const events = ongoing === undefined ? [] : [endNow(ongoing, Math.max(at, ongoing.startedAt))];
        if (ongoing !== undefined) rollups.markStale(organizationId, ongoing.vehicleId, Math.max(at, ongoing.startedAt));
        remove.run(organizationId, id);
        appendEvents(events, at);
        return { events };
      });
    },

    async assign(a, now) {
      return wal.transaction(() => {
        if (exists.get(a.organizationId, a.driverId) === undefined) return 'no-driver' as const;
        if (vehicleExists.get(a.organizationId, a.vehicleId) === undefined) return 'no-vehicle' as const;
        const started = assignments.start(a);
        if ('assignment' in started) {
          appendEvents(started.events, now);
          rollups.markStale(a.organizationId, a.vehicleId, a.startedAt);
        }
        return started;
      });
    },

    async end(organizationId, id, at, now) {
      return wal.transaction(() => {
        const row = assignmentOne.get(organizationId, id);
        if (row === undefined) return undefined;
        const current = assignmentOf(row);
        if (current.endedAt !== null) return { ended: current };
        if (at < current.startedAt) return 'too-early' as const;
        const event = endNow(current, at);
        appendEvents([event], now);
        rollups.markStale(organizationId, current.vehicleId, at);
        return { assignment: { ...current, endedAt: at }, event };
      });
    },

    async getAssignment(organizationId, id) {
      const row = assignmentOne.get(organizationId, id);
      return row === undefined ? undefined : assignmentOf(row);
    },

    async assignments(organizationId, f) {
      const [beforeAt, beforeId] = f.before ?? [Number.MAX_SAFE_INTEGER, '~'];
      const vehicleId = f.vehicleId ?? null;
      const driverId = f.driverId ?? null;
      const from = f.from ?? null;
      const to = f.to ?? null;
      return assignmentPage.all(organizationId, vehicleId, vehicleId, driverId, driverId, from, from, to, to, beforeAt, beforeId, f.limit).map(assignmentOf);
    },
  };
}

/**
 * The statements an assignment's start and end share, whoever starts it: the API (the driver
 * store) or a vehicle's identifier reader (the telemetry commit, through the rule writes).
 * Each runs inside its caller's transaction.
 */
export function createSqliteAssignments(db: DatabaseSync) {
  const ongoingOf = {
    driver_id: db.prepare(`SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = ? AND driver_id = ? AND ended_at IS NULL`),
    vehicle_id: db.prepare(`SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = ? AND vehicle_id = ? AND ended_at IS NULL`),
  };
  const endOne = db.prepare('UPDATE driver_assignments SET ended_at = ? WHERE organization_id = ? AND id = ? AND ended_at IS NULL');
  const insertAssignment = db.prepare(`INSERT INTO driver_assignments (${ASSIGNMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const byIdentifier = db.prepare('SELECT driver_id FROM driver_identifiers WHERE organization_id = ? AND value = ?');
  const driverNow = db.prepare('SELECT driver_id FROM driver_assignments WHERE organization_id = ? AND vehicle_id = ? AND ended_at IS NULL');
  /**
   * Each vehicle's current driver as last read: a commit asks with every record that names one.
   * One process owns the file, and every change of an assignment passes through `start` or
   * `endNow`, which drop the vehicle's entry; a deleted vehicle's goes with its rule state, and
   * all of them when a commit fails (what it read inside may not have been kept).
   */
  const now = new Map<string, string | null>();
  const driverAt = db.prepare(
    `SELECT driver_id FROM driver_assignments WHERE organization_id = ? AND vehicle_id = ? AND started_at <= ? AND (ended_at IS NULL OR ended_at > ?)
     ORDER BY started_at DESC LIMIT 1`,
  );

  function ongoing(column: 'driver_id' | 'vehicle_id', organizationId: string, id: string): AssignmentRecord | undefined {
    const row = ongoingOf[column].get(organizationId, id);
    return row === undefined ? undefined : assignmentOf(row);
  }
  function endNow(a: AssignmentRecord, at: number): EventRecord {
    endOne.run(at, a.organizationId, a.id);
    now.delete(vehicleKey(a.organizationId, a.vehicleId));
    return unassignedEvent({ ...a, endedAt: at });
  }

  return {
    ongoing,
    endNow,
    /** DriverStore's `assign` once the driver and vehicle are known to exist; the events are the caller's to append. */
    start(a: AssignmentRecord):
      { same: AssignmentRecord } | { conflict: AssignmentRecord } | { assignment: AssignmentRecord; events: EventRecord[] } {
      const ofDriver = ongoing('driver_id', a.organizationId, a.driverId);
      if (ofDriver !== undefined && ofDriver.vehicleId === a.vehicleId) return { same: ofDriver };
      const ofVehicle = ongoing('vehicle_id', a.organizationId, a.vehicleId);
      const ending = [ofDriver, ofVehicle].filter((x) => x !== undefined);
      const conflict = ending.find((e) => e.startedAt > a.startedAt);
      if (conflict !== undefined) return { conflict };
      const events = ending.map((e) => endNow(e, a.startedAt));
      insertAssignment.run(a.organizationId, a.id, a.driverId, a.vehicleId, a.startedAt, a.endedAt, a.source);
      now.delete(vehicleKey(a.organizationId, a.vehicleId));
      events.push(assignedEvent(a));
      return { assignment: a, events };
    },
    /** The driver of each of `identifiers` that one has. */
    driversOf(organizationId: string, identifiers: readonly string[]): Map<string, string> {
      // A commit's records name one or two (an identifier in its two cases): a point read each.
      const drivers = new Map<string, string>();
      for (const value of identifiers) {
        const driverId = byIdentifier.get(organizationId, value)?.driver_id as string | undefined;
        if (driverId !== undefined) drivers.set(value, driverId);
      }
      return drivers;
    },
    /** The driver assigned to the vehicle now, or null (a commit's question). */
    driverNow(organizationId: string, vehicleId: string): string | null {
      const key = vehicleKey(organizationId, vehicleId);
      let driverId = now.get(key);
      if (driverId === undefined) now.set(key, (driverId = (driverNow.get(organizationId, vehicleId)?.driver_id as string | undefined) ?? null));
      return driverId;
    },
    /** Forgets the vehicle's current driver as read (the vehicle was deleted), or every vehicle's. */
    forget(organizationId?: string, vehicleId?: string): void {
      if (organizationId === undefined || vehicleId === undefined) now.clear();
      else now.delete(vehicleKey(organizationId, vehicleId));
    },
    /** The driver assigned to the vehicle at `at` (ms), or null. */
    driverAt(organizationId: string, vehicleId: string, at: number): string | null {
      return (driverAt.get(organizationId, vehicleId, at, at)?.driver_id as string | undefined) ?? null;
    },
  };
}

export type SqliteAssignments = ReturnType<typeof createSqliteAssignments>;
