// Drivers and who drives what (docs/API.md "Drivers"). Drivers are the organization's: a credential
// limited to vehicle groups reads them, and assigns them to the vehicles it sees, but does not
// create, change or delete them.
import type { Principal } from '../auth/scopes.ts';
import { type Clock, iso } from '../clock.ts';
import { AppError, type FieldError, invalidBody, pastTimeOf } from '../errors.ts';
import type { EventPort } from '../events/port.ts';
import type { EventRecord } from '../events/types.ts';
import { type VehicleScope, assertWholeOrganization, vehicleNotFound } from '../groups/scope.ts';
import { newId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import { type AssignmentCreation, type DriverCreation, type DriverIdentifier, type DriverPatch, IDENTIFIER_FORMS } from './schema.ts';
import type { AssignmentRecord, AssignmentFilter, DriverRecord, DriverStore, DriverWithVehicle } from './store.ts';

export type DriverService = ReturnType<typeof createDriverService>;

const ASSIGNMENTS_DEFAULT = 100;

export function toDriverView(d: DriverWithVehicle) {
  return {
    id: d.id, name: d.name, externalId: d.externalId, identifiers: d.identifiers, phone: d.phone, notes: d.notes,
    vehicleId: d.vehicleId, createdAt: iso(d.createdAt), updatedAt: iso(d.updatedAt),
  };
}

export function createDriverService(deps: { store: DriverStore; clock: Clock; events: EventPort; scope: VehicleScope; maxDrivers?: number }) {
  const { store, clock } = deps;
  const recorded = (events: EventRecord[]) => {
    if (events.length > 0) deps.events.emit('recorded', { events });
  };

  async function create(who: Principal, body: DriverCreation): Promise<DriverWithVehicle> {
    assertWholeOrganization(who, 'drivers');
    const now = clock.now();
    const driver: DriverRecord = {
      organizationId: who.organizationId, id: newId('drv'), name: body.name, externalId: body.externalId ?? null,
      identifiers: identifiersOf(body.identifiers ?? []), phone: body.phone ?? null, notes: body.notes ?? null, createdAt: now, updatedAt: now,
    };
    const stored = await store.insert(driver, deps.maxDrivers);
    if (stored === 'quota') throw quotaExceeded(deps.maxDrivers ?? 0, 'drivers');
    if (typeof stored === 'object') throw taken(stored.taken);
    return { ...driver, vehicleId: null };
  }

  async function get(who: Principal, id: string): Promise<DriverWithVehicle> {
    const driver = await store.get(who.organizationId, id);
    if (driver === undefined) throw notFound(id);
    return driver;
  }

  async function update(who: Principal, id: string, patch: DriverPatch): Promise<DriverWithVehicle> {
    assertWholeOrganization(who, 'drivers');
    const current = await get(who, id);
    const merged = <T>(value: T | null | undefined, was: T | null): T | null => (value === undefined ? was : value);
    const updated = await store.update(who.organizationId, id, {
      name: patch.name ?? current.name,
      externalId: merged(patch.externalId, current.externalId),
      identifiers: patch.identifiers === undefined ? current.identifiers : identifiersOf(patch.identifiers),
      phone: merged(patch.phone, current.phone),
      notes: merged(patch.notes, current.notes),
      updatedAt: Math.max(clock.now(), current.updatedAt + 1),
    });
    if (updated === undefined) throw notFound(id);
    if ('taken' in updated) throw taken(updated.taken);
    return updated;
  }

  async function remove(who: Principal, id: string): Promise<void> {
    assertWholeOrganization(who, 'drivers');
    const deleted = await store.delete(who.organizationId, id, clock.now());
    if (deleted === undefined) throw notFound(id);
    recorded(deleted.events);
  }

  async function assign(who: Principal, body: AssignmentCreation): Promise<{ assignment: AssignmentRecord; created: boolean }> {
    if (!(await deps.scope.sees(who, body.vehicleId))) throw vehicleNotFound(body.vehicleId);
    const now = clock.now();
    const startedAt = body.startedAt === undefined ? now : pastTimeOf(body.startedAt, '/startedAt', now);
    const outcome = await store.assign(
      { organizationId: who.organizationId, id: newId('asg'), driverId: body.driverId, vehicleId: body.vehicleId, startedAt, endedAt: null, source: 'api' },
      now,
    );
    if (outcome === 'no-driver') throw notFound(body.driverId);
    if (outcome === 'no-vehicle') throw vehicleNotFound(body.vehicleId);
    if ('same' in outcome) return { assignment: outcome.same, created: false };
    if ('conflict' in outcome) {
      const c = outcome.conflict;
      throw new AppError('assignment-conflict', `Assignment "${c.id}" (driver "${c.driverId}" in vehicle "${c.vehicleId}") started at ${iso(c.startedAt)}, after ${iso(startedAt)}: ` +
        'end it first, or start this one later.');
    }
    recorded(outcome.events);
    return { assignment: outcome.assignment, created: true };
  }

  async function getAssignment(who: Principal, id: string): Promise<AssignmentRecord> {
    const found = await store.getAssignment(who.organizationId, id);
    if (found === undefined || !(await deps.scope.sees(who, found.vehicleId))) throw assignmentNotFound(id);
    return found;
  }

  async function end(who: Principal, id: string, endedAt: string | undefined): Promise<AssignmentRecord> {
    await getAssignment(who, id);
    const now = clock.now();
    const at = endedAt === undefined ? now : pastTimeOf(endedAt, '/endedAt', now);
    const outcome = await store.end(who.organizationId, id, at, now);
    if (outcome === undefined) throw assignmentNotFound(id);
    if (outcome === 'too-early') throw invalidBody('`endedAt` is before the assignment started.', '/endedAt', 'is before startedAt');
    if ('ended' in outcome) return outcome.ended;
    recorded([outcome.event]);
    return outcome.assignment;
  }

  async function assignments(who: Principal, query: {
    vehicleId?: string; driverId?: string; from?: string; to?: string; limit?: number; cursor?: string;
  }): Promise<{ assignments: AssignmentRecord[]; nextCursor: string | null }> {
    if (who.groupIds !== undefined) {
      // A credential limited to groups lists one vehicle's at a time, one it sees.
      if (query.vehicleId === undefined) {
        throw new AppError('outside-groups', 'A credential limited to groups lists the assignments of one vehicle at a time: pass `vehicleId`.');
      }
      if (!(await deps.scope.sees(who, query.vehicleId))) throw vehicleNotFound(query.vehicleId);
    }
    const limit = query.limit ?? ASSIGNMENTS_DEFAULT;
    const filter: AssignmentFilter = { limit: limit + 1 };
    if (query.vehicleId !== undefined) filter.vehicleId = query.vehicleId;
    if (query.driverId !== undefined) filter.driverId = query.driverId;
    if (query.from !== undefined) filter.from = Date.parse(query.from);
    if (query.to !== undefined) filter.to = Date.parse(query.to);
    if (query.cursor !== undefined) filter.before = decodeCursor(query.cursor);
    const found = await store.assignments(who.organizationId, filter);
    const page = found.slice(0, limit);
    const last = page.at(-1);
    return { assignments: page, nextCursor: found.length > limit && last !== undefined ? encodeCursor(last) : null };
  }

  return {
    create, get, update, remove, assign, getAssignment, end, assignments,
    list: (who: Principal, filter: { q?: string; limit: number; offset: number }) => store.list(who.organizationId, filter),
  };
}

/** Identifiers as stored: each checked for its kind's form, iButtons uppercase, no value twice. */
function identifiersOf(identifiers: readonly DriverIdentifier[]): DriverIdentifier[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  const normalized = identifiers.map(({ kind, value }, i) => {
    const form = IDENTIFIER_FORMS[kind];
    if (!form.pattern.test(value)) errors.push({ in: 'body', path: `/identifiers/${i}/value`, message: `${form.message} for kind ${kind}` });
    const stored = kind === 'ibutton' ? value.toUpperCase() : value;
    if (seen.has(stored)) errors.push({ in: 'body', path: `/identifiers/${i}/value`, message: 'is given twice' });
    seen.add(stored);
    return { kind, value: stored };
  });
  if (errors.length > 0) throw new AppError('validation-failed', `identifiers: ${errors.map((e) => `${e.path} ${e.message}`).join('; ')}.`, { errors });
  return normalized;
}

function encodeCursor(a: AssignmentRecord): string {
  return Buffer.from(`${a.startedAt}:${a.id}`).toString('base64url');
}

function decodeCursor(cursor: string): [number, string] {
  const match = /^(\d{1,16}):(asg_[A-Za-z0-9]{20})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) {
    throw new AppError('validation-failed', 'cursor is not a `nextCursor` this list gave.', { errors: [{ in: 'query', path: '/cursor', message: 'is not a cursor of this list' }] });
  }
  return [Number(match[1]), match[2]!];
}



function taken(value: string): AppError {
  return new AppError('identifier-taken', `Identifier "${value}" is another driver's in this organization.`);
}

function notFound(id: string): AppError {
  return new AppError('driver-not-found', `No driver "${id}" in this organization.`);
}

function assignmentNotFound(id: string): AppError {
  return new AppError('assignment-not-found', `No driver assignment "${id}" in this organization.`);
}
