// Command rows to records, for both backends (params arrive as JSON text from SQLite, parsed from PostgreSQL's jsonb).
import type { ChannelName, CommandParams, CommandRecord, CommandStatus, CommandType } from '../commands/model.ts';
import type { Row } from './rows.ts';

export const COMMAND_COLUMNS = 'id, organization_id, vehicle_id, type, params, channel, status, created_at, created_by_type, created_by_id, expires_at, sent_at, completed_at, result, error';

const numberOrNull = (value: unknown) => (value === null || value === undefined ? null : Number(value));

export function commandOf(row: Row): CommandRecord {
  return {
    id: row.id as string,
    organizationId: row.organization_id as string,
    vehicleId: row.vehicle_id as string,
    type: row.type as CommandType,
    params: (typeof row.params === 'string' ? JSON.parse(row.params) : row.params) as CommandParams,
    channel: row.channel as ChannelName,
    status: row.status as CommandStatus,
    createdAt: Number(row.created_at),
    createdBy: { type: row.created_by_type as string, id: row.created_by_id as string },
    expiresAt: Number(row.expires_at),
    sentAt: numberOrNull(row.sent_at),
    completedAt: numberOrNull(row.completed_at),
    result: (row.result as string | null) ?? null,
    error: (row.error as string | null) ?? null,
  };
}
