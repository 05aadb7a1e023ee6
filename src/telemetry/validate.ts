// The one place a telemetry record is judged valid, whatever path it came by (HTTP, MQTT).
// A batch is all-or-nothing: every bad record is named by its index and JSON Pointer path.
import { AppError, type FieldError } from '../errors.ts';
import { compileDataValidator, toFieldErrors } from '../schema/validation.ts';
import {
  type FleetRecordInput,
  FleetRecordsInput,
  MAX_FUTURE_MS,
  type TelemetryData,
  VehicleRecordInput,
  VehicleRecordsInput,
} from './schema.ts';
import type { StoredRecord } from './store.ts';

const validVehicleRecord = compileDataValidator<VehicleRecordInput>(VehicleRecordInput);
const validVehicleRecords = compileDataValidator<{ records: VehicleRecordInput[] }>(VehicleRecordsInput);
const validFleetRecords = compileDataValidator<{ records: FleetRecordInput[] }>(FleetRecordsInput);

type Input = { vehicleId: string; timestamp?: string | undefined; data: TelemetryData };

function refuse(errors: FieldError[]): never {
  const shown = errors.slice(0, 5).map((e) => `${e.path || '/'} ${e.message}`).join('; ');
  const more = errors.length > 5 ? ` (and ${errors.length - 5} more)` : '';
  throw new AppError('validation-failed', `Invalid telemetry, nothing stored: ${shown}${more}.`, { errors });
}

/** Timestamps to ms, defaulting to the receive time; refuses any too far in the future. */
function stamp(inputs: readonly Input[], pathOf: (index: number) => string, now: number): StoredRecord[] {
  const errors: FieldError[] = [];
  const records = inputs.map((input, index): StoredRecord => {
    const timestamp = input.timestamp === undefined ? now : Date.parse(input.timestamp);
    if (timestamp > now + MAX_FUTURE_MS) {
      errors.push({ in: 'body', path: `${pathOf(index)}/timestamp`, message: 'is more than 5 minutes in the future' });
    } else if (timestamp < 0) {
      errors.push({ in: 'body', path: `${pathOf(index)}/timestamp`, message: 'is before 1970' });
    }
    return { vehicleId: input.vehicleId, timestamp, data: input.data };
  });
  if (errors.length > 0) refuse(errors);
  return records;
}

/** `{timestamp?, data}` or `{records: [...]}` for one vehicle. */
export function vehicleRecords(vehicleId: string, body: unknown, now: number): StoredRecord[] {
  if (typeof body === 'object' && body !== null && 'records' in body) {
    if (!validVehicleRecords(body)) refuse(toFieldErrors(validVehicleRecords.errors ?? [], 'body'));
    return stamp(body.records.map((r) => ({ ...r, vehicleId })), (i) => `/records/${i}`, now);
  }
  if (!validVehicleRecord(body)) refuse(toFieldErrors(validVehicleRecord.errors ?? [], 'body'));
  return stamp([{ ...body, vehicleId }], () => '', now);
}

/** `{records: [{vehicleId, timestamp?, data}, ...]}` for many vehicles. */
export function fleetRecords(body: unknown, now: number): StoredRecord[] {
  if (!validFleetRecords(body)) refuse(toFieldErrors(validFleetRecords.errors ?? [], 'body'));
  return stamp(body.records, (i) => `/records/${i}`, now);
}
