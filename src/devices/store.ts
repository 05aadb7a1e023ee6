import type { Protocol } from './schema.ts';

export interface DeviceRecord {
  id: string;
  organizationId: string;
  protocol: Protocol;
  identifier: string;
  vehicleId: string;
  /** ms since the epoch */
  createdAt: number;
  lastSeenAt: number | null;
}

export interface DeviceFilter {
  vehicleId?: string;
  /** Only devices of vehicles in at least one of these groups (a credential limited to groups). */
  anyOfGroups?: readonly string[];
  limit: number;
  offset: number;
}

/**
 * Persistence of devices. Every call but `find` names the organization. `find` is the one lookup
 * across organizations: a device presents only its identifier, which is therefore unique per
 * protocol across the whole service.
 */
export interface DeviceStore {
  /**
   * Stores the device unless its identifier is taken for its protocol (by anyone: `exists`) or
   * its vehicle does not exist in its organization (`no-vehicle`), or the organization has
   * `maxPerOrganization` devices already (`quota`).
   */
  insert(device: DeviceRecord, maxPerOrganization?: number): Promise<'created' | 'exists' | 'no-vehicle' | 'quota'>;
  get(organizationId: string, id: string): Promise<DeviceRecord | undefined>;
  /** Oldest first (then by id), so pages are stable. */
  list(organizationId: string, filter: DeviceFilter): Promise<{ devices: DeviceRecord[]; total: number }>;
  /** The protocols of the vehicle's devices, each once, in no order (a command's default channel). */
  protocolsOf(organizationId: string, vehicleId: string): Promise<Protocol[]>;
  delete(organizationId: string, id: string): Promise<boolean>;
  find(protocol: Protocol, identifier: string): Promise<DeviceRecord | undefined>;
  /** Records when devices were last heard from, in one write; a stored time never moves back. */
  touch(seen: ReadonlyArray<{ id: string; at: number }>): Promise<void>;
}
