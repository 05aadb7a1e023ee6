// Vehicle schemas: they validate requests, serialize responses and make the OpenAPI document.
import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging, PlainText, commaListPattern } from '../schema/common.ts';
import { named } from '../schema/named.ts';

export const VEHICLE_STATUSES = ['registered', 'active', 'inactive', 'maintenance', 'retired'] as const;
export type VehicleStatus = (typeof VEHICLE_STATUSES)[number];

export const VEHICLE_TYPES = [
  'car', 'van', 'truck', 'bus', 'shuttle', 'motorcycle', 'scooter', 'bicycle', 'robot', 'drone', 'other',
] as const;
export type VehicleType = (typeof VEHICLE_TYPES)[number];

export const VehicleId = Type.String({
  pattern: '^[A-Za-z0-9._:-]{1,64}$',
  description: '1 to 64 characters of A-Z a-z 0-9 . _ : -, unique within the organization, case-sensitive.',
  examples: ['van-042'],
});

export const VehicleIdParams = Type.Object({ id: VehicleId }, { additionalProperties: false });

export const Location = named('Location', Type.Object(
  {
    lat: Type.Number({ minimum: -90, maximum: 90, description: 'WGS 84 latitude, decimal degrees.' }),
    lng: Type.Number({ minimum: -180, maximum: 180, description: 'WGS 84 longitude, decimal degrees.' }),
  },
  { additionalProperties: false, description: 'A position.', examples: [{ lat: 52.5200, lng: 13.4050 }] },
));

export const Status = named('VehicleStatus', Type.Enum(VEHICLE_STATUSES, { description: 'Vehicle status.' }));
const VehicleTypeSchema = named('VehicleType', Type.Enum(VEHICLE_TYPES, { description: 'Vehicle type.' }));

const configuration = Type.Object(
  {
    sensors: Type.Optional(
      Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_-]{0,31}$' }), {
        maxItems: 32,
        uniqueItems: true,
        description: 'Sensor kinds, e.g. gps, imu, lidar, radar, camera.',
      }),
    ),
    capacity: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Seats or cargo units, by the operator\'s convention.' }),
    ),
    autonomyLevel: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, description: 'SAE J3016 level.' })),
  },
  { additionalProperties: false, description: 'What the vehicle carries and can do.', examples: [{ sensors: ['gps', 'lidar'], capacity: 8, autonomyLevel: 4 }] },
);
export const Configuration = named('VehicleConfiguration', configuration);
export type Configuration = Static<typeof Configuration>;

const VehicleName = PlainText({ minLength: 1, maxLength: 200, description: 'A person\'s name for the vehicle (optional).' });

export const GROUP_ID_PATTERN = '^grp_[A-Za-z0-9]{20}$';
/** The groups a vehicle is in (docs/API.md "Vehicle groups"): ids of the organization's groups. */
const GroupIds = Type.Array(Type.String({ pattern: GROUP_ID_PATTERN }), {
  maxItems: 100, uniqueItems: true, description: 'The groups it is in; each must exist (404 `group-not-found`).',
});

export const RegisterVehicleBody = named('VehicleRegistration', Type.Object(
  { vehicleId: VehicleId, type: VehicleTypeSchema, name: Type.Optional(VehicleName), configuration: Type.Optional(Configuration), groupIds: Type.Optional(GroupIds) },
  {
    additionalProperties: false,
    description: 'A vehicle to register.',
    examples: [{ vehicleId: 'van-042', type: 'van', configuration: { sensors: ['gps'], capacity: 12, autonomyLevel: 0 } }],
  },
));
export type RegisterVehicleBody = Static<typeof RegisterVehicleBody>;

/** The most vehicles one batch registers (as a telemetry batch's records). */
export const MAX_REGISTRATION_BATCH = 1000;

export const RegisterVehiclesBody = Type.Object(
  { vehicles: Type.Array(RegisterVehicleBody, { minItems: 1, maxItems: MAX_REGISTRATION_BATCH, description: `1 to ${MAX_REGISTRATION_BATCH} vehicles, each id once.` }) },
  {
    additionalProperties: false,
    description: 'Vehicles to register in one request.',
    examples: [{ vehicles: [{ vehicleId: 'van-042', type: 'van' }, { vehicleId: 'van-043', type: 'van', groupIds: ['grp_7Qm2Lw9ZbT4kX1cNp8Rs'] }] }],
  },
);
export type RegisterVehiclesBody = Static<typeof RegisterVehiclesBody>;

export const RegistrationOutcome = Type.Union([Type.Literal('created'), Type.Literal('exists')], {
  description: '`created`: registered now; `exists`: the id was taken already and that vehicle is left as it was.',
});

export const RegisterVehiclesResult = named('VehicleBatchRegistration', Type.Object(
  {
    created: Type.Integer({ minimum: 0, description: 'How many vehicles were registered.' }),
    existing: Type.Integer({ minimum: 0, description: 'How many ids were taken already.' }),
    vehicles: Type.Array(Type.Object({ id: VehicleId, outcome: RegistrationOutcome }, { additionalProperties: false }), {
      description: 'Each vehicle of the request, in its order.',
    }),
  },
  { additionalProperties: false, description: 'What a batch registration did, vehicle by vehicle.' },
));
export type RegisterVehiclesResult = Static<typeof RegisterVehiclesResult>;

