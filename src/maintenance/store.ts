// Where maintenance is kept (docs/API.md "Maintenance"). Every call names the organization.
// Which schedules apply to which vehicles is decided by the service (maintenance/model.ts); the
// store keeps what it is told, and writes each change with its events in one transaction.
import type { EventRecord } from '../events/types.ts';
import type { MeterState } from '../meters/state.ts';
import type { ItemRecord, ItemState, ScheduleRecord, ServiceRecord } from './model.ts';

export interface MaintenanceStore {
  /** `quota` (nothing stored) past `max` schedules; the items given are inserted with it. */
  insertSchedule(schedule: ScheduleRecord, items: readonly ItemRecord[], max: number): Promise<'created' | 'quota'>;
  getSchedule(organizationId: string, id: string): Promise<ScheduleRecord | undefined>;
  /** Oldest first. */
  listSchedules(organizationId: string, page: { limit: number; offset: number }): Promise<{ schedules: ScheduleRecord[]; total: number }>;
  allSchedules(organizationId: string): Promise<ScheduleRecord[]>;
  /** Replaces it; the items of vehicles not in `keep` are deleted. False when there is none. */
  replaceSchedule(schedule: ScheduleRecord, keep: readonly string[]): Promise<boolean>;
  deleteSchedule(organizationId: string, id: string): Promise<boolean>;

  /** The organization's vehicles with the groups each is a member of; only `vehicleId`'s when given. */
  vehicles(organizationId: string, vehicleId?: string): Promise<{ id: string; groups: string[] }[]>;
  /** The meters of the organization's vehicles (only `vehicleId`'s when given); a vehicle with none is absent. */
  meters(organizationId: string, vehicleId?: string): Promise<Map<string, MeterState>>;
  /** The items (only `vehicleId`'s when given). */
  items(organizationId: string, vehicleId?: string): Promise<ItemRecord[]>;
  /** Inserts items, leaving any that exists already as it is. */
  insertItems(items: readonly ItemRecord[]): Promise<void>;

  /**
   * Stores a service record with its event; `restart`: the item whose intervals it restarts from
   * its baseline (a new cycle, nothing announced yet), unless a later service restarted it
   * already (an older service entered late restarts nothing).
   */
  addServiceRecord(record: ServiceRecord, restart: ItemRecord | undefined, event: EventRecord): Promise<void>;
  /** A vehicle's service records, newest first, and how many it has. */
  serviceRecords(organizationId: string, vehicleId: string, page: { limit: number; offset: number }): Promise<{ records: ServiceRecord[]; total: number }>;
  serviceRecordsById(organizationId: string, ids: readonly string[]): Promise<ServiceRecord[]>;

  /**
   * Records that each item announced `state`, with its event, where the item is still as read
   * (its `cycle` and `notified`: a service since restarted it, or another check announced it
   * first, and nothing is written); the events written.
   */
  announce(changes: readonly { item: ItemRecord; state: ItemState; event: EventRecord }[], at: number): Promise<EventRecord[]>;
  /** Organizations that have schedules (the check visits them). */
  organizationsWithSchedules(): Promise<string[]>;
  /** Runs `fn` while holding the cluster-wide right to run the maintenance check; false, without running it, when another node holds it. */
  asMaintenanceChecker(fn: () => Promise<void>): Promise<boolean>;
}
