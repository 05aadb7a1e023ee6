// Device commands on PostgreSQL (commands/store.ts). A change of status is one conditional UPDATE,
// so two nodes racing for one command (a device's answer here, the sweep there) cannot both move it.
import type { CommandStore } from '../../commands/store.ts';
import type { CommandRecord } from '../../commands/model.ts';
import { COMMAND_COLUMNS as COLUMNS, commandOf } from '../command-rows.ts';
import type { Database } from './database.ts';
import { appendEvents } from './events.ts';


export function createPostgresCommandStore(db: Database): CommandStore {
  return {
    async insert(c, event, maxUnfinished) {
      return db.transaction(async (client) => {
        // The vehicle row is locked: its commands are counted one insert at a time, and a deletion waits.
        const vehicle = await client.query({
          name: 'commands.vehicle', text: 'SELECT 1 FROM vehicles WHERE organization_id = $1 AND id = $2 FOR NO KEY UPDATE', values: [c.organizationId, c.vehicleId],
        });
        if (vehicle.rowCount === 0) return 'no-vehicle';
        const { rows } = await client.query<{ n: number }>({
          name: 'commands.unfinished',
          text: `SELECT count(*)::int AS n FROM commands WHERE organization_id = $1 AND vehicle_id = $2 AND status IN ('queued', 'sent')`,
          values: [c.organizationId, c.vehicleId],
        });
        if (rows[0]!.n >= maxUnfinished) return 'full';
        await client.query({
          name: 'commands.insert',
          text: `INSERT INTO commands (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
          values: [
            c.id, c.organizationId, c.vehicleId, c.type, JSON.stringify(c.params), c.channel, c.status, c.createdAt,
            c.createdBy.type, c.createdBy.id, c.expiresAt, c.sentAt, c.completedAt, c.result, c.error,
          ],
        });
        await appendEvents(client, [event], c.createdAt);
        return 'created';
      });
    },

    async get(organizationId, id) {
      const { rows } = await db.query({ name: 'commands.get', text: `SELECT ${COLUMNS} FROM commands WHERE organization_id = $1 AND id = $2`, values: [organizationId, id] });
      return rows[0] === undefined ? undefined : commandOf(rows[0]);
    },

    async list(organizationId, vehicleId, filter) {
      const { rows } = await db.query({
        name: 'commands.list',
        text: `SELECT ${COLUMNS} FROM commands WHERE organization_id = $1 AND vehicle_id = $2 AND id < $3
               AND ($4::text[] IS NULL OR status = ANY($4)) ORDER BY id DESC LIMIT $5`,
        values: [organizationId, vehicleId, filter.before ?? '~', filter.statuses ?? null, filter.limit],
      });
      return rows.map(commandOf);
    },

    async change(organizationId, id, from, change, eventOf) {
      return db.transaction(async (client) => {
        const sent = change.status === 'sent';
        const { rows } = await client.query({
          name: 'commands.change',
          text: `UPDATE commands SET status = $3,
                   sent_at = CASE WHEN $6 THEN $4::bigint ELSE sent_at END,
                   completed_at = CASE WHEN $6 THEN NULL ELSE $4::bigint END,
                   result = CASE WHEN $7 THEN result ELSE $8 END,
                   error = CASE WHEN $9 THEN error ELSE $10 END
                 WHERE organization_id = $1 AND id = $2 AND status = ANY($5) RETURNING ${COLUMNS}`,
          values: [
            organizationId, id, change.status, change.at, from, sent,
            change.result === undefined, change.result ?? null, change.error === undefined, change.error ?? null,
          ],
        });
        if (rows[0] === undefined) return undefined;
        const command: CommandRecord = commandOf(rows[0]);
        const event = eventOf(command);
        await appendEvents(client, [event], change.at);
        return { command, event };
      });
    },

    async queued(organizationId, vehicleId, channel, now, limit) {
      const { rows } = await db.query({
        name: 'commands.queued',
        text: `SELECT ${COLUMNS} FROM commands WHERE organization_id = $1 AND ($2::text IS NULL OR vehicle_id = $2) AND channel = $3
               AND status IN ('queued', 'sent') AND status = 'queued' AND expires_at > $4 ORDER BY id LIMIT $5`,
        values: [organizationId, vehicleId ?? null, channel, now, limit],
      });
      return rows.map(commandOf);
    },

    async due(now, sentBefore, limit) {
      const { rows } = await db.query({
        name: 'commands.due',
        text: `(SELECT ${COLUMNS} FROM commands WHERE status = 'queued' AND expires_at <= $1 LIMIT $3)
               UNION ALL (SELECT ${COLUMNS} FROM commands WHERE status = 'sent' AND sent_at <= $2 LIMIT $3)`,
        values: [now, sentBefore, limit],
      });
      return rows.map(commandOf);
    },
  };
}
