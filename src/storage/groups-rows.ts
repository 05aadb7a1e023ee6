// The vehicle_groups table's columns and rows, the same on both stores.
import type { GroupWithCount } from '../groups/store.ts';
import type { Row } from './rows.ts';

export const GROUP_COLUMNS = 'organization_id, id, name, description, created_at, updated_at';

/** The select list of a group with its member count, over `vehicle_groups` (not aliased). */
export const GROUP_READ = `${GROUP_COLUMNS}, (SELECT count(*) FROM vehicle_group_members m
  WHERE m.organization_id = vehicle_groups.organization_id AND m.group_id = vehicle_groups.id) AS vehicle_count`;

export function toGroup(row: Row): GroupWithCount {
  return {
    organizationId: row.organization_id as string,
    id: row.id as string,
    name: row.name as string,
    description: (row.description as string | null | undefined) ?? null,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    vehicleCount: Number(row.vehicle_count),
  };
}
