// Device commands (docs/API.md "Commands"): what a command is, its lifecycle, and which channel
// carries which type. Pure: no store, no socket.

export const COMMAND_TYPES = ['custom', 'engineStop', 'engineResume', 'positionSingle', 'reboot', 'outputControl'] as const;
export type CommandType = (typeof COMMAND_TYPES)[number];

export const COMMAND_STATUSES = ['queued', 'sent', 'succeeded', 'failed', 'timed_out', 'expired', 'cancelled', 'delivered'] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

/** Not yet final: a vehicle holds at most MAX_UNFINISHED of these. */
export const UNFINISHED: readonly CommandStatus[] = ['queued', 'sent'];
export const MAX_UNFINISHED = 100;

export const CHANNELS = ['teltonika', 'osmand', 'mqtt'] as const;
export type ChannelName = (typeof CHANNELS)[number];

/** What each channel can carry: OsmAnd answers a request with text, so only `custom`. */
export const CHANNEL_TYPES: Record<ChannelName, readonly CommandType[]> = {
  teltonika: COMMAND_TYPES,
  osmand: ['custom'],
  mqtt: COMMAND_TYPES,
};

export type CommandParams = { text: string } | { output: number; on: boolean } | Record<string, never>;

export interface CommandRecord {
  id: string;
  organizationId: string;
  vehicleId: string;
  type: CommandType;
  params: CommandParams;
  channel: ChannelName;
  status: CommandStatus;
  createdAt: number;
  createdBy: { type: string; id: string };
  expiresAt: number;
  sentAt: number | null;
  completedAt: number | null;
  result: string | null;
  error: string | null;
}

/** A change of status, applied only while the command is still in one of `from`. */
export interface CommandChange {
  status: CommandStatus;
  at: number;
  result?: string | null;
  error?: string | null;
}

/** Which statuses each status may move to; none from a final one. */
export const NEXT: Record<CommandStatus, readonly CommandStatus[]> = {
  queued: ['sent', 'delivered', 'expired', 'cancelled'],
  sent: ['succeeded', 'failed', 'timed_out'],
  succeeded: [],
  failed: [],
  timed_out: [],
  expired: [],
  cancelled: [],
  delivered: [],
};

/** The statuses a command may be in for it to move to `to`. */
export function fromFor(to: CommandStatus): CommandStatus[] {
  return COMMAND_STATUSES.filter((s) => NEXT[s].includes(to));
}

/** Default and longest expiry, seconds: an engine stop is not to fire hours after it was asked for. */
export function expiryBounds(type: CommandType): { default: number; max: number } {
  return type === 'engineStop' ? { default: 300, max: 3600 } : { default: 3600, max: 604_800 };
}

/**
 * The text a Teltonika device is sent for a command (its SMS/GPRS command language): `setdigout`
 * takes one character per output, `1` or `0` to set it and `?` to leave it.
 */
export function teltonikaText(command: Pick<CommandRecord, 'type' | 'params'>): string {
  switch (command.type) {
    case 'custom':
      return (command.params as { text: string }).text;
    case 'engineStop':
      return 'setdigout 1';
    case 'engineResume':
      return 'setdigout 0';
    case 'positionSingle':
      return 'getgps';
    case 'reboot':
      return 'cpureset';
    case 'outputControl': {
      const { output, on } = command.params as { output: number; on: boolean };
      return `setdigout ${Array.from({ length: 4 }, (_, i) => (i + 1 === output ? (on ? '1' : '0') : '?')).join('')}`;
    }
  }
}
