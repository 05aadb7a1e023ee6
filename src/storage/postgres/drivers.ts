// Drivers and their assignments on PostgreSQL (drivers/store.ts). An assignment locks its driver's
// and its vehicle's rows first, so that two nodes assigning the same driver or vehicle at once
// take turns, and each sees what the other ended or started.
import { markStaleIn } from './rollups.ts';
import type { DriverIdentifier } from '../../drivers/schema.ts';
import type { AssignmentRecord, DriverStore } from '../../drivers/store.ts';
import { assignedEvent, unassignedEvent } from '../../drivers/events.ts';
import type { EventRecord } from '../../events/types.ts';
import { ASSIGNMENT_COLUMNS, DRIVER_READ, assignmentOf, containsPattern, driverOf } from '../driver-rows.ts';
import type { Database, Queryable } from './database.ts';
import { appendEvents } from './events.ts';

/** Thrown inside a transaction to roll it back when an identifier turned out to be taken meanwhile. */
class Taken extends Error {
  readonly value: string;
  constructor(value: string) {
    super(`identifier ${value} taken`);
    this.value = value;
  }
}

const ONE = `SELECT ${DRIVER_READ.postgres} FROM drivers d WHERE d.organization_id = $1 AND d.id = $2`;
const FILTERED = `d.organization_id = $1 AND ($2::text IS NULL OR lower(d.name) LIKE $2 ESCAPE '\\' OR lower(coalesce(d.external_id, '')) LIKE $2 ESCAPE '\\')`;

export async function ongoing(client: Queryable, organizationId: string, column: 'driver_id' | 'vehicle_id', id: string): Promise<AssignmentRecord | undefined> {
  const { rows } = await client.query({
    name: `drivers.ongoing-${column}`,
    text: `SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = $1 AND ${column} = $2 AND ended_at IS NULL`,
    values: [organizationId, id],
  });
  return rows[0] === undefined ? undefined : assignmentOf(rows[0]);
}
async function endNow(client: Queryable, a: AssignmentRecord, at: number): Promise<EventRecord> {
  await client.query({ name: 'drivers.end', text: 'UPDATE driver_assignments SET ended_at = $3 WHERE organization_id = $1 AND id = $2', values: [a.organizationId, a.id, at] });
  return unassignedEvent({ ...a, endedAt: at });
}
async function lockDriver(client: Queryable, organizationId: string, id: string): Promise<boolean> {
  const { rowCount } = await client.query({
    name: 'drivers.lock', text: 'SELECT 1 FROM drivers WHERE organization_id = $1 AND id = $2 FOR UPDATE', values: [organizationId, id],
  });
  return rowCount === 1;
}

/**
 * DriverStore's `assign` once the driver's row is locked and the vehicle known to exist, inside
 * the caller's transaction (the API's, or a telemetry commit's for a vehicle's identifier reader);
 * the events are the caller's to append.
 */
