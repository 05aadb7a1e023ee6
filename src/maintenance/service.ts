// Maintenance (docs/API.md "Maintenance"): service schedules, where each vehicle stands with each
// schedule that applies to it, service records that restart a schedule's intervals, and the check
// that announces an item crossing into due soon or overdue. A vehicle's item of a schedule is made
// when the schedule is created (its intervals running from the vehicle's meters then), and for a
// vehicle that comes under it later (registered, or added to its group) when it is next looked at:
// by the check, which runs every minute, or a read.
import type { Principal } from '../auth/scopes.ts';
import { type Clock, iso } from '../clock.ts';
import { AppError, invalidBody, pastTimeOf } from '../errors.ts';
import type { EventPort } from '../events/port.ts';
import { type EventRecord, newEvent } from '../events/types.ts';
import { type VehicleScope, assertWholeOrganization, unknownGroups, vehicleNotFound } from '../groups/scope.ts';
import type { GroupStore } from '../groups/store.ts';
import { newId } from '../ids.ts';
import { type MeterState, meterValues } from '../meters/state.ts';
import { quotaExceeded } from '../quotas.ts';
import type { VehicleStore } from '../vehicles/store.ts';
import {
  type ItemRecord, type ItemState, type MeterValues, type NextDue, type ScheduleRecord, type ServiceRecord,
  applies, itemState, newItem, nextDue, toAnnounce,
} from './model.ts';
import { DEFAULT_MAX_SCHEDULES, type ScheduleInput, type ServiceRecordInput } from './schema.ts';
import type { MaintenanceStore } from './store.ts';


export type MaintenanceService = ReturnType<typeof createMaintenanceService>;

export function scheduleView(s: ScheduleRecord) {
  return {
    id: s.id, name: s.name, vehicleIds: s.vehicleIds, groupId: s.groupId, every: s.every, dueSoon: s.dueSoon,
    createdAt: iso(s.createdAt), updatedAt: iso(s.updatedAt),
  };
}

export function serviceRecordView(r: ServiceRecord) {
  return {
    id: r.id, vehicleId: r.vehicleId, scheduleId: r.scheduleId, performedAt: iso(r.performedAt), odometerKm: r.odometerKm,
    engineHours: r.engineHours, notes: r.notes, cost: r.cost, createdAt: iso(r.createdAt),
  };
}

function nextDueView(due: NextDue) {
  return { ...(due.odometerKm === undefined ? {} : { odometerKm: round(due.odometerKm) }), ...(due.engineHours === undefined ? {} : { engineHours: round(due.engineHours) }),
    ...(due.at === undefined ? {} : { at: iso(due.at) }) };
}

const round = (value: number) => Math.round(value * 1000) / 1000;
const RANK: Record<ItemState, number> = { overdue: 0, due_soon: 1, ok: 2 };

function notFound(id: string): AppError {
  return new AppError('schedule-not-found', `No maintenance schedule "${id}" in this organization.`);
}

/** What the check and the reads see of an organization's maintenance at one moment. */
interface Standing {
  schedules: Map<string, ScheduleRecord>;
  items: ItemRecord[];
  meters: Map<string, MeterState>;
}

