// The seam between commands and the device protocols (docs/ARCHITECTURE.md "A device channel per
// protocol"): each protocol that can carry commands offers a channel; the commands service asks
// the channels, never a protocol's code, and a channel asks the service back through a link.
import type { ChannelName, CommandRecord } from './model.ts';

export interface CommandChannel {
  readonly name: ChannelName;
  /** Whether a device of the vehicle is connected to this node now (MQTT: subscribed to its commands). */
  connected(organizationId: string, vehicleId: string): boolean;
  /**
   * A command was queued for a vehicle: sent now when a device of the vehicle is connected here
   * and free, else it waits in the store for the device (the channel takes it from there).
   */
  offer(command: CommandRecord): void;
}

/** The outcome a device gave a sent command (or the lack of one). */
export type CommandOutcome =
  | { status: 'succeeded'; result: string | null }
  | { status: 'failed'; error: string; result?: string | null }
  | { status: 'timed_out'; error: string };

/** What a channel asks of the commands service: each call moves a command only if it is still where it should be. */
export interface CommandLink {
  /** The vehicle's (undefined: every vehicle's) queued commands for the channel, oldest first, not expired. */
  queued(organizationId: string, vehicleId: string | undefined, channel: ChannelName): Promise<CommandRecord[]>;
  /** A command of the organization, as stored now. */
  get(organizationId: string, id: string): Promise<CommandRecord | undefined>;
  /** Takes a queued command to send it (queued → sent): undefined when it is not to be sent (cancelled, expired, taken by another connection). */
  take(command: CommandRecord): Promise<CommandRecord | undefined>;
  /** A queued command handed over with no answer to come (queued → delivered, OsmAnd). */
  deliver(command: CommandRecord): Promise<CommandRecord | undefined>;
  /**
   * A sent command's outcome; false when it was settled already (timed out, say), or when it is
   * not the `expected` vehicle's on that channel (a device names the command it answers).
   */
  settle(organizationId: string, commandId: string, outcome: CommandOutcome, expected?: { vehicleId: string; channel: ChannelName }): Promise<boolean>;
  /** A vehicle's first connection on the channel opened on this node (true), or its last one closed (false). */
  present(organizationId: string, vehicleId: string, channel: ChannelName, present: boolean): void;
  /** How long a sent command waits for its answer, ms. */
  readonly timeoutMs: number;
  /** Calls `fn` after `ms` (the service's clock). */
  after(ms: number, fn: () => void): { cancel(): void };
}
