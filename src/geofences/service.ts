// Geofences: create, read, change, delete, and which vehicles are inside now. Knows nothing of
// HTTP. Every change tells the rule engine (and, through the dispatcher, the other nodes) to read
// the organization's definitions again.
import type { Principal } from '../auth/scopes.ts';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { VehicleScope } from '../groups/scope.ts';
import type { EventPort } from '../events/port.ts';
import { newId } from '../ids.ts';
import { quotaExceeded } from '../quotas.ts';
import type { GeofenceRecord, Geometry } from './model.ts';
import { type GeofenceBody, PAGE_POSITIONS } from './schema.ts';
import type { GeofenceQuota, GeofenceStore } from './store.ts';
import { validateGeometry } from './validation.ts';
import { createWriteGate } from './write-gate.ts';

export type GeofenceService = ReturnType<typeof createGeofenceService>;

export function createGeofenceService(deps: {
  store: GeofenceStore;
  clock: Clock;
  quota: GeofenceQuota;
  /** The ids of the organization's alert rules that use the geofence: it cannot be deleted while any do. */
  rulesUsing(organizationId: string, geofenceId: string): Promise<string[]>;
  /** Told when the organization's geofences changed (`rulesChanged`: the rule engines read them again). */
  events: EventPort;
  /** Which vehicles a credential limited to groups sees. */
  scope?: VehicleScope;
}) {
  const { store, clock } = deps;
  const oneAtATime = createWriteGate();

  function checkGeometry(geometry: unknown): Geometry {
    const result = validateGeometry(geometry);
    if (!result.ok) {
      const errors = result.errors.map((e) => ({ in: 'body' as const, path: `/geometry${e.path}`, message: e.message }));
      throw new AppError('validation-failed', `geometry: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}.`, { errors });
    }
    return geometry as Geometry;
  }

  const verticesExceeded = (done: 'created' | 'changed') => new AppError('quota-exceeded',
    `This organization's geofences may hold ${deps.quota.vertices} positions in all; this geometry would pass that quota, so nothing was ${done}.`);

  async function geofence(who: Principal, id: string): Promise<GeofenceRecord> {
    const found = await store.getGeofence(who.organizationId, id);
    if (found === undefined) throw new AppError('geofence-not-found', `No geofence "${id}" in this organization.`);
    return found;
  }

  function createGeofence(who: Principal, body: GeofenceBody): Promise<GeofenceRecord> {
    return oneAtATime(who.organizationId, async () => {
      const now = clock.now();
      const record: GeofenceRecord = {
        id: newId('gf'), organizationId: who.organizationId, name: body.name, geometry: checkGeometry(body.geometry),
        vehicleIds: body.vehicleIds ?? null, createdAt: now, updatedAt: now,
      };
      const created = await store.insertGeofence(record, deps.quota);
      if (created === 'quota') throw quotaExceeded(deps.quota.geofences, 'geofences');
      if (created === 'vertices') throw verticesExceeded('created');
      deps.events.emit('rulesChanged', { organizationId: who.organizationId });
      return record;
    });
  }

  function replaceGeofence(who: Principal, id: string, body: GeofenceBody): Promise<GeofenceRecord> {
    return oneAtATime(who.organizationId, async () => {
      const current = await geofence(who, id);
      const record: GeofenceRecord = { ...current, name: body.name, geometry: checkGeometry(body.geometry), vehicleIds: body.vehicleIds ?? null, updatedAt: clock.now() };
      const replaced = await store.replaceGeofence(record, deps.quota.vertices);
      if (replaced === 'missing') await geofence(who, id);
      if (replaced === 'vertices') throw verticesExceeded('changed');
      deps.events.emit('rulesChanged', { organizationId: who.organizationId });
      return record;
    });
  }

  async function deleteGeofence(who: Principal, id: string): Promise<void> {
    const using = await deps.rulesUsing(who.organizationId, id);
    if (using.length > 0) {
      throw new AppError('geofence-in-use', `Alert rules use this geofence: ${using.map((ruleId) => `"${ruleId}"`).join(', ')}. Delete or change them first.`);
    }
    if (!(await store.deleteGeofence(who.organizationId, id))) await geofence(who, id);
    deps.events.emit('rulesChanged', { organizationId: who.organizationId });
  }

  async function insideOf(who: Principal, vehicleId: string, vehicleExists: () => Promise<boolean>) {
    if (!(await vehicleExists())) throw new AppError('vehicle-not-found', `No vehicle "${vehicleId}" in this organization.`);
    const ids = await store.insideOf(who.organizationId, vehicleId);
    const found = await Promise.all(ids.map((id) => store.getGeofence(who.organizationId, id)));
    return found.filter((g) => g !== undefined).map((g) => ({ id: g.id, name: g.name }));
  }

  async function vehiclesInside(who: Principal, id: string): Promise<string[]> {
    await geofence(who, id);
    const inside = await store.vehiclesInside(who.organizationId, id);
    const visible = await deps.scope?.visibleOf(who, inside);
    return visible === undefined ? inside : inside.filter((vehicleId) => visible.has(vehicleId));
  }

  return {
    createGeofence, geofence, listGeofences: (who: Principal, page: { limit: number; offset: number }) => store.listGeofences(who.organizationId, page, PAGE_POSITIONS),
    replaceGeofence, deleteGeofence, vehiclesInside, insideOf,
  };
}
