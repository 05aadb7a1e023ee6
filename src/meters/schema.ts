// Meter schemas (docs/API.md "Meters").
import { Type, type Static } from 'typebox';
import { IsoTimestamp } from '../schema/common.ts';
import { named } from '../schema/named.ts';
import { VehicleId } from '../vehicles/schema.ts';

/** The largest value either meter is set to: ten million km, or hours. */
const MAX_METER = 10_000_000;

export const Meters = named('VehicleMeters', Type.Object(
  {
    vehicleId: VehicleId,
    odometerKm: Type.Number({ description: 'The latest reported `odometer` plus the offset a setting made; for a vehicle that never reported one, the sum of the distances between its consecutive located records. To the metre.' }),
    engineHours: Type.Number({ description: 'Over consecutive records at most 3600 s apart, the time from each record with `ignition: true` to the next. To the thousandth of an hour.' }),
    updatedAt: Type.Union([IsoTimestamp, Type.Null()], { description: 'The time of the record or setting that last changed them; null before any.' }),
  },
  { additionalProperties: false, examples: [{ vehicleId: 'van-042', odometerKm: 48211.532, engineHours: 1890.25, updatedAt: '2026-11-22T08:30:00.000Z' }] },
), 'A vehicle\'s odometer and engine hours, kept as its records are committed.');

export const MetersSetting = named('VehicleMetersSetting', Type.Object(
  {
    odometerKm: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_METER, description: 'The odometer now, km; later records add to it.' })),
    engineHours: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_METER, description: 'The engine hours now; later records add to them.' })),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ odometerKm: 48000, engineHours: 1890 }] },
), 'The current values of one meter or both (at least one).');
export type MetersSetting = Static<typeof MetersSetting>;
