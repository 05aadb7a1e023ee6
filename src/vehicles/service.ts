// Vehicle rules: registration, listing, status transitions. Knows nothing of HTTP.
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { quotaExceeded } from '../quotas.ts';
import type { EventPort } from '../events/port.ts';
import { newEvent } from '../events/types.ts';
import { statusChangedEvent } from './events.ts';
import type { Configuration, PatchVehicleBody, RegisterVehicleBody, RegisterVehiclesResult, StatusChangeBody, VehicleStatus, VehicleType } from './schema.ts';
import type { NewVehicle, Page, StatusChange, VehicleRecord, VehicleStore } from './store.ts';
import { TRANSITIONS, canTransition } from './transitions.ts';
import { type LatestLookup, toDetails } from './view.ts';
import { groupsShown, groupsToSet, vehicleNotFound } from '../groups/scope.ts';

export interface ListOptions extends Page {
  statuses?: VehicleStatus[];
  types?: VehicleType[];
  groupId?: string;
}

export type VehicleService = ReturnType<typeof createVehicleService>;

export function createVehicleService(deps: {
  store: VehicleStore;
  clock: Clock;
  maxVehicles?: number;
  /** What a vehicle's details say of its latest telemetry (in `vehicle.*` events). */
  latest?: LatestLookup;
  /** Told of the events each committed change recorded (`recorded`). */
  events?: EventPort;
}) {
  const { store, clock } = deps;
  const detailsOf = (v: VehicleRecord) => toDetails(v, deps.latest?.(v.organizationId, v.id));
  const vehicleEvent = (type: 'vehicle.registered' | 'vehicle.updated', v: VehicleRecord) =>
    newEvent(v.organizationId, type, v.id, v.updatedAt, detailsOf(v));

  /** The vehicle a registration makes, with its entry and event; the caller's groups checked. */
  function newVehicle(who: Principal, body: RegisterVehicleBody, now: number): NewVehicle {
    const groupIds = groupsToSet(who, body.groupIds, undefined) ?? [];
    const vehicle: VehicleRecord = {
      organizationId: who.organizationId,
      id: body.vehicleId,
      type: body.type,
      name: body.name ?? null,
      status: 'registered',
      configuration: body.configuration ?? {},
      createdAt: now,
      updatedAt: now,
      statusChangedAt: now,
      groupIds: groupList(groupIds),
      driverId: null,
    };
    const registration: StatusChange = { from: null, to: 'registered', reason: null, at: now, by: who.credentialId };
    return { vehicle, registration, events: [vehicleEvent('vehicle.registered', vehicle)] };
  }

  async function register(who: Principal, body: RegisterVehicleBody): Promise<VehicleRecord> {
    const { vehicle, registration, events } = newVehicle(who, body, clock.now());
    const outcome = await store.insert(vehicle, registration, deps.maxVehicles, events);
    switch (outcome) {
      case 'created':
        deps.events?.emit('recorded', { events });
        if (vehicle.groupIds.length > 0) deps.events?.emit('membershipChanged', { organizationId: who.organizationId });
        return shown(who, vehicle);
      case 'exists':
        throw new AppError('vehicle-exists', `A vehicle "${body.vehicleId}" already exists in this organization.`);
      case 'quota':
        throw quotaExceeded(deps.maxVehicles ?? 0, 'vehicles');
      case 'unknown-group':
        throw unknownGroup(vehicle.groupIds);
    }
  }

  /**
   * Registers every vehicle of `bodies` whose id is not taken, in one transaction: each one's
   * outcome in order. All or none when one names an unknown group or they pass the quota.
   */
  async function registerMany(who: Principal, bodies: readonly RegisterVehicleBody[]): Promise<RegisterVehiclesResult> {
    const seen = new Map<string, number>();
    for (const [i, body] of bodies.entries()) {
      const first = seen.get(body.vehicleId);
      if (first !== undefined) {
        throw new AppError('validation-failed', 'Each vehicle may appear once in a batch.', {
          errors: [{ in: 'body', path: `/vehicles/${i}/vehicleId`, message: `repeats vehicles/${first} ("${body.vehicleId}")` }],
        });
      }
      seen.set(body.vehicleId, i);
    }
    const now = clock.now();
    const registrations = bodies.map((body) => newVehicle(who, body, now));
    const outcome = await store.insertMany(registrations, deps.maxVehicles);
    if (outcome === 'quota') throw quotaExceeded(deps.maxVehicles ?? 0, 'vehicles');
    if (outcome === 'unknown-group') throw unknownGroup([...new Set(registrations.flatMap((r) => r.vehicle.groupIds))]);
    const created = registrations.filter((_, i) => outcome[i] === 'created');
    const events = created.flatMap((r) => r.events);
    if (events.length > 0) deps.events?.emit('recorded', { events });
    if (created.some((r) => r.vehicle.groupIds.length > 0)) deps.events?.emit('membershipChanged', { organizationId: who.organizationId });
    return {
      created: created.length,
      existing: registrations.length - created.length,
      vehicles: registrations.map((r, i) => ({ id: r.vehicle.id, outcome: outcome[i]! })),
    };
  }

  /** The vehicle as stored (every group); the routes check a scoped caller sees it (http/vehicle-scope.ts). */
  async function load(who: Principal, id: string): Promise<VehicleRecord> {
    const vehicle = await store.get(who.organizationId, id);
    if (vehicle === undefined) throw vehicleNotFound(id);
    return vehicle;
  }

  async function get(who: Principal, id: string): Promise<VehicleRecord> {
    return shown(who, await load(who, id));
  }

  async function list(who: Principal, options: ListOptions) {
    const own = who.groupIds;
    if (own === undefined) return store.list(who.organizationId, options);
    // A scoped credential lists its groups' vehicles; a group of another's is empty to it.
    if (options.groupId !== undefined && !own.includes(options.groupId)) return { vehicles: [], total: 0 };
    const found = await store.list(who.organizationId, options.groupId === undefined ? { ...options, anyOfGroups: own } : options);
    return { vehicles: found.vehicles.map((v) => shown(who, v)), total: found.total };
  }

  async function remove(who: Principal, id: string): Promise<void> {
    const events = [newEvent(who.organizationId, 'vehicle.deleted', id, clock.now(), {})];
    if (!(await store.delete(who.organizationId, id, events))) throw vehicleNotFound(id);
    deps.events?.emit('recorded', { events });
  }

  /** An RFC 7396 merge patch of `type`, `name` and `configuration`; `groupIds` replaces the list. */
  async function update(who: Principal, id: string, patch: PatchVehicleBody): Promise<VehicleRecord> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await load(who, id);
      const groupIds = groupsToSet(who, patch.groupIds, current.groupIds);
      const next: VehicleRecord = {
        ...current,
        type: patch.type ?? current.type,
        name: patch.name === undefined ? current.name : patch.name,
        configuration: patch.configuration === undefined ? current.configuration : mergeConfiguration(current.configuration, patch.configuration),
        groupIds: groupIds === undefined ? current.groupIds : groupList(groupIds),
        // Never the same as before: the compare-and-set below tells this write from any other.
        updatedAt: Math.max(clock.now(), current.updatedAt + 1),
      };
      const events = [vehicleEvent('vehicle.updated', next)];
      const updated = await store.update(who.organizationId, id, current.updatedAt, next, events);
      if (updated === 'unknown-group') throw unknownGroup(next.groupIds);
      if (updated !== undefined) {
        deps.events?.emit('recorded', { events });
        if (!sameGroups(current.groupIds, updated.groupIds)) deps.events?.emit('membershipChanged', { organizationId: who.organizationId });
        return shown(who, updated);
      }
    }
    throw tooBusy();
  }

  async function changeStatus(who: Principal, id: string, body: StatusChangeBody): Promise<VehicleRecord> {
    // Compare-and-set in a short loop: a concurrent change between our read and our write makes
    // the store refuse, and we judge the transition again from the status that won.
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await get(who, id);
      if (current.status === body.status) return current;
      if (!canTransition(current.status, body.status)) {
        const allowed = TRANSITIONS[current.status];
        throw new AppError(
          'invalid-status-transition',
          `A vehicle cannot go from "${current.status}" to "${body.status}"; allowed: ${allowed.length > 0 ? allowed.join(', ') : 'none (terminal)'}.`,
        );
      }
      const change = { from: current.status, to: body.status, reason: body.reason ?? null, at: clock.now(), by: who.credentialId };
      const events = [statusChangedEvent(who.organizationId, id, change)];
      const changed = await store.changeStatus(who.organizationId, id, change, events);
      if (changed !== undefined) {
        deps.events?.emit('recorded', { events });
        return shown(who, changed);
      }
    }
    throw tooBusy();
  }

  async function statusHistory(who: Principal, id: string, page: Page) {
    await get(who, id);
    return store.statusHistory(who.organizationId, id, page);
  }

  return { register, registerMany, get, list, remove, update, changeStatus, statusHistory };
}

/** The vehicle as `who` is shown it: a credential limited to groups sees only its own groups in `groupIds`. */
function shown(who: Principal, v: VehicleRecord): VehicleRecord {
  return who.groupIds === undefined ? v : { ...v, groupIds: [...groupsShown(who, v.groupIds)] };
}

function sameGroups(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

function tooBusy(): AppError {
  return new AppError('service-unavailable', 'The vehicle is changing too often; try again.', { headers: { 'retry-after': '1' } });
}

/** RFC 7396 on the configuration object: a null member removes the field, others replace it. */
function mergeConfiguration(current: Configuration, patch: PatchVehicleBody['configuration']): Configuration {
  if (patch === null || patch === undefined) return {};
  const out: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out;
}

/** A vehicle's groups as kept: each once, in order. */
function groupList(groupIds: readonly string[]): string[] {
  return [...new Set(groupIds)].sort();
}

function unknownGroup(groupIds: readonly string[]): AppError {
  return new AppError('group-not-found', `One of the groups ${groupIds.map((g) => `"${g}"`).join(', ')} does not exist in this organization.`);
}

