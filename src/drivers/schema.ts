// Drivers and their assignments to vehicles (docs/API.md "Drivers").
import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging, PlainText } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { VehicleId } from '../vehicles/schema.ts';

export const DRIVER_ID_PATTERN = '^drv_[A-Za-z0-9]{20}$';
export const ASSIGNMENT_ID_PATTERN = '^asg_[A-Za-z0-9]{20}$';
const DriverId = Type.String({ pattern: DRIVER_ID_PATTERN, examples: ['drv_4Lq9Zt2WbX7mKc1Np8Rs'] });
const AssignmentId = Type.String({ pattern: ASSIGNMENT_ID_PATTERN, examples: ['asg_9Hx2Lm7QbT4kZ1cNp8Wd'] });

/** What each kind of identifier looks like: an iButton's 64-bit serial, or an RFID card's number. */
export const IDENTIFIER_FORMS = {
  ibutton: { pattern: /^[0-9A-Fa-f]{16}$/, message: 'must be 16 hexadecimal digits' },
  rfid: { pattern: /^[A-Za-z0-9]{1,32}$/, message: 'must be 1 to 32 letters and digits' },
} as const;
export type IdentifierKind = keyof typeof IDENTIFIER_FORMS;

export const DriverIdentifier = named('DriverIdentifier', Type.Object({
  kind: Type.Union([Type.Literal('ibutton'), Type.Literal('rfid')], {
    description: '`ibutton`: 16 hexadecimal digits (stored uppercase), as Teltonika trackers report them. `rfid`: 1 to 32 letters and digits.',
  }),
  value: Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9]+$' }),
}, { additionalProperties: false }), 'A token a driver identifies with in the vehicle; unique in the organization.');
export type DriverIdentifier = Static<typeof DriverIdentifier>;

const Identifiers = Type.Array(DriverIdentifier, { maxItems: 10, description: 'At most 10; each value unique in the organization (409 `identifier-taken`).' });
const Name = PlainText({ minLength: 1, maxLength: 200, description: 'e.g. "Ada Lovelace".' });
const ExternalId = PlainText({ minLength: 1, maxLength: 100, description: 'The driver\'s id in another system (payroll, HR).' });
const Phone = Type.String({ minLength: 3, maxLength: 32, pattern: '^\\+?[0-9 ()./-]+$', description: 'e.g. "+49 30 1234567".' });
const Notes = PlainText({ maxLength: 2000, multiline: true });

export const Driver = named('Driver', Type.Object({
  id: DriverId,
  name: Type.String(),
  externalId: Type.Union([Type.String(), Type.Null()]),
  identifiers: Type.Array(DriverIdentifier),
  phone: Type.Union([Type.String(), Type.Null()]),
  notes: Type.Union([Type.String(), Type.Null()]),
  vehicleId: Type.Union([VehicleId, Type.Null()], { description: 'The vehicle of the driver\'s ongoing assignment, or null.' }),
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
}, { additionalProperties: false }), 'A person who drives the organization\'s vehicles.');

export const DriverCreation = named('DriverCreation', Type.Object({
  name: Name,
  externalId: Type.Optional(ExternalId),
  identifiers: Type.Optional(Identifiers),
  phone: Type.Optional(Phone),
  notes: Type.Optional(Notes),
}, { additionalProperties: false, examples: [{ name: 'Ada Lovelace', externalId: 'E-1024', identifiers: [{ kind: 'ibutton', value: '01A2B3C4D5E6F708' }] }] }), 'A driver to create.');
export type DriverCreation = Static<typeof DriverCreation>;

export const DriverPatch = named('DriverPatch', Type.Object({
  name: Type.Optional(Name),
  externalId: Type.Optional(Type.Union([ExternalId, Type.Null()])),
  identifiers: Type.Optional(Identifiers),
  phone: Type.Optional(Type.Union([Phone, Type.Null()])),
  notes: Type.Optional(Type.Union([Notes, Type.Null()])),
}, {
  additionalProperties: false, minProperties: 1,
  description: 'An RFC 7396 merge patch: null removes a member; `identifiers` replaces the list.',
  examples: [{ phone: '+49 30 1234567', externalId: null }],
}));
export type DriverPatch = Static<typeof DriverPatch>;

export const DriverIdParams = Type.Object({ id: DriverId }, { additionalProperties: false });

export const DriverListQuery = Type.Object({
  ...Paging,
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Only drivers whose name or externalId contains this (case-insensitive).' })),
}, { additionalProperties: false });

export const DriverList = named('DriverList', Type.Object({
  drivers: Type.Array(Driver, { description: 'Oldest first.' }),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
}, { additionalProperties: false }), 'A page of drivers.');

export const Assignment = named('DriverAssignment', Type.Object({
  id: AssignmentId,
  driverId: DriverId,
  vehicleId: VehicleId,
  startedAt: IsoTimestamp,
  endedAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'Null while ongoing.' }),
  source: Type.Union([Type.Literal('api'), Type.Literal('device')], { description: '`api`: made by a request; `device`: the vehicle\'s device reported the driver\'s identifier.' }),
}, { additionalProperties: false }), 'A driver at the wheel of a vehicle, from `startedAt` to `endedAt`.');

export const AssignmentCreation = named('DriverAssignmentCreation', Type.Object({
  driverId: DriverId,
  vehicleId: VehicleId,
  startedAt: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now. Not in the future, nor before the start of an ongoing assignment it ends.' })),
}, { additionalProperties: false, examples: [{ driverId: 'drv_4Lq9Zt2WbX7mKc1Np8Rs', vehicleId: 'van-042' }] }), 'Who drives which vehicle from when.');
export type AssignmentCreation = Static<typeof AssignmentCreation>;

export const AssignmentEnd = named('DriverAssignmentEnd', Type.Object({
  endedAt: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now. Not in the future, nor before the assignment started.' })),
}, { additionalProperties: false }), 'When the assignment ends.');

export const AssignmentIdParams = Type.Object({ id: AssignmentId }, { additionalProperties: false });

export const AssignmentListQuery = Type.Object({
  vehicleId: Type.Optional(VehicleId),
  driverId: Type.Optional(DriverId),
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Only assignments still ongoing at or after this time.' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'Only assignments that started before this time.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  cursor: Type.Optional(Type.String({ maxLength: 100, description: 'The `nextCursor` of the previous page.' })),
}, { additionalProperties: false });

export const AssignmentList = named('DriverAssignmentList', Type.Object({
  assignments: Type.Array(Assignment, { description: 'Newest start first.' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next (older) page; null on the last.' }),
}, { additionalProperties: false }), 'A page of driver assignments.');
