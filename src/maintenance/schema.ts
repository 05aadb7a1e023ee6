// Maintenance schemas (docs/API.md "Maintenance").
import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging, PlainText } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { GroupId } from '../groups/schema.ts';
import { VehicleId } from '../vehicles/schema.ts';
import { VehicleIds } from '../geofences/schema.ts';
import { ITEM_STATES } from './model.ts';

export const SCHEDULE_ID_PATTERN = '^mnt_[A-Za-z0-9]{20}$';
export const SERVICE_RECORD_ID_PATTERN = '^svc_[A-Za-z0-9]{20}$';
const ScheduleId = Type.String({ pattern: SCHEDULE_ID_PATTERN, examples: ['mnt_3Kp8Zq1WbX7mKc1Np8Rs'] });

/** Maintenance schedules per organization unless FLEET_QUOTA_MAINTENANCE_SCHEDULES says otherwise. */
export const DEFAULT_MAX_SCHEDULES = 1000;

const intervalMembers = (what: string) => ({
  km: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: `Kilometres ${what}.` })),
  engineHours: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 100_000, description: `Engine hours ${what}.` })),
  days: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3650, description: `Days ${what}.` })),
});

export const Every = named('MaintenanceInterval', Type.Object(intervalMembers('between services'), {
  additionalProperties: false, minProperties: 1, examples: [{ km: 15000, days: 365 }],
}), 'How often the service is due: by distance, engine hours or days (at least one); whichever comes first.');
export const DueSoon = named('MaintenanceDueSoon', Type.Object(intervalMembers('before the next due value that count as due soon'), {
  additionalProperties: false, examples: [{ km: 1000, days: 30 }],
}), 'How far ahead of each next due value the item is `due_soon`; an interval without one is never due soon, only overdue.');

export const ScheduleInput = named('MaintenanceScheduleInput', Type.Object({
  name: PlainText({ minLength: 1, maxLength: 200, description: 'e.g. "Oil change".' }),
  vehicleIds: Type.Optional(VehicleIds),
  groupId: Type.Optional(GroupId),
  every: Every,
  dueSoon: Type.Optional(DueSoon),
}, {
  additionalProperties: false,
  examples: [{ name: 'Oil change', every: { km: 15000, days: 365 }, dueSoon: { km: 1000, days: 30 } }],
}), 'A service schedule: `vehicleIds` or `groupId` (not both); without either, every vehicle.');
export type ScheduleInput = Static<typeof ScheduleInput>;

export const Schedule = named('MaintenanceSchedule', Type.Object({
  id: ScheduleId,
  name: Type.String(),
  vehicleIds: Type.Union([Type.Array(VehicleId), Type.Null()]),
  groupId: Type.Union([GroupId, Type.Null()]),
  every: Every,
  dueSoon: DueSoon,
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
}, { additionalProperties: false }), 'A service schedule.');

export const ScheduleIdParams = Type.Object({ id: ScheduleId }, { additionalProperties: false });
export const ScheduleListQuery = Type.Object(Paging, { additionalProperties: false });
export const ScheduleList = named('MaintenanceScheduleList', Type.Object({
  schedules: Type.Array(Schedule, { description: 'Oldest first.' }),
  total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(),
}, { additionalProperties: false }), 'A page of service schedules.');