const listItemProperties = {
  id: VehicleId,
  type: VehicleTypeSchema,
  name: Type.Union([Type.String(), Type.Null()], { description: 'A person\'s name for the vehicle; null when it has none.' }),
  status: Status,
  location: Type.Union([Location, Type.Null()], { description: 'Last known position; null before any telemetry.' }),
  battery: Type.Union([Type.Number(), Type.Null()], { description: 'Last known state of charge, percent.' }),
  lastUpdate: Type.Union([IsoTimestamp, Type.Null()], { description: 'Time of the newest telemetry.' }),
  groupIds: Type.Array(Type.String(), { description: 'The groups it is in, by id; empty when none.' }),
};

export const VehicleListItem = named('VehicleSummary', Type.Object(listItemProperties, {
  additionalProperties: false, description: 'A vehicle as lists show it: identity, status and last known state.',
}));
export type VehicleListItem = Static<typeof VehicleListItem>;

export const VehicleDetails = named('Vehicle', Type.Object(
  {
    ...listItemProperties,
    configuration: Configuration,
    createdAt: IsoTimestamp,
    updatedAt: IsoTimestamp,
    statusChangedAt: IsoTimestamp,
    driverId: Type.Union([Type.String(), Type.Null()], { description: 'The driver of its ongoing assignment (docs/API.md "Drivers"), or null.' }),
  },
  {
    additionalProperties: false,
    description: 'A vehicle: identity, status, configuration and last known state.',
    examples: [
      {
        id: 'van-042', type: 'van', name: 'Van 42', status: 'registered', location: null, battery: null, lastUpdate: null, groupIds: [],
        configuration: { sensors: ['gps'], capacity: 12, autonomyLevel: 0 },
        createdAt: '2026-11-22T08:30:00.000Z', updatedAt: '2026-11-22T08:30:00.000Z', statusChangedAt: '2026-11-22T08:30:00.000Z', driverId: null,
      },
    ],
  },
));
export type VehicleDetails = Static<typeof VehicleDetails>;

/** A configuration patch: each field may be null, which removes it (RFC 7396). */
const ConfigurationPatch = Type.Object(
  {
    sensors: Type.Optional(Type.Union([configuration.properties.sensors, Type.Null()])),
    capacity: Type.Optional(Type.Union([configuration.properties.capacity, Type.Null()])),
    autonomyLevel: Type.Optional(Type.Union([configuration.properties.autonomyLevel, Type.Null()])),
  },
  { additionalProperties: false },
);

export const PatchVehicleBody = named('VehiclePatch', Type.Object(
  {
    type: Type.Optional(VehicleTypeSchema),
    name: Type.Optional(Type.Union([VehicleName, Type.Null()], { description: 'null removes the name.' })),
    configuration: Type.Optional(Type.Union([ConfigurationPatch, Type.Null()], { description: 'Merged into the configuration; null clears it.' })),
    groupIds: Type.Optional(GroupIds),
  },
  {
    additionalProperties: false,
    description: 'An RFC 7396 merge patch. `status` is changed with PUT .../status; `id` and `createdAt` cannot change.',
    examples: [{ name: 'Van 42', configuration: { capacity: 10, sensors: null } }],
  },
));
export type PatchVehicleBody = Static<typeof PatchVehicleBody>;

export const VehicleListQuery = Type.Object(
  {
    status: Type.Optional(Type.String({
      pattern: commaListPattern(VEHICLE_STATUSES),
      description: `One status or several, comma-separated: ${VEHICLE_STATUSES.join(', ')}.`,
      examples: ['active,maintenance'],
    })),
    type: Type.Optional(Type.String({
      pattern: commaListPattern(VEHICLE_TYPES),
      description: `One type or several, comma-separated: ${VEHICLE_TYPES.join(', ')}.`,
      examples: ['van'],
    })),
    groupId: Type.Optional(Type.String({ pattern: GROUP_ID_PATTERN, description: 'Only the vehicles in this group.' })),
    ...Paging,
  },
  { additionalProperties: false },
);
export type VehicleListQuery = Static<typeof VehicleListQuery>;

export const VehicleList = named('VehicleList', Type.Object(
  {
    vehicles: Type.Array(VehicleListItem),
    total: Type.Integer({ description: 'Vehicles matching the filters, on all pages.' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { additionalProperties: false, description: 'A page of vehicles.' },
));

export const StatusChangeBody = named('VehicleStatusChange', Type.Object(
  { status: Status, reason: Type.Optional(PlainText({ maxLength: 500, multiline: true })) },
  { additionalProperties: false, description: 'The status to move to, and why.', examples: [{ status: 'maintenance', reason: 'Brake inspection' }] },
));
export type StatusChangeBody = Static<typeof StatusChangeBody>;

export const StatusHistoryEntry = named('VehicleStatusHistoryEntry', Type.Object(
  {
    from: Type.Union([Status, Type.Null()], { description: 'Null for the registration itself.' }),
    to: Status,
    reason: Type.Union([Type.String(), Type.Null()]),
    at: IsoTimestamp,
    by: Type.String({ description: 'Id of the credential that made the change, or `system`.' }),
  },
  { additionalProperties: false, description: 'One change of a vehicle\'s status.' },
));

export const StatusHistoryQuery = Type.Object(Paging, { additionalProperties: false });
export type StatusHistoryQuery = Static<typeof StatusHistoryQuery>;

export const StatusHistory = named('VehicleStatusHistory', Type.Object(
  {
    vehicleId: VehicleId,
    history: Type.Array(StatusHistoryEntry, { description: 'Newest first.' }),
    total: Type.Integer(),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { additionalProperties: false, description: 'A page of a vehicle\'s status changes.' },
));
