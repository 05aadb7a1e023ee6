// Persistence of device commands. Every call but `due` names the organization. A change of status
// is written with its event in one transaction, and only while the command is still in a status
// it may leave that way: two nodes (or a device's answer and a timeout) racing for one command
// cannot both move it.
import type { EventRecord } from '../events/types.ts';
import type { ChannelName, CommandChange, CommandRecord, CommandStatus } from './model.ts';

export interface CommandListFilter {
  statuses?: readonly CommandStatus[];
  /** Only commands older than this id (the page before). */
  before?: string;
  limit: number;
}

export interface CommandStore {
  /**
   * Stores a new queued command with its event, unless the vehicle already has `maxUnfinished`
   * commands queued or sent (`full`) or is not there (`no-vehicle`), counted in the same transaction.
   */
  insert(command: CommandRecord, event: EventRecord, maxUnfinished: number): Promise<'created' | 'full' | 'no-vehicle'>;
  get(organizationId: string, id: string): Promise<CommandRecord | undefined>;
  /** A vehicle's commands, newest first. */
  list(organizationId: string, vehicleId: string, filter: CommandListFilter): Promise<CommandRecord[]>;
  /**
   * Applies `change` while the command's status is one of `from`, with the event `eventOf` makes
   * of the changed command; undefined when the command is gone or in another status by now.
   */
  change(
    organizationId: string, id: string, from: readonly CommandStatus[], change: CommandChange,
    eventOf: (changed: CommandRecord) => EventRecord,
  ): Promise<{ command: CommandRecord; event: EventRecord } | undefined>;
  /** The vehicle's (undefined: every vehicle's) queued commands for `channel` not expired at `now`, oldest first. */
  queued(organizationId: string, vehicleId: string | undefined, channel: ChannelName, now: number, limit: number): Promise<CommandRecord[]>;
  /** Across organizations: queued commands expired at `now`, and sent ones sent at or before `sentBefore`. */
  due(now: number, sentBefore: number, limit: number): Promise<CommandRecord[]>;
}
