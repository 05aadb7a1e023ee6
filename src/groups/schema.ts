import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging, PlainText } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { GROUP_ID_PATTERN, VehicleIdParams } from '../vehicles/schema.ts';

/** A vehicle group's id. */
export const GroupId = Type.String({ pattern: GROUP_ID_PATTERN, examples: ['grp_7Qm2Lw9ZbT4kX1cNp8Rs'] });
const Name = PlainText({ minLength: 1, maxLength: 100, description: 'e.g. "Berlin vans".' });
const Description = PlainText({ maxLength: 500, multiline: true, description: 'What the group is for.' });

/** The groups a user, API key or OAuth client is limited to (docs/API.md "Scoped credentials"). */
export const CredentialGroups = Type.Array(GroupId, {
  minItems: 1, maxItems: 100, uniqueItems: true,
  description: 'The vehicle groups the credential is limited to: it sees a vehicle only while the vehicle is in one of them. ' +
    'Such a credential cannot hold the organization-wide scopes (admin, users, webhooks, audit:read, rules, metrics:read). Absent: the whole organization.',
});

export const GroupIdParams = Type.Object({ id: GroupId }, { additionalProperties: false });
export const GroupVehicleParams = Type.Object({ id: GroupId, vehicleId: VehicleIdParams.properties.id }, { additionalProperties: false });

export const Group = named('VehicleGroup', Type.Object({
  id: GroupId,
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  vehicleCount: Type.Integer({ description: 'Vehicles in the group now.' }),
  createdAt: IsoTimestamp,
  updatedAt: IsoTimestamp,
}, { additionalProperties: false }), 'A named set of the organization\'s vehicles.');

export const GroupCreation = named('VehicleGroupCreation', Type.Object({
  name: Name,
  description: Type.Optional(Description),
}, { additionalProperties: false, examples: [{ name: 'Berlin vans', description: 'Depot Tempelhof' }] }), 'A group to create.');
export type GroupCreation = Static<typeof GroupCreation>;

export const GroupChange = named('VehicleGroupChange', Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Type.Union([Description, Type.Null()], { description: 'null removes it.' })),
}, { additionalProperties: false, minProperties: 1 }), 'What to change of a group.');
export type GroupChange = Static<typeof GroupChange>;

export const GroupListQuery = Type.Object(Paging, { additionalProperties: false });

export const GroupList = named('VehicleGroupList', Type.Object({
  groups: Type.Array(Group, { description: 'Oldest first.' }),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
}, { additionalProperties: false }), 'A page of groups.');

export const GroupMembersBody = named('VehicleGroupMembers', Type.Object({
  vehicleIds: Type.Array(VehicleIdParams.properties.id, { minItems: 1, maxItems: 1000, uniqueItems: true }),
}, { additionalProperties: false, examples: [{ vehicleIds: ['van-042', 'van-043'] }] }), 'Vehicles to put in the group.');
