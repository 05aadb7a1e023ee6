// The fields the trip machine reads (location, speed, odometer), read straight from a record's
// stored JSON text (telemetry/stored-text.ts) without building the rest of it: a day at 1 Hz is
// 86,400 records, and parsing each whole was most of what trips and stops cost.
import { type Fields, SLOT, findFields, newFields, present, valueText } from '../telemetry/stored-text.ts';
import type { MotionRecord } from './trips.ts';

export type MotionData = MotionRecord['data'];

const fields: Fields = newFields();

/** The three fields, those absent left out (as JSON.parse leaves them). */
function motionOf(location: MotionData['location'], speed: number | undefined, odometer: number | undefined): MotionData {
  const data: MotionData = {};
  if (location !== undefined) data.location = location;
  if (speed !== undefined) data.speed = speed;
  if (odometer !== undefined) data.odometer = odometer;
  return data;
}

/**
 * The location, speed and odometer of text as the store writes it, as JSON.parse would give them;
 * `undefined` for text of any other shape.
 */
export function readMotionData(stored: string): MotionData | undefined {
  if (!findFields(stored, fields)) return undefined;
  const { numbers } = fields;
  const number = (slot: number) => (present(fields, slot) ? numbers[slot] : undefined);
  return motionOf(present(fields, SLOT.location) ? { lat: numbers[SLOT.lat]!, lng: numbers[SLOT.lng]! } : undefined, number(SLOT.speed), number(SLOT.odometer));
}

/** The location, speed and odometer of a record's stored JSON text, as JSON.parse would give them. */
export function motionData(stored: string): MotionData {
  const read = readMotionData(stored);
  if (read !== undefined) return read;
  const { location, speed, odometer } = JSON.parse(stored) as MotionData;
  return motionOf(location, speed, odometer);
}

/** What the summary rollups read of a record (reports/rollup.ts): the motion fields and `ignition`. */
export type RollupData = MotionData & { ignition?: boolean };

/** The rollups' fields of a record's stored JSON text, as JSON.parse would give them (a replay reads a vehicle's history with it). */
export function rollupData(stored: string): RollupData {
  const read: RollupData | undefined = readMotionData(stored);
  if (read === undefined) {
    const { location, speed, odometer, ignition } = JSON.parse(stored) as RollupData;
    return { ...motionOf(location, speed, odometer), ...(ignition === undefined ? {} : { ignition }) };
  }
  // `fields` still holds what readMotionData found in this text.
  if (present(fields, SLOT.ignition)) read.ignition = valueText(fields, stored, SLOT.ignition) === 'true';
  return read;
}
