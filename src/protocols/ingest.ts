// What every device protocol shares: who a device is (by the identifier it presents), and its
// records committed through the one ingest function HTTP and MQTT use, so they are validated,
// de-duplicated and committed (all or nothing, durably) exactly as theirs are.
import type { DeviceService } from '../devices/service.ts';
import type { DeviceRecord } from '../devices/store.ts';
import type { TelemetryService } from '../telemetry/service.ts';
import type { TelemetryData } from '../telemetry/schema.ts';

export interface DeviceTelemetry {
  /** ISO 8601; the time received when absent. */
  timestamp?: string;
  data: TelemetryData;
}

export type ProtocolIngest = ReturnType<typeof createProtocolIngest>;

export function createProtocolIngest(deps: {
  devices: Pick<DeviceService, 'resolve' | 'seen'>;
  telemetry: Pick<TelemetryService, 'ingestForVehicle'>;
}) {
  const { devices, telemetry } = deps;
  return {
    resolve: devices.resolve,
    /** Resolves once the records are durably committed; throws AppError as the telemetry service does. */
    async ingest(device: DeviceRecord, records: DeviceTelemetry[]) {
      const result = await telemetry.ingestForVehicle(device.organizationId, device.vehicleId, { records }, device.protocol);
      devices.seen(device.id);
      return result;
    },
  };
}
