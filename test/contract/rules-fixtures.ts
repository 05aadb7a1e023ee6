// Records of the rules store's contract (rules-store.ts, rules-alerts.ts), built by hand.
import type { GeofenceRecord } from '../../src/geofences/model.ts';
import type { AlertRuleRecord, Condition } from '../../src/rules/model.ts';
import type { Stores } from '../../src/storage/stores.ts';
import { T0 } from './fixtures.ts';

export interface RulesContractOptions {
  /** More stores on the same database as `stores` (another node); the test closes them. */
  anotherNode?: (stores: Stores) => Promise<Stores>;
}

/** A circle of 250 m around (13.405, 52.52) in Berlin, unless told otherwise. */
export const geofence = (organizationId: string, id: string, overrides: Partial<GeofenceRecord> = {}): GeofenceRecord => ({
  id, organizationId, name: `fence ${id}`, geometry: { type: 'Circle', coordinates: [13.405, 52.52], radius: 250 },
  vehicleIds: null, createdAt: T0, updatedAt: T0, ...overrides,
});

const SPEEDING: Condition = { kind: 'threshold', field: 'speed', op: '>', value: 90, forSeconds: 0 };

/** An enabled speeding rule (speed > 90) for every vehicle, unless told otherwise. */
export const rule = (organizationId: string, id: string, overrides: Partial<AlertRuleRecord> = {}): AlertRuleRecord => ({
  id, organizationId, name: `rule ${id}`, condition: SPEEDING, vehicleIds: null, enabled: true, createdAt: T0, updatedAt: T0, ...overrides,
});

/** No bound on positions: the tests of the positions quota and of page sizes are test/geofence-limits.test.ts. */
export const ALL = 1_000_000_000;

/** A quota of `geofences` geofences, with no bound on their positions. */
export const quota = (geofences: number) => ({ geofences, vertices: ALL });

/** Every geofence of the organization, as the engine reads them (versions, then those ids). */
export async function allGeofences(stores: Stores, organizationId: string): Promise<GeofenceRecord[]> {
  return stores.rules.geofencesById(organizationId, (await stores.rules.geofenceVersions(organizationId)).map((v) => v.id));
}