export function createMaintenanceService(deps: {
  store: MaintenanceStore; vehicles: VehicleStore; groups: Pick<GroupStore, 'get'>; scope: VehicleScope; clock: Clock; events: EventPort;
  /** Schedules per organization (FLEET_QUOTA_MAINTENANCE_SCHEDULES). */
  maxSchedules?: number;
}) {
  const maxSchedules = deps.maxSchedules ?? DEFAULT_MAX_SCHEDULES;
  const { store, clock } = deps;
  const recorded = (events: EventRecord[]) => {
    if (events.length > 0) deps.events.emit('recorded', { events });
  };
  const valuesOf = (meters: Map<string, MeterState>, vehicleId: string): MeterValues => meterValues(meters.get(vehicleId));

  /** The schedule as stored from its input, after the checks a store cannot make. */
  async function recordOf(who: Principal, input: ScheduleInput, id: string, createdAt: number, now: number): Promise<ScheduleRecord> {
    assertWholeOrganization(who, 'maintenance schedules');
    if (input.vehicleIds !== undefined && input.vehicleIds !== null && input.groupId !== undefined) {
      throw invalidBody('Give vehicleIds or groupId, not both.', '/groupId', 'must not be given with vehicleIds');
    }
    if (input.groupId !== undefined && (await deps.groups.get(who.organizationId, input.groupId)) === undefined) throw unknownGroups([input.groupId]);
    return {
      organizationId: who.organizationId, id, name: input.name, vehicleIds: input.vehicleIds ?? null, groupId: input.groupId ?? null,
      every: input.every, dueSoon: input.dueSoon ?? {}, createdAt, updatedAt: now,
    };
  }

  /** The vehicles (of `vehicleId` alone, when given) each schedule applies to. */
  async function applying(organizationId: string, schedules: readonly ScheduleRecord[], vehicleId?: string): Promise<Map<string, string[]>> {
    const vehicles = await store.vehicles(organizationId, vehicleId);
    return new Map(schedules.map((s) => [s.id, vehicles.filter((v) => applies(s, v.id, v.groups)).map((v) => v.id)]));
  }

  /**
   * The organization's schedules, items and meters (only `vehicleId`'s items and meters when
   * given), after making the items of vehicles that came under a schedule since it was last looked at.
   */
  async function standing(organizationId: string, vehicleId?: string): Promise<Standing> {
    const schedules = await store.allSchedules(organizationId);
    const [applied, items, meters] = await Promise.all([
      applying(organizationId, schedules, vehicleId), store.items(organizationId, vehicleId), store.meters(organizationId, vehicleId),
    ]);
    const have = new Set(items.map((i) => `${i.scheduleId}\n${i.vehicleId}`));
    const now = clock.now();
    const missing: ItemRecord[] = [];
    for (const s of schedules) {
      for (const id of applied.get(s.id) ?? []) if (!have.has(`${s.id}\n${id}`)) missing.push(newItem(s, id, valuesOf(meters, id), now));
    }
    if (missing.length > 0) await store.insertItems(missing);
    const kept = new Set(schedules.flatMap((s) => (applied.get(s.id) ?? []).map((id) => `${s.id}\n${id}`)));
    return {
      schedules: new Map(schedules.map((s) => [s.id, s])),
      // Read again when some were made: another reader may have made them first, with its own baseline.
      items: (missing.length > 0 ? await store.items(organizationId, vehicleId) : items).filter((i) => kept.has(`${i.scheduleId}\n${i.vehicleId}`)),
      meters,
    };
  }

  function eventOf(type: 'maintenance.due_soon' | 'maintenance.overdue' | 'maintenance.completed', s: ScheduleRecord, item: ItemRecord, state: ItemState,
    meters: MeterValues, at: number, serviceRecord?: ServiceRecord): EventRecord {
    return newEvent(s.organizationId, type, item.vehicleId, at, {
      vehicleId: item.vehicleId, scheduleId: s.id, name: s.name, state, nextDue: nextDueView(nextDue(s, item)), meters,
      ...(serviceRecord === undefined ? {} : { serviceRecord: serviceRecordView(serviceRecord) }),
    });
  }

  /** The vehicle-scope hook has checked a credential limited to groups sees it (http/vehicle-scope.ts). */
  async function requireVehicle(who: Principal, vehicleId: string): Promise<void> {
    if ((await deps.vehicles.get(who.organizationId, vehicleId)) === undefined) throw vehicleNotFound(vehicleId);
  }

  /** Items as the API gives them, with their last services, in the order of their schedules. */
  async function itemViews(organizationId: string, st: Standing, items: readonly ItemRecord[]) {
    const services = new Map((await store.serviceRecordsById(organizationId, items.flatMap((i) => (i.lastServiceId === null ? [] : [i.lastServiceId]))))
      .map((r) => [r.id, r]));
    const now = clock.now();
    return items.map((item) => {
      const s = st.schedules.get(item.scheduleId)!;
      const due = nextDue(s, item);
      const last = item.lastServiceId === null ? undefined : services.get(item.lastServiceId);
      return {
        vehicleId: item.vehicleId, scheduleId: s.id, name: s.name, state: itemState(s, due, valuesOf(st.meters, item.vehicleId), now),
        lastService: last === undefined ? null : serviceRecordView(last), nextDue: nextDueView(due),
      };
    });
  }

  const scheduleOrder = (st: Standing) => (a: ItemRecord, b: ItemRecord) => {
    const x = st.schedules.get(a.scheduleId)!;
    const y = st.schedules.get(b.scheduleId)!;
    return x.createdAt - y.createdAt || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
  };

  return {
    async createSchedule(who: Principal, input: ScheduleInput) {
      const now = clock.now();
      const schedule = await recordOf(who, input, newId('mnt'), now, now);
      const [ids, meters] = await Promise.all([applying(who.organizationId, [schedule]), store.meters(who.organizationId)]);
      const items = ids.get(schedule.id)!.map((id) => newItem(schedule, id, valuesOf(meters, id), now));
      if ((await store.insertSchedule(schedule, items, maxSchedules)) === 'quota') throw quotaExceeded(maxSchedules, 'maintenance schedules');
      return schedule;
    },

    async getSchedule(who: Principal, id: string) {
      const schedule = await store.getSchedule(who.organizationId, id);
      if (schedule === undefined) throw notFound(id);
      return schedule;
    },

    listSchedules: (who: Principal, page: { limit: number; offset: number }) => store.listSchedules(who.organizationId, page),

    async replaceSchedule(who: Principal, id: string, input: ScheduleInput) {
      const current = await store.getSchedule(who.organizationId, id);
      if (current === undefined) throw notFound(id);
      const schedule = await recordOf(who, input, id, current.createdAt, Math.max(clock.now(), current.updatedAt + 1));
      const keep = (await applying(who.organizationId, [schedule])).get(id)!;
      if (!(await store.replaceSchedule(schedule, keep))) throw notFound(id);
      return schedule;
    },

    async deleteSchedule(who: Principal, id: string) {
      assertWholeOrganization(who, 'maintenance schedules');
      if (!(await store.deleteSchedule(who.organizationId, id))) throw notFound(id);
    },

    async ofVehicle(who: Principal, vehicleId: string) {
      await requireVehicle(who, vehicleId);
      const st = await standing(who.organizationId, vehicleId);
      const items = [...st.items].sort(scheduleOrder(st));
      return { vehicleId, items: (await itemViews(who.organizationId, st, items)).map(({ vehicleId: _, ...item }) => item) };
    },

    async ofFleet(who: Principal, query: { state?: ItemState; limit: number; offset: number }) {
      const st = await standing(who.organizationId);
      const visible = await deps.scope.visibleOf(who, [...new Set(st.items.map((i) => i.vehicleId))]);
      const now = clock.now();
      const stated = st.items
        .filter((i) => visible === undefined || visible.has(i.vehicleId))
        .map((item) => {
          const s = st.schedules.get(item.scheduleId)!;
          return { item, state: itemState(s, nextDue(s, item), valuesOf(st.meters, item.vehicleId), now) };
        })
        .filter((x) => query.state === undefined || x.state === query.state);
      const bySchedule = scheduleOrder(st);
      stated.sort((a, b) => RANK[a.state] - RANK[b.state] || (a.item.vehicleId < b.item.vehicleId ? -1 : a.item.vehicleId > b.item.vehicleId ? 1 : 0) || bySchedule(a.item, b.item));
      const page = stated.slice(query.offset, query.offset + query.limit).map((x) => x.item);
      return { items: await itemViews(who.organizationId, st, page), total: stated.length };
    },

    async addServiceRecord(who: Principal, vehicleId: string, input: ServiceRecordInput) {
      await requireVehicle(who, vehicleId);
      const now = clock.now();
      const performedAt = pastTimeOf(input.performedAt, '/performedAt', now);
      const organizationId = who.organizationId;
      const st = await standing(organizationId, vehicleId);
      const current = valuesOf(st.meters, vehicleId);
      const record: ServiceRecord = {
        organizationId, id: newId('svc'), vehicleId, scheduleId: input.scheduleId ?? null, performedAt,
        odometerKm: input.odometerKm ?? current.odometerKm, engineHours: input.engineHours ?? current.engineHours,
        notes: input.notes ?? null, cost: input.cost ?? null, createdAt: now,
      };
      let restart: ItemRecord | undefined;
      let event: EventRecord;
      if (record.scheduleId === null) {
        event = newEvent(organizationId, 'maintenance.completed', vehicleId, performedAt, {
          vehicleId, scheduleId: null, name: null, state: null, nextDue: null, meters: current, serviceRecord: serviceRecordView(record),
        });
      } else {
        const schedule = st.schedules.get(record.scheduleId);
        if (schedule === undefined) throw notFound(record.scheduleId);
        const item = st.items.find((i) => i.scheduleId === schedule.id);
        if (item === undefined) {
          throw new AppError('schedule-not-applicable', `Maintenance schedule "${schedule.id}" does not apply to vehicle "${vehicleId}"; nothing was stored.`);
        }
        // Restarted unless a later service restarted it already (a baseline of the schedule's start gives way to any service).
        const restarted: ItemRecord = item.lastServiceId !== null && item.baseAt > performedAt ? item : {
          ...item, baseKm: record.odometerKm, baseHours: record.engineHours, baseAt: performedAt, cycle: item.cycle + 1, notified: 'ok', lastServiceId: record.id,
        };
        if (restarted !== item) restart = restarted;
        event = eventOf('maintenance.completed', schedule, restarted, itemState(schedule, nextDue(schedule, restarted), current, now), current, performedAt, record);
      }
      await store.addServiceRecord(record, restart, event);
      recorded([event]);
      return record;
    },

    async serviceRecords(who: Principal, vehicleId: string, page: { limit: number; offset: number }) {
      await requireVehicle(who, vehicleId);
      return store.serviceRecords(who.organizationId, vehicleId, page);
    },

    /**
     * One organization's check: each item that crossed into due soon or overdue since its cycle
     * last announced one is announced, once (the store writes the announcement only while the
     * item is still in that cycle).
     */
    async check(organizationId: string): Promise<void> {
      const st = await standing(organizationId);
      const now = clock.now();
      const changes: { item: ItemRecord; state: ItemState; event: EventRecord }[] = [];
      for (const item of st.items) {
        const s = st.schedules.get(item.scheduleId)!;
        const meters = valuesOf(st.meters, item.vehicleId);
        const state = itemState(s, nextDue(s, item), meters, now);
        const announce = toAnnounce(state, item.notified);
        if (announce === undefined || announce === 'ok') continue;
        changes.push({ item, state: announce, event: eventOf(announce === 'overdue' ? 'maintenance.overdue' : 'maintenance.due_soon', s, item, announce, meters, now) });
      }
      if (changes.length > 0) recorded(await store.announce(changes, now));
    },
  };
}