const Cost = Type.Object({
  amount: Type.Number({ minimum: 0, maximum: 1e9 }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217, e.g. EUR.' }),
}, { additionalProperties: false });

export const ServiceRecordInput = named('ServiceRecordInput', Type.Object({
  scheduleId: Type.Optional(ScheduleId),
  performedAt: Type.String({ format: 'date-time', description: 'When the service was done; not in the future.' }),
  odometerKm: Type.Optional(Type.Number({ minimum: 0, maximum: 10_000_000, description: 'Default: the vehicle\'s odometer at the time of the request.' })),
  engineHours: Type.Optional(Type.Number({ minimum: 0, maximum: 10_000_000, description: 'Default: the vehicle\'s engine hours at the time of the request.' })),
  notes: Type.Optional(PlainText({ maxLength: 2000, multiline: true })),
  cost: Type.Optional(Cost),
}, {
  additionalProperties: false,
  examples: [{ scheduleId: 'mnt_3Kp8Zq1WbX7mKc1Np8Rs', performedAt: '2026-11-20T10:00:00Z', notes: 'Oil and filter', cost: { amount: 180, currency: 'EUR' } }],
}), 'A service done on the vehicle; one for a schedule restarts that schedule\'s intervals from its values.');
export type ServiceRecordInput = Static<typeof ServiceRecordInput>;

export const ServiceRecordView = named('ServiceRecord', Type.Object({
  id: Type.String({ pattern: SERVICE_RECORD_ID_PATTERN }),
  vehicleId: VehicleId,
  scheduleId: Type.Union([ScheduleId, Type.Null()]),
  performedAt: IsoTimestamp,
  odometerKm: Type.Number(),
  engineHours: Type.Number(),
  notes: Type.Union([Type.String(), Type.Null()]),
  cost: Type.Union([Cost, Type.Null()]),
  createdAt: IsoTimestamp,
}, { additionalProperties: false }), 'A service done on a vehicle.');

export const ServiceRecordList = named('ServiceRecordList', Type.Object({
  serviceRecords: Type.Array(ServiceRecordView, { description: 'Newest first.' }),
  total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(),
}, { additionalProperties: false }), 'A page of a vehicle\'s service records.');

export const NextDueView = named('MaintenanceNextDue', Type.Object({
  odometerKm: Type.Optional(Type.Number()),
  engineHours: Type.Optional(Type.Number()),
  at: Type.Optional(IsoTimestamp),
}, { additionalProperties: false }), 'The next due value of each interval the schedule has.');

export const ItemStateSchema = Type.Union([Type.Literal('ok'), Type.Literal('due_soon'), Type.Literal('overdue')], { description: '`overdue` once any meter or the date reached its next due value; `due_soon` within `dueSoon` of one.' });

const itemMembers = {
  scheduleId: ScheduleId,
  name: Type.String(),
  state: ItemStateSchema,
  lastService: Type.Union([ServiceRecordView, Type.Null()], { description: 'The service that last restarted the intervals, or null.' }),
  nextDue: NextDueView,
};

export const VehicleMaintenance = named('VehicleMaintenance', Type.Object({
  vehicleId: VehicleId,
  items: Type.Array(Type.Object(itemMembers, { additionalProperties: false }), { description: 'One per schedule that applies to the vehicle, oldest schedule first.' }),
}, { additionalProperties: false }), 'Where a vehicle stands with each of its service schedules.');

export const FleetMaintenanceQuery = Type.Object({
  state: Type.Optional(Type.Enum(ITEM_STATES, { description: 'Only items in this state.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
}, { additionalProperties: false });

export const FleetMaintenance = named('FleetMaintenance', Type.Object({
  items: Type.Array(Type.Object({ vehicleId: VehicleId, ...itemMembers }, { additionalProperties: false }), {
    description: 'Overdue first, then due soon, then ok; by vehicle and schedule within each.',
  }),
  total: Type.Integer({ description: 'Items matching `state`, all pages.' }),
}, { additionalProperties: false }), 'The service items of the whole fleet.');

export const MaintenanceEventData = named('MaintenanceEventData', Type.Object({
  vehicleId: VehicleId,
  scheduleId: Type.Union([ScheduleId, Type.Null()], { description: 'Null for `maintenance.completed` of a service record without a schedule.' }),
  name: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([ItemStateSchema, Type.Null()]),
  nextDue: Type.Union([NextDueView, Type.Null()]),
  meters: Type.Object({ odometerKm: Type.Number(), engineHours: Type.Number() }, { additionalProperties: false }),
  serviceRecord: Type.Optional(ServiceRecordView),
}, { additionalProperties: false }), 'A service item crossing into due soon or overdue, or a service done (`maintenance.completed`, with its `serviceRecord`).');
