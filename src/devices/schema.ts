// Device schemas: they validate requests, serialize responses and make the OpenAPI document.
import { Type, type Static } from 'typebox';
import { IsoTimestamp, Paging } from '../schema/common.ts';
import { VehicleId } from '../vehicles/schema.ts';
import { named } from '../schema/named.ts';

export const PROTOCOLS = ['osmand', 'teltonika'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** What each protocol's identifiers look like beyond the common pattern. */
export const IDENTIFIER_RULES: Record<Protocol, { pattern: RegExp; message: string }> = {
  osmand: { pattern: /^[A-Za-z0-9._:-]{1,64}$/, message: 'must be 1 to 64 characters of A-Z a-z 0-9 . _ : -' },
  teltonika: { pattern: /^\d{15}$/, message: 'must be the tracker\'s 15-digit IMEI' },
};

const ProtocolSchema = Type.Enum(PROTOCOLS, { description: 'The protocol the device speaks.' });

export const DeviceIdentifier = Type.String({
  pattern: '^[A-Za-z0-9._:-]{1,64}$',
  description:
    'What the device calls itself: the app\'s device id for `osmand` (1 to 64 characters of A-Z a-z 0-9 . _ : -), ' +
    'the 15-digit IMEI for `teltonika`. Unique per protocol across the whole service.',
  examples: ['356307042441013'],
});

export const DeviceId = Type.String({ pattern: '^dev_[A-Za-z0-9_-]{16}$', description: 'Assigned by the service.', examples: ['dev_3q2Yx1lK0m9Zb7aQ'] });

export const DeviceIdParams = Type.Object({ id: DeviceId }, { additionalProperties: false });

export const RegisterDeviceBody = named('DeviceRegistration', Type.Object(
  { protocol: ProtocolSchema, identifier: DeviceIdentifier, vehicleId: VehicleId },
  { additionalProperties: false, examples: [{ protocol: 'teltonika', identifier: '356307042441013', vehicleId: 'van-042' }] },
), 'A device to register for a vehicle.');
export type RegisterDeviceBody = Static<typeof RegisterDeviceBody>;

export const Device = named('Device', Type.Object(
  {
    id: DeviceId,
    protocol: ProtocolSchema,
    identifier: DeviceIdentifier,
    vehicleId: VehicleId,
    createdAt: IsoTimestamp,
    lastSeenAt: Type.Union([IsoTimestamp, Type.Null()], {
      description: 'When the device last sent data that was stored; null before that. May lag by up to a minute.',
    }),
  },
  {
    additionalProperties: false,
    examples: [{
      id: 'dev_3q2Yx1lK0m9Zb7aQ', protocol: 'teltonika', identifier: '356307042441013', vehicleId: 'van-042',
      createdAt: '2026-11-22T08:30:00.000Z', lastSeenAt: null,
    }],
  },
), 'A tracker registered for a vehicle.');

export const DeviceListQuery = Type.Object(
  { vehicleId: Type.Optional(VehicleId), ...Paging },
  { additionalProperties: false },
);
export type DeviceListQuery = Static<typeof DeviceListQuery>;

export const DeviceList = named('DeviceList', Type.Object(
  {
    devices: Type.Array(Device),
    total: Type.Integer({ description: 'Devices matching the query, on all pages.' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { additionalProperties: false },
), 'A page of devices.');