export async function startAssignment(client: Queryable, a: AssignmentRecord):
  Promise<{ same: AssignmentRecord } | { conflict: AssignmentRecord } | { assignment: AssignmentRecord; events: EventRecord[] }> {
  const ofDriver = await ongoing(client, a.organizationId, 'driver_id', a.driverId);
  if (ofDriver !== undefined && ofDriver.vehicleId === a.vehicleId) return { same: ofDriver };
  const ofVehicle = await ongoing(client, a.organizationId, 'vehicle_id', a.vehicleId);
  const ending = [ofDriver, ofVehicle].filter((x) => x !== undefined);
  const conflict = ending.find((e) => e.startedAt > a.startedAt);
  if (conflict !== undefined) return { conflict };
  const events: EventRecord[] = [];
  for (const e of ending) events.push(await endNow(client, e, a.startedAt));
  await client.query({
    name: 'drivers.assign',
    text: `INSERT INTO driver_assignments (${ASSIGNMENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    values: [a.organizationId, a.id, a.driverId, a.vehicleId, a.startedAt, a.endedAt, a.source],
  });
  events.push(assignedEvent(a));
  return { assignment: a, events };
}

/** The driver assigned to the vehicle at `at` (ms), or null. */
export async function driverAt(client: Queryable, organizationId: string, vehicleId: string, at: number): Promise<string | null> {
  const { rows } = await client.query<{ driver_id: string }>({
    name: 'drivers.at',
    text: `SELECT driver_id FROM driver_assignments WHERE organization_id = $1 AND vehicle_id = $2 AND started_at <= $3 AND (ended_at IS NULL OR ended_at > $3)
           ORDER BY started_at DESC LIMIT 1`,
    values: [organizationId, vehicleId, at],
  });
  return rows[0]?.driver_id ?? null;
}

export function createPostgresDriverStore(db: Database): DriverStore {
  /** The first of `identifiers` another driver has, or undefined. */
  async function taken(client: Queryable, organizationId: string, driverId: string, identifiers: readonly DriverIdentifier[]): Promise<string | undefined> {
    if (identifiers.length === 0) return undefined;
    const { rows } = await client.query<{ value: string }>({
      name: 'drivers.taken',
      text: 'SELECT value FROM driver_identifiers WHERE organization_id = $1 AND value = ANY($2) AND driver_id <> $3',
      values: [organizationId, identifiers.map((i) => i.value), driverId],
    });
    return identifiers.find((i) => rows.some((r) => r.value === i.value))?.value;
  }
  async function writeIdentifiers(client: Queryable, organizationId: string, driverId: string, identifiers: readonly DriverIdentifier[]): Promise<void> {
    await client.query({ name: 'drivers.clear-identifiers', text: 'DELETE FROM driver_identifiers WHERE organization_id = $1 AND driver_id = $2', values: [organizationId, driverId] });
    if (identifiers.length === 0) return;
    const { rowCount } = await client.query({
      name: 'drivers.add-identifiers',
      text: `INSERT INTO driver_identifiers (organization_id, value, kind, driver_id, position)
             SELECT $1, value, kind, $2, position - 1 FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS i (value, kind, position)
             ON CONFLICT DO NOTHING`,
      values: [organizationId, driverId, identifiers.map((i) => i.value), identifiers.map((i) => i.kind)],
    });
    // Another driver took one since the check (a concurrent request): nothing of this one stays.
    if (rowCount !== identifiers.length) throw new Taken((await taken(client, organizationId, driverId, identifiers)) ?? identifiers[0]!.value);
  }
  const orTaken = async <T>(work: () => Promise<T>): Promise<T | { taken: string }> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof Taken) return { taken: error.value };
      throw error;
    }
  };

  return {
    async insert(d, max = Infinity) {
      return orTaken(() => db.transaction(async (client) => {
        const { rows } = await client.query<{ n: number }>({ name: 'drivers.count', text: 'SELECT count(*)::int AS n FROM drivers WHERE organization_id = $1', values: [d.organizationId] });
        if (rows[0]!.n >= max) return 'quota' as const;
        const conflict = await taken(client, d.organizationId, d.id, d.identifiers);
        if (conflict !== undefined) return { taken: conflict };
        await client.query({
          name: 'drivers.insert',
          text: 'INSERT INTO drivers (organization_id, id, name, external_id, phone, notes, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
          values: [d.organizationId, d.id, d.name, d.externalId, d.phone, d.notes, d.createdAt, d.updatedAt],
        });
        await writeIdentifiers(client, d.organizationId, d.id, d.identifiers);
        return 'created' as const;
      }));
    },

    async get(organizationId, id) {
      const { rows } = await db.query({ name: 'drivers.get', text: ONE, values: [organizationId, id] });
      return rows[0] === undefined ? undefined : driverOf(rows[0]);
    },

    async list(organizationId, { q, limit, offset }) {
      const pattern = q === undefined ? null : containsPattern(q);
      const [page, count] = await Promise.all([
        db.query({
          name: 'drivers.page',
          text: `SELECT ${DRIVER_READ.postgres} FROM drivers d WHERE ${FILTERED} ORDER BY d.created_at, d.id LIMIT $3 OFFSET $4`,
          values: [organizationId, pattern, limit, offset],
        }),
        db.query<{ n: number }>({ name: 'drivers.total', text: `SELECT count(*)::int AS n FROM drivers d WHERE ${FILTERED}`, values: [organizationId, pattern] }),
      ]);
      return { drivers: page.rows.map(driverOf), total: count.rows[0]!.n };
    },

    async update(organizationId, id, change) {
      return orTaken(() => db.transaction(async (client) => {
        if (!(await lockDriver(client, organizationId, id))) return undefined;
        const conflict = await taken(client, organizationId, id, change.identifiers);
        if (conflict !== undefined) return { taken: conflict };
        await client.query({
          name: 'drivers.update',
          text: 'UPDATE drivers SET name = $3, external_id = $4, phone = $5, notes = $6, updated_at = $7 WHERE organization_id = $1 AND id = $2',
          values: [organizationId, id, change.name, change.externalId, change.phone, change.notes, change.updatedAt],
        });
        await writeIdentifiers(client, organizationId, id, change.identifiers);
        const { rows } = await client.query({ name: 'drivers.get', text: ONE, values: [organizationId, id] });
        return driverOf(rows[0]!);
      }));
    },

    async delete(organizationId, id, at) {
      return db.transaction(async (client) => {
        if (!(await lockDriver(client, organizationId, id))) return undefined;
        const current = await ongoing(client, organizationId, 'driver_id', id);
        const events = current === undefined ? [] : [await endNow(client, current, Math.max(at, current.startedAt))];
        if (current !== undefined) await markStaleIn(client, organizationId, current.vehicleId, Math.max(at, current.startedAt));
        await client.query({ name: 'drivers.delete', text: 'DELETE FROM drivers WHERE organization_id = $1 AND id = $2', values: [organizationId, id] });
        await appendEvents(client, events, at);
        return { events };
      });
    },

    async assign(a, now) {
      return db.transaction(async (client) => {
        if (!(await lockDriver(client, a.organizationId, a.driverId))) return 'no-driver' as const;
        const vehicle = await client.query({
          name: 'drivers.lock-vehicle', text: 'SELECT 1 FROM vehicles WHERE organization_id = $1 AND id = $2 FOR NO KEY UPDATE', values: [a.organizationId, a.vehicleId],
        });
        if (vehicle.rowCount === 0) return 'no-vehicle' as const;
        const started = await startAssignment(client, a);
        if ('assignment' in started) {
          await appendEvents(client, started.events, now);
          // The vehicle's report rollups count steps by their driver: stale from the start on.
          await markStaleIn(client, a.organizationId, a.vehicleId, a.startedAt);
        }
        return started;
      });
    },

    async end(organizationId, id, at, now) {
      return db.transaction(async (client) => {
        const { rows } = await client.query({
          name: 'drivers.assignment-lock', text: `SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = $1 AND id = $2 FOR UPDATE`, values: [organizationId, id],
        });
        if (rows[0] === undefined) return undefined;
        const current = assignmentOf(rows[0]);
        if (current.endedAt !== null) return { ended: current };
        if (at < current.startedAt) return 'too-early' as const;
        const event = await endNow(client, current, at);
        await appendEvents(client, [event], now);
        await markStaleIn(client, organizationId, current.vehicleId, at);
        return { assignment: { ...current, endedAt: at }, event };
      });
    },

    async getAssignment(organizationId, id) {
      const { rows } = await db.query({
        name: 'drivers.assignment', text: `SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = $1 AND id = $2`, values: [organizationId, id],
      });
      return rows[0] === undefined ? undefined : assignmentOf(rows[0]);
    },

    async assignments(organizationId, f) {
      const [beforeAt, beforeId] = f.before ?? [Number.MAX_SAFE_INTEGER, '~'];
      const { rows } = await db.query({
        name: 'drivers.assignments',
        text: `SELECT ${ASSIGNMENT_COLUMNS} FROM driver_assignments WHERE organization_id = $1
               AND ($2::text IS NULL OR vehicle_id = $2) AND ($3::text IS NULL OR driver_id = $3)
               AND ($4::bigint IS NULL OR ended_at IS NULL OR ended_at >= $4) AND ($5::bigint IS NULL OR started_at < $5)
               AND (started_at, id) < ($6::bigint, $7::text) ORDER BY started_at DESC, id DESC LIMIT $8`,
        values: [organizationId, f.vehicleId ?? null, f.driverId ?? null, f.from ?? null, f.to ?? null, beforeAt, beforeId, f.limit],
      });
      return rows.map(assignmentOf);
    },
  };
}
