// What every device protocol shares: who a device is (by the identifier it presents, behind the
// guard against guessing identifiers), and its records committed through the one ingest function
// HTTP and MQTT use, so they are validated, de-duplicated and committed (all or nothing, durably)
// exactly as theirs are.
import { IDENTIFIER_RULES, type Protocol } from '../devices/schema.ts';
import type { DeviceService } from '../devices/service.ts';
import type { DeviceRecord } from '../devices/store.ts';
import type { TelemetryService } from '../telemetry/service.ts';
import type { TelemetryData } from '../telemetry/schema.ts';
import type { DeviceGuard } from './guard.ts';

export interface DeviceTelemetry {
  /** ISO 8601; the time received when absent. */
  timestamp?: string;
  data: TelemetryData;
}

/** What came of a device presenting its identifier. */
export type Admission =
  | { status: 'admitted'; device: DeviceRecord }
  /** The address presented too many unknown identifiers: not looked up, so a hit is not told from a miss. */
  | { status: 'held-back'; retryAfterSeconds: number }
  | { status: 'unknown' };

export type ProtocolIngest = ReturnType<typeof createProtocolIngest>;

export function createProtocolIngest(deps: {
  devices: Pick<DeviceService, 'resolve' | 'seen'>;
  telemetry: Pick<TelemetryService, 'ingestForVehicle'>;
  guard: DeviceGuard;
}) {
  const { devices, telemetry, guard } = deps;
  return {
    /**
     * The registered device an identifier presented from `address` names, as guard.ts allows: an
     * identifier no device is registered with counts against its address. One that no device of
     * the protocol could have (registration checks the same rule) is unknown without a lookup.
     */
    async admit(protocol: Protocol, identifier: string, address: string | undefined): Promise<Admission> {
      const wait = guard.heldBack(protocol, address);
      if (wait > 0) return { status: 'held-back', retryAfterSeconds: wait };
      const device = IDENTIFIER_RULES[protocol].pattern.test(identifier) ? await devices.resolve(protocol, identifier) : undefined;
      if (device === undefined) {
        guard.unknown(protocol, address, identifier);
        return { status: 'unknown' };
      }
      return { status: 'admitted', device };
    },
    /** An admitted device as registered now; undefined once it (or its vehicle) is gone. */
    current(device: DeviceRecord): Promise<DeviceRecord | undefined> {
      return devices.resolve(device.protocol, device.identifier);
    },
    /** Resolves once the records are durably committed; throws AppError as the telemetry service does. */
    async ingest(device: DeviceRecord, records: DeviceTelemetry[]) {
      const result = await telemetry.ingestForVehicle(device.organizationId, device.vehicleId, { records }, device.protocol);
      devices.seen(device.id);
      return result;
    },
  };
}
