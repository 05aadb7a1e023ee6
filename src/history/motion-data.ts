// The fields the trip machine reads (location, speed, odometer), read straight from a record's
// stored JSON text (telemetry/stored-text.ts) without building the rest of it: a day at 1 Hz is
// 86,400 records, and parsing each whole was most of what trips and stops cost.
import { type Fields, SLOT, findFields, newFields } from '../telemetry/stored-text.ts';
import type { MotionRecord } from './trips.ts';

export type MotionData = MotionRecord['data'];

const fields: Fields = newFields();
const present = (slot: number) => fields.spans[slot * 3] !== -1;

/**
 * The location, speed and odometer of text as the store writes it, as JSON.parse would give them;
 * `undefined` for text of any other shape.
 */
export function readMotionData(stored: string): MotionData | undefined {
  if (!findFields(stored, fields)) return undefined;
  const { numbers } = fields;
  const data: MotionData = {};
  if (present(SLOT.location)) data.location = { lat: numbers[SLOT.lat]!, lng: numbers[SLOT.lng]! };
  if (present(SLOT.speed)) data.speed = numbers[SLOT.speed]!;
  if (present(SLOT.odometer)) data.odometer = numbers[SLOT.odometer]!;
  return data;
}

/** The location, speed and odometer of a record's stored JSON text, as JSON.parse would give them. */
export function motionData(stored: string): MotionData {
  const read = readMotionData(stored);
  if (read !== undefined) return read;
  const { location, speed, odometer } = JSON.parse(stored) as MotionData;
  const data: MotionData = {};
  if (location !== undefined) data.location = location;
  if (speed !== undefined) data.speed = speed;
  if (odometer !== undefined) data.odometer = odometer;
  return data;
}
